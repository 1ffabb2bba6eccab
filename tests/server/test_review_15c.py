"""Review 15c of the session after 88a40fb: the journal's own thread (and a checkpointer, removed), the young
generation's threshold (``--gc-young``) and the garbage collections' probe.

Each test here states a guarantee the changes were meant to keep, and failed when written:

- the write-ahead log stays bounded while moves keep coming, and under a bursty load (a
  checkpointer thread beside the writer, tried in this session and removed, let it grow by
  everything written);
- a move appended to a closed journal is refused (``LogUnavailable``), not left waiting for ever;
- two applications in one process (the tests) give the process its thresholds back whatever
  order they close in;
- ``--gc-young`` is refused by the settings when ``gc.set_threshold`` cannot take it, not by a
  crash at start;
- cyclic garbage made between two freezes is collected, not frozen until the full collection
  15 minutes later (``gc.freeze()`` every 2 s resets the young count: at 50,000 no young
  collection is ever reached)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import weakref
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from halfmoon_server.adapters.journal import JournalLog
from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import LogUnavailable, SettingsError
from halfmoon_server.settings import Settings
from halfmoon_server.web import keys
from halfmoon_server.web.app import _freeze_gc, create_app
from tests.server.adapters.test_journal import _Room
from tests.server.support import make_settings

PAGE = 4096
#: SQLite's own automatic checkpoint (what the writer did before): at 1,000 pages of log
AUTOCHECKPOINT_BYTES = 1000 * PAGE


def _wal_size(path: Path) -> int:
    try:
        return os.path.getsize(f"{path}-wal")
    except FileNotFoundError:
        return 0


def _wal_restarts(path: Path) -> int:
    """The write-ahead log's checkpoint sequence number (its header's bytes 12-15): SQLite adds
    one each time the log restarts from its beginning."""
    with open(f"{path}-wal", "rb") as wal:
        header = wal.read(32)
    return int.from_bytes(header[12:16], "big") if len(header) == 32 else 0


async def _steady_load(journal: JournalLog, seconds: float, rooms: int = 40, pad: int = 1500) -> int:
    """Moves from ``rooms`` rooms, each appending again as soon as its last entry is committed,
    for ``seconds``: the group commit never pauses for long. Returns the bytes of entries committed."""
    players: list[Any] = [_Room(f"R{i:03d}") for i in range(rooms)]  # (Room, as the journal sees it)
    for room in players:
        assert await journal.create({"room": room.id, "v": 1})
    stop = asyncio.Event()
    filler = "x" * pad

    async def play(room: Any) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            await journal.append(room, {"k": "move", "n": n, "pad": filler})

    tasks = [asyncio.create_task(play(room)) for room in players]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks)
    for room in players:
        assert [number for number, _ in room.delivered] == list(range(1, len(room.delivered) + 1))
    return sum(len(room.delivered) for room in players) * pad


async def test_the_write_ahead_log_stays_bounded_while_moves_keep_coming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found with a checkpointer thread beside the writer (since removed): a PASSIVE checkpoint
    copies the frames committed when it began, and SQLite restarts the log only when a write
    transaction begins with every frame copied; the writer committed again while each
    checkpoint ran, so under a steady load the log grew by everything written (595-766 MiB in
    4 s). The writer's own checkpoint runs between two commits: the log restarts every 1,000
    pages."""
    path = tmp_path / "journal.db"
    journal = JournalLog(path)
    await journal.open()
    try:
        written = await _steady_load(journal, seconds=4.0)
        wal, restarts = _wal_size(path), _wal_restarts(path)
        assert written > 6 * AUTOCHECKPOINT_BYTES, f"the load was too light to show it ({written} bytes)"
        # (at 88a40fb, the same load: 4.5 MiB of log after ~50 MiB of entries, 127 restarts; a
        # checkpoint from the writer's thread between two commits every 0.05 s: 19 MiB, 76)
        assert restarts >= 3 and wal < written / 2, (
            f"the write-ahead log is {wal / 2**20:.1f} MiB after {written / 2**20:.1f} MiB of entries, "
            f"restarted {restarts} times"
        )
    finally:
        await journal.close()


async def test_the_write_ahead_log_stays_bounded_under_a_bursty_load(tmp_path: Path) -> None:
    """Commits with pauses between them: the log is checkpointed and restarted all the same (with
    the checkpointer thread, one that could not connect left the log growing by every commit)."""
    path = tmp_path / "journal.db"
    journal = JournalLog(path)
    await journal.open()
    try:
        written = 0
        for round_ in range(80):  # commits with pauses between them: a light, bursty load
            room: Any = _Room(f"B{round_:03d}")
            assert await journal.create({"room": room.id, "v": 1})
            await asyncio.gather(*(journal.append(room, {"k": "move", "n": n, "pad": "y" * 3000}) for n in range(60)))
            written += 60 * 3000
            await asyncio.sleep(0.02)
        wal = _wal_size(path)
        assert written > 2 * AUTOCHECKPOINT_BYTES
        assert wal <= 2 * AUTOCHECKPOINT_BYTES, (
            f"the write-ahead log is {wal / 2**20:.1f} MiB after {written / 2**20:.1f} MiB of entries: "
            "nothing checkpoints it"
        )
    finally:
        await journal.close()


async def test_a_move_appended_to_a_closed_journal_is_refused_not_left_waiting(tmp_path: Path) -> None:
    """After ``close()`` the journal's thread has stopped: ``_Worker.submit`` raises RuntimeError,
    which ``_run`` does not turn into LogUnavailable. In ``append`` it ends the writer task
    ("Task exception was never retrieved") and the mover's future is never settled: the move
    hangs for ever instead of being refused ``unavailable`` (a room's background task that
    outlived shutdown's 10 s, a late message). Every other call got the RuntimeError. (Fixed:
    ``submit`` on a closed journal raises LogUnavailable.)"""
    journal = JournalLog(tmp_path / "journal.db")
    await journal.open()
    room: Any = _Room("R1")
    assert await journal.create({"room": room.id, "v": 1})
    await journal.append(room, {"k": "move", "n": 1})
    await journal.close()
    outcome: BaseException | None = None
    try:
        async with asyncio.timeout(2):
            await journal.append(room, {"k": "move", "n": 2})
    except BaseException as exc:  # what it raised, for the assertion
        outcome = exc
    assert isinstance(outcome, LogUnavailable), f"append after close: {outcome!r} (TimeoutError: it hung)"
    with pytest.raises(LogUnavailable):
        await journal.ping()


async def test_two_applications_in_one_process_give_the_thresholds_back_in_any_order(tmp_path: Path) -> None:
    """app.py `_freeze_gc` saves the thresholds it found and restores them at its cleanup: the
    first application to close restores the process's thresholds under the one still running,
    and the last one restores the first one's — the process keeps 11,111 after both closed."""
    before = gc.get_threshold()
    one = TestServer(create_app(make_settings(tmp_path / "one", ManualClock(0), gc_young=11_111)))
    two = TestServer(create_app(make_settings(tmp_path / "two", ManualClock(0), gc_young=22_222)))
    await one.start_server()
    try:
        await two.start_server()
        try:
            assert gc.get_threshold()[0] == 22_222
        finally:
            await one.close()  # the first to start closes first
            during = gc.get_threshold()
            await two.close()
    finally:
        after = gc.get_threshold()
        gc.set_threshold(*before)  # whatever happened, the next tests run with the process's own
    assert during[0] == 22_222, f"the running application's threshold was changed under it: {during}"
    assert after == before, f"the process's thresholds were not given back: {after}, not {before}"


def test_a_young_threshold_the_collector_cannot_take_is_refused_by_the_settings() -> None:
    """``gc.set_threshold`` takes a C int: 2**31 passes `Settings.validate` and then fails the
    start with OverflowError out of a cleanup context, not a SettingsError naming the option."""
    with pytest.raises(OverflowError):
        gc.set_threshold(2**31, *gc.get_threshold()[1:])  # what the start would do
    with pytest.raises(SettingsError, match=r"gc_young|HALFMOON_GC_YOUNG"):
        Settings.from_env({"HALFMOON_GC_YOUNG": str(2**31)})


class _Node:
    pass


async def test_cyclic_garbage_made_between_two_freezes_is_collected_not_frozen(tmp_path: Path) -> None:
    """``gc.freeze()`` moves every generation into the permanent one and sets the young count
    to 0. Every ``gc_freeze_s`` (2 s), then, the young count restarts: at ``gc_young`` 50,000 a
    young collection needs 50,000 more tracked objects than freed within 2 s, which a server
    in a steady state never reaches. So every reference cycle that became garbage in those 2 s
    is frozen with the live heap and waits for the full collection (``--gc-collect``, 15
    minutes), where at Python's 700 it was collected within moments. Here: 3,000 two-node
    cycles made and dropped, then a few freezes; a full collection (of what is not frozen)
    must free them."""
    settings = make_settings(tmp_path, ManualClock(0), gc_freeze_s=0.05, gc_collect_s=0.0)
    app: Any = {keys.SETTINGS: settings}  # what _freeze_gc reads of its application
    before = gc.get_threshold()
    context = _freeze_gc(app)
    await context.__anext__()
    try:
        refs = []
        for _ in range(3_000):
            a, b = _Node(), _Node()
            a.other, b.other = b, a  # type: ignore[attr-defined]
            refs.append(weakref.ref(a))
        del a, b
        await asyncio.sleep(0.3)  # several freezes
        gc.collect()  # everything not frozen, every generation
        alive = sum(ref() is not None for ref in refs)
    finally:
        with contextlib.suppress(StopAsyncIteration):
            await context.__anext__()
        gc.unfreeze()
        gc.collect()
        gc.set_threshold(*before)
    assert alive == 0, f"{alive} of 3,000 garbage cycles were frozen with the live heap"
