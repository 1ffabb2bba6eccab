"""The embedded room log (``halfmoon_server.journal``): its one thread runs the SQLite work in
order, and its checkpoints run beside the commits, never inside one."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from halfmoon_server import journal as journal_module
from halfmoon_server.journal import JournalLog, _Worker


class _Room:
    """What the journal needs of a room: its id, and where committed entries are delivered."""

    def __init__(self, room_id: str) -> None:
        self.id = room_id
        self.delivered: list[tuple[int, dict[str, Any]]] = []

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        self.delivered.append((number, entry))


async def test_the_worker_runs_jobs_in_order_hands_back_errors_and_skips_a_job_given_up_on() -> None:
    worker = _Worker("test-journal")
    try:
        ran: list[str] = []
        gate = threading.Event()
        first = worker.submit(lambda: (gate.wait(5), ran.append("first"))[1])
        given_up = worker.submit(ran.append, "given up")
        last = worker.submit(lambda: ran.append("last") or len(ran))
        given_up.cancel()  # its round timed out before the thread reached it
        gate.set()
        await first
        assert await last == 2
        assert ran == ["first", "last"]
        with pytest.raises(ZeroDivisionError):
            await worker.submit(lambda: 1 // 0)
    finally:
        worker.shutdown()
    with pytest.raises(RuntimeError, match="closed"):
        worker.submit(ran.append, "too late")


async def test_commits_do_not_checkpoint_and_the_checkpointer_copies_the_log_into_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "CHECKPOINT_EVERY_S", 0.05)
    path = tmp_path / "journal.db"
    journal = JournalLog(path)
    await journal.open()
    try:
        setting = await journal._run(lambda: journal._connection().execute("PRAGMA wal_autocheckpoint").fetchone())
        assert setting == (0,), "a commit must never run the checkpoint itself"
        room = _Room("R1")
        assert await journal.create({"room": room.id, "v": 1})
        await asyncio.gather(*(journal.append(room, {"k": "move", "n": n}) for n in range(300)))
        assert [number for number, _ in room.delivered] == list(range(1, 301))
        checkpointer = journal._checkpointer
        assert checkpointer is not None
        seen = checkpointer.done
        async with asyncio.timeout(5):
            while checkpointer.done < seen + 2:  # a whole checkpoint after the last commit
                await asyncio.sleep(0.02)
        # the file alone (no -wal beside it) holds every committed entry: they were copied in
        alone = tmp_path / "alone.db"
        shutil.copyfile(path, alone)
        copy = sqlite3.connect(alone)
        try:
            assert copy.execute("SELECT COUNT(*), MAX(n) FROM entries WHERE room = 'R1'").fetchone() == (300, 300)
        finally:
            copy.close()
    finally:
        await journal.close()
    assert journal._checkpointer is None
    reopened = JournalLog(path)
    await reopened.open()
    try:
        loaded = await reopened.load("R1")
        assert loaded is not None and len(loaded[1]) == 300
        assert reopened.counts["R1"] == 300
    finally:
        await reopened.close()
