"""The room shell's snapshots and its log's cap (:mod:`halfmoon_server.rooms.room`,
:mod:`halfmoon_server.rooms.lobby`): a room stores its snapshot every ``snapshot_every`` entries
beside its log, off the move's path (a write that fails or hangs never holds a move back, and is
tried again later); a load starts from the latest snapshot and replays only the entries after
it, to the room a whole replay gives (its events' numbering too); a room refuses entries past
``max_entries`` with ``room_log_full`` (changing nothing) and still takes what ends it."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Any

import orjson
import pytest

from halfmoon.protocol import Mode
from halfmoon_server.adapters.journal import MemoryLog
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.commands import room_header
from halfmoon_server.core.race import RaceConfig
from halfmoon_server.core.snapshots import take_snapshot
from halfmoon_server.errors import LogUnavailable, Refusal
from halfmoon_server.rooms.results import Recorder
from halfmoon_server.rooms.room import BackgroundTasks, Room, RoomServices
from tests.server.delegating import Delegating
from tests.server.support import T0, won_record

RECORD = won_record()
CODE = str(RECORD.code)
FIRST = RECORD.moves[0].names()  # type: ignore[union-attr]


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


def services(log: MemoryLog, clock: ManualClock, **changes: Any) -> RoomServices:
    return RoomServices(clock, log, Recorder(MemoryStorage()), BackgroundTasks(), **changes)


async def solo_room(log: MemoryLog, clock: ManualClock, **changes: Any) -> tuple[Room, str]:
    header = room_header("K7WQ2M", Mode.SOLO, CODE, created_at=clock.now_ms(), nonce="n0nce", daily_day=None)
    header["config"] = asdict(RaceConfig())
    assert await log.create(header)
    room = Room(header, services(log, clock, **changes))
    log.follow(room)
    box = Box()
    await room.submit({"k": "single", "n": "Ada", "tok": "t0ken", "r": True}, box)
    assert box.player_id is not None
    return room, box.player_id


async def pairs(room: Room, player: str, count: int, clock: ManualClock) -> None:
    """``count`` move/undo pairs through the room's real path (``submit``), the loop turning
    between them (as between a client's messages)."""
    for _ in range(count):
        clock.advance(10)
        await room.submit({"k": "move", "p": player, "m": FIRST})
        await room.submit({"k": "undo", "p": player})
        await asyncio.sleep(0)


def loaded_room(header: dict[str, Any], snapshot: dict[str, Any] | None, entries: list[Any], svc: RoomServices) -> Room:
    room = Room(header, svc)
    if snapshot is not None:
        room.restore(snapshot)
    room.rebuild(entries, live=False)
    return room


def picture(room: Room) -> dict[str, Any]:
    now = room.clock.now_ms()
    views = {pid: room.race.snapshot(pid, now, watcher=False).to_json() for pid in room.race.players}
    views["reader"] = room.race.snapshot(None, now, watcher=False).to_json()
    views["spectator"] = room.race.snapshot(None, now, watcher=True).to_json()
    return {"state": take_snapshot(room.state), "seq": room.seq, "applied": room.applied, "views": views}


async def test_a_room_keeps_a_snapshot_every_k_entries_and_loads_from_it_to_the_same_room() -> None:
    clock = ManualClock(T0)
    log = MemoryLog()
    room, player = await solo_room(log, clock, snapshot_every=50)
    await pairs(room, player, 130, clock)  # 261 entries
    await room.services.tasks.settle()
    base = log.snapshots[room.id][0]
    assert 261 - 50 < base <= 261, "a snapshot at most one interval behind"
    assert room.snapshot_at == base

    loaded = await log.load(room.id)
    assert loaded is not None and loaded.base == base and len(loaded.entries) == 261 - base
    whole = await log.load(room.id, snapshot=False)
    assert whole is not None and whole.snapshot is None and len(whole.entries) == 261
    svc = services(log, clock, snapshot_every=50)
    from_snapshot = loaded_room(loaded.header, loaded.snapshot, loaded.entries, svc)
    replayed = loaded_room(whole.header, None, whole.entries, svc)
    assert picture(from_snapshot) == picture(replayed) == picture(room)
    assert from_snapshot.seq == room.seq > 250, "the events' numbering goes on where it was"

    # and the game goes on from there: the same next events on both
    for copy_ in (from_snapshot, replayed):
        copy_.deliver(262, {"k": "move", "p": player, "m": FIRST, "t": clock.now_ms()})
    assert picture(from_snapshot) == picture(replayed)


class FailingSnapshots(Delegating):
    """A memory log whose snapshot writes fail (``failures`` of them), or hang until ``gate`` opens."""

    def __init__(self, failures: int = 0, *, hang: bool = False) -> None:
        super().__init__(MemoryLog())
        self.failures = failures
        self.tries = 0
        self.gate = asyncio.Event()
        if not hang:
            self.gate.set()

    async def save_snapshot(self, room_id: str, number: int, snapshot: dict[str, Any]) -> None:
        self.tries += 1
        await self.gate.wait()
        if self.tries <= self.failures:
            raise LogUnavailable("the log is down")
        await self.inner.save_snapshot(room_id, number, snapshot)


async def test_a_snapshot_that_hangs_holds_no_move_back() -> None:
    clock = ManualClock(T0)
    log = FailingSnapshots(hang=True)
    room, player = await solo_room(log, clock, snapshot_every=10)
    async with asyncio.timeout(5):
        await pairs(room, player, 40, clock)  # every move answered while the first write hangs
    assert log.tries == 1, "one write at a time"
    assert room.id not in log.snapshots
    log.gate.set()
    await room.services.tasks.settle()
    assert 10 <= log.snapshots[room.id][0] <= 14, "the state as it stood soon after entry 10, not later"


async def test_a_snapshot_that_fails_is_logged_and_tried_again_later(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock(T0)
    log = FailingSnapshots(failures=1)
    room, player = await solo_room(log, clock, snapshot_every=10)
    await pairs(room, player, 10, clock)  # 21 entries: a write at entry 10, which fails
    await room.services.tasks.settle()
    assert log.tries == 1 and room.id not in log.snapshots
    assert "its snapshot could not be stored" in caplog.text
    await pairs(room, player, 2, clock)  # within the retry's wait: not tried again yet
    await room.services.tasks.settle()
    assert log.tries == 1
    clock.advance(10_000)
    await pairs(room, player, 1, clock)
    await room.services.tasks.settle()
    assert log.tries == 2 and log.snapshots[room.id][0] >= 26, "tried again at a later entry"


async def test_past_the_cap_a_room_refuses_new_commands_and_still_takes_what_ends_it() -> None:
    clock = ManualClock(T0)
    log = MemoryLog()
    room, player = await solo_room(log, clock, max_entries=21)
    await pairs(room, player, 10, clock)  # 21 entries: full
    before = (len(log.entries[room.id]), take_snapshot(room.state))
    for command in ({"k": "move", "p": player, "m": FIRST}, {"k": "undo", "p": player}, {"k": "watch"}):
        with pytest.raises(Refusal) as refused:
            await room.submit(dict(command), Box())
        assert refused.value.code == "room_log_full"
        assert "full" in refused.value.message
    assert (len(log.entries[room.id]), take_snapshot(room.state)) == before, "a refused command changes nothing"
    await room.submit({"k": "give_up", "p": player})  # what ends the room is still taken
    await room.services.tasks.settle()  # ... and the game is recorded with it and stored (the room's own entry)
    assert [e["k"] for e in log.entries[room.id][-3:]] == ["undo", "give_up", "stored"]
    assert not room.race.unrecorded


async def test_a_copy_read_from_a_long_log_lets_the_loop_run_between_slices() -> None:
    """``Room.replay`` (a REST read of a room with no snapshot yet) yields to the loop."""
    clock = ManualClock(T0)
    log = MemoryLog()
    room, player = await solo_room(log, clock, snapshot_every=0)
    await pairs(room, player, 300, clock)
    whole = await log.load(room.id)
    assert whole is not None and whole.snapshot is None
    turns = 0

    async def count() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.get_running_loop().create_task(count())
    copy_ = Room(whole.header, services(log, clock))
    await copy_.replay(whole.entries)
    counter.cancel()
    assert picture(copy_) == picture(room)
    assert turns >= len(whole.entries) // 50 - 1, turns
