"""One owner per room in a cluster's Redis log: the claim, the lease, and fencing — an instance
whose lease moved to another can never append again — on a ``redis-server`` of the test's own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import Redis

from halfmoon_server.adapters.redis_log import READS, RedisLog
from halfmoon_server.errors import LogUnavailable
from tests.server.instances import RedisServer

pytestmark = pytest.mark.redis


class Follower:
    """A room as the log sees it: what it was delivered, and whether it was fenced."""

    def __init__(self, room_id: str) -> None:
        self.id = room_id
        self.applied = 0
        self.was_fenced = False
        self.delivered: list[int] = []

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        self.applied = number
        self.delivered.append(number)

    def went_back(self) -> None:
        raise AssertionError("the log did not go back")

    def fenced(self) -> None:
        self.was_fenced = True


@pytest.fixture
async def logs(redis_server: RedisServer) -> AsyncIterator[tuple[RedisLog, RedisLog, Redis]]:
    one = RedisLog(redis_server.url, lease_ms=600, advertise="http://one.test")
    two = RedisLog(redis_server.url, lease_ms=600, advertise="http://two.test")
    raw = Redis.from_url(redis_server.url)
    await one.open()
    await two.open()
    try:
        yield one, two, raw
    finally:
        await one.close()
        await two.close()
        await raw.aclose()


async def test_the_maker_of_a_room_owns_it_and_another_instance_is_told_whose_it_is(
    logs: tuple[RedisLog, RedisLog, Redis],
) -> None:
    one, two, raw = logs
    assert await one.create({"room": "K7WQ2M"})
    claim = await two.claim("K7WQ2M")
    assert (claim.owner, claim.mine) == (one.instance, False) and 0 < claim.ttl_ms <= 600
    assert await two.owner("K7WQ2M") == one.instance
    assert (await one.claim("K7WQ2M")).mine, "the owner's claim renews its own lease"
    assert await raw.get("hm:{K7WQ2M}:owner") == f"{one.instance} 1".encode()
    assert await raw.smembers(f"hm:owned:{{{one.instance}}}") == {b"K7WQ2M"}
    assert (await two.claim("NOROOM")).owner is None, "no header: nothing to own"
    assert await raw.get("hm:{NOROOM}:owner") is None
    await asyncio.sleep(1.2)  # heartbeats: each instance knows the other's advertised URL
    assert two.route(one.instance) == "http://one.test" and two.route(two.instance) is None


async def test_an_owner_whose_lease_moved_can_never_append_again(logs: tuple[RedisLog, RedisLog, Redis]) -> None:
    one, two, raw = logs
    room = Follower("K7WQ2M")
    assert await one.create({"room": room.id})
    one.follow(room)
    assert await one.append(room.id, {"k": "tick"}) == 1
    # the owner stalls past its lease (as a paused process would): its lease runs out, the other
    # instance takes the room over with the next epoch
    await raw.delete("hm:{K7WQ2M}:owner")
    taken = await two.claim(room.id)
    assert taken.mine and await raw.get("hm:{K7WQ2M}:owner") == f"{two.instance} 2".encode()
    with pytest.raises(LogUnavailable, match="another server owns this room") as refused:
        await one.append(room.id, {"k": "tick"})
    assert refused.value.certain, "refused by the script: certainly not appended"
    assert room.was_fenced and room.delivered == [1]
    assert await raw.llen("hm:{K7WQ2M}:log") == 1, "nothing of the fenced owner's reached the log"
    with pytest.raises(LogUnavailable, match="not owned here"):
        await one.append(room.id, {"k": "tick"})  # it let the room go: it does not even try
    assert await raw.get("hm:{K7WQ2M}:owner") == f"{two.instance} 2".encode(), "the new owner's lease is untouched"


async def test_an_idle_owner_keeps_its_lease_and_a_stolen_one_is_found_by_the_renewal(
    logs: tuple[RedisLog, RedisLog, Redis],
) -> None:
    one, two, raw = logs
    room = Follower("K7WQ2M")
    assert await one.create({"room": room.id})
    one.follow(room)
    await asyncio.sleep(1.5)  # 2.5 leases with no append: renewed every third of the lease
    assert not (await two.claim(room.id)).mine
    await raw.set("hm:{K7WQ2M}:owner", f"{two.instance} 7")  # taken over behind its back
    await asyncio.sleep(0.5)
    assert room.was_fenced, "the renewal found the lease another's"
    assert await raw.smembers(f"hm:owned:{{{one.instance}}}") == set()


async def test_a_room_let_go_is_claimed_at_once_and_a_dead_owners_rooms_are_adopted_after_its_lease(
    logs: tuple[RedisLog, RedisLog, Redis], redis_server: RedisServer
) -> None:
    one, two, raw = logs
    room = Follower("K7WQ2M")
    assert await one.create({"room": room.id})
    one.follow(room)
    one.unfollow(room.id)  # dropped here (asleep): its lease goes with it
    await asyncio.sleep(0.1)  # (let go in the background)
    assert (await two.claim(room.id)).mine, "claimed at once, long before the lease would have run out"
    two.unfollow(room.id)
    # an instance that owns a room and stops: its heartbeat and renewals stop, nothing is let go
    gone = RedisLog(redis_server.url, lease_ms=600)
    await gone.open()
    assert (await gone.claim(room.id)).mine
    for task in gone._tasks:  # (as SIGKILL would: no close)
        task.cancel()
    await asyncio.gather(*gone._tasks, return_exceptions=True)
    assert await two.adopt() == [], "heard from just now, its lease live: not adopted"
    await asyncio.sleep(3.0)  # ADOPT_AFTER_MS: no heartbeat for 1.5 s (and a beat's phase); its lease over
    assert await two.adopt() == [room.id]
    assert (await two.claim(room.id)).mine
    assert await two.adopt() == [] and await raw.smembers(f"hm:owned:{{{gone.instance}}}") == set()
    await gone.redis.aclose()
    await gone.redis.connection_pool.disconnect()


async def test_an_instance_that_starts_during_anothers_heartbeat_keeps_its_route(redis_server: RedisServer) -> None:
    """Two instances' heartbeats interleave: one's beat, then the other starts (its own beat, its
    route), then the first reads the routes. The newcomer's route must stay: were it deleted as
    forgotten, no other instance could send a connection to its rooms until its next beat."""
    one = RedisLog(redis_server.url, lease_ms=600, advertise="http://one.test")
    two = RedisLog(redis_server.url, lease_ms=600, advertise="http://two.test")
    raw = Redis.from_url(redis_server.url)
    await one.open()
    beat = one._beat

    async def beat_then_another_starts(**kwargs: Any) -> Any:
        result = await beat(**kwargs)
        await two.open()
        return result

    try:
        # and a route of an instance long gone (out of the heartbeat set): that one is forgotten
        await raw.hset("hm:routes", "gone", "http://gone.test")
        one._beat = beat_then_another_starts  # type: ignore[method-assign]
        try:
            await one._beat_once()
        finally:
            one._beat = beat  # type: ignore[method-assign]
        assert await raw.hgetall("hm:routes") == {
            one.instance.encode(): b"http://one.test",
            two.instance.encode(): b"http://two.test",
        }
    finally:
        await one.close()
        await two.close()
        await raw.aclose()


async def test_instances_tell_the_newest_log_format_they_read_and_each_knows_what_all_of_them_read(
    redis_server: RedisServer,
) -> None:
    """Every heartbeat says which room log format this instance reads at most (:data:`READS`) and
    learns the newest that every live instance reads: an instance that says nothing of it — one
    of a release before it — reads format 1, so new rooms are written in format 1 while it runs."""
    unopened = RedisLog(redis_server.url, reads=2)
    assert unopened.shared_reads() == 1, "before any heartbeat: the oldest"
    one = RedisLog(redis_server.url, lease_ms=600, reads=2)
    two = RedisLog(redis_server.url, lease_ms=600, reads=2)
    raw = Redis.from_url(redis_server.url)
    await one.open()
    await two.open()
    try:
        await one._beat_once()
        assert one.shared_reads() == 2
        assert await raw.hget(READS, one.instance) == b"2"
        seconds, micros = await raw.time()
        await raw.zadd("hm:instances", {"older": seconds * 1000 + micros // 1000})  # heard from, silent on formats
        await one._beat_once()
        assert one.shared_reads() == 1
        await raw.zrem("hm:instances", "older")  # it stops (a clean stop leaves the set at once)
        await one._beat_once()
        assert one.shared_reads() == 2
        capped = RedisLog(redis_server.url, lease_ms=600, reads=1)  # reads no newer than 1 itself
        await capped.open()
        await one._beat_once()
        assert one.shared_reads() == capped.shared_reads() == 1
        await capped.close()
        assert await raw.hget(READS, capped.instance) is None, "a stopped instance's word stays"
        await one._beat_once()
        assert one.shared_reads() == 2
        # what is not a version counts as the oldest, and breaks no heartbeat; an entry of an
        # instance gone from the set (it crashed long ago) is dropped
        await raw.hset(READS, two.instance, "²")
        await raw.hset(READS, "crashed", "2")
        await one._beat_once()
        assert one.shared_reads() == 1
        assert await raw.hget(READS, "crashed") is None
        await two._beat_once()  # (it says its own again)
        await one._beat_once()
        assert one.shared_reads() == 2
    finally:
        await one.close()
        await two.close()
        await raw.aclose()
