"""The live list's adapters (``adapters/live_list.py``): in memory and in Redis (one node, and a
Redis Cluster) alike — a put lists a room until its time-to-live, again from each put; a drop
takes it off; a read answers what has not expired, at most ``limit``; a Redis that does not answer
is ``LogUnavailable``, quoting nothing of the summary."""

from __future__ import annotations

import asyncio

import pytest

from halfmoon_server.adapters.live_list import ROOMS_KEY, UNTIL_KEY, MemoryLiveList, RedisLiveList
from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import LogUnavailable
from tests.server.instances import RedisServer
from tests.server.redis_cluster import RedisClusterNodes
from tests.server.support import T0


def summary(room: str, spectators: int = 0) -> dict[str, object]:
    return {"room": room, "players": ["Ada"], "spectators": spectators}


async def test_in_memory_an_entry_lasts_its_ttl_from_its_last_put_and_a_drop_takes_it_off() -> None:
    clock = ManualClock(T0)
    live = MemoryLiveList(clock, ttl_ms=3000)
    await live.put("AAAAAA", summary("AAAAAA"))
    await live.put("BBBBBB", summary("BBBBBB"))
    assert sorted(r["room"] for r in await live.races(10)) == ["AAAAAA", "BBBBBB"]
    assert len(await live.races(1)) == 1
    clock.advance(2000)
    await live.put("AAAAAA", summary("AAAAAA", spectators=3))  # put again: its ttl starts again
    clock.advance(1000)
    assert await live.races(10) == [summary("AAAAAA", spectators=3)]  # B's ttl is over
    await live.drop("AAAAAA")
    await live.drop("CCCCCC")  # not listed: nothing
    assert await live.races(10) == []


async def check_a_redis_live_list(url: str) -> None:
    """What every Redis live list does, two instances' lists on one Redis."""
    one, two = RedisLiveList(url, ttl_ms=600), RedisLiveList(url, ttl_ms=600)
    await one.open()
    await two.open()
    try:
        await one.put("AAAAAA", summary("AAAAAA", spectators=2))
        await two.put("BBBBBB", summary("BBBBBB"))
        # one list for every instance
        assert sorted(r["room"] for r in await one.races(10)) == ["AAAAAA", "BBBBBB"]
        assert len(await two.races(1)) == 1
        await two.drop("AAAAAA")
        assert [r["room"] for r in await one.races(10)] == ["BBBBBB"]
        # nobody puts B again (its instance died): it leaves the list, and Redis keeps nothing of it
        await one.put("CCCCCC", summary("CCCCCC"))
        await asyncio.sleep(0.4)
        await one.put("CCCCCC", summary("CCCCCC", spectators=1))
        await asyncio.sleep(0.35)
        assert await two.races(10) == [summary("CCCCCC", spectators=1)]
        assert await one.redis.hkeys(ROOMS_KEY) == [b"CCCCCC"]
        assert await one.redis.zcard(UNTIL_KEY) == 1
    finally:
        await one.close()
        await two.close()


@pytest.mark.redis
async def test_in_redis_the_list_spans_instances_and_an_entry_not_put_again_ages_out(
    redis_server: RedisServer,
) -> None:
    await check_a_redis_live_list(redis_server.url)


@pytest.mark.redis
async def test_a_redis_that_does_not_answer_is_log_unavailable_quoting_no_summary(redis_server: RedisServer) -> None:
    live = RedisLiveList(redis_server.url, ttl_ms=1000, timeout_s=0.5)
    await live.open()
    redis_server.kill()
    try:
        for attempt in (live.put("AAAAAA", summary("AAAAAA")), live.drop("AAAAAA"), live.races(10)):
            with pytest.raises(LogUnavailable) as refused:
                await attempt
            assert "Ada" not in str(refused.value) and "AAAAAA" not in str(refused.value)
    finally:
        await live.close()


@pytest.mark.redis
@pytest.mark.slow
async def test_on_a_redis_cluster_the_list_is_one_slots_and_works_the_same(
    redis_cluster: RedisClusterNodes,
) -> None:
    live = RedisLiveList(redis_cluster.url, ttl_ms=1000)
    await live.open()
    assert live.cluster
    await live.close()
    await check_a_redis_live_list(redis_cluster.url)
