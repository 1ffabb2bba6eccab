"""The embedded journal after a commit that failed: its numbering, its transaction, and a
journal already closed.

A commit round that times out (a stalled disk) may still land: SQLite goes on in the journal's
thread. The journal must then say so (``certain=False``: "could not be confirmed saved", not
"nothing changed: try again"), and must not number the room's next entries from a count that
missed the landed ones — or every later commit carrying that room fails on UNIQUE(room, n),
and with it every other room's entries in the same group commit, until a restart. A COMMIT that
fails leaves no transaction open; a move appended to a closed journal is refused."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from halfmoon.record import GameRecord
from halfmoon_server.adapters import journal
from halfmoon_server.adapters.journal import JournalLog
from halfmoon_server.errors import LogUnavailable
from halfmoon_server.web import keys
from tests.server.adapters.test_journal import _Room
from tests.server.conftest import StartServer
from tests.server.support import WsClient, won_record


async def _solo_on_the_journal(
    start_server: StartServer, commit: str = "auto"
) -> tuple[JournalLog, WsClient, GameRecord]:
    """A server on the embedded journal (commits where ``commit`` says), and Ada in a solo game
    on a won record's deal."""
    record = won_record()
    server = await start_server(journal_commit=commit)
    room_log = server.app[keys.LOBBY].log
    assert isinstance(room_log, JournalLog)
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada", code=str(record.code))
    await ada.next("welcome")
    return room_log, ada, record


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_a_commit_that_timed_out_but_landed_does_not_wedge_the_journal(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (the journal's thread: a commit stalled on the loop's thread would stall the loop, time-out and all)
    room_log, ada, record = await _solo_on_the_journal(start_server, commit="thread")
    moves = [step.names() for step in record.moves[:4]]  # type: ignore[union-attr]
    await ada.send("move", positions=moves[0], id=1)
    assert (await ada.next("moved"))["moves"] == 1

    commit = room_log._commit
    stalls = [0.6]  # the next commit round takes 0.6 s (and lands), past a 0.2 s time-out

    def stalled(rows: Any) -> None:
        if stalls:
            time.sleep(stalls.pop())
        commit(rows)

    monkeypatch.setattr(room_log, "_commit", stalled)
    monkeypatch.setattr(journal, "COMMIT_TIMEOUT_S", 0.2)
    await ada.send("move", positions=moves[1], id=2)
    refused = await ada.next("error")
    assert refused["code"] == "unavailable" and "confirmed" in refused["message"], refused
    await asyncio.sleep(0.6)  # the stalled round lands

    await ada.send("move", positions=moves[2], id=3)
    seen: list[int] = []
    async with asyncio.timeout(5):
        while not seen or seen[-1] < 3:
            message = await ada.next("moved", "error")
            assert message["type"] == "moved" or "UNIQUE" not in message["message"], message
            if message["type"] == "moved":
                seen.append(message["moves"])
    assert seen == [2, 3]  # the landed move shows, and the game goes on
    await ada.send("move", positions=moves[3], id=4)
    assert (await ada.next("moved", "error"))["moves"] == 4
    await ada.close()


class _CommitRefusedOnce:
    """The journal's SQLite connection, refusing its next COMMIT with ``error`` (by default busy:
    another process writes)."""

    def __init__(self, db: Any, error: str = "database is locked") -> None:
        self.db = db
        self.error = error
        self.refuse = 1

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and self.refuse:
            self.refuse -= 1
            raise sqlite3.OperationalError(self.error)
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


@pytest.mark.parametrize("commit", ["auto", "thread"])
async def test_a_refused_commit_leaves_no_transaction_open(start_server: StartServer, commit: str) -> None:
    """A COMMIT that fails (SQLite busy past its wait) left its transaction open: every later
    ``BEGIN`` failed ("cannot start a transaction within a transaction") until a restart."""
    room_log, ada, record = await _solo_on_the_journal(start_server, commit)
    moves = [step.names() for step in record.moves[:2]]  # type: ignore[union-attr]
    real = room_log._db
    room_log._db = _CommitRefusedOnce(real)  # type: ignore[assignment]
    try:
        await ada.send("move", positions=moves[0], id=1)
        refused = await ada.next("error")
        assert refused["code"] == "unavailable" and "nothing changed" in refused["message"], refused
        await ada.send("move", positions=moves[0], id=2)  # the same move again: taken now
        assert (await ada.next("moved", "error"))["moves"] == 1
        await ada.send("move", positions=moves[1], id=3)
        assert (await ada.next("moved", "error"))["moves"] == 2
    finally:
        room_log._db = real
    await ada.close()


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
    journal.follow(room)
    await journal.append(room.id, {"k": "move", "n": 1})
    await journal.close()
    outcome: BaseException | None = None
    try:
        async with asyncio.timeout(2):
            await journal.append(room.id, {"k": "move", "n": 2})
    except BaseException as exc:  # what it raised, for the assertion
        outcome = exc
    assert isinstance(outcome, LogUnavailable), f"append after close: {outcome!r} (TimeoutError: it hung)"
    with pytest.raises(LogUnavailable):
        await journal.ping()
