"""The room shell (:mod:`halfmoon_server.rooms.room`) against doubles of its ports: what it
promises about the log and the database, deterministically (no PostgreSQL, no Redis, no signal)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Any

import orjson
import pytest

from halfmoon.game import Game
from halfmoon.protocol import Mode
from halfmoon_server.adapters.journal import MemoryLog
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.commands import room_header
from halfmoon_server.core.race import RaceConfig
from halfmoon_server.core.room_state import STORE, ResultJob
from halfmoon_server.errors import Refusal, StorageError
from halfmoon_server.ports import FinishedGame
from halfmoon_server.rooms import results
from halfmoon_server.rooms.results import Recorder
from halfmoon_server.rooms.room import BackgroundTasks, Room, RoomServices
from tests.server.delegating import Delegating
from tests.server.support import T0, illegal_move, won_record

CODE = str(won_record().code)


class Box:
    """An outbox that keeps the frames it is sent."""

    def __init__(self) -> None:
        self.room: str | None = None
        self.player_id: str | None = None
        self.frames: list[dict[str, Any]] = []

    @property
    def closed(self) -> bool:
        return False

    def send(self, frame: bytes) -> None:
        self.frames.append(orjson.loads(frame))

    def close(self, code: int, reason: str) -> None:
        raise AssertionError(f"closed: {code} {reason}")

    def kinds(self) -> list[str]:
        return [frame["type"] for frame in self.frames]


class HeldLog(Delegating):
    """A memory log whose appends wait, before committing anything, until :attr:`gate` is opened."""

    def __init__(self) -> None:
        super().__init__(MemoryLog())
        self.gate = asyncio.Event()
        self.waiting = 0

    async def append(self, room_id: str, entry: dict[str, Any]) -> int:
        self.waiting += 1
        await self.gate.wait()
        self.waiting -= 1
        result: int = await self.inner.append(room_id, entry)
        return result


class FlakyStorage(MemoryStorage):
    """A database that fails its first ``failures`` writes, then works."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.attempts = 0

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise StorageError("the database is down")
        await super().save_game(game, game_id)


class HeldStorage(MemoryStorage):
    """A database that is up but slow: each write waits until :attr:`gate` is opened."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.waiting = 0

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        self.waiting += 1
        await self.gate.wait()
        self.waiting -= 1
        await super().save_game(game, game_id)


class SlowAckLog(Delegating):
    """A memory log that applies a ``recorded`` at once but answers its append only once
    :attr:`gate` is opened (a slow acknowledgement: a Redis ``WAIT`` for a replica)."""

    def __init__(self) -> None:
        super().__init__(MemoryLog())
        self.gate = asyncio.Event()
        self.gate.set()

    async def append(self, room_id: str, entry: dict[str, Any]) -> int:
        number: int = await self.inner.append(room_id, entry)
        if entry["k"] == "recorded":
            await self.gate.wait()
        return number


async def _room(
    log: MemoryLog, clock: ManualClock, storage: MemoryStorage | None = None, *, version: int | None = None
) -> Room:
    """A solo room on ``log``; ``version``: its header's log format (None: this release's)."""
    header = room_header("K7WQ2M", Mode.SOLO, CODE, created_at=clock.now_ms(), nonce="n0nce", daily_day=None)
    header["config"] = asdict(RaceConfig())
    if version is not None:
        header["v"] = version
    services = RoomServices(clock, log, Recorder(storage or MemoryStorage()), BackgroundTasks())
    assert await log.create(header)
    room = Room(header, services)
    log.follow(room)
    return room


async def _seated(room: Room) -> tuple[str, Box]:
    box = Box()
    await room.submit({"k": "single", "n": "Ada", "tok": "t0ken", "r": True}, box)
    assert box.player_id is not None and box.kinds() == ["welcome"]
    return box.player_id, box


async def test_moved_is_never_sent_before_the_log_has_committed_the_move() -> None:
    clock = ManualClock(T0)
    log = HeldLog()
    log.gate.set()
    room = await _room(log, clock)
    player, box = await _seated(room)
    sent = len(box.frames)
    log.gate.clear()  # the log holds its next commit
    names = next(Game.from_code(CODE).legal_moves()).names()
    move = asyncio.create_task(room.submit({"k": "move", "p": player, "m": names}, box, msg_id=7))
    for _ in range(20):
        await asyncio.sleep(0)
    assert log.waiting == 1 and not move.done()
    assert box.frames[sent:] == [], "a frame went out before the log committed the move"
    assert log.entries[room.id][-1]["k"] != "move" and room.applied == len(log.entries[room.id])
    log.gate.set()
    await move
    assert [f["type"] for f in box.frames[sent:]] == ["moved"] and box.frames[-1]["id"] == 7
    assert log.entries[room.id][-1]["k"] == "move"
    room.close_timer()


async def test_a_refused_command_is_never_written_to_the_log() -> None:
    clock = ManualClock(T0)
    log = MemoryLog()
    room = await _room(log, clock)
    player, box = await _seated(room)
    before = list(log.entries[room.id])
    bad = illegal_move(Game.from_code(CODE)).names()
    refused: list[tuple[dict[str, Any], str]] = [
        ({"k": "move", "p": player, "m": bad}, "illegal_move"),
        ({"k": "move", "p": "p9", "m": bad}, "not_in_room"),
        ({"k": "undo", "p": player}, "nothing_to_undo"),
        ({"k": "start", "p": player}, "race_started"),
        ({"k": "join", "n": "Bob", "tok": "t1"}, "race_started"),
    ]
    codes = []
    for entry, _ in refused:
        with pytest.raises(Refusal) as refusal:
            await room.submit(entry, box)
        codes.append(refusal.value.code)
    assert codes == [code for _, code in refused]
    assert log.entries[room.id] == before, "a refused command reached the log"
    assert room.applied == len(before)
    room.close_timer()


async def test_a_failed_result_write_is_retried_with_backoff_and_lands_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "PROBE_EVERY_S", 3600.0)  # (no early wake-up: the backoff alone)
    clock = ManualClock(T0)
    log = MemoryLog()
    storage = FlakyStorage(failures=3)
    room = await _room(log, clock, storage)
    player, box = await _seated(room)
    tasks = room.services.tasks
    await room.submit({"k": "give_up", "p": player}, box)
    await tasks.settle()
    assert storage.attempts == 1  # the first write failed at once ...
    assert "game_over" in box.kinds(), "... and game_over did not wait for it"
    assert room.state.results.unstored == {player} and room.state.results.busy
    for wait in (500, 1_000, 2_000):  # tried again after each backoff, and not before
        clock.advance(wait - 1)
        attempts = storage.attempts
        await room.tick()
        await tasks.settle()
        assert storage.attempts == attempts, f"tried again before its {wait} ms"
        clock.advance(1)
        await room.tick()
        await tasks.settle()
        assert storage.attempts == attempts + 1, f"not tried again after {wait} ms"
    assert room.state.results.unstored == set() and not room.busy
    assert list(storage.games) == [room.state.game_id(player)]
    assert [e["k"] for e in log.entries[room.id]] == ["single", "give_up", "stored"]
    for _ in range(3):  # nothing is tried again once it has landed
        clock.advance(60_000)
        await room.tick()
        await tasks.settle()
    assert storage.attempts == 4
    await room.services.recorder.close()
    room.close_timer()


async def test_game_over_goes_out_with_the_entry_that_ends_the_game_while_the_database_writes_it() -> None:
    """The game's id is fixed up front: the entry that ends the game records it — the player's
    ``game_over`` is among that entry's frames, before any other task has run — and the write
    follows and logs ``stored``, the room kept until it has."""
    clock = ManualClock(T0)
    log = MemoryLog()
    storage = HeldStorage()
    room = await _room(log, clock, storage)
    player, box = await _seated(room)
    events = await room.submit({"k": "give_up", "p": player}, box)
    assert [type(event).__name__ for event in events] == ["PlayerChanged", "GameEnded", "GameOver", "RaceOver"]
    assert box.kinds()[-2:] == ["game_over", "race_over"], "the end waited for more than its entry"
    over = box.frames[-2]
    assert over["game"] == room.state.game_id(player) and storage.games == {}
    assert [e["k"] for e in log.entries[room.id]] == ["single", "give_up"], "the game's end took a second entry"
    assert room.busy, "the room is the game's outbox until the database has it"
    async with asyncio.timeout(2.0):
        while storage.waiting == 0:
            await asyncio.sleep(0)
    storage.gate.set()
    await room.services.tasks.settle()
    assert list(storage.games) == [over["game"]] and not room.busy
    assert [e["k"] for e in log.entries[room.id]] == ["single", "give_up", "stored"]
    await room.services.recorder.close()
    room.close_timer()


async def test_a_room_of_an_older_log_format_records_each_game_with_an_entry_of_its_own() -> None:
    """A room created by a release before games were recorded by the entry that ends them (log
    format 1), still live after an upgrade, goes on as its log began: the game's end, then its
    ``recorded`` (``game_over`` goes out with it), then the write and ``stored`` — so every
    instance and every replay of that log agrees."""
    clock = ManualClock(T0)
    log = MemoryLog()
    storage = HeldStorage()
    room = await _room(log, clock, storage, version=1)
    player, box = await _seated(room)
    events = await room.submit({"k": "give_up", "p": player}, box)
    assert [type(event).__name__ for event in events] == ["PlayerChanged", "GameEnded"]
    assert "game_over" not in box.kinds()
    async with asyncio.timeout(2.0):
        while storage.waiting == 0:
            await asyncio.sleep(0)
    assert box.kinds()[-2:] == ["game_over", "race_over"] and storage.games == {}
    assert [e["k"] for e in log.entries[room.id]] == ["single", "give_up", "recorded"]
    storage.gate.set()
    await room.services.tasks.settle()
    assert list(storage.games) == [room.state.game_id(player)] and not room.busy
    assert [e["k"] for e in log.entries[room.id]] == ["single", "give_up", "recorded", "stored"]
    await room.services.recorder.close()
    room.close_timer()


async def test_a_rematch_before_the_recording_returns_stores_the_game_as_it_ended_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The game to write is taken when the game is recorded: in a room of log format 1 (its
    games recorded by entries of their own), a rematch applied while the ``recorded`` append is
    still to answer replaces the race, not the game written."""
    clock = ManualClock(T0)
    log = SlowAckLog()
    storage = MemoryStorage()
    header = room_header("K7WQ2M", Mode.RACE, CODE, created_at=clock.now_ms(), nonce="n0nce", daily_day=None)
    header["config"] = asdict(RaceConfig())
    header["v"] = 1
    room = Room(header, RoomServices(clock, log, Recorder(storage), BackgroundTasks()))
    assert await log.create(header)
    log.follow(room)
    box = Box()
    await room.submit({"k": "join", "n": "Ada", "tok": "t0ken"}, box)
    player = box.player_id
    assert player is not None
    await room.submit({"k": "start", "p": player}, box)
    clock.advance(10_000)
    await room.tick()
    log.gate.clear()
    await room.submit({"k": "give_up", "p": player}, box)
    for _ in range(50):
        await asyncio.sleep(0)
    assert "race_over" in box.kinds()
    ended = room.state.game_id(player), room.race.players[player].game
    await room.submit({"k": "rematch", "p": player, "seed": "ab" * 32}, box)
    log.gate.set()
    await room.services.tasks.settle()
    assert list(storage.games) == [ended[0]]
    assert storage.games[ended[0]].moves == 0 and ended[1] is not room.race.players[player].game
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    # a write job of that game started late (spawned before the rematch parked it) leaves it to
    # the parked game's own job: nothing written of the new race's seat, which has no game
    assert await room._store(ResultJob(STORE, player)) is False
    assert list(storage.games) == [ended[0]]
    room.close_timer()


async def test_a_waiting_write_is_tried_at_once_when_the_database_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backoff is for a database that stays down: once the recorder sees it answer again,
    the next tick tries every waiting game, however far its backoff had grown."""
    monkeypatch.setattr(results, "PROBE_EVERY_S", 0.01)
    clock = ManualClock(T0)
    storage = FlakyStorage(failures=1)
    storage_up = asyncio.Event()

    async def ping() -> None:  # the database answers its probe only once it is back
        if not storage_up.is_set():
            raise StorageError("the database is down")

    monkeypatch.setattr(storage, "ping", ping)
    room = await _room(MemoryLog(), clock, storage)
    player, box = await _seated(room)
    await room.submit({"k": "give_up", "p": player}, box)
    await room.services.tasks.settle()
    assert storage.attempts == 1 and room.state.results.unstored == {player}
    await room.tick()  # the clock has not moved: the backoff holds the retry
    await room.services.tasks.settle()
    assert storage.attempts == 1
    storage_up.set()
    async with asyncio.timeout(2.0):
        while room.services.recorder.recoveries == 0:
            await asyncio.sleep(0.01)
    await room.tick()  # still not a millisecond later
    await room.services.tasks.settle()
    assert storage.attempts == 2 and room.state.results.unstored == set()
    assert list(storage.games) == [room.state.game_id(player)]
    await room.services.recorder.close()
    room.close_timer()


async def test_no_refused_command_of_any_kind_the_room_checks_reaches_the_log() -> None:
    """Every kind the shell checks before appending — a give-up, a rematch, an accept and a watch
    as well as a move, an undo, a start and a join — is kept out of the log when refused: each
    is refused here and the log stays as it was."""
    clock = ManualClock(T0)
    log = MemoryLog()
    room = await _room(log, clock)
    player, box = await _seated(room)
    await room.submit({"k": "give_up", "p": player}, box)
    await room.services.tasks.settle()
    before = list(log.entries[room.id])
    refused: list[tuple[dict[str, Any], str]] = [
        ({"k": "give_up", "p": player}, "not_playing"),  # over already
        ({"k": "give_up", "p": None}, "not_playing"),  # a spectator
        ({"k": "rematch", "p": player}, "no_rematch"),  # a solo game has none
        ({"k": "accept", "p": player}, "no_rematch"),
    ]
    for entry, code in refused:
        with pytest.raises(Refusal) as refusal:
            await room.submit(dict(entry), Box())
        assert refusal.value.code == code, entry
    assert log.entries[room.id] == before, "a refused command reached the log"
    await room.services.recorder.close()
    room.close_timer()

    daily_log = MemoryLog()
    header = room_header("D4ILY1", Mode.DAILY, CODE, created_at=clock.now_ms(), nonce="n0nce", daily_day="2026-12-06")
    header["config"] = asdict(RaceConfig())
    header["salt"] = "5a1t"
    services = RoomServices(clock, daily_log, Recorder(MemoryStorage()), BackgroundTasks())
    assert await daily_log.create(header)
    daily = Room(header, services)
    daily_log.follow(daily)
    with pytest.raises(Refusal) as refusal:
        await daily.submit({"k": "watch"}, Box())
    assert refusal.value.code == "private_room"
    assert daily_log.entries[daily.id] == [], "a refused watch reached the log"
    daily.close_timer()


async def test_a_resume_by_a_player_a_rematch_left_out_is_refused_and_never_logged() -> None:
    """Bob leaves mid-race; Ada proposes a rematch, which does not ask back who left. Bob's old
    token then resumes (what ``resume`` does: the seat its token holds, then ``connect``): it is
    refused — as ``bad_token`` (no seat holds it any more) or by the check before the log — and
    the log stays as it was, however often it is tried."""
    clock = ManualClock(T0)
    log = MemoryLog()
    header = room_header("R4CE01", Mode.RACE, CODE, created_at=clock.now_ms(), nonce="n0nce", daily_day=None)
    header["config"] = asdict(RaceConfig(countdown_ms=0))
    services = RoomServices(clock, log, Recorder(MemoryStorage()), BackgroundTasks())
    assert await log.create(header)
    room = Room(header, services)
    log.follow(room)
    ada, bob = Box(), Box()
    await room.submit({"k": "join", "n": "Ada", "tok": "t1"}, ada)
    await room.submit({"k": "join", "n": "Bob", "tok": "t2"}, bob)
    assert ada.player_id is not None and bob.player_id is not None
    await room.submit({"k": "start", "p": ada.player_id, "lim": None})
    clock.advance(10)
    await room.tick()
    room.detach(bob.player_id, bob)  # Bob leaves mid-race (as the transport does it)
    await room.submit({"k": "leave", "p": bob.player_id}, bob)
    await room.submit({"k": "give_up", "p": ada.player_id})
    await services.tasks.settle()
    await room.submit({"k": "rematch", "p": ada.player_id, "seed": "ab" * 32})
    assert bob.player_id not in room.race.players and bob.player_id not in room.race.seated
    before = list(log.entries[room.id])
    for _ in range(3):
        seat = room.player_with_token("t2")
        if seat is None:
            continue  # refused as bad_token before anything is logged
        with pytest.raises(Refusal):
            await room.submit({"k": "connect", "p": seat, "since": None, "tok": "t2"}, Box())
    assert log.entries[room.id] == before, "a refused resume reached the log"
    await services.recorder.close()
    room.close_timer()


async def _race_room(clock: ManualClock, storage: MemoryStorage) -> tuple[Room, MemoryLog, str, Box]:
    """A running race of one (Ada, its host) with a 30 s time limit, on a memory log."""
    log = MemoryLog()
    header = room_header("K7WQ2M", Mode.RACE, CODE, created_at=clock.now_ms(), nonce="n0nce", daily_day=None)
    header["config"] = asdict(RaceConfig())
    room = Room(header, RoomServices(clock, log, Recorder(storage), BackgroundTasks()))
    assert await log.create(header)
    log.follow(room)
    box = Box()
    await room.submit({"k": "join", "n": "Ada", "tok": "t0ken"}, box)
    assert box.player_id is not None
    await room.submit({"k": "start", "p": box.player_id, "lim": 30}, box)
    clock.advance(10_000)
    await room.tick()  # the countdown's end
    return room, log, box.player_id, box


async def test_a_deadline_settled_before_an_entry_that_means_nothing_still_gets_its_games_written() -> None:
    """The time limit passed, and the next entry is one the room ignores (a disconnect from a
    connection that no longer holds the seat): the games the deadline ended are written at once,
    not at the ticker's next round."""
    clock = ManualClock(T0)
    storage = MemoryStorage()
    room, _log, player, box = await _race_room(clock, storage)
    clock.advance(45_000)
    events = await room.submit({"k": "disconnect", "p": player, "h": "gone:1"})
    assert events == [] and "game_over" in box.kinds()
    await room.services.tasks.settle()
    assert list(storage.games) == [room.state.game_id(player)] and not room.busy
    room.close_timer()


async def test_a_leave_that_ends_no_game_leaves_no_departing_connection_behind() -> None:
    """A player whose game is over who leaves is told nothing more: their connection is not kept
    for a later race's ``game_over`` (after a rematch it could reach a connection now elsewhere)."""
    clock = ManualClock(T0)
    room, _log, player, box = await _race_room(clock, MemoryStorage())
    await room.submit({"k": "give_up", "p": player}, box)
    assert "game_over" in box.kinds() and not room.departing
    await room.submit({"k": "leave", "p": player}, box)
    assert not room.departing, "a finished player's leave kept their connection"
    room.close_timer()


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("ended_by", ["the leave", "the time limit"])
async def test_a_player_who_leaves_a_race_hears_how_their_game_ended_once(version: int, ended_by: str) -> None:
    """A leave ends a player's game (or the time limit, passed just before it, did): their
    connection, already out of the room's members, still gets that game's ``game_over`` — sent
    with the leave in a log of format 2, with the ``recorded`` that follows in format 1 — and is
    not kept once it has."""
    clock = ManualClock(T0)
    log = MemoryLog()
    header = room_header("K7WQ2M", Mode.RACE, CODE, created_at=clock.now_ms(), nonce="n0nce", daily_day=None)
    header["config"], header["v"] = asdict(RaceConfig()), version
    room = Room(header, RoomServices(clock, log, Recorder(MemoryStorage()), BackgroundTasks()))
    assert await log.create(header)
    log.follow(room)
    ada, bob = Box(), Box()
    await room.submit({"k": "join", "n": "Ada", "tok": "t0ken"}, ada)
    await room.submit({"k": "join", "n": "Bob", "tok": "t1ken"}, bob)
    player = ada.player_id
    assert player is not None
    await room.submit({"k": "start", "p": player, "lim": 30}, ada)
    clock.advance(10_000)
    await room.tick()
    if ended_by == "the time limit":
        clock.advance(45_000)
    room.detach(player, ada)  # as the WebSocket's leave does: out of the members first
    ada.room = None
    await room.submit({"k": "leave", "p": player}, ada)
    await room.services.tasks.settle()
    assert ada.kinds().count("game_over") == 1, ada.kinds()
    assert not room.departing
    room.close_timer()


async def test_a_refused_command_after_a_deadline_passed_still_gets_the_games_it_ended_written() -> None:
    """The time limit passed, and the next command is refused (a move in a game the limit ended):
    the deadline's games are settled first, told, and written at once."""
    clock = ManualClock(T0)
    storage = MemoryStorage()
    room, _log, player, box = await _race_room(clock, storage)
    clock.advance(45_000)
    move = next(iter(Game.from_code(CODE).legal_moves())).names()
    with pytest.raises(Refusal):
        await room.submit({"k": "move", "p": player, "m": move}, box)
    assert "game_over" in box.kinds()
    await room.services.tasks.settle()
    assert list(storage.games) == [room.state.game_id(player)]
    room.close_timer()
