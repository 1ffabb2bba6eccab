"""The quick-race queue a cluster shares in Redis (adapters/redis_queue.py): one place per player,
a dead instance's places left out and taken over, one instance at a time holding the matching
lock, a matched player's note handed over once, and Redis down said as ``LogUnavailable``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from halfmoon_server.adapters.redis_queue import RedisQueue
from halfmoon_server.core.queue import Waiting
from halfmoon_server.errors import LogUnavailable
from tests.server.instances import RedisServer

pytestmark = pytest.mark.redis

ADA, BEA = "a" * 64, "b" * 64


@pytest.fixture
async def queue(redis_server: RedisServer) -> AsyncIterator[RedisQueue]:
    client = aioredis.Redis.from_url(redis_server.url, socket_timeout=1, socket_connect_timeout=1)
    try:
        yield RedisQueue(client)
    finally:
        await client.aclose()


async def test_one_player_holds_one_place_while_its_instance_is_alive(queue: RedisQueue) -> None:
    await queue.beat("one", 10_000)
    assert await queue.join(Waiting(ADA, "Ada", 1), "one:1") is None
    assert await queue.join(Waiting(ADA, "Ada", 2), "two:1") == "one:1"  # another instance's connection
    assert await queue.waiting() == [(Waiting(ADA, "Ada", 1), "one:1")]
    await queue.leave(ADA, "two:1")  # not its holder: nothing
    assert len(await queue.waiting()) == 1
    await queue.leave(ADA, "one:1")
    assert await queue.waiting() == []


async def test_a_dead_instances_places_are_left_out_and_taken_over(queue: RedisQueue) -> None:
    await queue.beat("one", 200)
    await queue.beat("two", 10_000)
    await queue.join(Waiting(ADA, "Ada", 1), "one:1")
    await queue.join(Waiting(BEA, "Bea", 2), "two:1")
    assert {holder for _, holder in await queue.waiting()} == {"one:1", "two:1"}
    await asyncio.sleep(0.4)  # instance one stopped saying it is alive
    assert await queue.waiting() == [(Waiting(BEA, "Bea", 2), "two:1")]
    await queue.join(Waiting(ADA, "Ada", 3), "one:1")
    assert await queue.join(Waiting(ADA, "Ada", 4), "two:2") is None  # a dead instance's place: taken over
    assert (Waiting(ADA, "Ada", 4), "two:2") in await queue.waiting()


async def test_one_instance_at_a_time_holds_the_matching_lock(queue: RedisQueue) -> None:
    assert await queue.claim("one", 300)
    assert not await queue.claim("two", 300)
    assert await queue.claim("one", 300)  # renewed
    await asyncio.sleep(0.4)
    assert await queue.claim("two", 300)  # one stopped renewing it


async def test_a_matched_players_note_is_handed_over_once(queue: RedisQueue) -> None:
    await queue.beat("one", 10_000)
    await queue.join(Waiting(ADA, "Ada", 1), "one:1")
    await queue.join(Waiting(BEA, "Bea", 2), "one:2")
    note = {"room": "K7WQ2M", "players": 2, "name": "Ada"}
    await queue.seat({ADA: note, BEA: {**note, "name": "Bea"}})
    assert await queue.waiting() == []
    assert await queue.matched([ADA]) == {ADA: note}
    assert await queue.matched([ADA]) == {}


async def test_redis_down_is_log_unavailable(redis_server: RedisServer, queue: RedisQueue) -> None:
    redis_server.kill()
    with pytest.raises(LogUnavailable, match="the quick-race queue in Redis could not read the queue"):
        await queue.waiting()
