"""One owner per room across real ``halfmoon serve --redis …`` processes: connections that reach
another instance are relayed to the owner; an owner paused past its lease (SIGSTOP) is fenced
and never appends again; an owner killed mid-race (SIGKILL) is replaced within its lease and a
couple of seconds, every member resumes there with its token and no acknowledged move is lost;
a client cannot pass itself off as relayed.

Each test starts its own ``redis-server`` and a fresh PostgreSQL database; they skip where those
are missing, except under CI=true."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from halfmoon.game import Move
from halfmoon_server.web.relay import RELAYED_FOR, sign
from tests.server.instances import Instance, RedisServer
from tests.server.redis_cluster import RedisClusterNodes
from tests.server.support import WsClient, won_record
from tests.server.system.test_durability import play

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = str(won_record().code)
LEASE_MS = 1500
SECRET = b"instances-test-secret-32-bytes-long"  # the secret tests.server.instances gives every instance

Cluster = Callable[..., Awaitable[list[Instance]]]


@pytest.fixture
async def cluster(tmp_path: Path, redis_server: RedisServer, pg_database: str) -> AsyncIterator[Cluster]:
    started: list[Instance] = []

    async def start(count: int, *args: str) -> list[Instance]:
        instances = [
            Instance(
                tmp_path / f"instance{len(started) + k}",
                db=pg_database,
                redis=redis_server.url,
                args=("--owner-lease-ms", str(LEASE_MS), *args),
            )
            for k in range(count)
        ]
        started.extend(instances)
        await asyncio.gather(*(inst.start() for inst in instances))
        return instances

    yield start
    for inst in started:
        if inst.process is not None:
            inst.process.send_signal(signal.SIGCONT)  # (a test that failed while one was paused)
        inst.stop()


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


async def owner_of(redis: Any, room: str) -> str | None:
    held = await redis.get(f"hm:{{{room}}}:owner")
    return None if held is None else bytes(held).decode().split(" ")[0]


async def log_of(redis: Any, room: str) -> list[dict[str, Any]]:
    """The room's entries as Redis holds them (``"<ms> <json>"`` each)."""
    lines = await redis.lrange(f"hm:{{{room}}}:log", 0, -1)
    return [json.loads(bytes(line).split(b" ", 1)[1]) for line in lines]


async def answered(client: WsClient, deadline: float) -> dict[str, Any] | None:
    """The client's ``welcome`` or ``error``; None when its connection closed first (told to
    connect again) or the deadline passed."""
    while time.monotonic() < deadline:
        try:
            return await client.next("welcome", "error", timeout=0.2)
        except TimeoutError:
            if client.closed:
                return None
    return None


async def rejoin(urls: list[str], label: str, room: str, token: str, since: int, *, timeout: float = 20.0) -> WsClient:
    """Connect again and resume until welcomed (a client's reconnection: each try on the next
    URL; a close or ``unavailable`` is tried again after a moment)."""
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        url = urls[attempt % len(urls)]
        attempt += 1
        try:
            client = await WsClient.connect_url(url, label)
            await client.send("resume", room=room, token=token, since=since)
            answer = await answered(client, deadline)
            if answer is not None and answer["type"] == "welcome":
                return client
            await client.close()
        except (aiohttp.ClientError, TimeoutError, ConnectionError):
            pass
        assert time.monotonic() < deadline, f"{label} could not resume within {timeout} s"
        await asyncio.sleep(0.1)


async def rewatch(urls: list[str], label: str, room: str, *, timeout: float = 20.0) -> WsClient:
    """A spectator's reconnection: ``watch`` again until welcomed."""
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        attempt += 1
        try:
            client = await WsClient.connect_url(urls[attempt % len(urls)], label)
            await client.send("watch", room=room)
            answer = await answered(client, deadline)
            if answer is not None and answer["type"] == "welcome":
                return client
            await client.close()
        except (aiohttp.ClientError, TimeoutError, ConnectionError):
            pass
        assert time.monotonic() < deadline, f"{label} could not watch again within {timeout} s"
        await asyncio.sleep(0.1)


async def test_members_reaching_other_instances_are_relayed_to_the_one_owner_which_alone_appends(
    cluster: Cluster, redis: Redis
) -> None:
    one, two, three = await cluster(3)
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(f"{one.base}/api/rooms", json={"code": CODE})).json())["room"]
        assert await owner_of(redis, room) is None, "a room made for a link waits, asleep, for its first member"
        ada = await WsClient.connect_url(one.ws, "ada")
        await ada.send("join", room=room, name="Ada")
        await ada.next("welcome")
        owner = await owner_of(redis, room)
        assert owner is not None, "the instance its first member reached owns it"
        bob = await WsClient.connect_url(two.ws, "bob")  # relayed: its first message names the room
        await bob.send("join", room=room, name="Bob")
        assert [p["name"] for p in (await bob.next("welcome"))["room"]["players"]] == ["Ada", "Bob"]
        sam = await WsClient.connect_url(f"{three.ws}?room={room}", "sam")  # relayed: its URL names it
        await sam.send("watch", room=room)
        assert (await sam.next("welcome"))["role"] == "spectator"
        await ada.send("start")
        for client in (ada, bob, sam):
            await client.next("started")
        await play(ada, LINE[:3], 1)
        await play(bob, LINE[:2], 1)
        await asyncio.sleep(0.3)
        moved = [m for m in await sam.drain(0.2) + sam.history if m["type"] == "moved"]
        assert {(m["player"], m["moves"]) for m in moved} >= {("p1", 3), ("p2", 2)}, "the spectator sees both"
        # nobody but the owner holds the room or appends to it
        assert {entry["o"].split(":")[0] for entry in await log_of(redis, room)} == {owner}
        for inst in (one, two, three):
            metrics = await (await http.get(f"{inst.base}/metrics")).text()
            lines = metrics.splitlines()
            held = sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("halfmoon_rooms{"))
            assert held == (1 if inst is one else 0), "only the owner holds the room"
            counter = 'halfmoon_relayed_connections_total{outcome="relayed"}'
            relayed = [line for line in lines if line.startswith(counter)]
            assert [float(line.rsplit(" ", 1)[1]) for line in relayed] == ([] if inst is one else [1.0]), (
                "Bob's connection relayed by two, Sam's by three; none by the owner"
            )
        stats = await redis.info("commandstats")
        assert "cmdstat_publish" not in stats and "cmdstat_spublish" not in stats, "no fan-out with one owner"
        # a REST read on a non-owner is served from the log, without holding the room
        past = await (await http.get(f"{two.base}/api/rooms/{room}")).json()
        assert [p["moves"] for p in past["players"]] == [3, 2]
    for client in (ada, bob, sam):
        await client.close()


async def test_an_owner_paused_past_its_lease_is_fenced_and_never_appends_again(cluster: Cluster, redis: Redis) -> None:
    one, two = await cluster(2)
    await paused_owner_is_fenced(one, two, redis)


async def test_an_owner_paused_past_its_lease_is_fenced_on_a_redis_cluster_too(
    tmp_path: Path, redis_cluster: RedisClusterNodes, pg_database: str
) -> None:
    args = ("--owner-lease-ms", str(LEASE_MS))
    one, two = (Instance(tmp_path / f"i{k}", db=pg_database, redis=redis_cluster.url, args=args) for k in (1, 2))
    client = RedisCluster.from_url(redis_cluster.url)
    try:
        await asyncio.gather(one.start(), two.start())
        await paused_owner_is_fenced(one, two, client)
    finally:
        for inst in (one, two):
            if inst.process is not None:
                inst.process.send_signal(signal.SIGCONT)
            inst.stop()
        await client.aclose()


async def paused_owner_is_fenced(one: Instance, two: Instance, redis: Any) -> None:
    """``one`` owns a solo room and is paused (SIGSTOP) with a move of its player waiting in its
    socket; ``two`` takes the room over once the lease ran out and the player resumes there; then
    ``one`` is woken (SIGCONT): its append is refused, its client told to connect again, and none
    of its entries lands in the log after the takeover."""
    ada = await WsClient.connect_url(one.ws, "ada")
    await ada.send("solo", name="Ada", code=CODE)
    welcome = await ada.next("welcome")
    room, token = welcome["room"]["room"], welcome["token"]
    await play(ada, LINE[:2], 1)
    paused = await owner_of(redis, room)
    assert paused is not None

    assert one.process is not None
    one.process.send_signal(signal.SIGSTOP)
    await ada.send("move", positions=LINE[2].names(), id=3)  # waits in the paused owner's socket
    async with asyncio.timeout(15):  # the survivor takes the room over once the lease ran out
        while (await owner_of(redis, room)) in (paused, None):
            await asyncio.sleep(0.05)
    taken_at = len(await log_of(redis, room))
    again = await rejoin([two.ws], "ada2", room, token, ada.seq)
    await play(again, LINE[2:4], 3)  # acknowledged by the new owner

    one.process.send_signal(signal.SIGCONT)
    async with asyncio.timeout(10):  # the paused owner wakes: its append is refused, its client sent on
        while not ada.closed:
            await asyncio.sleep(0.05)
    assert ada.ws.close_code == 1012, "told to connect again"
    await play(again, LINE[4:5], 5)
    entries = await log_of(redis, room)
    assert not [e for e in entries[taken_at:] if e["o"].startswith(paused + ":")], "the fenced owner appended"
    assert [e["k"] for e in entries].count("move") == 5, "every acknowledged move once, the refused one not"
    answered = [m for m in ada.history if m.get("id") == 3]
    assert all(m["type"] == "error" and m["code"] == "unavailable" for m in answered), answered
    assert "owned by another instance now" in one.log.read_text()
    await again.close()
    await ada.close()


async def test_a_killed_owners_race_is_taken_over_and_every_member_resumes_with_no_acknowledged_move_lost(
    cluster: Cluster, redis: Redis
) -> None:
    one, two, three = await cluster(3)
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(f"{one.base}/api/rooms", json={"code": CODE})).json())["room"]
    entry = {"ada": one, "bob": two, "cy": three}  # Bob and Cy are relayed to the owner
    clients: dict[str, WsClient] = {}
    tokens: dict[str, str] = {}
    for name, inst in entry.items():
        clients[name] = await WsClient.connect_url(inst.ws, name)
        await clients[name].send("join", room=room, name=name.title())
        tokens[name] = (await clients[name].next("welcome"))["token"]
    sam = await WsClient.connect_url(two.ws, "sam")
    await sam.send("watch", room=room)
    await sam.next("welcome")
    await clients["ada"].send("start")
    for client in clients.values():
        await client.next("started")
    acked = {name: len(await play(client, LINE[:3], 1)) for name, client in clients.items()}

    one.kill(signal.SIGKILL)
    killed = time.monotonic()
    survivors = [two.ws, three.ws]
    back: dict[str, float] = {}
    for name in clients:  # each reconnects through the balancer (here: to a survivor)
        clients[name] = await rejoin(survivors, name, room, tokens[name], clients[name].seq)
        back[name] = time.monotonic() - killed
    sam = await rewatch(survivors, "sam", room)
    assert max(back.values()) < LEASE_MS / 1000 + 4, f"resumed {back} s after the kill"
    new_owner = await owner_of(redis, room)
    assert new_owner is not None
    for name, client in clients.items():
        acks = await play(client, LINE[3:5], 4)
        acked[name] += len(acks)
        assert acks[-1]["moves"] == 5
        await client.send("give_up")
        await client.next("game_over")
    results = (await sam.next("race_over", timeout=10))["results"]
    assert sorted((r["name"], r["moves"]) for r in results) == [("Ada", 5), ("Bob", 5), ("Cy", 5)]
    entries = await log_of(redis, room)
    for k, name in enumerate(clients, 1):
        logged = [e for e in entries if e["k"] == "move" and e["p"] == f"p{k}"]
        assert len(logged) == acked[name] == 5, f"{name}: {len(logged)} moves logged, {acked[name]} acknowledged"
    for client in clients.values():
        await client.close()
    await sam.close()


async def test_a_killed_owners_rooms_are_taken_over_by_a_survivor_with_nobody_asking(
    cluster: Cluster, redis: Redis
) -> None:
    """Survivors look at the rooms a silent instance owned (``hm:owned:{…}``) and claim each once its
    lease ran out: within the lease and ~2 s of the kill, before any player comes back."""
    one, two = await cluster(2)
    ada = await WsClient.connect_url(one.ws, "ada")
    await ada.send("solo", name="Ada", code=CODE)
    room = (await ada.next("welcome"))["room"]["room"]
    await play(ada, LINE[:1], 1)
    dead = await owner_of(redis, room)
    one.kill(signal.SIGKILL)
    killed = time.monotonic()
    async with asyncio.timeout(LEASE_MS / 1000 + 4):
        while (await owner_of(redis, room)) in (dead, None):
            await asyncio.sleep(0.05)
    took = time.monotonic() - killed
    assert took < LEASE_MS / 1000 + 2.5, f"taken over {took:.2f} s after the kill"
    async with asyncio.timeout(3):  # the survivor's next look takes it out of the dead owner's set
        while await redis.smembers(f"hm:owned:{{{dead}}}"):
            await asyncio.sleep(0.05)
    again = await rejoin([two.ws], "ada2", room, (ada.history[0])["token"], ada.seq)
    await play(again, LINE[1:2], 2)
    await again.close()
    await ada.close()


async def test_a_client_cannot_pass_itself_off_as_relayed_but_a_signed_relay_is_trusted(cluster: Cluster) -> None:
    (inst,) = await cluster(1, "--max-connections-per-address", "1")
    first = await WsClient.connect_url(inst.ws, "first")  # 127.0.0.1's one connection
    now = time.time()
    forged = {
        "made up": f"10.1.2.3 {int(now) + 20} {'0' * 64}",
        "another's signature": sign(b"not-the-cluster-secret-but-32-bytes!", "10.1.2.3", now),
        "a changed address": sign(SECRET, "10.1.2.3", now).replace("10.1.2.3", "10.1.2.4"),
        "expired": sign(SECRET, "10.1.2.3", now - 120),
    }
    for why, header in forged.items():
        spoof = await WsClient.connect_url(inst.ws, why, headers={RELAYED_FOR: header})
        async with asyncio.timeout(5):
            while not spoof.closed:
                await asyncio.sleep(0.02)
        assert spoof.ws.close_code == 1013, f"{why}: counted as 127.0.0.1's second connection, refused"
        await spoof.close()
    vouched = await WsClient.connect_url(inst.ws, "vouched", headers={RELAYED_FOR: sign(SECRET, "10.1.2.3", now)})
    await vouched.send("ping")
    assert (await vouched.next("pong"))["type"] == "pong", "a relay's signed address counts as that address"
    await vouched.close()
    await first.close()
