"""Rooms and lobbies of several instances on one shared room log (journal, Redis): the room
shell's deliver/submit, the lobby's ticker across instances. Each test names the behaviour it
holds.

Most tests run rooms and lobbies in this process on a *fake cluster log* (``SharedStore`` +
``FakeLog``: one store, one view per instance, entries delivered in order to every instance
that follows the room, like Redis's list and channel) so the interleavings are exact. The ones
about Redis itself use a ``redis-server`` of their own (never the machine's shared one)."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from halfmoon.game import Move
from halfmoon.protocol import Mode
from halfmoon_server.adapters.journal import JournalLog, new_instance_name
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.clock import ManualClock
from halfmoon_server.core import commands
from halfmoon_server.core.commands import LOG_VERSION, room_header
from halfmoon_server.core.race import RaceConfig
from halfmoon_server.errors import LogUnavailable, Refusal
from halfmoon_server.ports import Claim, Follower, LoadedRoom
from halfmoon_server.rooms.daily import DailyService
from halfmoon_server.rooms.lobby import Lobby, OwnedElsewhere
from halfmoon_server.rooms.results import Recorder
from halfmoon_server.rooms.room import BackgroundTasks, Room, RoomServices
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.delegating import replaced
from tests.server.instances import RedisServer
from tests.server.support import T0, WsClient, journal_entries, make_settings, won_record

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = won_record().code


# -- a fake cluster log ------------------------------------------------------------------------------


class SharedStore:
    """What Redis holds: headers, each room's entries, and which instances are alive.
    ``owners``: each room has one owner, as in a cluster (:meth:`FakeLog.claim`); without it
    every instance may hold every room, so the room shell's delivery to several copies (a
    reload's catch-up, a replay) can be driven step by step."""

    def __init__(self, *, owners: bool = False) -> None:
        self.owners: dict[str, str] | None = {} if owners else None
        self.headers: dict[str, dict[str, Any]] = {}
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.snapshots: dict[str, tuple[int, dict[str, Any]]] = {}
        self.views: list[FakeLog] = []
        self.dead: set[str] = set()
        #: the newest log format every instance reads, as the heartbeats tell (None: not a cluster's)
        self.reads: int | None = None

    def followers(self, room_id: str) -> list[Follower]:
        return [view.rooms[room_id] for view in self.views if room_id in view.rooms]


class FakeLog:
    """One instance's :class:`~halfmoon_server.ports.RoomLog` on a :class:`SharedStore`: an
    append is numbered and delivered at once, in order, to every instance following the room."""

    def __init__(self, store: SharedStore) -> None:
        self.store = store
        self.instance = new_instance_name()
        self.rooms: dict[str, Follower] = {}
        store.views.append(self)

    async def create(self, header: dict[str, Any], *, own: bool = True) -> bool:
        if header["room"] in self.store.headers:
            return False
        self.store.headers[header["room"]] = header
        self.store.entries[header["room"]] = []
        if own:
            await self.claim(header["room"])  # the instance that makes a room owns it
        return True

    async def append(self, room_id: str, entry: dict[str, Any]) -> int:
        entries = self.store.entries[room_id]
        entries.append(json.loads(json.dumps(entry)))
        number = len(entries)
        for follower in self.store.followers(room_id):
            follower.deliver(number, json.loads(json.dumps(entry)))
        return number

    async def catch_up(self, room_id: str) -> None:
        room = self.rooms[room_id]
        for number, entry in enumerate(self.store.entries[room_id][room.applied :], room.applied + 1):
            room.deliver(number, entry)

    async def load(self, room_id: str, *, snapshot: bool = True) -> LoadedRoom | None:
        header = self.store.headers.get(room_id)
        if header is None:
            return None
        base, data = self.store.snapshots.get(room_id, (0, None)) if snapshot else (0, None)
        kept = None if data is None else json.loads(json.dumps(data))
        return LoadedRoom(header, [dict(e) for e in self.store.entries[room_id][base:]], kept, base)

    async def save_snapshot(self, room_id: str, number: int, snapshot: dict[str, Any]) -> None:
        if self.store.snapshots.get(room_id, (0, None))[0] < number:
            self.store.snapshots[room_id] = (number, json.loads(json.dumps(snapshot)))

    def follow(self, room: Follower) -> None:
        self.rooms[room.id] = room

    def unfollow(self, room_id: str) -> None:
        self.rooms.pop(room_id, None)
        owners = self.store.owners
        if owners is not None and owners.get(room_id) == self.instance:
            del owners[room_id]  # (its lease let go, as RedisLog does)

    def shared_reads(self) -> int | None:
        return self.store.reads

    async def room_ids(self) -> list[str]:
        return list(self.store.headers)

    async def forget(self, room_id: str) -> None:
        self.store.headers.pop(room_id, None)

    async def due(self, now: int) -> list[str]:
        return []

    async def wake(self, room_id: str, at: int | None) -> None:
        return None

    def alive(self, instance: str) -> bool:
        return instance not in self.store.dead

    async def claim(self, room_id: str) -> Claim:
        if room_id not in self.store.headers:
            return Claim(None)
        owners = self.store.owners
        if owners is None or owners.setdefault(room_id, self.instance) == self.instance:
            return Claim(self.instance, mine=True)
        return Claim(owners[room_id], ttl_ms=3000)

    async def owner(self, room_id: str) -> str | None:
        return None if self.store.owners is None else self.store.owners.get(room_id)

    def route(self, instance: str) -> str | None:
        return None if instance == self.instance else f"http://{instance}.test"

    def unreachable(self, instance: str) -> None:
        return None

    async def adopt(self) -> list[str]:
        return []

    async def close(self) -> None:
        return None


class Box:
    """An outbox that keeps what it is sent."""

    def __init__(self) -> None:
        self.room: str | None = None
        self.player_id: str | None = None
        self.frames: list[dict[str, Any]] = []
        self.closed_with: tuple[int, str] | None = None

    @property
    def closed(self) -> bool:
        return self.closed_with is not None

    def send(self, frame: bytes) -> None:
        self.frames.append(json.loads(frame))

    def close(self, code: int, reason: str) -> None:
        self.closed_with = (code, reason)

    def types(self) -> list[str]:
        return [f["type"] for f in self.frames]


def make_lobby(tmp_path: Path, clock: ManualClock, room_log: Any, **changes: Any) -> Lobby:
    """A lobby of one instance on ``room_log`` (memory storage)."""
    settings = make_settings(tmp_path, clock, **changes)
    storage = MemoryStorage()
    recorder = Recorder(storage)
    services = RoomServices(clock, room_log, recorder, BackgroundTasks(), settings.event_log)
    daily = DailyService(
        storage=storage, clock=clock, secret=b"s", executor=None, requires_winnable=False, node_budget=1
    )
    return Lobby(settings, room_log, services, storage, daily)


def move_entry(player: str, step: int) -> dict[str, Any]:
    return {"k": "move", "p": player, "m": LINE[step].names()}


# -- 1. an append whose reply is lost: "unavailable, nothing changed", yet it happened ---------------


class LostReplyLog(FakeLog):
    """Redis ran the append script but the reply never came (a socket timeout: ``appendfsync
    always`` on a stalled disk, a reset connection): the entry is in the list and the channel
    delivers it, while the caller got :class:`LogUnavailable`."""

    lose_next = False

    async def append(self, room_id: str, entry: dict[str, Any]) -> int:
        if not self.lose_next:
            return await super().append(room_id, entry)
        self.lose_next = False
        self.store.entries[room_id].append(json.loads(json.dumps(entry)))
        number = len(self.store.entries[room_id])
        loop = asyncio.get_running_loop()
        for follower in self.store.followers(room_id):  # the channel, a moment later
            loop.call_soon(follower.deliver, number, json.loads(json.dumps(entry)))
        raise LogUnavailable("Redis: Timeout reading from socket", certain=False)  # as RedisLog says


async def test_a_join_refused_as_unavailable_does_not_seat_a_ghost(tmp_path: Path, clock: ManualClock) -> None:
    """`Room.submit` turns any :class:`LogUnavailable` from `append` into
    ``unavailable … nothing changed: try again`` and forgets the waiting command. With Redis a
    timeout after the script ran is indistinguishable from a failure before it: the entry is in
    the log and is applied on every instance (`deliver` finds no waiter and applies it anyway).

    Here the player is told "nothing changed", but a seat named Ada, *connected*, with a token
    nobody has, now sits in the lobby: the retry is refused ``name_taken``; the ghost is never
    marked away (its holder instance is alive, `_look_after` only marks players of dead
    instances), so as host it blocks the start, and the room is never stale."""
    store = SharedStore()
    log = LostReplyLog(store)
    lobby = make_lobby(tmp_path, clock, log)
    room = await lobby.create_race(CODE, "10.0.0.1")
    box = Box()
    log.lose_next = True
    with pytest.raises(Refusal) as refused:
        await room.submit({"k": "join", "n": "Ada", "tok": "tok-1"}, box)
    assert refused.value.code == "unavailable"
    assert "could not be confirmed" in refused.value.message, "it must not claim that nothing changed"
    await asyncio.sleep(0.01)  # the channel delivers what Redis did take
    await lobby.tick()
    ghosts = [r.name for r in room.race.players.values() if r.connected and r.id not in room.outboxes]
    assert not ghosts, f"a connected seat nobody holds: {ghosts}"
    # (fixed: an unconfirmed command is remembered; when it shows up, the seat is the asker's)
    assert box.room == room.id and box.player_id == "p1" and "welcome" in box.types()


# -- 2. entries delivered while a catch-up is in flight are dropped -----------------------------------


class SlowCatchUpLog(FakeLog):
    """A catch-up as RedisLog does it: LRANGE (the list as it is now), then — a round trip
    later — deliver what it answered. The channel keeps delivering meanwhile."""

    def __init__(self, store: SharedStore) -> None:
        super().__init__(store)
        self.gate = asyncio.Event()

    async def catch_up(self, room_id: str) -> None:
        room = self.rooms[room_id]
        answered = list(self.store.entries[room_id][room.applied :])
        first = room.applied + 1
        await self.gate.wait()
        for number, entry in enumerate(answered, first):
            room.deliver(number, entry)


async def test_an_entry_delivered_during_a_catch_up_is_not_lost(tmp_path: Path, clock: ManualClock) -> None:
    """`Room.deliver`: an entry past a gap starts a catch-up and is dropped;
    while the catch-up is in flight (`_catching_up`), every further entry past the gap is dropped
    too. The catch-up delivers only what the list held when it was read, so an entry published
    between the LRANGE and its answer is applied by nobody — until some later entry happens to
    arrive. If it was the room's last one (the final move, a ``recorded`` and ``race_over``), the
    instance's players and spectators never see it, and its copy of the race disagrees with the
    others' for good."""
    store = SharedStore()
    log_a, log_b = FakeLog(store), SlowCatchUpLog(store)
    lobby_a = make_lobby(tmp_path / "a", clock, log_a)
    lobby_b = make_lobby(tmp_path / "b", clock, log_b)
    room_a, ada = await lobby_a.solo(Box(), "Ada", CODE, "10.0.0.1")
    room_b = await lobby_b.find(room_a.id)
    assert room_b is not None and room_b.applied == room_a.applied
    # B's subscription hiccups: entry n+1 reaches the list but not B
    log_b.unfollow(room_b.id)
    await room_a.submit(move_entry(ada, 0))
    log_b.follow(room_b)
    await room_a.submit(move_entry(ada, 1))  # n+2 reaches B: a gap, B starts catching up (LRANGE now)
    await asyncio.sleep(0)
    await room_a.submit(move_entry(ada, 2))  # n+3 arrives on the channel before LRANGE's answer
    log_b.gate.set()
    await lobby_b.services.tasks.settle()
    await asyncio.sleep(0.01)
    assert room_b.applied == room_a.applied, (
        f"instance B stopped at entry {room_b.applied} of {room_a.applied}: the entry that arrived "
        "while it was catching up was dropped, and nothing fetches it again"
    )


# -- 3. the log loses entries (Redis restarted from an older file, a dropped room's keys expire) -----


async def _redis_room(tmp_path: Path, clock: ManualClock, url: str) -> tuple[Any, Room]:
    from halfmoon_server.adapters.redis_log import RedisLog

    log = RedisLog(url)
    await log.open()
    storage = MemoryStorage()
    services = RoomServices(clock, log, Recorder(storage), BackgroundTasks())
    header = room_header("K7WQ2M", Mode.RACE, str(CODE), created_at=clock.now_ms(), nonce="n", daily_day=None)
    header["config"] = asdict(RaceConfig(countdown_ms=0))
    assert await log.create(header)
    room = Room(header, services)
    log.follow(room)
    await asyncio.sleep(0.1)  # subscribed
    return log, room


async def test_a_command_never_hangs_when_the_log_went_back(
    tmp_path: Path, clock: ManualClock, redis_server: RedisServer
) -> None:
    """`Room.deliver` drops any entry numbered at or below `applied`, and
    `RedisLog._write` delivers `LRANGE key applied -1`. When the list is
    shorter than what the room applied — Redis restarted from an AOF/RDB missing the last second
    (``appendfsync everysec``, which docs/server.md allows), a failover to a lagging replica, or
    the room's keys expired (finding 4) — RPUSH numbers the new entry at or below `applied`:
    nothing resolves the waiting future and `submit` waits forever. There is no timeout, and the
    WebSocket handler awaits `dispatch` in its read loop, so that connection answers nothing
    ever again (not even ``ping``), and so does every player of the room who sends anything."""
    log, room = await _redis_room(tmp_path, clock, redis_server.url)
    try:
        await room.submit({"k": "join", "n": "Ada", "tok": "t1"}, Box())
        await room.submit({"k": "join", "n": "Bob", "tok": "t2"}, Box())
        assert room.applied == 2
        from halfmoon_server.adapters.redis_log import _log_key

        await log.redis.delete(_log_key(room.id))  # the state Redis comes back with
        try:
            await asyncio.wait_for(room.submit({"k": "join", "n": "Cy", "tok": "t3"}, Box()), 3.0)
        except Refusal:
            pass  # refused, or 'unavailable': an answer
        except TimeoutError:
            pytest.fail("submit never returned: the log's numbering went back and the room is stuck for good")
    finally:
        room.close_timer()
        await log.close()


async def test_a_room_whose_redis_log_went_back_is_marked_to_be_loaded_again(
    tmp_path: Path, clock: ManualClock, redis_server: RedisServer
) -> None:
    """Redis came back with fewer entries than this copy applied: the command is answered
    ``unavailable`` and the copy is marked lost (the lobby loads the room again), never kept as
    if it were still the room; nothing the lost log no longer holds is applied again."""
    log, room = await _redis_room(tmp_path, clock, redis_server.url)
    try:
        await room.submit({"k": "join", "n": "Ada", "tok": "t1"}, Box())
        await room.submit({"k": "join", "n": "Bob", "tok": "t2"}, Box())
        from halfmoon_server.adapters.redis_log import _log_key

        await log.redis.delete(_log_key(room.id))  # the state Redis comes back with
        with pytest.raises(Refusal) as refusal:
            await asyncio.wait_for(room.submit({"k": "join", "n": "Cy", "tok": "t3"}, Box()), 3.0)
        assert refusal.value.code == "unavailable"
        assert room.lost, "the copy is wrong now, and nothing says so: the lobby keeps serving it"
        assert room.applied == 2 and sorted(r.name for r in room.race.players.values()) == ["Ada", "Bob"]
    finally:
        room.close_timer()
        await log.close()


async def test_an_append_whose_redis_answer_was_lost_is_applied_only_from_the_log(
    tmp_path: Path, clock: ManualClock, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis's answer to an append is lost (the connection broke): the command may or may not
    have run, so the room applies nothing on its own — ``unavailable`` (not certain) — and takes
    the entry only if the log holds it (here it does not: it never reached Redis)."""
    from redis.asyncio.client import Pipeline
    from redis.exceptions import ConnectionError as RedisConnectionError

    log, room = await _redis_room(tmp_path, clock, redis_server.url)
    try:
        await room.submit({"k": "join", "n": "Ada", "tok": "t1"}, Box())

        async def lost(self: Any, raise_on_error: bool = True) -> list[Any]:
            raise RedisConnectionError("Connection closed by server.")

        with monkeypatch.context() as patch:
            patch.setattr(Pipeline, "execute", lost)
            with pytest.raises(Refusal) as refusal:
                await asyncio.wait_for(room.submit({"k": "join", "n": "Bob", "tok": "t2"}, Box()), 3.0)
        assert refusal.value.code == "unavailable"
        assert room.applied == 1 and [r.name for r in room.race.players.values()] == ["Ada"], (
            "an entry Redis never confirmed was applied: this copy and the log disagree"
        )
        await room.submit({"k": "join", "n": "Cy", "tok": "t3"}, Box())  # the next one is number 2
        assert room.applied == 2 and [r.name for r in room.race.players.values()] == ["Ada", "Cy"]
    finally:
        room.close_timer()
        await log.close()


async def test_a_dropped_lobby_cannot_be_joined_into_a_log_that_expires(
    tmp_path: Path, clock: ManualClock, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Lobby._look_after` drops a lobby nobody entered for `abandon_after` (an ``abandon`` keeps
    it in the LOBBY phase) and `RedisLog.forget` only sets a 600 s EXPIRE.
    Within those 600 s `Lobby.find` loads it again anywhere (the header is still there): a player
    following the shared link joins and plays in a room whose list and header then vanish under
    it — from then on every command hangs (finding 3) and no instance can load the room. Here the
    expiry is shortened to 1 s."""
    from halfmoon_server.adapters import redis_log as redis_log_module

    monkeypatch.setattr(redis_log_module, "FORGET_AFTER_S", 1)
    log, room = await _redis_room(tmp_path, clock, redis_server.url)
    log2 = redis_log_module.RedisLog(redis_server.url)
    await log2.open()
    revived: Room | None = None
    try:
        await room.append_quietly({"k": "abandon"})  # what the ticker logs, then it drops the room
        room.close_timer()
        log.unfollow(room.id)
        await log.forget(room.id)
        loaded = await log2.load(room.id)  # a player opens the link (Lobby.find → _load)
        if loaded is None:
            return  # a dropped room is gone: fine
        services = RoomServices(clock, log2, room.services.recorder, BackgroundTasks())
        revived = Room(loaded.header, services)
        if loaded.snapshot is not None:
            revived.restore(loaded.snapshot)
        log2.follow(revived)
        revived.rebuild(loaded.entries)
        await asyncio.sleep(0.1)
        await revived.submit({"k": "join", "n": "Ada", "tok": "t1"}, Box())  # accepted
        await asyncio.sleep(1.5)
        try:
            await asyncio.wait_for(revived.submit({"k": "join", "n": "Bob", "tok": "t2"}, Box()), 3.0)
        except Refusal:
            pass
        except TimeoutError:
            pytest.fail("a room that was dropped took a player, then its log expired under them: commands hang")
    finally:
        if revived is not None:
            revived.close_timer()
        await log.close()
        await log2.close()


# -- 5. a spectator of a dead process is counted for ever: the room is never dropped ------------------


async def test_spectators_of_a_crashed_process_do_not_pin_the_room(tmp_path: Path, clock: ManualClock) -> None:
    """`Race.spectators` counts ``watch`` minus ``unwatch`` entries across instances; an
    ``unwatch`` is logged only when a connection closes on a live process (ws.py `leave_room`).
    After a crash (embedded restart from the journal, or a cluster instance SIGKILLed) its
    spectators are never subtracted — players are (`Lobby._look_after` marks a dead holder's
    players away), spectators are not. `Race.is_stale` keeps any unfinished room
    with `spectators > 0`, so a lobby, or a solo game (no time limit), that had a spectator at
    the crash is never abandoned and never dropped — in memory and in the journal for ever —
    and everyone is shown one spectator too many."""
    journal = JournalLog(tmp_path / "journal.db")
    await journal.open()
    lobby = make_lobby(tmp_path / "one", clock, journal, abandon_after_s=60, finished_ttl_s=60)
    room, _ = await lobby.solo(Box(), "Ada", CODE, "10.0.0.1")
    await room.submit({"k": "watch"}, Box())
    # SIGKILL: no disconnect, no unwatch. A new process opens the same journal.
    journal2 = JournalLog(tmp_path / "journal.db")
    await journal2.open()
    lobby2 = make_lobby(tmp_path / "two", clock, journal2, abandon_after_s=60, finished_ttl_s=60)
    try:
        assert await lobby2.restore() == 1
        for _ in range(4):  # the old process's player is marked away, time passes, ticks
            await lobby2.tick()
            await lobby2.services.tasks.settle()
            clock.advance(61_000)
        await lobby2.tick()
        restored = lobby2.rooms.get(room.id)
        assert restored is None, (
            f"the room is still held {4 * 61} s after its only player went, phase "
            f"{restored.race.phase}, spectators {restored.race.spectators} (the crashed process's)"
        )
    finally:
        await journal2.close()
        await journal.close()


# -- 6. a player wrongly taken for dead stays away for good; their live room is abandoned -------------


async def test_a_player_taken_for_dead_by_a_late_heartbeat_is_back_once_it_beats(
    tmp_path: Path, clock: ManualClock
) -> None:
    """`Lobby._look_after` logs a ``disconnect`` for the players held by another instance. A
    heartbeat that is merely late (a GC pause, a blocked loop, Redis slow for a few seconds) once
    made another holder of the room mark a player still connected and playing on the live
    instance ``connected: false`` for good (and the room abandoned while they moved). With one
    owner per room no other instance holds the room: its find is sent to the owner
    (:class:`OwnedElsewhere`), and its ticker marks nobody away."""
    store = SharedStore(owners=True)
    log_a, log_b = FakeLog(store), FakeLog(store)
    lobby_a = make_lobby(tmp_path / "a", clock, log_a, abandon_after_s=60)
    lobby_b = make_lobby(tmp_path / "b", clock, log_b, abandon_after_s=60)
    room_a, ada = await lobby_a.solo(Box(), "Ada", CODE, "10.0.0.1")
    with pytest.raises(OwnedElsewhere) as elsewhere:
        await lobby_b.find(room_a.id)
    assert (elsewhere.value.instance, room_a.id) == (log_a.instance, elsewhere.value.room_id)
    assert room_a.id not in lobby_b.rooms
    store.dead.add(log_a.instance)  # A's heartbeat is 5 s late
    await lobby_b.tick()
    store.dead.clear()  # ... and beats again
    for step in range(3):  # Ada plays on, on A
        clock.advance(30_000)
        await room_a.submit(move_entry(ada, step))
        await lobby_a.tick()
        await lobby_b.tick()
    racer = room_a.race.players[ada]
    assert racer.connected, "Ada is connected to a live instance and moving, yet shown away for good"
    assert racer.playing, f"Ada's live game ended as {racer.status} while she was moving"


# -- 7. a daily attempt is spent when the room log refuses its room ------------------------------------


async def test_a_daily_attempt_is_not_spent_when_its_room_cannot_be_made(start_server: StartServer) -> None:
    """`Lobby.claim_daily` spends the ranked attempt in the database (`claim_daily_attempt`)
    before `start_daily` makes the room and logs ``single``. When the room log is down (Redis
    unreachable, the journal's disk full) `_new_room` raises ``unavailable`` — "nothing changed:
    try again" — but the ranked attempt is gone: the retry is unranked. The same window is open
    for a crash (SIGKILL, an instance dying) between the claim and the ``single`` entry, which
    docs/server.md says can never spend a ranked attempt."""
    server = await start_server()
    lobby = server.app[keys.LOBBY]

    async def down(header: dict[str, Any], *, own: bool = True) -> bool:
        raise LogUnavailable("Redis: Connection refused")

    lobby.log = replaced(log := lobby.log, create=down)
    ada = await WsClient.connect(server, "ada")
    await ada.send("daily", name="Ada")
    error = await ada.next("error")
    assert error["code"] == "unavailable"
    lobby.log = log
    storage = server.app[keys.STORAGE]
    from halfmoon_server.clock import utc_datetime

    still_mine = await storage.claim_daily_attempt(lobby.daily_service.today(), "ada", utc_datetime(T0))
    await ada.close()
    assert still_mine, "the ranked daily attempt was spent by a refusal that said 'nothing changed'"


# -- 8. refused commands and spectator churn fill the log without bound --------------------------------


async def test_spectator_churn_does_not_grow_the_log_without_bound(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``watch`` and every ``leave`` of a spectator is a log entry (and a ``spectators``
    frame to every member). One connection looping watch/leave at the rate limit adds 20 entries
    a second, for ever, to any public room (a race someone shares): its log grows without bound
    and every later load replays it. (Fixed: a room lets in at most ``race.MAX_WATCHES``
    spectators over its life — 2,000; 20 here — and refuses more with ``room_full``.)"""
    from halfmoon_server.core import race as race_module

    monkeypatch.setattr(race_module, "MAX_WATCHES", 20)
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        room_id = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=room_id, name="Ada")
    await ada.next("welcome")
    eve = await WsClient.connect(server, "eve")
    refused = 0
    for _ in range(100):
        await eve.send("watch", room=room_id)
        answer = await eve.next("welcome", "error")
        if answer["type"] == "error":
            assert answer["code"] == "room_full"
            refused += 1
            continue
        await eve.send("leave")
    await eve.send("ping")
    await eve.next("pong")
    entries = journal_entries(server, room_id)
    await ada.close()
    await eve.close()
    kinds = [e["k"] for e in entries]
    assert len(entries) < 50, f"100 watch/leave cycles left {len(entries)} entries ({kinds.count('watch')} watch)"
    assert refused == 80


# -- 9. an instance whose ticker runs near a deadline loads every room due then ------------------------


async def test_an_instance_does_not_load_a_room_another_live_instance_holds(
    tmp_path: Path, clock: ManualClock, redis_server: RedisServer
) -> None:
    """`RedisLog.due` answers every room whose `hm:wake` score has passed, and `Lobby.tick`
    *loads and follows* each one it does not hold, for good (until stale).
    The holder's timer settles a countdown at its end, but the holder only moves `hm:wake`
    forward at its next ticker run (`tick_s`, 0.5 s): any instance whose ticker runs in between
    loads the room. So nearly every race that starts ends up replicated on every instance —
    each one replays it, subscribes to it and applies every move — which undoes the point of
    more instances. `due` is documented as rooms "that no instance may hold"."""
    from halfmoon_server.adapters.redis_log import RedisLog

    log_a, log_b = RedisLog(redis_server.url), RedisLog(redis_server.url)
    await log_a.open()
    await log_b.open()
    lobby_a = make_lobby(tmp_path / "a", clock, log_a, countdown_s=3.0, tick_s=3600)
    lobby_b = make_lobby(tmp_path / "b", clock, log_b, countdown_s=3.0, tick_s=3600)
    try:
        room = await lobby_a.create_race(CODE, "10.0.0.1")
        await room.submit({"k": "join", "n": "Ada", "tok": "t"}, Box())
        await room.submit({"k": "start", "p": "p1", "lim": None})
        await lobby_a.tick()  # hm:wake: the countdown's end
        await asyncio.sleep(1.2)  # heartbeats: both alive
        clock.advance(3000)  # the countdown is over; A's timer is about to settle it
        await lobby_b.tick()  # B's ticker happens to run now
        assert room.id not in lobby_b.rooms, "instance B loaded and follows a room that live instance A holds"
    finally:
        for lobby in (lobby_a, lobby_b):
            for held in list(lobby.rooms.values()):
                held.close_timer()
        await log_a.close()
        await log_b.close()


# -- 10. entries carry each instance's own clock: time goes backwards in a room's log ----------------


async def test_a_rooms_log_time_never_goes_backwards(tmp_path: Path) -> None:
    """`Room.submit` stamps each entry with the submitting instance's wall clock
    and the core trusts `t` for everything: the countdown's end, the time limit, each player's
    time. Two instances whose clocks differ by a second or two (NTP drift, a VM paused) write
    entries whose times go backwards; the instance whose clock runs ahead ends countdowns and
    time limits early for everyone (its timer appends the ``tick``, and any command it logs
    settles the deadline first), and a player served by a slower clock gets a better time
    for the same play. Stamping in the log (Redis ``TIME`` in the append script, or at least
    ``max(t, previous t)``) gives one clock per room."""
    store = SharedStore()
    clock_a, clock_b = ManualClock(T0 + 2000), ManualClock(T0)  # A runs 2 s ahead
    lobby_a = make_lobby(tmp_path / "a", clock_a, FakeLog(store))
    lobby_b = make_lobby(tmp_path / "b", clock_b, FakeLog(store))
    room_a = await lobby_a.create_race(CODE, "10.0.0.1")
    room_b = await lobby_b.find(room_a.id)
    assert room_b is not None
    await room_a.submit({"k": "join", "n": "Ada", "tok": "t1"}, Box())
    await room_b.submit({"k": "join", "n": "Bob", "tok": "t2"}, Box())
    for room in (room_a, room_b):
        room.close_timer()
    # (fixed: Redis stamps each entry with its own clock, TIME in the append script; and every
    # instance applies an entry at no earlier a time than the one before, so a room's time never
    # goes back — checked here where the fake log keeps each instance's own stamp)
    for room in (room_a, room_b):
        joined = [r.away_since for r in room.race.players.values()]
        assert room.state.last_time == T0 + 2000, "B's join is applied at A's later time, not 2 s back"
        assert joined == [None, None]


# -- 11. the followers set of a room outlives it (dead instances are never taken out) ---------------


async def test_a_dropped_rooms_keys_all_expire(
    tmp_path: Path, clock: ManualClock, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(b700b52) `RedisLog.forget` sets an EXPIRE on the header and the list
    but only takes *this* instance out of ``hm:{ROOM}:followers``. An instance that died (SIGKILL,
    OOM, a node lost) while holding the room stays in that set for ever: the set has no TTL, so it
    outlives the room — one key per room per crash, never reclaimed — and until then every append
    PUBLISHes to the dead instance's channel too (each rolling restart adds a name). Here B holds
    the room and dies; A drops it; the dropped room's keys are expired after 1 s."""
    from halfmoon_server.adapters import redis_log as redis_log_module

    monkeypatch.setattr(redis_log_module, "FORGET_AFTER_S", 1)
    log_a, log_b = redis_log_module.RedisLog(redis_server.url), redis_log_module.RedisLog(redis_server.url)
    await log_a.open()
    await log_b.open()
    recorder = Recorder(MemoryStorage())
    header = room_header("K7WQ2M", Mode.RACE, str(CODE), created_at=clock.now_ms(), nonce="n", daily_day=None)
    header["config"] = asdict(RaceConfig())
    assert await log_a.create(header)
    room_a = Room(header, RoomServices(clock, log_a, recorder, BackgroundTasks()))
    room_b = Room(header, RoomServices(clock, log_b, recorder, BackgroundTasks()))
    try:
        log_a.follow(room_a)
        log_b.follow(room_b)
        await asyncio.sleep(0.1)
        await room_a.submit({"k": "join", "n": "Ada", "tok": "t1"}, Box())
        await log_b.close()  # B dies (a SIGKILL says nothing to Redis either)
        room_b.close_timer()
        log_a.unfollow(room_a.id)
        await log_a.forget(room_a.id)
        await asyncio.sleep(1.5)
        left = sorted(str(k) for k in await log_a.redis.keys(f"hm:{{{room_a.id}}}:*"))
        assert not left, f"keys of a dropped room that never expire: {left}"
    finally:
        room_a.close_timer()
        await log_a.close()


# -- 12. a connection for a room whose owner went silent waits out its lease, then claims it ---------


class SilentOwnerLog(FakeLog):
    """The room's owner is ``gone``: not heard from (no route), its lease ``left_ms`` from now."""

    def __init__(self, store: SharedStore, left_ms: int) -> None:
        super().__init__(store)
        self.lease_ends = asyncio.get_running_loop().time() + left_ms / 1000
        self.claims: list[float] = []

    async def claim(self, room_id: str) -> Claim:
        now = asyncio.get_running_loop().time()
        self.claims.append(now)
        if now < self.lease_ends:
            return Claim("gone", ttl_ms=int((self.lease_ends - now) * 1000) + 1)
        return Claim(self.instance, mine=True)

    def route(self, instance: str) -> str | None:
        return None  # not heard from: no connection goes there


async def test_a_room_whose_owner_went_silent_is_claimed_once_its_lease_ran_out(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = SharedStore()
    maker = make_lobby(tmp_path / "a", clock, FakeLog(store))
    room = await maker.create_race(CODE, "10.0.0.1")
    waiting = SilentOwnerLog(store, left_ms=300)
    lobby = make_lobby(tmp_path / "b", clock, waiting)
    started = asyncio.get_running_loop().time()
    with caplog.at_level(logging.INFO, logger="halfmoon_server.lobby"):
        found = await lobby.find(room.id)
    waited = asyncio.get_running_loop().time() - started
    assert found is not None and lobby.rooms[room.id] is found, "held here once claimed"
    assert 0.29 <= waited < 1.0, f"waited {waited:.2f} s for a lease with 0.3 s left"
    assert len(waiting.claims) == 2, "claimed again once, when the lease had run out"
    # the takeover the runbook names (deploy/RUNBOOK.md, "One owner per room"), one line
    taken = [r.getMessage() for r in caplog.records if "taken over" in r.getMessage()]
    assert taken == [f"room {room.id} taken over from an owner that stopped answering"]
    for held in (room, found):
        held.close_timer()


async def test_a_room_whose_owner_never_lets_go_is_refused_as_unavailable_not_waited_for_ever(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = SharedStore()
    maker = make_lobby(tmp_path / "a", clock, FakeLog(store))
    room = await maker.create_race(CODE, "10.0.0.1")
    lobby = make_lobby(tmp_path / "b", clock, SilentOwnerLog(store, left_ms=10**9), owner_lease_ms=300)
    with pytest.raises(Refusal) as refused:
        await lobby.find(room.id)  # each wait at most one lease: four tries, then a clear answer
    assert refused.value.code == "unavailable" and room.id not in lobby.rooms
    room.close_timer()


# -- the log format of new rooms, while instances of two releases share the log ----------------------------


async def test_new_rooms_are_written_in_a_log_format_every_instance_sharing_the_log_reads(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = SharedStore()
    lobby = make_lobby(tmp_path / "a", clock, FakeLog(store))
    versions = []
    with caplog.at_level(logging.INFO, logger="halfmoon_server.lobby"):
        for reads in (1, LOG_VERSION, None, 1):  # an instance of the earlier release comes and goes
            store.reads = reads
            room = await lobby.create_race(CODE, "10.0.0.1")
            versions.append(room.state.header["v"])
            room.close_timer()
    assert versions == [1, LOG_VERSION, LOG_VERSION, 1]
    said = [r.getMessage() for r in caplog.records if "written in format" in r.getMessage()]
    assert said == [
        "new rooms' logs are written in format 1 (an instance sharing the room log reads no newer)",
        f"new rooms' logs are written in format {LOG_VERSION}",
        "new rooms' logs are written in format 1 (an instance sharing the room log reads no newer)",
    ]
    capped = make_lobby(tmp_path / "b", clock, FakeLog(store), room_log_version=1)  # the operator's cap
    store.reads = LOG_VERSION
    room = await capped.create_race(CODE, "10.0.0.1")
    assert room.state.header["v"] == 1
    room.close_timer()


@pytest.mark.interpreted  # (the log format this release reads, replaced)
async def test_an_instance_that_cannot_read_a_rooms_log_lets_the_room_go_to_one_that_can(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SharedStore(owners=True)
    newer = make_lobby(tmp_path / "new", clock, FakeLog(store))
    older = make_lobby(tmp_path / "old", clock, FakeLog(store))
    room = await newer.create_race(CODE, "10.0.0.1")
    assert room.state.header["v"] == LOG_VERSION
    newer._release(room)  # its owner lets it go (a restart): nobody owns it
    assert store.owners == {}
    monkeypatch.setattr(commands, "LOG_VERSION", LOG_VERSION - 1)  # the other is of a release before it
    with pytest.raises(Refusal) as refused:
        await older.find(room.id)
    assert refused.value.code == "unavailable" and room.id not in older.rooms
    assert store.owners == {}, "claimed by an instance that cannot serve it"
    monkeypatch.setattr(commands, "LOG_VERSION", LOG_VERSION)
    found = await newer.find(room.id)  # (not OwnedElsewhere: nobody else holds it)
    assert found is not None and newer.rooms[room.id] is found
    found.close_timer()
    room.close_timer()
