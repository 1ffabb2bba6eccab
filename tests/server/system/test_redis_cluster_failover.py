"""A race across two instances of ``halfmoon serve`` on a real Redis Cluster (3 masters, 3
replicas, PostgreSQL for results), each move acknowledged only once a replica has it
(``--redis-replicas 1``): the master that owns the room's slot is SIGKILLed mid-race while its
replica lags behind, the replica is promoted, play goes on once the old master is back as its
replica, and not one acknowledged move is lost — every ``moved`` a mover got is in the room's log
afterwards, and the room a fresh instance replays from the cluster holds every move anyone saw."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from halfmoon.game import Move
from halfmoon_server.adapters.redis_log import RedisLog
from tests.server.instances import Instance
from tests.server.redis_cluster import RedisClusterNodes
from tests.server.support import WsClient, won_record
from tests.server.system.test_durability import resume

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = str(won_record().code)
WAITING = ("--redis-replicas", "1", "--redis-wait-ms", "500")
PAUSED = 12  # moves each player tries while the replica lags
TOTAL = 30  # moves each player plays



class Player:
    """A client that plays :data:`LINE` in order through refusals: a move refused ``unavailable``
    (not confirmed saved) is sent again; if it went in after all, the engine refuses the resend
    as ``illegal_move`` and the player goes on to the next one. A connection the server closes is
    resumed with the player's token, and the room's word taken for how many moves went in."""

    def __init__(self, client: WsClient, ws: str, room: str, token: str, player_id: str) -> None:
        self.clients = [client]
        self.ws, self.room, self.token, self.id = ws, room, token, player_id
        self.done = 0  # moves of LINE that went in
        self.unavailable = 0
        self._id = 0

    @property
    def client(self) -> WsClient:
        return self.clients[-1]

    async def _answer(self) -> dict[str, Any] | None:
        """The next ``moved`` or ``error``; None once the connection was lost and resumed."""
        while True:
            try:
                return await self.client.next("moved", "error", timeout=1)
            except TimeoutError:
                if not self.client.closed:
                    continue
            await self._resume()
            return None

    async def _resume(self) -> None:
        client = await WsClient.connect_url(self.ws, f"{self.id}-again")
        self.clients.append(client)
        async with asyncio.timeout(20):
            while True:
                await client.send("resume", room=self.room, token=self.token)
                welcome = await client.next("welcome", "error")
                if welcome["type"] == "welcome":
                    break
                assert welcome["code"] == "unavailable", welcome
                await asyncio.sleep(0.2)
        self.done = next(p["moves"] for p in welcome["room"]["players"] if p["id"] == self.id)

    async def play_until(self, count: int) -> None:
        uncertain = False
        while self.done < count:
            self._id += 1
            try:
                await self.client.send("move", positions=LINE[self.done].names(), id=self._id)
            except aiohttp.ClientError:  # the server closed it
                await self._resume()
                uncertain = False
                continue
            while True:
                message = await self._answer()
                if message is None:  # resumed: the room says where the player is
                    uncertain = False
                    break
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

    def acknowledged(self) -> list[dict[str, Any]]:
        """The ``moved`` this player's clients got for their own moves (with the id they echo)."""
        return [
            m for c in self.clients for m in c.history if m["type"] == "moved" and m["player"] == self.id and "id" in m
        ]


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
        players = {
            "p1": Player(ada, one.ws, room, ada_token, "p1"),
            "p2": Player(bob, two.ws, room, bob_token, "p2"),
        }
        await asyncio.gather(*(p.play_until(4) for p in players.values()))

        master = await redis_cluster.master_of(f"hm:{{{room}}}:log")
        replica = (await redis_cluster.replicas_of(master))[0]
        # the replica falls behind (stopped, as a slow link or a busy host would) while both
        # players keep moving, then the master dies and the replica takes over: whatever it never
        # got is gone, so none of it may have been acknowledged
        redis_cluster.pause(replica)
        # (a stopped process's sockets still take data: fill them, so what follows stays in the master)
        await redis_cluster.node(master, "SET", f"hm:{{{room}}}:ballast", "x" * 32_000_000)
        racing = [asyncio.create_task(p.play_until(PAUSED)) for p in players.values()]
        await asyncio.wait(racing, timeout=0.7)
        redis_cluster.kill(master)  # mid-race: both players appending
        redis_cluster.resume(replica)
        async with asyncio.timeout(15):
            while await redis_cluster.master_of(f"hm:{{{room}}}:log") != replica:
                await asyncio.sleep(0.1)
        # the promoted replica has no replica of its own: no move can be confirmed, none is
        # acknowledged, until the old master comes back (as systemd restarts it) as its replica
        alone = {player_id: p.done for player_id, p in players.items()}
        redis_cluster.start_node(master)
        await asyncio.wait_for(asyncio.gather(*racing), 40)
        await asyncio.wait_for(asyncio.gather(*(p.play_until(TOTAL) for p in players.values())), 40)
        assert sum(p.unavailable for p in players.values()) > 0, "the master died under the race"

        # a fresh instance replays the room from the cluster (every master with a replica again)
        await redis_cluster.wait_ok()
        three = Instance(tmp_path / "three", db=pg_database, redis=redis_cluster.url, args=WAITING)
        instances.append(three)
        await three.start()
        watcher = await resume(three, "bob-again", room, bob_token, None)
        welcome = await watcher.next("welcome", "error")
        assert welcome["type"] == "welcome", f"the room cannot be replayed: {welcome}"
        replayed = {p["id"]: p for p in welcome["room"]["players"]}
        log = RedisLog(redis_cluster.url)
        await log.open()
        try:
            loaded = await log.load(room, snapshot=False)  # every move, from the first
        finally:
            await log.close()
        assert loaded is not None
        logged = {(entry["p"], entry.get("id")) for entry in loaded.entries if entry["k"] == "move"}
        clients = [c for p in players.values() for c in p.clients]
        for player_id, player in players.items():
            acks = player.acknowledged()
            lost = [m for m in acks if (player_id, m["id"]) not in logged]
            assert not lost, f"{len(lost)} acknowledged moves of {player_id} are not in the room's log: {lost}"
            # move c of the player is LINE's c-th, and the room replayed holds them all
            assert all(m["positions"] == LINE[m["moves"] - 1].names() for m in acks), player_id
            assert replayed[player_id]["moves"] == player.done == TOTAL, (player_id, replayed[player_id])
            seen = moved_seen(clients, player_id)
            assert max(m["moves"] for m in seen) <= replayed[player_id]["moves"], "a move someone saw is missing"
            last = max(acks, key=lambda m: m["moves"])
            assert replayed[player_id]["score"] == last["score"], (player_id, replayed[player_id], last)
        assert all(alone[player_id] == 4 for player_id in players), alone  # (no replica: no ack)
        await watcher.close()
        for client in clients:
            await client.close()
    finally:
        for inst in instances:
            inst.stop()
