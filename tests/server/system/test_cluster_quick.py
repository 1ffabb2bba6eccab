"""The quick-race queue of a cluster lives in Redis: a player queued on one instance and a player
queued on another are matched into one sealed race, which each joins on their own instance; one
identity holds one place across instances. Real ``halfmoon serve`` processes, a ``redis-server``
of the test's own and a fresh PostgreSQL database (skipped where missing, except under CI=true)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import require_service
from tests.server.instances import Instance, RedisServer
from tests.server.support import WsClient

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

QUICK_ENV = {"HALFMOON_QUICK_FILL_S": "1", "HALFMOON_QUICK_LONE_S": "60", "HALFMOON_QUICK_JOIN_S": "10"}


@pytest.fixture
async def two_instances(tmp_path: Path, pg_database: str) -> AsyncIterator[tuple[Instance, Instance]]:
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    redis = await RedisServer(tmp_path / "redis").start()
    one, two = (
        Instance(tmp_path / f"instance{k}", db=pg_database, redis=redis.url, env=QUICK_ENV) for k in (1, 2)
    )
    try:
        await asyncio.gather(one.start(), two.start())
        yield one, two
    finally:
        one.stop()
        two.stop()
        redis.kill()


def key(n: int) -> str:
    return f"cluster-player-key-{n:04d}-xxxx"


async def test_players_of_two_instances_are_matched_into_one_race(two_instances: tuple[Instance, Instance]) -> None:
    one, two = two_instances
    ada = await WsClient.connect_url(one.ws, "ada")
    bob = await WsClient.connect_url(two.ws, "bob")
    await ada.send("queue", name="Ada", player_key=key(1))
    assert (await ada.next("queued"))["count"] == 1
    await bob.send("queue", name="Bob", player_key=key(2))
    # each instance tells its own player of the other's: one group of two, one countdown
    bob_status = await bob.next("queued")
    ada_status = await ada.next("queued")
    assert (ada_status["count"], bob_status["count"]) == (2, 2)
    assert ada_status["starts_at"] == bob_status["starts_at"] is not None
    ada_match, bob_match = await ada.next("matched"), await bob.next("matched")
    assert ada_match["room"] == bob_match["room"] and ada_match["players"] == 2
    room = ada_match["room"]
    for client, n, matched in ((ada, 1, ada_match), (bob, 2, bob_match)):
        await client.send("join", room=room, name=matched["name"], player_key=key(n))
        assert (await client.next("welcome", "error"))["type"] == "welcome"
    started = [await client.next("started") for client in (ada, bob)]
    assert started[0]["started_at"] == started[1]["started_at"] and started[0]["code"] is None
    for client in (ada, bob):
        await client.close()


async def test_one_identity_holds_one_place_across_instances(two_instances: tuple[Instance, Instance]) -> None:
    one, two = two_instances
    ada = await WsClient.connect_url(one.ws, "ada")
    again = await WsClient.connect_url(two.ws, "ada again")
    await ada.send("queue", name="Ada", player_key=key(1))
    await ada.next("queued")
    await again.send("queue", name="Ada", player_key=key(1))
    assert (await again.next("error"))["code"] == "already_queued"
    await ada.send("unqueue")
    await ada.next("unqueued")
    await asyncio.sleep(0.3)  # (the place leaves Redis in the background)
    await again.send("queue", name="Ada", player_key=key(1))
    assert (await again.next("queued", "error"))["type"] == "queued"
    for client in (ada, again):
        await client.close()
