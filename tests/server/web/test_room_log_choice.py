"""The room log ``halfmoon serve`` opens (web/app.py ``open_room_log``): the embedded journal in
the data directory, synced as ``--journal-sync`` says; nothing kept for the memory database (``--db memory://``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmoon_server.adapters.journal import JournalLog, MemoryLog
from halfmoon_server.clock import ManualClock
from halfmoon_server.web.app import open_room_log
from tests.server.support import T0, make_settings


@pytest.mark.parametrize(("setting", "pragma"), [("normal", 1), ("full", 2)])
async def test_the_journal_syncs_as_the_journal_sync_setting_says(tmp_path: Path, setting: str, pragma: int) -> None:
    """``--journal-sync full`` must reach the room journal itself (every acknowledged move is in
    it), not only the games' database: SQLite's ``PRAGMA synchronous`` 2 is FULL, 1 NORMAL."""
    settings = make_settings(tmp_path, ManualClock(T0), journal_sync=setting)
    room_log = await open_room_log(settings)
    try:
        assert isinstance(room_log, JournalLog)
        assert room_log.path == tmp_path / "journal.db" and room_log.path.exists()
        assert room_log._connection().execute("PRAGMA synchronous").fetchone() == (pragma,)
    finally:
        await room_log.close()


async def test_a_memory_database_keeps_no_journal(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ManualClock(T0), db_url="memory://")
    room_log = await open_room_log(settings)
    assert isinstance(room_log, MemoryLog)
    assert not (tmp_path / "journal.db").exists()
