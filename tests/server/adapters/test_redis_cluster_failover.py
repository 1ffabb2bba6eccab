"""A race across two instances of ``halfmoon serve`` on a real Redis Cluster (3 masters, 3
replicas, PostgreSQL for results), each move acknowledged only once a replica has it
(``--redis-replicas 1``): the master that owns the room's slot is SIGKILLed mid-race while its
replica lags behind, the replica is promoted, play goes on once the old master is back as its replica, and not one acknowledged
move is lost — every ``moved`` any client
got is in the room a fresh instance replays from the cluster afterwards."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from halfmoon.game import Move
from tests.server.instances import Instance
from tests.server.redis_cluster import RedisClusterNodes, require_redis_cluster
from tests.server.support import WsClient, won_record
from tests.server.test_durability import resume

pytestmark = [pytest.mark.redis, pytest.mark.postgres]

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = str(won_record().code)
WAITING = ("--redis-replicas", "1", "--redis-wait-ms", "500")
TOTAL = 40  # moves each player plays


@pytest.fixture
async def redis_cluster(tmp_path: Path) -> AsyncIterator[RedisClusterNodes]:
    require_redis_cluster()
    nodes = await RedisClusterNodes(tmp_path / "redis-cluster").start()
    yield nodes
    nodes.stop()


class Player:
    """A client that plays :data:`LINE` in order through refusals: a move refused ``unavailable``
    (not confirmed saved) is sent again; if it went in after all, the engine refuses the resend
    as ``illegal_move`` and the player goes on to the next one."""

    def __init__(self, client: WsClient) -> None:
        self.client = client
        self.done = 0  # moves of LINE that went in
        self.unavailable = 0
        self._id = 0

    async def play_until(self, count: int) -> None:
        uncertain = False
        while self.done < count:
            self._id += 1
            await self.client.send("move", positions=LINE[self.done].names(), id=self._id)
            while True:
                message = await self.client.next("moved", "error", timeout=20)
                if message["type"] == "moved":
                    if message.get("id") == self._id:
                        self.done += 1
                        uncertain = False
                        break
                    continue  # another player's, or a resent move's first copy
                if message["code"] == "unavailable":
                    self.unavailable += 1
                    uncertain = True
                    await asyncio.sleep(0.1)
                    break
                assert message["code"] == "illegal_move" and uncertain, message
                self.done += 1  # the uncertain one went in after all
                uncertain = False
                break


def moved_seen(clients: list[WsClient], player: str) -> list[dict[str, Any]]:
    return [m for c in clients for m in c.history if m["type"] == "moved" and m["player"] == player]


async def test_no_acknowledged_move_is_lost_when_the_master_of_the_rooms_slot_dies_mid_race(
    tmp_path: Path, redis_cluster: RedisClusterNodes, pg_database: str
) -> None:
    one, two = (
        Instance(tmp_path / name, db=pg_database, redis=redis_cluster.url, args=WAITING) for name in ("one", "two")
    )
    instances = [one, two]
    try:
        await asyncio.gather(one.start(), two.start())
        async with aiohttp.ClientSession() as http:
            room = (await (await http.post(f"{one.base}/api/rooms", json={"code": CODE})).json())["room"]
        ada = await WsClient.connect_url(one.ws, "ada")
        await ada.send("join", room=room, name="Ada")
        ada_token = (await ada.next("welcome"))["token"]
        bob = await WsClient.connect_url(two.ws, "bob")
        await bob.send("join", room=room, name="Bob")
        bob_token = (await bob.next("welcome"))["token"]
        await ada.send("start")
        await ada.next("started")
        await bob.next("started")
        players = {"p1": Player(ada), "p2": Player(bob)}
        await asyncio.gather(*(p.play_until(4) for p in players.values()))

        master = await redis_cluster.master_of(f"hm:{{{room}}}:log")
        replica = (await redis_cluster.replicas_of(master))[0]
        racing = [asyncio.create_task(p.play_until(TOTAL)) for p in players.values()]
        async with asyncio.timeout(10):
            while not all(p.done >= 8 for p in players.values()):
                await asyncio.sleep(0.005)
        # the replica falls behind (stopped, as a slow link or a busy host would), the master dies
        # with moves the replica never got, and the replica takes over: those moves are gone, and
        # not one of them may have been acknowledged
        redis_cluster.pause(replica)
        await asyncio.sleep(0.5)
        redis_cluster.kill(master)  # mid-race: both players appending
        redis_cluster.resume(replica)
        killed_at = {player_id: p.done for player_id, p in players.items()}
        async with asyncio.timeout(15):
            while await redis_cluster.master_of(f"hm:{{{room}}}:log") != replica:
                await asyncio.sleep(0.1)
        # the promoted replica has no replica of its own: no move can be confirmed, none is
        # acknowledged, until the old master comes back (as systemd restarts it) as its replica
        assert not any(p.done >= TOTAL for p in players.values())
        redis_cluster.start_node(master)
        await asyncio.wait_for(asyncio.gather(*racing), 40)
        assert all(killed_at[player_id] < TOTAL - 10 for player_id in players), killed_at
        assert sum(p.unavailable for p in players.values()) > 0, "the master died under the race"

        # a fresh instance replays the room from the cluster
        three = Instance(tmp_path / "three", db=pg_database, redis=redis_cluster.url, args=WAITING)
        instances.append(three)
        await three.start()
        watcher = await resume(three, "bob-again", room, bob_token, None)
        replayed = {p["id"]: p for p in (await watcher.next("welcome"))["room"]["players"]}
        clients = [ada, bob]
        for player_id, player in players.items():
            acks = [m for m in player.client.history if m["type"] == "moved" and "positions" in m]
            acks = [m for m in acks if m["player"] == player_id]
            # the mover's acknowledgements: move c of the player is LINE's c-th, and the last is the count
            assert all(m["positions"] == LINE[m["moves"] - 1].names() for m in acks), player_id
            assert replayed[player_id]["moves"] == player.done == TOTAL, (player_id, replayed[player_id])
            seen = moved_seen(clients, player_id)
            assert max(m["moves"] for m in seen) <= replayed[player_id]["moves"], "a move someone saw is missing"
            last = max(acks, key=lambda m: m["moves"])
            assert replayed[player_id]["score"] == last["score"], (player_id, replayed[player_id], last)
        await watcher.close()
        await ada.close()
        await bob.close()
        assert ada_token != bob_token
    finally:
        for inst in instances:
            inst.stop()
