"""``GET /api/daily``'s two database reads are cached (docs/capacity.md: at a million results of
a day, counting them took 0.4 s and listing the past days 0.5 s, per request): today's players
counted at most every ``PLAYERS_FOR_MS``, the past days read at most every ``PAST_DAYS_FOR_MS``,
one read at a time however many ask; a day's count is read again once the day is revealed (final
only then); a failed read is not kept."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from halfmoon_server.clock import ManualClock, day_start_ms
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import FinishedGame
from halfmoon_server.rooms import daily as daily_module
from halfmoon_server.web import keys
from tests.server.conftest import StartServer

DAY1 = date(2026, 11, 28)
DAY2 = date(2026, 11, 29)


class Counting:
    """The app's storage, counting the two reads (and failing the next ones when told to)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = {"daily_players": 0, "daily_days": 0}
        self.fail = 0

    async def daily_players(self, day: date) -> int:
        self.calls["daily_players"] += 1
        await asyncio.sleep(0.05)  # a slow count: the others asking meanwhile wait for it
        if self.fail:
            self.fail -= 1
            raise StorageError("the database did not answer")
        result: int = await self.inner.daily_players(day)
        return result

    async def daily_days(self, before: date, limit: int) -> Any:
        self.calls["daily_days"] += 1
        return await self.inner.daily_days(before, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def ranked(n: int, day: date) -> FinishedGame:
    at = datetime(2026, 11, 28, 12, tzinfo=UTC)
    return FinishedGame(f"P{n}", "HM1-D-AAAAAAA", "daily", "ROOM01", 10, 1, 1000 + n, "gave_up", {}, True, day, at)


async def get_daily(server: TestServer) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.get(server.make_url("/api/daily")) as response:
        return response.status, await response.json()


async def test_many_readers_at_once_cost_one_count_and_the_count_is_read_again_later(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    service = server.app[keys.DAILY]
    storage = service.storage = Counting(service.storage)
    await storage.inner.save_game(ranked(1, DAY1), "g-1")
    answers = await asyncio.gather(*(get_daily(server) for _ in range(20)))
    assert {(status, body["players"]) for status, body in answers} == {(200, 1)}
    assert storage.calls == {"daily_players": 1, "daily_days": 1}
    await storage.inner.save_game(ranked(2, DAY1), "g-2")
    assert (await get_daily(server))[1]["players"] == 1  # within PLAYERS_FOR_MS: as counted
    clock.advance(daily_module.PLAYERS_FOR_MS)
    assert (await get_daily(server))[1]["players"] == 2
    assert storage.calls == {"daily_players": 2, "daily_days": 1}  # the past days are kept longer
    clock.advance(daily_module.PAST_DAYS_FOR_MS)
    await get_daily(server)
    assert storage.calls["daily_days"] == 2


async def test_a_failed_count_is_not_kept(start_server: StartServer) -> None:
    server = await start_server()
    service = server.app[keys.DAILY]
    storage = service.storage = Counting(service.storage)
    storage.fail = 1
    statuses = [status for status, _ in await asyncio.gather(*(get_daily(server) for _ in range(5)))]
    assert statuses == [503] * 5  # one failed count, told to everyone who waited for it
    assert (await get_daily(server))[0] == 200  # the next reader counts again
    assert storage.calls["daily_players"] == 2


async def test_a_day_is_counted_again_as_soon_as_it_is_revealed(start_server: StartServer, clock: ManualClock) -> None:
    server = await start_server()
    service = server.app[keys.DAILY]
    storage = service.storage = Counting(service.storage)
    await service.code_for(DAY1)
    await storage.inner.save_game(ranked(1, DAY1), "g-1")
    reveal = service.reveal_at(DAY1)
    clock.set(reveal - 10_000)  # DAY2, yesterday's last attempts may still run: not listed yet
    assert (await get_daily(server))[1]["past"] == []
    await storage.inner.save_game(ranked(2, DAY1), "g-2")  # a last attempt of DAY1 ends
    clock.set(reveal + 1_000)  # well within PAST_DAYS_FOR_MS of the last read
    past = (await get_daily(server))[1]["past"]
    assert [(d["date"], d["players"]) for d in past] == [(DAY1.isoformat(), 2)]
    assert storage.calls["daily_days"] == 2
    assert clock.now_ms() < day_start_ms(DAY2) + 3_600_000
