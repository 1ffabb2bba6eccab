"""The ratings job (server/halfmoon_server/rooms/ratings.py): it rates what is due on its own
task, takes everything due in passes of a bounded size, and a database that fails is tried again
at the next tick (nothing is lost: what is due waits in the database)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

import pytest

from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import StorageError
from halfmoon_server.rooms import ratings
from halfmoon_server.rooms.ratings import RatingJob
from tests.server.adapters.test_ratings_storage import ADA, BEA, seat, store

T0_MS = 1_796_551_200_000


class Flaky(MemoryStorage):
    """A memory storage whose first ``fails`` passes fail as a database that is down."""

    def __init__(self, fails: int) -> None:
        super().__init__()
        self.fails = fails
        self.passes = 0

    async def rate_due(self, now: datetime, limit: int) -> int:
        self.passes += 1
        if self.fails:
            self.fails -= 1
            raise StorageError("the database did not answer within 3 s")
        return await super().rate_due(now, limit)


async def two_races(storage: MemoryStorage) -> None:
    for n in range(2):
        room = f"ROOM{n:02d}"
        await store(storage, [seat(ADA, 300, room=room, seats=2), seat(BEA, 100, room=room, seats=2)], room)


async def test_a_failing_pass_is_tried_again_and_rates_everything_once_the_database_is_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    storage = Flaky(fails=2)
    await two_races(storage)
    job = RatingJob(storage, ManualClock(T0_MS), every_s=0.01)
    with caplog.at_level(logging.WARNING, logger="halfmoon_server.ratings"):
        job.start()
        for _ in range(200):
            if job.rated == 2:
                break
            await asyncio.sleep(0.01)
        await job.close()
    assert job.rated == 2 and storage.passes >= 3
    assert "could not rate: the database did not answer" in caplog.text
    rated, history = await storage.player_rating(ADA, 10)
    assert rated is not None and rated.skill.games == 2 and len(history) == 2


async def test_one_pass_takes_everything_due_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratings, "RATE_BATCH", 1)
    storage = MemoryStorage()
    await two_races(storage)
    job = RatingJob(storage, ManualClock(T0_MS))
    assert await job.pass_once() == 2  # two batches of one, in one pass
    assert await job.pass_once() == 0
    assert storage.rated_races == [("ROOM00", "HM1-N-AAAAAAA"), ("ROOM01", "HM1-N-AAAAAAA")]
