"""The embedded room log (``halfmoon_server.adapters.journal``): its one thread runs the SQLite work in
order; what it committed is there, in order, once it is opened again."""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from halfmoon_server.adapters.journal import JournalLog, _Worker
from halfmoon_server.errors import LogUnavailable


class _Room:
    """A follower of a room's log (:class:`halfmoon_server.ports.Follower`): its id, and where
    committed entries are delivered."""

    def __init__(self, room_id: str) -> None:
        self.id = room_id
        self.delivered: list[tuple[int, dict[str, Any]]] = []
        self.back = False

    @property
    def applied(self) -> int:
        return len(self.delivered)

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        self.delivered.append((number, entry))

    def went_back(self) -> None:
        self.back = True


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
    with pytest.raises(LogUnavailable, match="closed"):
        worker.submit(ran.append, "too late")


async def test_committed_entries_survive_a_reopen_in_order(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = JournalLog(path)
    await journal.open()
    try:
        room = _Room("R1")
        assert await journal.create({"room": room.id, "v": 1})
        journal.follow(room)
        numbers = await asyncio.gather(*(journal.append(room.id, {"k": "move", "n": n}) for n in range(300)))
        assert [number for number, _ in room.delivered] == list(range(1, 301)) == numbers
    finally:
        await journal.close()
    reopened = JournalLog(path)
    await reopened.open()
    try:
        loaded = await reopened.load("R1")
        assert loaded is not None and [entry["n"] for entry in loaded.entries] == list(range(300))
        assert reopened.counts["R1"] == 300
    finally:
        await reopened.close()


async def test_the_journal_is_readable_by_the_servers_user_alone(tmp_path: Path) -> None:
    # the journal holds every live sealed race's seed (and a daily attempt's code): with the usual
    # umask (022) its files would be world-readable, and any account on the host could deal the cards
    path = tmp_path / "data" / "journal.db"
    old = os.umask(0o022)
    try:
        journal = JournalLog(path)
        await journal.open()
        try:
            assert await journal.create({"room": "R1", "v": 1, "seed": "5e" * 32})
            journal.follow(_Room("R1"))
            await journal.append("R1", {"k": "join", "n": "Ada"})
            files = sorted(p for p in path.parent.iterdir() if p.name.startswith("journal.db"))
            assert {p.name for p in files} >= {"journal.db", "journal.db-wal"}
            for file in files:
                assert stat.S_IMODE(file.stat().st_mode) & 0o077 == 0, (file.name, oct(file.stat().st_mode))
            assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0, oct(path.parent.stat().st_mode)
        finally:
            await journal.close()
    finally:
        os.umask(old)


@pytest.mark.interpreted  # (the journal's clock and JournalLog._run replaced)
async def test_a_flood_of_readiness_probes_writes_once_a_second_at_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each readiness probe writes 64 KB through the journal's one thread, ahead of the players'
    moves: polls at once share one probe, and its answer serves for a second."""
    from halfmoon_server.adapters import journal as journal_module

    now = [1000.0]
    monkeypatch.setattr(journal_module.time, "monotonic", lambda: now[0])
    journal = JournalLog(tmp_path / "journal.db")
    await journal.open()
    jobs: list[str] = []
    run = journal._run

    async def counted(work: Any, *args: Any, **options: Any) -> Any:
        jobs.append(getattr(work, "__name__", "?"))
        return await run(work, *args, **options)

    monkeypatch.setattr(journal, "_run", counted)
    try:
        await asyncio.gather(*(journal.ping() for _ in range(50)))
        now[0] += 0.5
        await asyncio.gather(*(journal.ping() for _ in range(50)))
        assert jobs.count("write") == 1
        now[0] += 0.6  # a second after the first: a fresh probe
        await journal.ping()
        assert jobs.count("write") == 2
    finally:
        await journal.close()
