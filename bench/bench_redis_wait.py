"""What waiting for a replica costs per move, run by hand:
``python bench/bench_redis_wait.py [--rooms 1 50] [--total 3000]``.

Starts its own Redis servers on ports of their own (Debian's ``redis-server``, append-only files
with ``appendfsync always``, temporary folders): one node alone; one node with one replica; a
Redis Cluster of 3 masters and 3 replicas (``redis-cli --cluster create``). On each, the room log
(:class:`halfmoon_server.adapters.redis_log.RedisLog`) of this process appends moves the way an
instance does: ``--rooms`` rooms, each with one player whose next move waits for the previous
one's acknowledgement (so appends of different rooms share pipelines: the group commit), without
``WAIT`` (``--redis-replicas 0``) and with it (``--redis-replicas 1``).

Reports per configuration: the acknowledgement's latency (p50, p95, p99), this process's CPU per
move (the instance's side: the client, its pipelines, the WAIT's round trip) and every Redis
process's CPU per move (masters and replicas). Figures go in docs/benchmarks.md ("Waiting for a
Redis replica").
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the Redis Cluster the tests start

from tests.server.redis_cluster import RedisClusterNodes  # noqa: E402

from benchlib import cpu_seconds, free_port  # noqa: E402
from halfmoon_server.adapters.redis_log import RedisLog  # noqa: E402

#: a move as the room logs it (its size is what matters)
MOVE = {"k": "move", "p": "p1", "m": ["R7", "12"], "o": "i-0123456789ab:1234", "id": 17, "t": 1764000000000}


class Copy:
    def __init__(self, room_id: str) -> None:
        self.id = room_id
        self.applied = 0

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        if number == self.applied + 1:
            self.applied = number

    def went_back(self) -> None:
        raise AssertionError("the log went back")


class Single:
    """A redis-server alone, or with one replica."""

    def __init__(self, folder: Path, *, replica: bool) -> None:
        self.folder = folder
        self.ports = [free_port()] + ([free_port()] if replica else [])
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    async def start(self) -> Single:
        for k, port in enumerate(self.ports):
            folder = self.folder / str(port)
            folder.mkdir(parents=True)
            options = ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", ""]
            options += ["--appendonly", "yes", "--appendfsync", "always"]
            if k:
                options += ["--replicaof", "127.0.0.1", str(self.ports[0])]
            command = [shutil.which("redis-server") or "redis-server", *options]
            self.processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
        await asyncio.sleep(0.3)
        if len(self.ports) > 1:  # until the replica is in sync
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                info = subprocess.run(
                    ["redis-cli", "-p", str(self.ports[0]), "INFO", "replication"], capture_output=True, text=True
                ).stdout
                if "state=online" in info:
                    break
                await asyncio.sleep(0.1)
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
            process.wait(10)


async def run(url: str, pids: list[int], *, replicas: int, rooms: int, moves: int) -> dict[str, float]:
    log = RedisLog(url, replicas=replicas, wait_ms=1000)
    await log.open()
    try:
        prefix = f"B{time.monotonic_ns() % 10**8:08d}"
        ids = [f"{prefix}{n:03d}" for n in range(rooms)]
        for room_id in ids:
            await log.create({"room": room_id})
            log.follow(Copy(room_id))
        await asyncio.sleep(0.3)
        latencies: list[float] = []

        async def player(room_id: str) -> None:
            for _ in range(moves):
                started = time.perf_counter()
                await log.append(room_id, MOVE)
                latencies.append(time.perf_counter() - started)

        redis_before = sum(cpu_seconds(pid) for pid in pids)
        cpu_before, wall_before = time.process_time(), time.perf_counter()
        await asyncio.gather(*(player(room_id) for room_id in ids))
        cpu, wall = time.process_time() - cpu_before, time.perf_counter() - wall_before
        redis_cpu = sum(cpu_seconds(pid) for pid in pids) - redis_before
        count = rooms * moves
        cuts = statistics.quantiles(latencies, n=100)
        return {
            "moves_per_s": count / wall,
            "p50_ms": cuts[49] * 1000,
            "p95_ms": cuts[94] * 1000,
            "p99_ms": cuts[98] * 1000,
            "client_us_per_move": cpu / count * 1e6,
            "redis_us_per_move": redis_cpu / count * 1e6,
        }
    finally:
        await log.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, nargs="+", default=[1, 50])
    parser.add_argument("--total", type=int, default=3000, help="moves per run (over its rooms)")
    args = parser.parse_args()
    rows: list[tuple[str, int, int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="hm-bench-wait-") as tmp:
        folder = Path(tmp)
        alone = await Single(folder / "alone", replica=False).start()
        paired = await Single(folder / "paired", replica=True).start()
        cluster = await RedisClusterNodes(folder / "cluster").start()
        cluster_pids = [p.pid for p in cluster.processes.values()]
        try:
            for rooms in args.rooms:
                setups = [
                    ("one node", alone.url, alone.pids, 0),
                    ("one node + 1 replica", paired.url, paired.pids, 0),
                    ("one node + 1 replica", paired.url, paired.pids, 1),
                    ("cluster 3+3", cluster.url, cluster_pids, 0),
                    ("cluster 3+3", cluster.url, cluster_pids, 1),
                ]
                for name, url, pids, replicas in setups:
                    result = await run(url, pids, replicas=replicas, rooms=rooms, moves=args.total // rooms)
                    rows.append((name, replicas, rooms, result))
                    print(name, f"WAIT {replicas}" if replicas else "no WAIT", rooms, "rooms", result, flush=True)
        finally:
            alone.stop()
            paired.stop()
            cluster.stop()
    print()
    print("| Redis | WAIT | rooms | moves/s | p50 ms | p95 ms | p99 ms | instance CPU µs/move | Redis CPU µs/move |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, replicas, rooms, r in rows:
        wait = f"`WAIT {replicas}`" if replicas else "none"
        print(
            f"| {name} | {wait} | {rooms} | {r['moves_per_s']:,.0f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['client_us_per_move']:.0f} | {r['redis_us_per_move']:.0f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
