"""The embedded journal's commits on the event loop's own thread (``--journal-commit auto``, the
default): a lone move's round commits there, with no hop to the journal's thread and back, but
only while that is safe — never while the journal's thread uses the connection, never with
``synchronous=FULL`` (an ``fsync`` per commit), and not for a while after a slow or failed commit;
SQLite's own checkpoint is off and the journal's checkpoints run on its thread."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from halfmoon_server.adapters import journal
from halfmoon_server.adapters.journal import JournalLog, _Worker
from halfmoon_server.errors import LogUnavailable
from tests.server.adapters.test_journal import _Room
from tests.server.adapters.test_journal_failed_commits import _CommitRefusedOnce
from tests.server.adapters.test_journal_wal import _wal_restarts

PAGE = 4096


async def _journal(path: Path, **options: Any) -> tuple[JournalLog, Any, list[str]]:
    """An open journal with a room, and the names of the threads its commits ran on (in order)."""
    room_log = JournalLog(path, **options)
    await room_log.open()
    room: Any = _Room("R1")
    assert await room_log.create({"room": room.id, "v": 1})
    room_log.follow(room)
    threads: list[str] = []
    commit = room_log._commit

    def noted(rows: Any) -> None:
        threads.append(threading.current_thread().name)
        commit(rows)

    room_log._commit = noted  # type: ignore[method-assign]
    return room_log, room, threads


LOOP = threading.main_thread().name


def _before_the_next_commit(room_log: JournalLog, once: Callable[[], object]) -> None:
    """Run ``once()`` inside the journal's next commit, before it writes (a stalled disk, work
    on the CPU), on whichever thread commits."""
    commit = room_log._commit
    pending = [once]

    def delayed(rows: Any) -> None:
        if pending:
            pending.pop()()
        commit(rows)

    room_log._commit = delayed  # type: ignore[method-assign]


def _note_checkpoints(room_log: JournalLog) -> list[str]:
    """The names of the threads the journal's checkpoints run on, in order, from now on."""
    checkpoints: list[str] = []
    checkpoint = room_log._checkpoint

    def noted() -> None:
        checkpoints.append(threading.current_thread().name)
        checkpoint()

    room_log._checkpoint = noted  # type: ignore[method-assign]
    return checkpoints


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_lone_moves_commit_on_the_loops_thread_and_are_there_after_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    room_log, room, threads = await _journal(path)
    posted: list[Any] = []
    post = room_log._worker.post

    def counted(work: Any, *args: Any) -> None:
        posted.append(work)
        post(work, *args)

    room_log._worker.post = counted  # type: ignore[method-assign]
    try:
        for n in range(1, 21):
            assert await room_log.append(room.id, {"k": "move", "n": n}) == n
    finally:
        await room_log.close()
    assert threads == [LOOP] * 20
    assert [work.__name__ for work in posted] == ["close"], "a lone move went through the journal's thread"
    assert [number for number, _ in room.delivered] == list(range(1, 21))

    reopened = JournalLog(path)
    await reopened.open()
    try:
        loaded = await reopened.load("R1")
        assert loaded is not None and [entry["n"] for entry in loaded.entries] == list(range(1, 21))
    finally:
        await reopened.close()


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_the_moves_of_one_loop_turn_share_one_commit_on_the_loop(tmp_path: Path) -> None:
    room_log, room, threads = await _journal(tmp_path / "journal.db")
    try:
        numbers = await asyncio.gather(*(room_log.append(room.id, {"k": "move", "n": n}) for n in range(1, 6)))
    finally:
        await room_log.close()
    assert sorted(numbers) == [1, 2, 3, 4, 5]
    assert threads == [LOOP], "five moves appended in one turn: one round"


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_commit_waits_for_the_journals_thread_when_it_holds_the_connection(tmp_path: Path) -> None:
    """A read (a room restored, a snapshot) under way on the journal's thread: the round is
    queued behind it there, never committed on the loop beside it on the same connection."""
    room_log, room, threads = await _journal(tmp_path / "journal.db")
    gate = threading.Event()
    try:
        busy = asyncio.ensure_future(room_log._run(lambda: gate.wait(5)))
        await asyncio.sleep(0.05)
        assert room_log._worker.outstanding == 1
        move = asyncio.ensure_future(room_log.append(room.id, {"k": "move", "n": 1}))
        await asyncio.sleep(0.05)
        assert not move.done() and threads == [], "committed on the loop while the thread held the connection"
        gate.set()
        assert await move == 1
        await busy
        assert threads == ["halfmoon-journal"]
        assert room_log._worker.outstanding == 0
        assert await room_log.append(room.id, {"k": "move", "n": 2}) == 2  # the thread idle again: the loop
        assert threads == ["halfmoon-journal", LOOP]
    finally:
        gate.set()
        await room_log.close()


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_slow_commit_on_the_loop_sends_the_next_ones_to_the_thread_for_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(journal, "INLINE_BACKOFF_S", 0.3)
    room_log, room, threads = await _journal(tmp_path / "journal.db")
    _before_the_next_commit(room_log, lambda: threading.Event().wait(0.1))  # the disk under pressure, once
    try:
        with caplog.at_level(logging.WARNING, logger="halfmoon_server.journal"):
            assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1
            assert await room_log.append(room.id, {"k": "move", "n": 2}) == 2
            assert await room_log.append(room.id, {"k": "move", "n": 3}) == 3
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "waited" in warnings[0] and "through its thread" in warnings[0], warnings
        assert threads == [LOOP, "halfmoon-journal", "halfmoon-journal"]
        await asyncio.sleep(0.35)  # the backoff over: on the loop again
        assert await room_log.append(room.id, {"k": "move", "n": 4}) == 4
        assert threads[-1] == LOOP
    finally:
        await room_log.close()
    assert [number for number, _ in room.delivered] == [1, 2, 3, 4]


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_commit_slow_with_work_on_the_cpu_is_no_sign_of_a_slow_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit that took long on the CPU — a collection of the heap started inside it, at
    10,000 players ~50-120 ms — stays on the loop: only time spent waiting counts. (0.3 s of
    work against a 0.25 s mark: past it on the wall clock, and a busy test machine would have to
    keep the thread waiting for the core nearly half the time to trip it.)"""
    monkeypatch.setattr(journal, "INLINE_SLOW_S", 0.25)
    room_log, room, threads = await _journal(tmp_path / "journal.db")

    def busy() -> None:
        until = time.thread_time() + 0.3
        while time.thread_time() < until:
            pass

    _before_the_next_commit(room_log, busy)
    try:
        for n in range(1, 4):
            assert await room_log.append(room.id, {"k": "move", "n": n}) == n
    finally:
        await room_log.close()
    assert threads == [LOOP] * 3


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_failed_commit_on_the_loop_is_refused_and_the_next_one_numbered_from_what_landed(
    tmp_path: Path,
) -> None:
    room_log, room, threads = await _journal(tmp_path / "journal.db")
    real = room_log._db
    try:
        assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1
        room_log._db = _CommitRefusedOnce(real, "disk I/O error")  # type: ignore[assignment]
        with pytest.raises(LogUnavailable, match="disk I/O error"):
            await room_log.append(room.id, {"k": "move", "n": 2})
        assert not real.in_transaction  # type: ignore[union-attr]
        # its room counted again on the thread first, then numbered after what landed: 2 again
        assert await room_log.append(room.id, {"k": "move", "n": 2}) == 2
    finally:
        room_log._db = real
        await room_log.close()
    assert threads == [LOOP, LOOP, "halfmoon-journal"]
    assert [entry["n"] for _, entry in room.delivered] == [1, 2]


@pytest.mark.interpreted  # (JournalLog._commit replaced)
@pytest.mark.parametrize("options", [{"synchronous": "FULL"}, {"commit": "thread"}], ids=["full-sync", "commit-thread"])
async def test_with_full_sync_or_commit_thread_every_commit_and_checkpoint_is_on_the_journals_thread(
    tmp_path: Path, options: dict[str, str]
) -> None:
    """``synchronous=FULL`` ``fsync``s in every commit, and ``thread`` asks for it: never on the
    loop, and SQLite's own checkpoint (in a commit on the thread) stays on."""
    room_log, room, threads = await _journal(tmp_path / "journal.db", **options)
    try:
        for n in range(1, 4):
            assert await room_log.append(room.id, {"k": "move", "n": n}) == n
        assert room_log._connection().execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    finally:
        await room_log.close()
    assert threads == ["halfmoon-journal"] * 3


def test_an_unknown_commit_place_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="auto, thread"):
        JournalLog(tmp_path / "journal.db", commit="sometimes")


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_the_checkpoints_run_on_the_journals_thread_never_in_a_commit_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "CHECKPOINT_PAGES", 25)
    path = tmp_path / "journal.db"
    room_log, room, threads = await _journal(path)
    checkpoints = _note_checkpoints(room_log)
    try:
        assert room_log._connection().execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        for n in range(1, 101):
            assert await room_log.append(room.id, {"k": "move", "n": n, "pad": "z" * 500}) == n
    finally:
        await room_log.close()
    assert len(checkpoints) >= 3, checkpoints
    assert set(checkpoints) == {"halfmoon-journal"}
    assert threads.count(LOOP) >= 75  # (the round after each checkpoint is the thread's)


async def test_readiness_probes_alone_keep_the_write_ahead_log_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No moves, only /readyz's write probe (17 pages each): still checkpointed and restarted."""
    monkeypatch.setattr(journal, "PROBE_EVERY_S", 0.0)
    monkeypatch.setattr(journal, "CHECKPOINT_PAGES", 1000)  # (the loads below are sized for it)
    path = tmp_path / "journal.db"
    room_log = JournalLog(path)
    await room_log.open()
    try:
        for _ in range(300):  # 300 × 17 pages: five times what SQLite's own checkpoint allowed
            await room_log.ping()
        wal = os.path.getsize(f"{path}-wal")
        assert wal <= 2 * 1000 * PAGE, f"the write-ahead log is {wal / 2**20:.1f} MiB: nothing checkpoints it"
    finally:
        await room_log.close()


async def test_the_worker_hears_the_end_of_every_job_even_one_given_up_on() -> None:
    """The loop's count of the jobs on the thread (what says whether it may use the connection)
    comes back to 0, a job given up on before the thread reached it included."""
    worker = _Worker("test-journal")
    try:
        gate = threading.Event()
        first = worker.submit(gate.wait, 5)
        given_up = worker.submit(print, "never")
        assert worker.outstanding == 2
        given_up.cancel()
        gate.set()
        await first
        for _ in range(50):
            if worker.outstanding == 0:
                break
            await asyncio.sleep(0.01)
        assert worker.outstanding == 0
    finally:
        worker.shutdown()


@pytest.mark.interpreted  # (JournalLog._commit replaced)
@pytest.mark.parametrize("commit", ["auto", "thread"])
async def test_an_entry_that_cannot_be_written_does_not_wedge_the_journal(
    tmp_path: Path, commit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug hands the journal an entry it cannot encode: its round is refused (on the loop at
    once, on the thread when the watchdog gives it up); the next moves and close() go on."""
    monkeypatch.setattr(journal, "COMMIT_TIMEOUT_S", 0.5)
    room_log, room, _threads = await _journal(tmp_path / "journal.db", commit=commit)
    try:
        bad = asyncio.ensure_future(room_log.append(room.id, {"k": "move", "bad": {1, 2}}))
        await asyncio.sleep(0)
        good = asyncio.ensure_future(room_log.append(room.id, {"k": "move", "n": 2}))
        done, _ = await asyncio.wait([bad, good], timeout=3)
        assert good in done, "a valid move never answered: the journal is wedged"
        assert bad.exception() is not None
        assert await room_log.append(room.id, {"k": "move", "n": 3}) == (await good) + 1
    finally:
        await asyncio.wait_for(room_log.close(), 3)


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_failed_commit_on_the_loop_sends_the_next_rounds_to_the_thread_for_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "INLINE_BACKOFF_S", 0.3)
    room_log, room, threads = await _journal(tmp_path / "journal.db")
    real = room_log._db
    try:
        assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1
        room_log._db = _CommitRefusedOnce(real, "disk I/O error")  # type: ignore[assignment]
        with pytest.raises(LogUnavailable):
            await room_log.append(room.id, {"k": "move", "n": 2})
        room_log._db = real
        assert await room_log.append(room.id, {"k": "move", "n": 2}) == 2  # its room recounted: the thread
        assert await room_log.append(room.id, {"k": "move", "n": 3}) == 3  # and, for a while, the next too
        await asyncio.sleep(0.35)
        assert await room_log.append(room.id, {"k": "move", "n": 4}) == 4
    finally:
        room_log._db = real
        await room_log.close()
    assert threads == [LOOP, LOOP, "halfmoon-journal", "halfmoon-journal", LOOP], threads


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_round_given_up_on_the_thread_that_landed_is_recounted_before_a_commit_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread's round timed out (``certain=False``) and landed later: the next round, on the
    loop or not, numbers the room after what landed, never again from the old count."""
    monkeypatch.setattr(journal, "COMMIT_TIMEOUT_S", 0.3)
    room_log, room, _threads = await _journal(tmp_path / "journal.db")
    noted = room_log._commit
    gate = threading.Event()

    def stalls_then_lands(rows: Any) -> None:
        if threading.current_thread().name != LOOP:
            gate.wait(5)
        noted(rows)

    room_log._commit = stalls_then_lands  # type: ignore[method-assign]
    try:
        assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1
        room_log._inline_after = asyncio.get_running_loop().time() + 0.5  # (as after a slow commit)
        with pytest.raises(LogUnavailable, match="in time"):
            await room_log.append(room.id, {"k": "move", "n": 2})  # on the thread: stalls, then lands
        gate.set()
        while room_log._worker.outstanding:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # the backoff over
        assert await room_log.append(room.id, {"k": "move", "n": 3}) == 3
    finally:
        gate.set()
        await room_log.close()


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_the_first_write_after_a_checkpoint_is_the_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first write after a checkpoint may restart the write-ahead log, which syncs its
    header: never in a commit on the loop — here a checkpoint that readiness probes set off."""
    monkeypatch.setattr(journal, "PROBE_EVERY_S", 0.0)
    room_log, room, threads = await _journal(tmp_path / "journal.db")
    checkpoints = _note_checkpoints(room_log)
    try:
        for _ in range(1000):  # (17,000 pages: a mark set too high fails here, never hangs nor fills the disk)
            if room_log._pages + journal.PROBE_PAGES >= journal.CHECKPOINT_PAGES:
                break
            await room_log.ping()
        else:
            pytest.fail(f"1,000 probes did not reach the checkpoint's mark of {journal.CHECKPOINT_PAGES} pages")
        await room_log.ping()  # its write takes the count past the mark: a checkpoint is queued behind it
        while room_log._worker.outstanding:
            await asyncio.sleep(0.01)
        assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1
        assert await room_log.append(room.id, {"k": "move", "n": 2}) == 2
    finally:
        await room_log.close()
    assert checkpoints == ["halfmoon-journal"]
    assert threads == ["halfmoon-journal", LOOP]


@pytest.mark.parametrize(
    "text", ["m" * 150, "m" * 1500, "é" * 900], ids=["150-bytes", "1500-bytes", "1800-bytes-of-900-letters"]
)
@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_lone_moves_keep_the_write_ahead_log_within_the_pages_of_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """The pages are counted from above: a log of lone commits (a page split now and then, a row
    past a leaf's share in overflow pages, letters of two bytes) stays within the
    :data:`~halfmoon_server.adapters.journal.CHECKPOINT_PAGES` it is checkpointed at (here 1,000:
    three times as many moves would take it past them)."""
    monkeypatch.setattr(journal, "CHECKPOINT_PAGES", 1000)
    path = tmp_path / "journal.db"
    room_log, room, threads = await _journal(path)
    try:
        for n in range(1, 3001):
            assert await room_log.append(room.id, {"k": "move", "n": n, "pad": text}) == n
        most = 1000 * (PAGE + 24) + 32  # a thousand frames and the log's header
        wal = os.path.getsize(f"{path}-wal")  # (the file never shrinks: its size is its high-water mark)
        assert wal <= most, f"the write-ahead log reached {wal / (PAGE + 24):.0f} pages"
    finally:
        await room_log.close()
    assert threads.count(LOOP) > 2500


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_failed_checkpoint_is_said_once_and_tried_again_after_a_while_not_every_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(journal, "CHECKPOINT_PAGES", 10)
    monkeypatch.setattr(journal, "CHECKPOINT_RETRY_S", 0.3)
    room_log, room, _threads = await _journal(tmp_path / "journal.db")
    tries: list[str] = []
    checkpoint = room_log._checkpoint

    def failing_at_first() -> None:
        tries.append("tried")
        if len(tries) == 1:
            raise sqlite3.OperationalError("disk I/O error")
        checkpoint()

    room_log._checkpoint = failing_at_first  # type: ignore[method-assign]
    try:
        with caplog.at_level(logging.WARNING, logger="halfmoon_server.journal"):
            for n in range(1, 31):  # 2 pages a move: past the mark at every round from the 5th
                assert await room_log.append(room.id, {"k": "move", "n": n}) == n
            assert tries == ["tried"], "a failed checkpoint was tried again at once"
            await asyncio.sleep(0.35)
            assert await room_log.append(room.id, {"k": "move", "n": 31}) == 31
        warnings = [r.getMessage() for r in caplog.records if "checkpointing" in r.getMessage()]
        assert len(warnings) == 1 and "trying again in" in warnings[0], warnings
        assert len(tries) == 2
    finally:
        await room_log.close()


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_at_its_own_mark_the_journal_keeps_its_write_ahead_log_under_16_mib(tmp_path: Path) -> None:
    """The mark the server runs with (docs/server.md: the log file stays under 16 MiB): 4,000
    lone moves of 1,500 bytes would make a log of ~70 MiB if nothing checkpointed it."""
    path = tmp_path / "journal.db"
    room_log, room, _threads = await _journal(path)
    try:
        for n in range(1, 4001):
            assert await room_log.append(room.id, {"k": "move", "n": n, "pad": "q" * 1500}) == n
        wal = os.path.getsize(f"{path}-wal")
        assert wal <= 16 * 2**20, f"the write-ahead log reached {wal / 2**20:.1f} MiB"
        assert _wal_restarts(path) >= 2
    finally:
        await room_log.close()


async def test_a_log_left_by_a_killed_process_is_emptied_when_the_journal_opens(tmp_path: Path) -> None:
    """The pages are counted from 0 at each start: a log a killed process left behind (its
    pages not counted) is copied back and emptied first, so it never adds to the next mark's."""
    path = tmp_path / "journal.db"
    killed = (
        "import os, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('PRAGMA journal_mode=WAL'); db.execute('PRAGMA wal_autocheckpoint=0')\n"
        "db.execute('CREATE TABLE t (x TEXT)')\n"
        "for _ in range(500): db.execute('INSERT INTO t VALUES (?)', ('k' * 4000,))\n"
        "os._exit(0)  # as a SIGKILL would: no close, no checkpoint\n"
    )
    await asyncio.to_thread(
        lambda: __import__("subprocess").run([__import__("sys").executable, "-c", killed, str(path)], check=True)
    )
    assert os.path.getsize(f"{path}-wal") > 500 * PAGE  # (what it left)
    room_log = JournalLog(path)
    await room_log.open()
    try:
        assert os.path.getsize(f"{path}-wal") < 20 * PAGE  # (the journal's own tables, made since)
        assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM t").fetchone() == (500,)  # (copied back)
    finally:
        await room_log.close()


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_checkpoint_a_reader_holds_back_is_tried_again_and_its_pages_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A reader (an operator's backup) keeps a checkpoint from copying the pages written after
    it began: the log cannot restart, so the checkpoint counts as not done — its pages stay
    counted and it is tried again after CHECKPOINT_RETRY_S, and once the reader is gone it
    completes; the file, grown past its bound meanwhile, is cut back to it."""
    monkeypatch.setattr(journal, "CHECKPOINT_PAGES", 20)
    monkeypatch.setattr(journal, "CHECKPOINT_RETRY_S", 0.3)
    monkeypatch.setattr(journal, "WAL_SIZE_LIMIT", 4 * PAGE)
    path = tmp_path / "journal.db"
    room_log, room, _threads = await _journal(path)
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        with caplog.at_level(logging.WARNING, logger="halfmoon_server.journal"):
            assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1
            reader.execute("BEGIN")
            reader.execute("SELECT COUNT(*) FROM entries").fetchone()  # its snapshot: up to move 1
            n = 1
            while not any("checkpointing" in r.getMessage() for r in caplog.records) and n < 200:
                n += 1
                assert await room_log.append(room.id, {"k": "move", "n": n}) == n
                await asyncio.sleep(0.001)
            warnings = [r.getMessage() for r in caplog.records if "checkpointing" in r.getMessage()]
            assert warnings and "a reader holds the rest" in warnings[0], warnings
            assert room_log._pages >= journal.CHECKPOINT_PAGES  # (kept: the log did not restart)
            restarts = _wal_restarts(path)
            assert os.path.getsize(f"{path}-wal") > 4 * PAGE
            reader.execute("COMMIT")  # the backup is over
            await asyncio.sleep(0.35)
            for _ in range(5):
                n += 1
                assert await room_log.append(room.id, {"k": "move", "n": n}) == n
            while room_log._worker.outstanding:
                await asyncio.sleep(0.01)
            n += 1
            assert await room_log.append(room.id, {"k": "move", "n": n}) == n  # (restarts the log)
            assert room_log._pages < journal.CHECKPOINT_PAGES
            assert _wal_restarts(path) > restarts
            # cut back to the bound, then the pages of the commit that restarted it (a few)
            assert os.path.getsize(f"{path}-wal") <= 8 * (PAGE + 24) + 32
    finally:
        reader.close()
        await room_log.close()
