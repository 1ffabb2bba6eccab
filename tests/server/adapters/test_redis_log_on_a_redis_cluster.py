"""The Redis room log on a real Redis Cluster (3 masters, 3 replicas of Debian's redis-server, on
ports of the test's own): found from one node's URL; a room's commands and scripts touch its slot
only (no CROSSSLOT, ever); the wake set in buckets over the masters; a room's owner alone appends
and nothing is published; an append no replica confirms in time is refused as uncertain and
applied nowhere; a room whose slot moves is appended to on its new master."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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

    def fenced(self) -> None:
        self.lost = True



async def stats(nodes: RedisClusterNodes, section: str) -> dict[int, dict[str, Any]]:
    return {port: await nodes.node(port, "INFO", section) for port in nodes.live}  # type: ignore[misc]


async def until(condition: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_a_rooms_commands_stay_in_its_slot_and_its_owner_alone_appends_publishing_nothing(
    redis_cluster: RedisClusterNodes,
) -> None:
    one, two = RedisLog(redis_cluster.url), RedisLog(redis_cluster.url)
    await one.open()
    await two.open()
    try:
        assert one.cluster and two.cluster, "a node's URL names the whole cluster"
        rooms = [f"R{n:03d}" for n in range(12)]
        for room_id in rooms:
            assert await one.create({"room": room_id, "v": 1})
        assert not await two.create({"room": rooms[0]}), "a room id is claimed once across instances"

        mine, theirs = Copy(rooms[0], one), Copy(rooms[0], two)
        one.follow(mine)
        two.follow(theirs)
        await asyncio.gather(*(one.append(rooms[0], {"k": "x", "n": n}) for n in range(20)))
        assert [e["n"] for e in mine.entries] == list(range(20))
        with pytest.raises(LogUnavailable, match="not owned here"):
            await two.append(rooms[0], {"k": "x"})
        loaded_before = await two.load(rooms[0])
        assert (await two.claim(rooms[0])).owner == one.instance, "the maker owns it, on the room's master"
        assert theirs.entries == [], "another instance applies nothing of it"
        # fencing on the room's master: the owner's lease runs out (it stalled), the other takes the
        # room with the next epoch, and the old owner's append is refused by the script
        owner_key = f"hm:{{{rooms[0]}}}:owner"
        await redis_cluster.node(await redis_cluster.master_of(owner_key), "DEL", owner_key)
        assert (await two.claim(rooms[0])).mine
        with pytest.raises(LogUnavailable, match="another server owns this room"):
            await one.append(rooms[0], {"k": "x", "n": 99})
        assert mine.applied == 20 and (await two.load(rooms[0])) == loaded_before
        assert all(e["t"] > 0 for e in mine.entries), "each entry's time is Redis's clock"
        loaded = await two.load(rooms[0])
        assert loaded is not None and loaded.entries == mine.entries
        commands = await stats(redis_cluster, "commandstats")
        published = sum(
            s.get(f"cmdstat_{c}", {}).get("calls", 0) for s in commands.values() for c in ("publish", "spublish")
        )
        assert published == 0, "nothing is published: the owner alone follows the room"
        for room_id in rooms[2:]:
            one.unfollow(room_id)  # let go (asleep): their leases go, and the wake set finds them
        await asyncio.sleep(0.3)

        # the wake set: its buckets on more than one master, and due() reads every one
        masters = {await redis_cluster.master_of(f"hm:wake:{{b{n}}}") for n in range(WAKE_BUCKETS)}
        assert len(masters) >= 2, masters
        for k, room_id in enumerate(rooms):
            await one.wake(room_id, 1000 + k)
        due = set(await two.due(2000))
        assert due == set(rooms) - {rooms[0], rooms[1]}, "every room due, but those a live instance owns"
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
    # patient while the room is set up: a replica just synced, with appendfsync always, on a
    # loaded machine, has been seen to take longer than 200 ms to confirm the first write
    one = RedisLog(redis_cluster.url, replicas=1, wait_ms=5000)
    two = RedisLog(redis_cluster.url, replicas=1, wait_ms=200)
    await one.open()
    await two.open()
    replica = (await redis_cluster.replicas_of(await redis_cluster.master_of("hm:{W1}:log")))[0]
    try:
        assert await one.create({"room": "W1"})
        here = Copy("W1", one)
        one.follow(here)
        assert await one.append("W1", {"k": "x", "n": 0}) == 1

        one.wait_ms = 200
        redis_cluster.pause(replica)  # the room's replica stops confirming
        try:
            with pytest.raises(LogUnavailable, match="0 of 1 Redis replicas confirmed it within 200 ms") as refused:
                await one.append("W1", {"k": "x", "n": 1})
            assert not refused.value.certain, "it is in the master's list: it may survive, or be lost with it"
            await asyncio.sleep(0.3)
            assert [e["n"] for e in here.entries] == [0], "not applied where it was sent"
            with pytest.raises(LogUnavailable, match="0 of 1"):
                await two.load("W1")  # a read that would show it waits for the replica too
        finally:
            redis_cluster.resume(replica)
        assert await one.append("W1", {"k": "x", "n": 2}) == 3, "a later confirmed append covers it"
        assert [e["n"] for e in here.entries] == [0, 1, 2]
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
        here = Copy("M1", one)
        one.follow(here)
        assert await one.append("M1", {"k": "x", "n": 0}) == 1
        source = await redis_cluster.master_of("hm:{M1}:log")
        target = next(port for port in await masters(redis_cluster) if port != source)
        await redis_cluster.move_slot_of("hm:{M1}:log", target)

        # the owner still sends the room's appends to its old master, which answers MOVED:
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
        assert await append_again(one, 2) == 3
        assert [e["n"] for e in here.entries] == [0, 1, 2]
        for _ in range(3):  # the other instance's map is stale too: its claim is refused once
            try:
                claim = await two.claim("M1")
                break
            except LogUnavailable:
                await asyncio.sleep(0.1)
        assert claim.owner == one.instance, "the lease moved with the slot"
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
