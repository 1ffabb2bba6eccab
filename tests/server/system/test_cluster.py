"""Past one process: instances of ``halfmoon serve --redis … --db postgresql…`` share live rooms
through Redis and results through PostgreSQL. Any instance serves any player of any room (relayed
to the room's one owner: tests/server/system/test_room_owners.py); an
instance killed mid-race costs nothing acknowledged; Redis down refuses moves clearly and play
goes on when it is back; instances starting together on an empty database all come up.

Each test starts its own ``redis-server`` (on another port, so it can be killed) and a fresh
PostgreSQL database; they skip where those are missing, except under CI=true."""

from __future__ import annotations

import asyncio
import hashlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from halfmoon.game import Move
from tests.ports import free_port
from tests.server.instances import Instance, RedisServer, wait_healthy
from tests.server.support import WsClient, check_hidden_information, leaderboard_holding, won_record
from tests.server.system.test_deploy import nginx_config
from tests.server.system.test_durability import play, resume

pytestmark = [pytest.mark.redis, pytest.mark.postgres]

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = str(won_record().code)


async def race_through_a_balancer(
    ws_url: str, origin: str, room: str, names: list[str]
) -> tuple[list[WsClient], list[str]]:
    """``names`` join ``room`` one connection each through a balancer at ``ws_url`` (round robin
    spreads them over its instances), the first starts the race and each plays two moves of
    :data:`LINE`: their clients and tokens, to kill an instance under them."""
    clients, tokens = [], []
    for name in names:
        client = await WsClient.connect_url(ws_url, name, headers={"Origin": origin})
        await client.send("join", room=room, name=name)
        tokens.append((await client.next("welcome"))["token"])
        clients.append(client)
    await clients[0].send("start")
    for client in clients:
        await client.next("started")
    for client in clients:
        await play(client, LINE[:2], 1)
    return clients, tokens

Cluster = Callable[[int], Awaitable[list[Instance]]]


@pytest.fixture
async def cluster(tmp_path: Path, redis_server: RedisServer, pg_database: str) -> AsyncIterator[Cluster]:
    started: list[Instance] = []

    async def start(count: int) -> list[Instance]:
        instances = [
            Instance(tmp_path / f"instance{len(started) + k}", db=pg_database, redis=redis_server.url)
            for k in range(count)
        ]
        started.extend(instances)
        await asyncio.gather(*(inst.start() for inst in instances))  # together, on an empty database
        return instances

    yield start
    for inst in started:
        inst.stop()


async def test_a_race_split_over_three_instances_with_a_spectator_survives_two_of_them_killed(
    cluster: Cluster,
) -> None:
    one, two, three = await cluster(3)
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(f"{one.base}/api/rooms", json={"code": CODE})).json()
        room = created["room"]
        # room ids come from one namespace: made on every instance, never the same twice
        others = [await (await http.post(f"{inst.base}/api/rooms", json={})).json() for inst in (one, two, three) * 5]
        assert len({room, *(o["room"] for o in others)}) == 16
    ada = await WsClient.connect_url(one.ws, "ada")
    await ada.send("join", room=room, name="Ada")
    ada_token = (await ada.next("welcome"))["token"]
    bob = await WsClient.connect_url(two.ws, "bob")
    await bob.send("join", room=room, name="Bob")
    bob_welcome = await bob.next("welcome")
    bob_token = bob_welcome["token"]
    assert [p["name"] for p in bob_welcome["room"]["players"]] == ["Ada", "Bob"], "Bob's instance knows Ada"
    assert (await ada.next("player_joined"))["player"]["name"] == "Bob", "Ada hears of Bob across instances"
    sam = await WsClient.connect_url(three.ws, "sam")
    await sam.send("watch", room=room)
    assert (await sam.next("welcome"))["role"] == "spectator"
    assert (await ada.next("spectators"))["count"] == 1

    await ada.send("start")
    starts = [await client.next("started") for client in (ada, bob, sam)]
    assert len({s["started_at"] for s in starts}) == 1 and len({s["seq"] for s in starts}) == 1, "one start for all"
    ada_acks = await play(ada, LINE[:6], 1)
    bob_acks = await play(bob, LINE[:2], 1)
    await asyncio.sleep(0.3)
    for client in (ada, bob, sam):
        await client.drain(0.1)
        seen = client.history
        assert any(m["type"] == "moved" and m["player"] == "p1" and m["moves"] == 6 for m in seen), client.label
        assert any(m["type"] == "moved" and m["player"] == "p2" and m["moves"] == 2 for m in seen), client.label
    assert not any(m["type"] == "started" for m in await sam.drain(0.3)), "the countdown was settled once"

    one.kill(signal.SIGKILL)  # the room's owner: Bob and Sam were relayed to it
    two.kill(signal.SIGKILL)  # two of three instances die mid-race, their players' sockets with them
    async with asyncio.timeout(5):  # Sam's relay on the survivor tells Sam to connect again
        while not sam.closed:
            await asyncio.sleep(0.05)
    assert sam.ws.close_code == 1012
    ada2 = await resume(three, "ada2", room, ada_token, ada.seq)
    assert (await ada2.next("welcome"))["you"] == "p1"
    bob2 = await resume(three, "bob2", room, bob_token, None)
    snapshot = (await bob2.next("welcome"))["room"]
    moves = {p["name"]: (p["moves"], p["score"]) for p in snapshot["players"]}
    assert moves == {"Ada": (6, ada_acks[-1]["score"]), "Bob": (2, bob_acks[-1]["score"])}
    sam2 = await WsClient.connect_url(three.ws, "sam2")
    await sam2.send("watch", room=room)
    assert (await sam2.next("welcome"))["role"] == "spectator"

    await play(ada2, LINE[6:], 7)
    ada_over = await ada2.next("game_over")
    await bob2.send("give_up")
    bob_over = await bob2.next("game_over")
    results = (await sam2.next("race_over", timeout=10))["results"]
    assert [(r["name"], r["moves"], r["outcome"], r["game"]) for r in results] == [
        ("Ada", 48, "won", ada_over["game"]),
        ("Bob", 2, "gave_up", bob_over["game"]),
    ]
    board = await leaderboard_holding(three.base, CODE, 2)
    async with aiohttp.ClientSession() as http:
        past = await (await http.get(f"{three.base}/api/rooms/{room}")).json()
    assert [(e["name"], e["score"], e["moves"]) for e in board["entries"]] == [
        ("Ada", 520, 48),
        ("Bob", bob_acks[-1]["score"], 2),
    ], "every acknowledged move, each game once"
    assert past["phase"] == "finished"
    for client in (ada, bob, sam, ada2, bob2, sam2):
        assert check_hidden_information(client.history) == [], client.label
        await client.close()


async def test_redis_down_refuses_moves_and_play_goes_on_when_it_is_back(
    cluster: Cluster, redis_server: RedisServer
) -> None:
    (inst,) = await cluster(1)
    ada = await WsClient.connect_url(inst.ws, "ada")
    await ada.send("solo", name="Ada", code=CODE)
    welcome = await ada.next("welcome")
    await play(ada, LINE[:4], 1)

    redis_server.kill(signal.SIGKILL)
    await ada.send("move", positions=LINE[4].names(), id=5)
    refused = await ada.next("moved", "error", timeout=10)
    assert refused["type"] == "error" and refused["code"] == "unavailable" and refused["id"] == 5
    assert "try again" in refused["message"] and "Traceback" not in refused["message"]

    await redis_server.start()  # the same port and append-only file: nothing it acknowledged is lost
    for _ in range(100):
        await ada.send("move", positions=LINE[4].names(), id=5)
        answer = await ada.next("moved", "error", timeout=10)
        if answer["type"] == "moved":
            break
        assert answer["code"] == "unavailable", answer
        await asyncio.sleep(0.1)
    assert answer["type"] == "moved" and answer["moves"] == 5, "the four moves before were kept, this one added"
    again = await resume(inst, "ada2", welcome["room"]["room"], welcome["token"], None)
    snapshot = (await again.next("welcome"))["room"]
    assert next(p["moves"] for p in snapshot["players"]) == 5
    await ada.close()
    await again.close()


async def test_nginx_balances_a_race_over_instances_and_a_client_of_a_killed_one_resumes_through_it(
    cluster: Cluster, nginx_path: str, tmp_path: Path
) -> None:
    one, two = await cluster(2)
    port = free_port()
    config = nginx_config([one.port, two.port], port, tmp_path)
    nginx = await asyncio.create_subprocess_exec(nginx_path, "-c", str(config), "-p", str(tmp_path))
    base, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws"
    try:
        await wait_healthy(base)
        async with aiohttp.ClientSession() as http:
            room = (await (await http.post(f"{base}/api/rooms", json={"code": CODE})).json())["room"]
        # round robin: both instances get players
        clients, tokens = await race_through_a_balancer(ws_url, base, room, ["Ada", "Bob", "Cy", "Di"])
        one.kill(signal.SIGKILL)
        await asyncio.sleep(0.5)
        dropped = [k for k, client in enumerate(clients) if client.closed]
        assert dropped, "some players were on the killed instance"
        for k in dropped:  # their clients reconnect to the same address: nginx sends them to the other
            again = await resume_url(ws_url, base, clients[k].label, room, tokens[k], clients[k].seq)
            assert (await again.next("welcome"))["you"] == f"p{k + 1}"
            clients[k] = again
        for client in clients:
            await play(client, LINE[2:4], 3)
            await client.send("give_up")
            await client.next("game_over")
        results = (await clients[0].next("race_over", timeout=10))["results"]
        assert sorted((r["name"], r["moves"]) for r in results) == [("Ada", 4), ("Bob", 4), ("Cy", 4), ("Di", 4)]
        for client in clients:
            await client.close()
    finally:
        nginx.terminate()
        await nginx.wait()


async def resume_url(ws_url: str, origin: str, label: str, room: str, token: str, since: int) -> WsClient:
    client = await WsClient.connect_url(ws_url, label, headers={"Origin": origin})
    await client.send("resume", room=room, token=token, since=since)
    return client


async def test_player_tokens_are_kept_hashed_in_redis_and_resume_still_works(
    cluster: Cluster, redis_server: RedisServer
) -> None:
    """Whoever reads Redis (a backup, a replica, an operator's MONITOR) finds no token to take a
    seat with: the room log holds each token's SHA-256 only. A client resumes with its token, on
    another instance after its own was killed, and its welcome carries the token."""
    one, two = await cluster(2)
    client = await WsClient.connect_url(one.ws, "ada")
    await client.send("solo", name="Ada", code=CODE)
    welcome = await client.next("welcome")
    room, token = welcome["room"]["room"], welcome["token"]
    await play(client, LINE[:2], 1)
    stored = await redis_values(redis_server)
    assert stored and room.encode() in stored
    assert token.encode() not in stored, "a player's token lies in clear in Redis"
    assert hashlib.sha256(token.encode()).hexdigest().encode() in stored
    one.kill(signal.SIGKILL)
    again = await resume(two, "ada2", room, token, client.seq)
    assert (await again.next("welcome"))["token"] == token
    await play(again, LINE[2:3], 3)
    await again.close()
    await client.close()


async def redis_values(server: RedisServer) -> bytes:
    """Every key and value Redis holds, concatenated (strings, lists, sets, hashes)."""
    from redis.asyncio import Redis

    redis = Redis.from_url(server.url)
    out = bytearray()
    try:
        async for key in redis.scan_iter():
            out += key + b"\n"
            kind = (await redis.type(key)).decode()
            if kind == "string":
                out += await redis.get(key) or b""
            elif kind == "list":
                out += b"\n".join(await redis.lrange(key, 0, -1))
            elif kind == "set":
                out += b"\n".join(await redis.smembers(key))
            elif kind == "hash":
                out += b"\n".join(k + b"=" + v for k, v in (await redis.hgetall(key)).items())
            out += b"\n"
    finally:
        await redis.aclose()
    return bytes(out)
