"""The room log ``halfmoon serve`` opens (web/app.py ``open_room_log``): the embedded journal in
the data directory, synced as ``--journal-sync`` says and committing where ``--journal-commit``
says; nothing kept for the memory database (``--db memory://``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmoon_server.adapters.journal import JournalLog, MemoryLog
from halfmoon_server.clock import ManualClock
from halfmoon_server.settings import Settings
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


@pytest.mark.parametrize(
    ("commit", "sync", "on_loop"), [("auto", "normal", True), ("thread", "normal", False), ("auto", "full", False)]
)
async def test_the_journal_commits_where_the_journal_commit_setting_says(
    tmp_path: Path, commit: str, sync: str, on_loop: bool
) -> None:
    """``auto`` commits on the loop's thread (and turns SQLite's own checkpoint off) unless every
    commit ``fsync``s (``--journal-sync full``); ``thread`` never does."""
    settings = make_settings(tmp_path, ManualClock(T0), journal_commit=commit, journal_sync=sync)
    room_log = await open_room_log(settings)
    try:
        assert isinstance(room_log, JournalLog)
        assert room_log.commits_on_loop is on_loop
        autocheckpoint = room_log._connection().execute("PRAGMA wal_autocheckpoint").fetchone()
        assert autocheckpoint == ((0,) if on_loop else (1000,))
    finally:
        await room_log.close()


async def test_the_journal_commit_variable_is_read_in_any_case(tmp_path: Path) -> None:
    settings = Settings.from_env({"HALFMOON_DATA_DIR": str(tmp_path), "HALFMOON_JOURNAL_COMMIT": "THREAD"})
    room_log = await open_room_log(settings)
    try:
        assert isinstance(room_log, JournalLog) and room_log.commits_on_loop is False
    finally:
        await room_log.close()


async def test_a_memory_database_keeps_no_journal(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ManualClock(T0), db_url="memory://")
    room_log = await open_room_log(settings)
    assert isinstance(room_log, MemoryLog)
    assert not (tmp_path / "journal.db").exists()
