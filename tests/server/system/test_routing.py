"""Routing by room through a real nginx (deploy/nginx.conf: ``hash $halfmoon_room consistent``)
in front of three ``halfmoon serve`` instances sharing Redis and PostgreSQL: every connection of a
room (``/ws?room=ID``: players, spectators) and its REST reads (``/api/rooms/ID``) reach one
instance — nginx's log says which, and the instances' own move counters agree — rooms spread
over the instances, connections naming no room are balanced round robin, and a race through
nginx plays as it does on one server."""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from pathlib import Path

import aiohttp
import pytest

from tests.ports import free_port
from tests.server.instances import Instance, RedisServer
from tests.server.support import WsClient
from tests.server.system.test_cluster import CODE, LINE, Cluster, cluster  # noqa: F401 (a fixture)
from tests.server.system.test_deploy import nginx_config
from tests.server.system.test_durability import play

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

ROOMS = 12  # over 3 instances: all on one by chance once in 59,000 runs


def _moves_counted(metrics: str) -> float:
    """The moves an instance applied for its own connections (``halfmoon_moves_total``)."""
    return sum(float(value) for value in re.findall(r'^halfmoon_moves_total\{kind="move"\} (\S+)$', metrics, re.M))


async def _start_nginx(
    nginx_path: str, instances: list[Instance], folder: Path
) -> tuple[asyncio.subprocess.Process, str]:
    """deploy/nginx.conf before ``instances``, logging for each request its path, the room it was
    routed on and the instance that served it."""
    port = free_port()
    config = nginx_config([inst.port for inst in instances], port, folder)
    log = folder / "routing.log"
    text = config.read_text().replace(
        "access_log off;", f"log_format routing '$request_method $uri [$halfmoon_room] $upstream_addr';\n"
        f"    access_log {log} routing;",
    )  # fmt: skip
    config.write_text(text)
    nginx = await asyncio.create_subprocess_exec(
        nginx_path, "-c", str(config), "-p", str(folder), stderr=asyncio.subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http, asyncio.timeout(10):
        while True:
            try:
                if (await http.get(f"{base}/healthz")).status == 200:
                    return nginx, base
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)


async def test_nginx_sends_every_connection_of_a_room_to_one_instance(
    cluster: Cluster,  # noqa: F811 (the fixture imported above)
    redis_server: RedisServer,
    nginx_path: str,
    tmp_path: Path,
) -> None:
    instances = await cluster(3)
    nginx, base = await _start_nginx(nginx_path, instances, tmp_path)
    ws = base.replace("http", "ws", 1) + "/ws"
    origin = {"Origin": base}
    clients: list[WsClient] = []
    try:
        async with aiohttp.ClientSession() as http:
            rooms = [
                (await (await http.post(f"{base}/api/rooms", json={"code": CODE})).json())["room"] for _ in range(ROOMS)
            ]
            for room in rooms:
                for name in ("Ada", "Bob"):
                    client = await WsClient.connect_url(f"{ws}?room={room}", f"{name} {room}", headers=origin)
                    await client.send("join", room=room, name=name)
                    assert (await client.next("welcome"))["role"] == "player"
                    clients.append(client)
                spectator = await WsClient.connect_url(f"{ws}?room={room}", f"sam {room}", headers=origin)
                await spectator.send("watch", room=room)
                assert (await spectator.next("welcome"))["role"] == "spectator"
                clients.append(spectator)
                assert (await http.get(f"{base}/api/rooms/{room}")).status == 200
            # a race through nginx: the host starts, both play, the other player and the spectator see it
            ada, bob, sam = clients[:3]
            await ada.send("start")
            for client in (ada, bob, sam):
                await client.next("started")
            await play(ada, LINE[:2], 1)
            await play(bob, LINE[:2], 1)
            seen = [await sam.next("moved") for _ in range(4)]
            assert sorted(m["player"] for m in seen) == ["p1", "p1", "p2", "p2"]
            # connections naming no room (an older client, a new game): balanced round robin
            for k in range(6):
                solo = await WsClient.connect_url(ws, f"solo {k}", headers=origin)
                await solo.send("solo", name=f"Solo{k}", code=CODE)
                assert (await solo.next("welcome"))["role"] == "player"
                clients.append(solo)
            counted = [_moves_counted(await (await http.get(f"{inst.base}/metrics")).text()) for inst in instances]
            owners = await _owners(redis_server, rooms)
    finally:
        for client in clients:
            await client.close()
        nginx.terminate()
        await nginx.wait()

    served: dict[str, set[str]] = defaultdict(set)  # room → the instances that served it
    roomless: set[str] = set()
    for line in (tmp_path / "routing.log").read_text().splitlines():
        method, uri, room, upstream = line.split(" ")
        room = room.strip("[]")
        if uri == "/ws" and not room:
            roomless.add(upstream)
        elif uri == "/ws" or (method == "GET" and uri.startswith("/api/rooms/")):
            served[room].add(upstream)
    assert set(served) == set(rooms)
    assert all(len(upstreams) == 1 for upstreams in served.values()), served
    assert len({next(iter(upstreams)) for upstreams in served.values()}) >= 2, "rooms spread over the instances"
    assert len(roomless) >= 2, f"no room: round robin ({roomless})"
    # the instance nginx chose for the race's room applied all four moves; the others none
    (race_instance,) = served[rooms[0]]
    assert [c for inst, c in zip(instances, counted, strict=True) if race_instance.endswith(f":{inst.port}")] == [4]
    assert sum(counted) == 4
    # each room is owned by the instance its members reach (not by the one POST /api/rooms reached,
    # round robin): nobody's connection is relayed
    assert {room: owners[room] for room in rooms} == {room: next(iter(served[room])) for room in rooms}


async def _owners(redis: RedisServer, rooms: list[str]) -> dict[str, str]:
    """Each room's owner, as the address it advertises (``host:port``, as nginx's log names it)."""
    from redis.asyncio import Redis

    client = Redis.from_url(redis.url, decode_responses=True)
    try:
        routes = await client.hgetall("hm:routes")
        owners = {}
        for room in rooms:
            owner = await client.get(f"hm:{{{room}}}:owner")
            assert owner is not None, f"room {room} has no owner"
            owners[room] = routes[owner.split(" ")[0]].removeprefix("http://")
        return owners
    finally:
        await client.aclose()


async def test_the_rooms_of_a_killed_instance_go_to_the_next_one_and_their_players_resume(
    cluster: Cluster,  # noqa: F811 (the fixture imported above)
    nginx_path: str,
    tmp_path: Path,
) -> None:
    """Routing is an optimisation, not a need: the instance a room hashes to dies, its players
    reconnect to the same ``/ws?room=`` URL, nginx passes them to the next instance on the ring,
    which takes the room from its log, and the race goes on."""
    instances = await cluster(2)
    nginx, base = await _start_nginx(nginx_path, instances, tmp_path)
    ws = base.replace("http", "ws", 1) + "/ws"
    origin = {"Origin": base}
    try:
        async with aiohttp.ClientSession() as http:
            room = (await (await http.post(f"{base}/api/rooms", json={"code": CODE})).json())["room"]
        url = f"{ws}?room={room}"
        players, tokens = [], []
        for name in ("Ada", "Bob"):
            client = await WsClient.connect_url(url, name, headers=origin)
            await client.send("join", room=room, name=name)
            tokens.append((await client.next("welcome"))["token"])
            players.append(client)
        await players[0].send("start")
        for client in players:
            await client.next("started")
            await play(client, LINE[:2], 1)
        routed = [inst for inst in instances if _moves_counted(await _metrics(inst)) == 4]
        assert len(routed) == 1, "both players on one instance"
        routed[0].kill()
        survivor = next(inst for inst in instances if inst is not routed[0])
        again = []
        for client, token in zip(players, tokens, strict=True):
            async with asyncio.timeout(10):
                while not client.closed:
                    await asyncio.sleep(0.05)
            back = await WsClient.connect_url(url, client.label, headers=origin)
            await back.send("resume", room=room, token=token, since=client.seq)
            assert (await back.next("welcome"))["role"] == "player"
            again.append(back)
        for client in again:
            await play(client, LINE[2:4], 3)
        assert _moves_counted(await _metrics(survivor)) == 4, "the survivor took the room and its moves"
        for client in again:
            await client.close()
    finally:
        nginx.terminate()
        await nginx.wait()


async def _metrics(inst: Instance) -> str:
    async with aiohttp.ClientSession() as http:
        return await (await http.get(f"{inst.base}/metrics")).text()
