"""How long a killed owner's players wait, run by hand:
``python bench/bench_takeover.py [--rooms 20] [--instances 3] [--lease-ms 3000] [--runs 2]``.

Starts a ``redis-server`` (``appendfsync always``) and ``--instances`` real ``halfmoon serve
--redis`` processes (``--db memory://``) on ports of their own. Instance 0 makes ``--rooms`` races;
two players join each, one through instance 0, one through another instance (relayed to the
owner), and each plays two moves. Then instance 0 is killed (SIGKILL) and every player reconnects
at once — to the survivors, in turn, as a balancer would — resumes with its token and plays its
next move. A player "can play again" when that move is acknowledged; the figure is the time from
the kill to that, p50 and max over every player, beside the lease (the rooms' leases run out
between 2/3 of it and all of it after the kill: renewed every third). Every acknowledged move is
then counted in the rooms' logs in Redis. Figures go in docs/benchmarks.md ("Taking over a
killed owner's rooms").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' process and client helpers

from redis.asyncio import Redis  # noqa: E402
from tests.server.instances import Instance, RedisServer  # noqa: E402
from tests.server.support import WsClient, won_record  # noqa: E402
from tests.server.system.test_durability import play  # noqa: E402
from tests.server.system.test_room_owners import rejoin  # noqa: E402

from halfmoon.game import Move  # noqa: E402

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = str(won_record().code)


async def one_run(folder: Path, rooms: int, count: int, lease_ms: int) -> dict[str, float]:
    redis_server = await RedisServer(folder / "redis").start()
    args = ("--owner-lease-ms", str(lease_ms), "--max-connections-per-address", "0")
    instances = [Instance(folder / f"i{k}", db="memory://", redis=redis_server.url, args=args) for k in range(count)]
    redis = Redis.from_url(redis_server.url)
    clients: list[tuple[str, str, WsClient]] = []  # room, token, client
    try:
        await asyncio.gather(*(inst.start() for inst in instances))
        owner, survivors = instances[0], instances[1:]
        async with aiohttp.ClientSession() as http:
            url = f"{owner.base}/api/rooms"
            made = [await (await http.post(url, json={"code": CODE})).json() for _ in range(rooms)]
        for k, created in enumerate(made):
            room = created["room"]
            seated = []
            for n, inst in enumerate((owner, survivors[k % len(survivors)])):
                client = await WsClient.connect_url(inst.ws, f"{room}-{n}")
                await client.send("join", room=room, name=f"P{n}")
                token = (await client.next("welcome"))["token"]
                seated.append((room, token, client))
            await seated[0][2].send("start")
            for _, _, client in seated:
                await client.next("started")
            clients += seated
        await asyncio.gather(*(play(client, LINE[:2], 1) for _, _, client in clients))

        owner.kill(signal.SIGKILL)
        killed = time.monotonic()
        urls = [inst.ws for inst in survivors]

        async def back(k: int, room: str, token: str, old: WsClient) -> tuple[float, WsClient]:
            order = urls[k % len(urls) :] + urls[: k % len(urls)]
            again = await rejoin(order, old.label, room, token, old.seq, timeout=lease_ms / 1000 + 20)
            await play(again, LINE[2:3], 3)
            return time.monotonic() - killed, again

        answers = await asyncio.gather(*(back(k, *seat) for k, seat in enumerate(clients)))
        waits = [wait for wait, _ in answers]
        acknowledged = 3 * len(clients)
        logged = 0
        for room in {room for room, _, _ in clients}:
            lines = await redis.lrange(f"hm:{{{room}}}:log", 0, -1)
            logged += sum(1 for line in lines if json.loads(bytes(line).split(b" ", 1)[1])["k"] == "move")
        for _, again in answers:
            await again.close()
        for _, _, client in clients:
            await client.session.close()
        return {
            "players": len(clients),
            "p50": statistics.median(waits),
            "max": max(waits),
            "acknowledged": acknowledged,
            "logged": logged,
        }
    finally:
        await redis.aclose()
        for inst in instances:
            inst.stop()
        redis_server.kill()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rooms", type=int, default=20)
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--lease-ms", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    print(f"{args.rooms} rooms of 2 players, {args.instances} instances, lease {args.lease_ms} ms")
    print("run | players | p50 s after the kill | max s | lease s | moves acknowledged / logged")
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as folder:
            r = await one_run(Path(folder), args.rooms, args.instances, args.lease_ms)
        print(
            f"{run} | {r['players']:.0f} | {r['p50']:.2f} | {r['max']:.2f} | {args.lease_ms / 1000:g} | "
            f"{r['acknowledged']:.0f} / {r['logged']:.0f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
