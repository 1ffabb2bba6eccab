"""The embedded journal's write-ahead log stays bounded, while moves keep coming and under a
bursty load: the writer checkpoints it and SQLite restarts it from its beginning (a
checkpointer thread beside the writer, tried once and removed, let it grow by everything
written)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from halfmoon_server.adapters import journal as journal_module
from halfmoon_server.adapters.journal import JournalLog
from tests.server.adapters.test_journal import _Room

PAGE = 4096


#: SQLite's own automatic checkpoint (what the writer did before): at 1,000 pages of log
AUTOCHECKPOINT_BYTES = 1000 * PAGE


@pytest.fixture(autouse=True)
def _checkpoints_at_sqlites_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` checkpoints every :data:`~halfmoon_server.adapters.journal.CHECKPOINT_PAGES`
    pages it counted, ``thread`` at SQLite's own 1,000: here both at 1,000, so that one bound
    holds for both modes and the loads stay small (that the count is from above, whatever the
    mark: test_journal_commits_on_the_loop.py)."""
    monkeypatch.setattr(journal_module, "CHECKPOINT_PAGES", 1000)


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


async def _steady_load(
    journal: JournalLog, seconds: float, rooms: int = 40, pad: int = 1500, at_least: int = 0, most_s: float = 30.0
) -> int:
    """Moves from ``rooms`` rooms, each appending again as soon as its last entry is committed,
    for ``seconds`` — and on, up to ``most_s``, until ``at_least`` bytes are committed (a slow
    machine writes less in the same time): the group commit never pauses for long. Returns the
    bytes of entries committed."""
    players: list[Any] = [_Room(f"R{i:03d}") for i in range(rooms)]  # (Room, as the journal sees it)
    for room in players:
        assert await journal.create({"room": room.id, "v": 1})
        journal.follow(room)
    stop = asyncio.Event()
    filler = "x" * pad

    async def play(room: Any) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            await journal.append(room.id, {"k": "move", "n": n, "pad": filler})

    tasks = [asyncio.create_task(play(room)) for room in players]
    await asyncio.sleep(seconds)
    waited = seconds
    while sum(len(room.delivered) for room in players) * pad < at_least and waited < most_s:
        await asyncio.sleep(0.25)
        waited += 0.25
    stop.set()
    await asyncio.gather(*tasks)
    for room in players:
        assert [number for number, _ in room.delivered] == list(range(1, len(room.delivered) + 1))
    return sum(len(room.delivered) for room in players) * pad


@pytest.mark.slow
@pytest.mark.parametrize("commit", ["auto", "thread"])
async def test_the_write_ahead_log_stays_bounded_while_moves_keep_coming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commit: str
) -> None:
    """Found with a checkpointer thread beside the writer (since removed): a PASSIVE checkpoint
    copies the frames committed when it began, and SQLite restarts the log only when a write
    transaction begins with every frame copied; the writer committed again while each
    checkpoint ran, so under a steady load the log grew by everything written (595-766 MiB in
    4 s). The writer's own checkpoint runs between two commits: the log restarts every 1,000
    pages."""
    path = tmp_path / "journal.db"
    journal = JournalLog(path, commit=commit)
    await journal.open()
    try:
        written = await _steady_load(journal, seconds=4.0, at_least=8 * AUTOCHECKPOINT_BYTES)
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


@pytest.mark.parametrize("commit", ["auto", "thread"])
async def test_the_write_ahead_log_stays_bounded_under_a_bursty_load(tmp_path: Path, commit: str) -> None:
    """Commits with pauses between them: the log is checkpointed and restarted all the same (with
    the checkpointer thread, one that could not connect left the log growing by every commit)."""
    path = tmp_path / "journal.db"
    journal = JournalLog(path, commit=commit)
    await journal.open()
    try:
        written = 0
        for round_ in range(80):  # commits with pauses between them: a light, bursty load
            room: Any = _Room(f"B{round_:03d}")
            assert await journal.create({"room": room.id, "v": 1})
            journal.follow(room)
            await asyncio.gather(
                *(journal.append(room.id, {"k": "move", "n": n, "pad": "y" * 3000}) for n in range(60))
            )
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
