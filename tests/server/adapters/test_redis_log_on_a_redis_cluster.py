"""The Redis room log on a real Redis Cluster (3 masters, 3 replicas of Debian's redis-server, on
ports of the test's own): found from one node's URL; a room's commands and scripts touch its slot
only (no CROSSSLOT, ever); the wake set in buckets over the masters; entries reach another
instance over the room's sharded channel, which nothing publishes to while no other instance
follows the room; an append no replica confirms in time is refused as uncertain and applied
nowhere."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.asyncio.cluster import RedisCluster

from halfmoon_server.adapters.redis_log import WAKE_BUCKETS, RedisLog
from halfmoon_server.errors import LogUnavailable
from tests.server.redis_cluster import RedisClusterNodes

pytestmark = [pytest.mark.redis, pytest.mark.slow]


class Copy:
    """A room's copy on one instance: what the log delivered, in order (a gap filled from the
    log, as the room does)."""

    def __init__(self, room_id: str, log: RedisLog) -> None:
        self.id = room_id
        self.log = log
        self.entries: list[dict[str, Any]] = []
        self.lost = False
        self.catching_up: set[asyncio.Task[None]] = set()

    @property
    def applied(self) -> int:
        return len(self.entries)

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        if number == self.applied + 1:
            self.entries.append(entry)
        elif number > self.applied + 1:
            task = asyncio.get_running_loop().create_task(self.log.catch_up(self.id))
            self.catching_up.add(task)
            task.add_done_callback(self.catching_up.discard)

    def went_back(self) -> None:
        self.lost = True



async def stats(nodes: RedisClusterNodes, section: str) -> dict[int, dict[str, Any]]:
    return {port: await nodes.node(port, "INFO", section) for port in nodes.live}  # type: ignore[misc]


async def until(condition: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_a_rooms_commands_stay_in_its_slot_and_reach_another_instance_over_its_sharded_channel(
    redis_cluster: RedisClusterNodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as older:  # a redis-py before 8 has no asyncio cluster pub/sub
        older.delattr(RedisCluster, "pubsub")
        with pytest.raises(LogUnavailable, match="is a Redis Cluster, which needs redis-py 8 or newer"):
            await RedisLog(redis_cluster.url).open()
    one, two = RedisLog(redis_cluster.url), RedisLog(redis_cluster.url)
    await one.open()
    await two.open()
    try:
        assert one.cluster and two.cluster, "a node's URL names the whole cluster"
        rooms = [f"R{n:03d}" for n in range(12)]
        for room_id in rooms:
            assert await one.create({"room": room_id, "v": 1})
        assert not await two.create({"room": rooms[0]}), "a room id is claimed once across instances"

        alone = Copy(rooms[1], one)
        one.follow(alone)
        await asyncio.sleep(0.2)
        for n in range(5):
            assert await one.append(rooms[1], {"k": "x", "n": n}) == n + 1
        assert [e["n"] for e in alone.entries] == list(range(5))
        commands = await stats(redis_cluster, "commandstats")
        published = sum(s.get("cmdstat_spublish", {}).get("calls", 0) for s in commands.values())
        assert published == 0, "nothing is published while no other instance follows the room"

        mine, theirs = Copy(rooms[0], one), Copy(rooms[0], two)
        one.follow(mine)
        two.follow(theirs)
        await asyncio.sleep(0.2)
        await asyncio.gather(*(log.append(rooms[0], {"k": "x", "n": n}) for n, log in enumerate([one, two] * 10)))
        await until(lambda: mine.applied == theirs.applied == 20)
        assert mine.entries == theirs.entries, "both instances apply the same entries in the same order"
        assert all(e["t"] > 0 for e in mine.entries), "each entry's time is Redis's clock"
        loaded = await two.load(rooms[0])
        assert loaded is not None and loaded.entries == mine.entries

        # the wake set: its buckets on more than one master, and due() reads every one
        masters = {await redis_cluster.master_of(f"hm:wake:{{b{n}}}") for n in range(WAKE_BUCKETS)}
        assert len(masters) >= 2, masters
        for k, room_id in enumerate(rooms):
            await one.wake(room_id, 1000 + k)
        due = set(await two.due(2000))
        assert due == set(rooms) - {rooms[0], rooms[1]}, "every room due, but those held by a live instance"
        assert {one._wake_key(room_id) for room_id in rooms} != {one._wake_key(rooms[0])}, "rooms spread over buckets"

        one.unfollow(rooms[0])
        two.unfollow(rooms[0])
        await one.forget(rooms[0])
        assert await two.load(rooms[0]) is None, "a dropped room is not loaded again"
        assert not await two.create({"room": rooms[0]}), "its id stays taken"
        assert rooms[0] not in await two.due(10**12)

        errors = await stats(redis_cluster, "errorstats")
        assert not any("errorstat_CROSSSLOT" in s for s in errors.values()), errors
        assert not any("errorstat_MOVED" in s for s in errors.values()), errors
    finally:
        await one.close()
        await two.close()


async def test_an_append_no_replica_confirms_in_time_is_refused_as_uncertain_and_applied_nowhere(
    redis_cluster: RedisClusterNodes,
) -> None:
    one = RedisLog(redis_cluster.url, replicas=1, wait_ms=200)
    two = RedisLog(redis_cluster.url, replicas=1, wait_ms=200)
    await one.open()
    await two.open()
    replica = (await redis_cluster.replicas_of(await redis_cluster.master_of("hm:{W1}:log")))[0]
    try:
        assert await one.create({"room": "W1"})
        here, there = Copy("W1", one), Copy("W1", two)
        one.follow(here)
        two.follow(there)
        await asyncio.sleep(0.2)
        assert await one.append("W1", {"k": "x", "n": 0}) == 1
        await until(lambda: there.applied == 1)

        redis_cluster.pause(replica)  # the room's replica stops confirming
        try:
            with pytest.raises(LogUnavailable, match="0 of 1 Redis replicas confirmed it within 200 ms") as refused:
                await one.append("W1", {"k": "x", "n": 1})
            assert not refused.value.certain, "it is in the master's list: it may survive, or be lost with it"
            await asyncio.sleep(0.3)
            assert [e["n"] for e in here.entries] == [0], "not applied where it was sent"
            assert [e["n"] for e in there.entries] == [0], "nor published to the others"
            with pytest.raises(LogUnavailable, match="0 of 1"):
                await two.load("W1")  # a read that would show it waits for the replica too
        finally:
            redis_cluster.resume(replica)
        assert await two.append("W1", {"k": "x", "n": 2}) == 3, "a later confirmed append covers it"
        await until(lambda: here.applied == 3)
        assert [e["n"] for e in here.entries] == [e["n"] for e in there.entries] == [0, 1, 2]
    finally:
        await one.close()
        await two.close()


async def test_a_room_whose_slot_moves_to_another_master_is_refused_once_then_followed_there(
    redis_cluster: RedisClusterNodes,
) -> None:
    one, two = RedisLog(redis_cluster.url), RedisLog(redis_cluster.url)
    await one.open()
    await two.open()
    try:
        assert await one.create({"room": "M1"})
        here, there = Copy("M1", one), Copy("M1", two)
        one.follow(here)
        two.follow(there)
        await asyncio.sleep(0.2)
        assert await one.append("M1", {"k": "x", "n": 0}) == 1
        source = await redis_cluster.master_of("hm:{M1}:log")
        target = next(port for port in await masters(redis_cluster) if port != source)
        await redis_cluster.move_slot_of("hm:{M1}:log", target)

        # each instance still sends the room's appends to its old master, which answers MOVED:
        # the append did not run (certain: nothing changed, send it again), and the instance
        # learns the new map
        async def append_again(log: RedisLog, n: int) -> int:
            refusals: list[LogUnavailable] = []
            async with asyncio.timeout(5):
                while True:
                    try:
                        return await log.append("M1", {"k": "x", "n": n})
                    except LogUnavailable as exc:
                        refusals.append(exc)
                        assert len(refusals) <= 3 and exc.certain and "MovedError" in str(exc), refusals
                        await asyncio.sleep(0.1)

        with pytest.raises(LogUnavailable, match="MovedError") as refused:
            await one.append("M1", {"k": "x", "n": 1})
        assert refused.value.certain
        assert await append_again(one, 1) == 2, "taken once, on the new master"
        assert await append_again(two, 2) == 3
        await until(lambda: here.applied == there.applied == 3)
        assert [e["n"] for e in here.entries] == [e["n"] for e in there.entries] == [0, 1, 2]
        loaded = await two.load("M1")
        assert loaded is not None and [e["n"] for e in loaded.entries] == [0, 1, 2]
    finally:
        await one.close()
        await two.close()


async def masters(nodes: RedisClusterNodes) -> list[int]:
    found = []
    for port in nodes.live:
        if (await nodes.node(port, "INFO", "replication")).get("role") == "master":  # type: ignore[attr-defined]
            found.append(port)
    return found
