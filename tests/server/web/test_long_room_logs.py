"""``GET /api/rooms/{id}`` of a sleeping room whose log is long (a client appended 20,000
move/undo entries: it once replayed them all on the event loop, 0.25–4.8 s a read) is answered
from the room's latest snapshot and the few entries after it, and never holds the event loop
for long: a task that sleeps 1 ms at a time, beside the read, is not late by more than
:data:`STALL_BOUND_S`, and the read takes under a quarter of a whole replay's time (about a fiftieth, measured: the
replay is sliced too, so the stall alone would not tell a read that replays everything)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson
import pytest

from halfmoon.codes import DealCode
from halfmoon_server.clock import ManualClock
from halfmoon_server.ports import LoadedRoom
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.rooms.room import Room
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.delegating import replaced
from tests.server.support import WsClient, won_record

#: move/undo pairs in the room's history (20,001 entries with its start)
PAIRS = 10_000
#: the longest the loop may be held by the read (a whole replay held it ~0.5 s here; a restore
#: from the snapshot takes ~10 ms; the bound leaves room for a noisy, shared machine)
STALL_BOUND_S = 0.06
RECORD = won_record()


class Box:
    """An outbox that keeps nothing (the player's frames are not looked at)."""

    room: str | None = None
    player_id: str | None = None
    closed = False

    def send(self, frame: bytes) -> None:
        return None

    def close(self, code: int, reason: str) -> None:
        return None


async def long_sleeping_room(lobby: Lobby, clock: ManualClock, pairs: int = PAIRS) -> str:
    """A solo room with a history of :data:`PAIRS` move/undo pairs made through the room's real
    path (``Room.submit``, as the WebSocket handler calls it), given up, recorded, and put to
    sleep (out of memory: a read rebuilds it from the log)."""
    room, player = await lobby.solo(Box(), "Ada", DealCode.parse(str(RECORD.code)), "198.51.100.7")
    first = RECORD.moves[0].names()  # type: ignore[union-attr]
    for pair in range(pairs):
        await room.submit({"k": "move", "p": player, "m": first})
        await room.submit({"k": "undo", "p": player})
        if pair % 100 == 0:
            clock.advance(1)
            await asyncio.sleep(0)  # (the loop turns, as between a client's messages)
    await room.submit({"k": "give_up", "p": player})
    room.outboxes.clear()
    for _ in range(500):
        await asyncio.sleep(0.01)
        if room.idle and not room.race.unrecorded:
            break
    await room.services.tasks.settle()
    await lobby._put_to_sleep(room, clock.now_ms())
    assert room.id not in lobby.rooms, "asleep: out of memory"
    return room.id


async def read_watching_the_loop(url: str) -> tuple[dict[str, Any], float, float]:
    """GET ``url`` while a task measures how late a 1 ms sleep wakes: the answer, the longest
    lateness (s), and how long the read took (s)."""
    worst = 0.0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal worst
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - before - 0.001)

    watcher = asyncio.get_running_loop().create_task(watch())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200, await response.text()
        body = orjson.loads(await response.read())
    took = time.perf_counter() - started
    done.set()
    await watcher
    return body, worst, took


@pytest.mark.slow
async def test_a_get_of_a_sleeping_room_with_a_long_log_never_holds_the_loop(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(db_url="memory://", tick_s=3600.0, finished_hold_s=60, snapshot_every=200)
    lobby: Lobby = server.app[keys.LOBBY]
    room_id = await long_sleeping_room(lobby, clock)
    loaded = await lobby.log.load(room_id)
    assert loaded is not None and loaded.snapshot is not None
    assert 2 * PAIRS + 2 - loaded.base <= 200, "the read replays at most an interval past the snapshot"

    # three reads: a stall of the read's own shows in each; one of a busy shared machine's (this
    # process not scheduled for a while) does not, so the least of the three is the read's
    reads = [await read_watching_the_loop(f"{server.make_url('')}/api/rooms/{room_id}") for _ in range(3)]
    body = reads[0][0]
    assert body["phase"] == "finished" and body["players"][0]["status"] == "gave_up"
    worst = min(stall for _, stall, _ in reads)
    took = min(took for _, _, took in reads)
    assert worst < STALL_BOUND_S, f"the loop was held {worst * 1000:.1f} ms by each read"

    # the same read of the same room without its snapshot: a whole replay (in slices)
    whole = await lobby.log.load(room_id, snapshot=False)
    assert whole is not None
    started = time.perf_counter()
    copy_ = Room(whole.header, lobby.services)
    await copy_.replay(whole.entries)
    replay_s = time.perf_counter() - started
    assert copy_.race.snapshot(None, clock.now_ms(), watcher=False).to_json()["players"] == body["players"]
    assert took < replay_s / 4, f"the read took {took * 1000:.0f} ms; a whole replay {replay_s * 1000:.0f} ms"


async def test_a_get_of_a_sleeping_room_parses_no_step_and_answers_as_a_whole_replay(
    start_server: StartServer, clock: ManualClock
) -> None:
    """The read copy is restored lazily (its games' steps kept as the snapshot's text) and the
    entries after the snapshot — moves, undos, the give-up, its recording — replayed on it: the
    answer is, byte for byte, the one a replay of the whole log gives."""
    server = await start_server(db_url="memory://", tick_s=3600.0, finished_hold_s=60, snapshot_every=100)
    lobby: Lobby = server.app[keys.LOBBY]
    # (240 pairs: the snapshot task, started at the 100th entry, runs at the loop turn after
    # entry 403 — the build turns the loop every 100 pairs — and no other is due before the end)
    room_id = await long_sleeping_room(lobby, clock, pairs=240)
    loaded = await lobby.log.load(room_id)
    assert loaded is not None and loaded.snapshot is not None
    tail = {entry["k"] for entry in loaded.entries}
    assert {"move", "undo", "give_up"} <= tail, f"the read replays a game's end past the snapshot: {tail}"

    async with aiohttp.ClientSession() as session, session.get(f"{server.make_url('')}/api/rooms/{room_id}") as answer:
        assert answer.status == 200
        body = await answer.read()
    racer = lobby._read_copies[room_id][2].race.players["p1"]
    assert racer.unread is not None and racer.step_count == 2 * 240, "no step of the read copy was parsed"

    whole = await lobby.log.load(room_id, snapshot=False)
    assert whole is not None
    replayed = Room(whole.header, lobby.services)
    await replayed.replay(whole.entries)
    view = replayed.race.snapshot(None, clock.now_ms(), watcher=False).to_json()
    del view["board"], view["boards"], view["can_undo"]
    view["url"] = f"{server.make_url('')}/r/{room_id}"
    view["listed"] = replayed.listed
    assert orjson.loads(body) == view
    assert racer.steps == replayed.race.players["p1"].steps, "and read at last, the same steps"


async def test_a_move_past_the_rooms_cap_is_refused_on_the_wire_and_logs_nothing(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(db_url="memory://", tick_s=3600.0, max_room_entries=1_000)
    lobby: Lobby = server.app[keys.LOBBY]
    ada = await WsClient.connect(server, "ada")
    try:
        await ada.send("solo", name="Ada", code=str(RECORD.code))
        welcome = await ada.next("welcome")
        room = lobby.rooms[welcome["room"]["room"]]
        player = welcome["you"]
        first = RECORD.moves[0].names()  # type: ignore[union-attr]
        while room.applied < 1_000:  # the room's real path, as the socket's messages take it
            await room.submit({"k": "move" if room.applied % 2 else "undo", "p": player, "m": first})
        logged = len(await _entries(lobby, room.id))
        await ada.send("move", positions=first, id=7)
        refused = await ada.next("error")
        assert refused["code"] == "room_log_full" and refused.get("id") == 7, refused
        assert len(await _entries(lobby, room.id)) == logged == 1_000, "nothing logged"
        await ada.send("give_up")  # what ends the room is still taken
        over = await ada.next("game_over")
        assert over["outcome"] == "gave_up"
    finally:
        await ada.close()


async def _entries(lobby: Lobby, room_id: str) -> list[Any]:
    loaded = await lobby.log.load(room_id, snapshot=False)
    assert loaded is not None
    return loaded.entries


async def test_gets_of_many_sleeping_rooms_at_once_build_at_most_a_few_read_copies_at_a_time(
    start_server: StartServer, clock: ManualClock
) -> None:
    """A client asking for many long rooms at once does not have as many read copies built side
    by side, each taking its turns with the players' moves: at most
    :data:`~halfmoon_server.rooms.lobby.READS_AT_ONCE` are built at a time (each from its log's
    load on: counted at the room log's port), the other reads wait theirs, and every read is
    answered."""
    from halfmoon_server.rooms import lobby as lobby_module

    server = await start_server(db_url="memory://", tick_s=3600.0, finished_hold_s=60, snapshot_every=0)
    lobby: Lobby = server.app[keys.LOBBY]
    rooms = [await long_sleeping_room(lobby, clock, pairs=30) for _ in range(lobby_module.READS_AT_ONCE + 4)]
    building = most = 0
    real_load = lobby.log.load

    async def load(room_id: str, *, snapshot: bool = True) -> LoadedRoom | None:
        nonlocal building, most
        building += 1
        most = max(most, building)
        try:
            await asyncio.sleep(0.05)  # (a long build: the others' reads arrive meanwhile)
            loaded: LoadedRoom | None = await real_load(room_id, snapshot=snapshot)
            return loaded
        finally:
            building -= 1

    lobby.log = replaced(lobby.log, load=load)
    base = server.make_url("")

    async def get(session: aiohttp.ClientSession, room_id: str) -> int:
        async with session.get(f"{base}/api/rooms/{room_id}") as answer:
            return answer.status

    async with aiohttp.ClientSession() as session:
        statuses = await asyncio.gather(*(get(session, room_id) for room_id in rooms))
    assert statuses == [200] * len(rooms)
    assert most == lobby_module.READS_AT_ONCE, f"{most} read copies were built at once"


async def test_a_read_copy_is_not_reused_for_a_log_of_the_same_length_holding_other_entries(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Redis lost a room's last entries (a failover) and its next owner appended as many others:
    the log has the length a kept read copy was rebuilt from, but not its entries. The copy showed
    the game given up (a race over, its deal code out) while it was being played again; a read
    rebuilds it from the log as it is."""
    server = await start_server(db_url="memory://", tick_s=3600.0, finished_hold_s=60, snapshot_every=0)
    lobby: Lobby = server.app[keys.LOBBY]
    room_id = await long_sleeping_room(lobby, clock, pairs=5)
    url = f"{server.make_url('')}/api/rooms/{room_id}"

    async def read() -> dict[str, Any]:
        async with aiohttp.ClientSession() as session, session.get(url) as answer:
            assert answer.status == 200
            return orjson.loads(await answer.read())  # type: ignore[no-any-return]

    assert (await read())["players"][0]["status"] == "gave_up"
    loaded = await lobby.log.load(room_id)
    assert loaded is not None and loaded.snapshot is None
    end = next(n for n, entry in enumerate(loaded.entries) if entry["k"] == "give_up")
    move = next(entry for entry in loaded.entries if entry["k"] == "move")
    kept = loaded.entries[:end]
    others = [
        {**move, "k": "move" if n % 2 == 0 else "undo", "o": f"next-owner:{n}", "t": move["t"] + 1 + n}
        for n in range(len(loaded.entries) - end)
    ]
    assert len(kept) + len(others) == len(loaded.entries)
    again = LoadedRoom(loaded.header, kept + others)

    async def load(room: str, *, snapshot: bool = True) -> LoadedRoom | None:
        return again

    lobby.log = replaced(lobby.log, load=load)
    assert (await read())["players"][0]["status"] == "playing", "read from the log as it is now"
