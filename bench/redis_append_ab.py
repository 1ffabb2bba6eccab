"""The Redis room log's appends, A/B between two trees, run by hand:
``python bench/redis_append_ab.py --before DIR [--after DIR] [--rooms 1 8] [--moves 3000] [--pairs 4]
[--redis URL]``.

Each run is a fresh process on one tree's ``shared/`` and ``server/`` (``PYTHONPATH``), pinned to
CPU 1 where there is one: this process's :class:`~halfmoon_server.adapters.redis_log.RedisLog`
appends ``--moves`` moves to ``--rooms`` rooms of the Redis at ``--redis`` (default the local one,
database 0; its room keys are new and left to expire with Redis's own policy), each room's next move
waiting for the last one's acknowledgement — 1 room: every append alone; more: small batches
sharing a pipeline. Prints, per run, the instance's CPU per move, the acknowledgement's median and
the moves a second; the trees alternate (before, after) ``--pairs`` times. Figures go in
docs/benchmarks.md ("One round trip per group commit")."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MOVE = {"k": "move", "p": "p1", "m": ["R7", "12"], "o": "i-0123456789ab:1234", "id": 17}


class Copy:
    """A room as the log sees it (nothing kept: only how far it applied)."""

    def __init__(self, room_id: str) -> None:
        self.id = room_id
        self.applied = 0

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        self.applied = number

    def went_back(self) -> None:
        raise RuntimeError("the log went back")

    def fenced(self) -> None:
        raise RuntimeError("fenced")


async def one_run(url: str, rooms: int, moves: int) -> dict[str, float]:
    from halfmoon_server.adapters.redis_log import RedisLog

    log = RedisLog(url)
    await log.open()
    try:
        prefix = f"AB{time.monotonic_ns() % 10**8:08d}"
        ids = [f"{prefix}{n:03d}" for n in range(rooms)]
        for room_id in ids:
            await log.create({"room": room_id})
            log.follow(Copy(room_id))
        latencies: list[float] = []

        async def player(room_id: str) -> None:
            for _ in range(moves // rooms):
                started = time.perf_counter()
                await log.append(room_id, MOVE)
                latencies.append(time.perf_counter() - started)

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(player(room_id) for room_id in ids))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return {
            "cpu_us_per_move": round(cpu / len(latencies) * 1e6, 1),
            "ack_p50_ms": round(statistics.median(latencies) * 1e3, 3),
            "moves_per_s": round(len(latencies) / wall),
        }
    finally:
        await log.close()


def spawn(tree: Path, url: str, rooms: int, moves: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'shared'}{os.pathsep}{tree / 'server'}"}
    pin = ["taskset", "-c", "1"] if (os.cpu_count() or 1) > 1 and sys.platform == "linux" else []
    command = [*pin, sys.executable, __file__, "--one", url, str(rooms), str(moves)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=600)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        print(json.dumps(asyncio.run(one_run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the tree to compare with (a checkout)")
    parser.add_argument("--after", type=Path, default=ROOT, help="the tree measured (default: this one)")
    parser.add_argument("--rooms", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--moves", type=int, default=3000)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    for rooms in args.rooms:
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for _ in range(args.pairs):
            for label, tree in (("before", args.before), ("after", args.after)):
                runs[label].append(spawn(tree, args.redis, rooms, args.moves))
        pairs = zip(runs["after"], runs["before"], strict=True)
        paired = [a["cpu_us_per_move"] / b["cpu_us_per_move"] for a, b in pairs]
        print(
            f"rooms {rooms}: CPU per move before {[r['cpu_us_per_move'] for r in runs['before']]} µs, "
            f"after {[r['cpu_us_per_move'] for r in runs['after']]} µs, paired median "
            f"{statistics.median(paired):.2f}; ack p50 before "
            f"{statistics.median(r['ack_p50_ms'] for r in runs['before'])} ms, after "
            f"{statistics.median(r['ack_p50_ms'] for r in runs['after'])} ms",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
