"""The room log's port as the one-process logs keep it: rooms by id, entries by number, each
delivered to the room's follower (:class:`halfmoon_server.ports.Follower`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from halfmoon_server.adapters.journal import JournalLog, MemoryLog
from halfmoon_server.errors import LogUnavailable
from tests.server.adapters.test_journal import _Room


@pytest.fixture(params=["memory", "journal"])
async def room_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryLog | JournalLog]:
    if request.param == "memory":
        yield MemoryLog()
        return
    journal = JournalLog(tmp_path / "journal.db")
    await journal.open()
    yield journal
    await journal.close()


async def test_an_append_returns_its_number_once_the_follower_has_it(room_log: MemoryLog | JournalLog) -> None:
    follower = _Room("R1")
    assert await room_log.create({"room": "R1", "v": 1})
    room_log.follow(follower)
    assert [await room_log.append("R1", {"k": "tick", "n": n}) for n in range(3)] == [1, 2, 3]
    assert [number for number, _ in follower.delivered] == [1, 2, 3]


async def test_a_room_not_followed_here_takes_no_entry(room_log: MemoryLog | JournalLog) -> None:
    assert await room_log.create({"room": "R1", "v": 1})
    with pytest.raises(LogUnavailable, match="not followed") as refused:
        await room_log.append("R1", {"k": "tick"})
    assert refused.value.certain
    loaded = await room_log.load("R1")
    assert loaded is not None and loaded.entries == []
    follower = _Room("R1")
    room_log.follow(follower)
    room_log.unfollow("R1")
    with pytest.raises(LogUnavailable):
        await room_log.append("R1", {"k": "tick"})


async def test_a_catch_up_delivers_what_the_follower_has_not_applied(room_log: MemoryLog | JournalLog) -> None:
    early = _Room("R1")
    assert await room_log.create({"room": "R1", "v": 1})
    room_log.follow(early)
    for n in range(4):
        await room_log.append("R1", {"k": "tick", "n": n})
    late = _Room("R1")
    late.delivered = early.delivered[:1]  # it applied the first entry only
    room_log.follow(late)  # (it replaces the room's follower here)
    await room_log.catch_up("R1")
    assert [number for number, _ in late.delivered] == [1, 2, 3, 4]
    assert [entry["n"] for _, entry in late.delivered[1:]] == [1, 2, 3]
