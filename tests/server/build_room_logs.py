"""The source of ``tests/vectors/room_logs/``: room logs written by a real server, of every kind
of room, as the embedded journal (:class:`~halfmoon_server.adapters.journal.JournalLog`, SQLite)
and the cluster's Redis log (:class:`~halfmoon_server.adapters.redis_log.RedisLog`) hold them —
so a later release can show it still replays the logs this one wrote
(``tests/server/adapters/test_room_log_replay.py``).

Each scenario is played over WebSockets against a server running in this process; at its end
the log is exported exactly as stored (the journal's rows; Redis's keys and values) with what
the live room held then (the *expectation*: its phase, seq, each player's snapshot, a
spectator's, the results), taken from the room that played — not from a replay.

- The journal's server runs on a :class:`~halfmoon_server.clock.ManualClock` and its randomness
  (room ids, nonces, tokens, seeds, the instance's name) is drawn from a seeded generator, so
  ``journal.json`` is the same on every run, byte for byte.
- The Redis log stamps each entry with Redis's own clock (``TIME`` in its append script): that
  server runs on the system clock, and ``redis.json``'s times (the stamps, each entry's ``t``, a
  header's ``created_at``, the daily's day and code, and whatever the expectation derives from
  them) differ on every run. The rest is the same.

``journal.json`` and ``redis.json`` are this release's logs (the header's format version
:data:`~halfmoon_server.core.commands.LOG_VERSION`); ``journal-v0.json`` and ``redis-v0.json``
are the same rooms as the release before the version wrote them, and ``journal-stored-first.json``
and ``redis-stored-first.json`` as the release before ``game_over`` stopped waiting for the database wrote them
(its ``recorded`` came after the write, with ``"s": true``), and ``journal-v1.json`` and
``redis-v1.json`` as the release before the entry that ends a game recorded it wrote them (log
format 1: a ``recorded`` entry of its own after each game's end), kept as they are to show those
still replay. A release that writes other logs regenerates the first two and keeps the ones it
replaces beside them, with their tests.

Regenerate with ``python -m tests.server.build_room_logs`` (from the repository root; Redis
needs ``redis-server``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import secrets
import sqlite3
import string
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestServer

from halfmoon.game import Game, Move
from halfmoon_server import create_app
from halfmoon_server.clock import Clock, ManualClock, SystemClock
from halfmoon_server.rooms.room import Room
from halfmoon_server.web import keys
from tests.conftest import VECTORS
from tests.server.instances import RedisServer
from tests.server.support import WsClient, illegal_move, make_settings, won_record

FOLDER: Final = VECTORS / "room_logs"
JOURNAL_PATH: Final = FOLDER / "journal.json"
REDIS_PATH: Final = FOLDER / "redis.json"
START_MS: Final = 1_796_000_000_000
SOLO_CODE: Final = "HM1-N-AAAAAAB"
ADA_ENTROPY: Final = "a1" * 16
BOB_ENTROPY: Final = "b2" * 16
PLAYER_KEY: Final = "ada-player-key-" + "k" * 17

FORMAT: Final = """\
Room logs written by a real server (tests/server/build_room_logs.py), one per scenario, exactly
as the log holds them, with what the live room held when the scenario ended. Top level:
{"format": this text, "log": "journal" | "redis", "rooms": {scenario: room}}.
A room: {"about": what was played, "room": its id, "stored": the log's contents, "expect": the
live room at the end}.
"stored", for the journal (adapters/journal.py's SQLite tables): {"header": the rooms table's
header column, "entries": the entries table's rows of that room, in order of n: [n, entry]}.
For Redis (adapters/redis_log.py): {"hm:{ROOM}:h": the header key's value, "hm:{ROOM}:log":
the list's items, each "<ms> <json>" given as [ms, json]}. A header or entry is given as JSON
here; the bytes stored are orjson's compact encoding of it (checked when the file is written).
"expect": {"seq": events numbered, "applied": entries applied, "now": the room's log time (the
last entry's), "tokens": {player: the hash of their token}, "unstored": players whose game the
database has not confirmed, "snapshots": {player: the room as that player sees it at "now"},
"watcher": the room as a spectator sees it at "now"}.
"""


# -- what the builder controls ----------------------------------------------------------------------


@contextlib.contextmanager
def seeded_secrets(seed: int) -> Iterator[None]:
    """The ``secrets`` functions the server draws from (room ids, nonces, tokens, seeds, the
    instance's name), answered from a generator seeded with ``seed``: a run draws the same values."""
    rng = random.Random(seed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(secrets, "choice", rng.choice)
        patch.setattr(secrets, "token_bytes", lambda n=32: rng.randbytes(n))
        patch.setattr(secrets, "token_hex", lambda n=32: rng.randbytes(n).hex())
        patch.setattr(
            secrets,
            "token_urlsafe",
            lambda n=32: "".join(rng.choice(string.ascii_letters + string.digits + "-_") for _ in range(n * 4 // 3)),
        )
        yield


@dataclass
class Play:
    """One scenario's server, and the way time passes on it."""

    server: TestServer
    http: aiohttp.ClientSession
    clock: Clock
    manual: bool  # the journal's server: a manual clock; Redis's: the system clock
    clients: list[WsClient]
    room: str = ""
    #: the room as the lobby last held it (an abandoned room is let go at once)
    held: Room | None = None

    async def wait(self, ms: int) -> None:
        """Let the rooms' writes of finished games end (each logs ``stored``: one order on every
        run), then ``ms`` pass on the server's clock (on the system clock: a moment only), and its
        ticker settle what came due."""
        await self.server.app[keys.TASKS].settle()
        if isinstance(self.clock, ManualClock):
            self.clock.advance(ms)
            await asyncio.sleep(0.08)  # the ticker runs every 0.02 s
        else:
            await asyncio.sleep(min(ms, 60) / 1000)

    async def until(self, done: Callable[[Room], bool], timeout: float = 5.0) -> None:
        """Wait until the live room is ``done`` (what the scenario did has been applied)."""
        async with asyncio.timeout(timeout):
            while not done(self.lobby_room()):
                await asyncio.sleep(0.01)

    async def connect(self, label: str) -> WsClient:
        client = await WsClient.connect(self.server, label)
        self.clients.append(client)
        return client

    async def new_room(self, body: dict[str, Any]) -> str:
        response = await self.http.post(self.server.make_url("/api/rooms"), json=body)
        assert response.status in (200, 201), await response.text()
        self.room = (await response.json())["room"]
        return self.room

    def lobby_room(self) -> Room:
        """The live room (once let go: as the lobby last held it)."""
        room: Room | None = self.server.app[keys.LOBBY].rooms.get(self.room, self.held)
        assert room is not None, self.room
        self.held = room
        return room


def first_move(game: Game) -> list[str]:
    """The first legal move on ``game``, pushed."""
    move = next(iter(game.legal_moves()))
    game.push(move)
    return move.names()


async def solo(play: Play) -> None:
    ada = await play.connect("Ada")
    await ada.send("solo", name="Ada", code=SOLO_CODE, player_key=PLAYER_KEY)
    welcome = await ada.next("welcome")
    play.room = welcome["room"]["room"]
    game = Game.from_code(SOLO_CODE)
    await play.wait(3000)
    await ada.send("move", positions=["1", "R4"], id=1)  # 10H + AS
    game.push(Move.from_names(["1", "R4"]))
    await ada.next("moved")
    await play.wait(1000)
    await ada.send("move", positions=illegal_move(game).names(), id=2)  # refused: never logged
    await ada.next("error")
    await play.wait(1000)
    await ada.send("move", positions=["R3", "R5", "8"], id=3)  # JH QD KS
    await ada.next("moved")
    await play.wait(1000)
    await ada.send("undo", id=4)
    await ada.next("moved")
    await play.wait(2000)
    await ada.send("give_up")
    await ada.next("race_over")
    await play.until(lambda room: not room.busy)


async def race(play: Play) -> None:
    record = won_record()
    code = str(record.code)
    room = await play.new_room({"code": code})
    ada, bob, cy = await play.connect("Ada"), await play.connect("Bob"), await play.connect("Cy")
    spectator = await play.connect("Spectator")
    await ada.send("join", room=room, name="Ada", player_key=PLAYER_KEY)
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    bob_welcome = await bob.next("welcome")
    await cy.send("join", room=room, name="Cy")
    await cy.next("welcome")
    await play.wait(500)
    await cy.send("leave")  # left the lobby: the seat goes
    await play.until(lambda r: "p3" not in r.race.players)
    await spectator.send("watch", room=room)
    await spectator.next("welcome")
    await ada.send("start", time_limit_s=30)
    await ada.next("countdown")
    await play.wait(50)  # the countdown's end: a tick
    await ada.next("started")
    await bob.next("started")
    line = [step.names() for step in record.moves]  # type: ignore[union-attr]
    for number, step in enumerate(line[:3], 1):
        await play.wait(1000)
        await ada.send("move", positions=step, id=number)
        await ada.next("moved")
    bob_game = Game.from_code(code)
    await play.wait(500)
    await bob.send("move", positions=first_move(bob_game), id=1)
    seq = (await bob.next("moved"))["seq"]
    await bob.close()  # Bob drops: a disconnect
    await play.until(lambda r: not r.race.players["p2"].connected)
    await play.wait(2000)
    bob = await play.connect("Bob again")
    await bob.send("resume", room=room, token=bob_welcome["token"], since=seq)
    await bob.next("welcome")
    await play.wait(500)
    await bob.send("undo", id=2)
    await bob.next("moved")
    await spectator.close()  # the spectator goes: an unwatch
    await play.until(lambda r: not r.state.watchers)
    await play.wait(1000)
    await bob.send("give_up")
    await bob.next("game_over")
    if play.manual:
        await play.wait(30_000)  # Ada's time is up: a tick ends her game and the race
    else:
        await ada.send("give_up")
    await ada.next("race_over")
    await play.until(lambda r: not r.busy)


async def sealed_rematch(play: Play) -> None:
    room = await play.new_room({})
    ada, bob = await play.connect("Ada"), await play.connect("Bob")
    await ada.send("join", room=room, name="Ada", entropy=ADA_ENTROPY)
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob", entropy=BOB_ENTROPY)
    await bob.next("welcome")
    for round_ in (1, 2):
        await ada.send("start", time_limit_s=600)
        await ada.next("countdown")
        await play.wait(50)
        await ada.next("started")
        await bob.next("started")
        await play.wait(1500)
        await bob.send("give_up")
        await bob.next("game_over")
        await play.wait(1000)
        await ada.send("give_up")
        await ada.next("race_over")
        await bob.next("race_over")
        await play.until(lambda r: not r.busy)
        if round_ == 1:
            await play.wait(2000)
            await ada.send("rematch", entropy="c3" * 16)
            await bob.next("rematch")
            await play.wait(500)
            await bob.send("accept", entropy="d4" * 16)
            await play.until(lambda r: len(r.race.players) == 2 and r.race.round == 2 and _all_in(r))


def _all_in(room: Room) -> bool:
    """Every racer of a rematch has accepted it (they are in its lobby)."""
    return all(str(racer.status) == "waiting" for racer in room.race.players.values())


async def daily(play: Play) -> None:
    ada = await play.connect("Ada")
    await ada.send("daily", name="Ada", player_key=PLAYER_KEY)
    welcome = await ada.next("welcome")
    play.room = welcome["room"]["room"]
    code = play.lobby_room().race.code
    assert code is not None
    await play.wait(3000)
    await ada.send("move", positions=first_move(Game.from_code(str(code))), id=1)
    await ada.next("moved")
    await play.wait(2000)
    await ada.send("give_up")
    await ada.next("race_over")
    await play.until(lambda r: not r.busy)


async def abandon(play: Play) -> None:
    room = await play.new_room({"code": SOLO_CODE})
    ada, bob = await play.connect("Ada"), await play.connect("Bob")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await ada.send("start")  # the default time limit
    await ada.next("countdown")
    await play.wait(50)
    await ada.next("started")
    await play.wait(1000)
    await ada.send("move", positions=first_move(Game.from_code(SOLO_CODE)), id=1)
    await ada.next("moved")
    for client, player in ((ada, "p1"), (bob, "p2")):  # both sockets close: disconnects, nobody is left
        await client.close()
        await play.until(lambda r, p=player: not r.race.players[p].connected)  # type: ignore[misc]
    await play.wait(61_000)  # past abandon_after_s: the ticker abandons the room, its racers have left
    await play.until(lambda r: str(r.race.phase) == "finished" and not r.busy)


Scenario = Callable[[Play], Awaitable[None]]
#: name → (play, what it shows, played on Redis too)
SCENARIOS: Final[dict[str, tuple[Scenario, str, bool]]] = {
    "solo": (solo, "a solo game (with a player key): a pair, a refused move, a triple, an undo, giving up", True),
    "race": (
        race,
        "an open race: three join (one with a player key), one leaves the lobby, a spectator watches; the start "
        "(30 s), the countdown's tick; moves; Bob drops, resumes with since, undoes; the spectator goes; Bob gives "
        "up; Ada's time runs out (a tick; on Redis, which keeps its own time, she gives up)",
        True,
    ),
    "sealed_rematch": (
        sealed_rematch,
        "a sealed race: contributions with the joins; both give up; a rematch (a new seed, the host's "
        "contribution) accepted with a contribution; the second race, both give up",
        True,
    ),
    "daily": (daily, "a daily attempt (with a player key): a move, giving up", True),
    "abandon": (abandon, "a race under way whose racers both drop: abandoned after a minute (both have left)", False),
}


# -- recording --------------------------------------------------------------------------------------


def as_json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples as lists)."""
    return json.loads(orjson.dumps(value))


def expectation(room: Room) -> dict[str, Any]:
    """What a room holds, at its log's time: what a replay of its log must rebuild."""
    race, now = room.race, room.state.last_time
    expected: dict[str, Any] = as_json(
        {
            "seq": room.seq,
            "applied": room.applied,
            "now": now,
            "tokens": dict(sorted(room.state.tokens.items())),
            "unstored": sorted(room.state.results.unstored),
            "snapshots": {pid: race.snapshot(pid, now, watcher=False).to_json() for pid in sorted(race.players)},
            "watcher": race.snapshot(None, now, watcher=True).to_json(),
        }
    )
    return expected


def exact(raw: bytes | str) -> Any:
    """A stored header or entry as JSON; orjson must encode it back to the very bytes stored."""
    raw = raw.encode() if isinstance(raw, str) else raw
    value = orjson.loads(raw)
    assert orjson.dumps(value) == raw, f"not orjson's compact encoding: {raw!r}"
    return value


def export_journal(path: Path, room_id: str) -> dict[str, Any]:
    """A room's rows of the journal, read with SQLite itself."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        [(header,)] = db.execute("SELECT header FROM rooms WHERE id = ?", (room_id,)).fetchall()
        rows = db.execute("SELECT n, entry FROM entries WHERE room = ? ORDER BY n", (room_id,)).fetchall()
    assert [n for n, _ in rows] == list(range(1, len(rows) + 1))
    return {"header": exact(header), "entries": [[n, exact(entry)] for n, entry in rows]}


async def export_redis(url: str, room_id: str) -> dict[str, Any]:
    """A room's log keys in Redis, as stored."""
    from redis.asyncio import Redis

    redis = Redis.from_url(url)
    try:
        header = await redis.get(f"hm:{{{room_id}}}:h")
        lines: list[Any] = await redis.lrange(f"hm:{{{room_id}}}:log", 0, -1)
    finally:
        await redis.aclose()
    assert header is not None
    items = []
    for line in lines:
        stamp, _, raw = line.partition(b" ")
        items.append([int(stamp), exact(raw)])
    return {f"hm:{{{room_id}}}:h": exact(header), f"hm:{{{room_id}}}:log": items}


@contextlib.asynccontextmanager
async def serving(data: Path, clock: Clock, **changes: Any) -> AsyncIterator[tuple[TestServer, aiohttp.ClientSession]]:
    # a finished room stays in memory (its live state is the expectation); a lobby nobody is in
    # is abandoned after a minute
    settings = make_settings(
        data, ManualClock(0), countdown_s=0.05, abandon_after_s=60, finished_hold_s=86_400, finished_ttl_s=172_800
    ).with_changes(clock=clock, **changes)
    server = TestServer(create_app(settings))
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            yield server, http
    finally:
        await server.close()


async def record(name: str, redis_url: str | None) -> dict[str, Any]:
    """Play one scenario and export its room's log and the live room."""
    play_with, about, _ = SCENARIOS[name]
    clock: Clock = ManualClock(START_MS) if redis_url is None else SystemClock()
    with tempfile.TemporaryDirectory() as folder, seeded_secrets(list(SCENARIOS).index(name)):
        data = Path(folder)
        changes = {} if redis_url is None else {"redis_url": redis_url}
        async with serving(data, clock, **changes) as (server, http):
            play = Play(server, http, clock, redis_url is None, [])
            try:
                await play_with(play)
            finally:
                for client in play.clients:
                    await client.close()  # (a player's: a disconnect, logged)
            await asyncio.sleep(0.2)  # the disconnects, and anything the ticker had under way
            expect = expectation(play.lobby_room())
        if redis_url is None:
            stored = export_journal(data / "journal.db", play.room)
        else:
            stored = await export_redis(redis_url, play.room)
    return {"about": about, "room": play.room, "stored": stored, "expect": expect}


@contextlib.contextmanager
def fresh_serials() -> Iterator[None]:
    """Origins numbered from 1 in each scenario (``<instance>:<n>``; the counter is the process's)."""
    import itertools

    from halfmoon_server.rooms import room as room_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(room_module, "_SERIALS", itertools.count(1))
        yield


async def build_journal() -> dict[str, Any]:
    rooms = {}
    for name in SCENARIOS:
        with fresh_serials():
            rooms[name] = await record(name, None)
    return {"format": FORMAT, "log": "journal", "rooms": rooms}


async def build_redis() -> dict[str, Any]:
    rooms = {}
    with tempfile.TemporaryDirectory() as folder:
        redis = await RedisServer(Path(folder)).start()
        try:
            for name, (_, _, on_redis) in SCENARIOS.items():
                if on_redis:
                    with fresh_serials():
                        rooms[name] = await record(name, redis.url)
        finally:
            redis.kill()
    return {"format": FORMAT, "log": "redis", "rooms": rooms}


def dumps(data: dict[str, Any]) -> str:
    """One entry a line, so a change reads as a small diff."""
    lines = ["{", f'"format": {json.dumps(data["format"])},', f'"log": {json.dumps(data["log"])},', '"rooms": {']
    rooms = list(data["rooms"].items())
    for i, (name, room) in enumerate(rooms):
        lines.append(f'{json.dumps(name)}: {{"about": {json.dumps(room["about"])}, "room": {json.dumps(room["room"])},')
        lines.append('"stored": {')
        parts = list(room["stored"].items())
        for j, (key, value) in enumerate(parts):
            comma = "," if j < len(parts) - 1 else ""
            if isinstance(value, list):
                items = [json.dumps(item, ensure_ascii=False) for item in value]
                lines.append(f"{json.dumps(key)}: [")
                lines.extend(item + ("," if k < len(items) - 1 else "") for k, item in enumerate(items))
                lines.append("]" + comma)
            else:
                lines.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{comma}")
        lines.append("},")
        expect = room["expect"]
        lines.append('"expect": {')
        keys_ = list(expect)
        for j, key in enumerate(keys_):
            comma = "," if j < len(keys_) - 1 else ""
            lines.append(f"{json.dumps(key)}: {json.dumps(expect[key], ensure_ascii=False)}{comma}")
        lines.append("}}" + ("," if i < len(rooms) - 1 else ""))
    lines.extend(["}", "}"])
    return "\n".join(lines) + "\n"


async def main() -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    JOURNAL_PATH.write_text(dumps(await build_journal()), encoding="utf-8")
    print(f"wrote {JOURNAL_PATH}")
    if RedisServer.binary() is None:
        print("no redis-server: redis.json not written")
        return
    REDIS_PATH.write_text(dumps(await build_redis()), encoding="utf-8")
    print(f"wrote {REDIS_PATH}")


if __name__ == "__main__":
    asyncio.run(main())
