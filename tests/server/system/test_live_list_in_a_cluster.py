"""The live list across a cluster's instances (``--redis``): a public race made and run on one
instance is on every instance's ``GET /api/live``, and its Watch link works through another; a
private race is on none; a public race whose owner died is taken over by a survivor once its
lease ran out and stays on the list from there (the dead owner's own entries leave it within
``--live-ttl``: tests/server/adapters/test_live_list.py ages them out).

Two real ``halfmoon serve`` processes, their own ``redis-server`` and a fresh PostgreSQL database;
they skip where those are missing, except under CI=true."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from halfmoon.game import Move
from tests.conftest import require_service
from tests.server.instances import Instance, RedisServer
from tests.server.support import WsClient, won_record
from tests.server.system.test_durability import play

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = str(won_record().code)
TTL_S = 2.0


@pytest.fixture
async def two_instances(tmp_path: Path, pg_database: str) -> AsyncIterator[tuple[Instance, Instance]]:
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    redis = await RedisServer(tmp_path / "redis").start()
    instances = [
        Instance(tmp_path / f"instance{k}", db=pg_database, redis=redis.url, args=("--live-ttl", str(TTL_S)))
        for k in range(2)
    ]
    try:
        await asyncio.gather(*(inst.start() for inst in instances))
        yield instances[0], instances[1]
    finally:
        for inst in instances:
            inst.stop()
        redis.kill()


async def listed(http: aiohttp.ClientSession, inst: Instance) -> dict[str, dict[str, Any]]:
    answer = await (await http.get(f"{inst.base}/api/live")).json()
    return {race["room"]: race for race in answer["races"]}


async def until(check: Any, within_s: float = 8.0) -> None:
    deadline = time.monotonic() + within_s
    while not await check():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.1)


async def race_on(inst: Instance, room: str, name: str) -> WsClient:
    client = await WsClient.connect_url(inst.ws, name)
    await client.send("join", room=room, name=name)
    await client.next("welcome")
    await client.send("start")
    await client.next("started")
    return client


async def test_the_live_list_spans_instances_and_a_dead_owners_races_stay_listed_by_the_survivor_that_took_them(
    two_instances: tuple[Instance, Instance],
) -> None:
    one, two = two_instances
    async with aiohttp.ClientSession() as http:

        async def made(inst: Instance, body: dict[str, Any]) -> str:
            room: str = (await (await http.post(f"{inst.base}/api/rooms", json=body)).json())["room"]
            return room

        watched, alone = await made(one, {"code": CODE, "listed": True}), await made(one, {"listed": True})
        private = await made(two, {})
        ada = await race_on(one, watched, "Ada")
        cy = await race_on(one, alone, "Cy")
        bob = await race_on(two, private, "Bob")

        async def both_listed() -> bool:
            return set(await listed(http, two)) == set(await listed(http, one)) == {watched, alone}

        await until(both_listed)  # made and run on one; listed on two as well
        # Watch, through the other instance: the spectator view shows Ada's moves
        sam = await WsClient.connect_url(two.ws, "sam")
        await sam.send("watch", room=(await listed(http, two))[watched]["watch_url"].rsplit("/", 1)[1])
        assert (await sam.next("welcome"))["role"] == "spectator"
        await play(ada, LINE[:2], 1)
        moved = await sam.next("moved")
        assert moved["player"] == "p1"

        async def watched_once() -> bool:
            return (await listed(http, one)).get(watched, {}).get("spectators") == 1

        await until(watched_once)
        assert (await listed(http, one))[watched]["players"] == ["Ada"]
        # one dies: once their leases ran out, two takes its races over (one owner per room: a
        # survivor adopts a dead owner's rooms) and keeps them on the list — one's own entries are
        # past their ttl by then, so what stays is two's; the private race is never listed
        one.kill(signal.SIGKILL)
        await asyncio.sleep(TTL_S + 0.5)

        async def adopted_and_listed_by_two() -> bool:
            return set(await listed(http, two)) == {watched, alone} and await rooms_held(http, two) == 3

        await until(adopted_and_listed_by_two, within_s=15)
        assert private not in await listed(http, two)
        for client in (ada, cy, bob, sam):
            await client.close()


async def rooms_held(http: aiohttp.ClientSession, inst: Instance) -> float:
    """How many rooms an instance holds (owns), from its ``/metrics``."""
    metrics = await (await http.get(f"{inst.base}/metrics")).text()
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith("halfmoon_rooms{"))
