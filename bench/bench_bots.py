"""Bots benchmark, run by hand: ``python bench/bench_bots.py [--bots 100 500] [--think 100]``.

Starts a real server in a subprocess (``halfmoon serve`` on 127.0.0.1, a temporary SQLite
database, no solver), pinned to CPU 0, and runs N bots from this one process — one event loop,
no threads — pinned to CPU 1. Each run creates rooms of 8 bots; the first of each starts its
race once all have joined; bots play (greedy) until every race is over.

Reports per run: the wall time, the moves the server accepted, moves per second over the racing
window (from the first start to the last result), this process's memory (peak RSS above the
baseline, per bot) and its CPU (share of its core, and per accepted move — every move also
reaches the 7 other bots of the room, so this is the cost of one move and its fan-out), and the
server process's CPU over the same run.
Figures go in docs/benchmarks.md ("Bots").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchlib import cpu_seconds, free_port
from halfmoon_client.bots import run_bots


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")






def pin(cpu: int) -> list[str]:
    """A command prefix pinning a child to ``cpu`` (when the machine has it)."""
    return ["taskset", "-c", str(cpu)] if (os.cpu_count() or 1) > 1 else []


@contextlib.contextmanager
def server(data: Path) -> Any:
    port = free_port()
    command = [
        *pin(0), sys.executable, "-m", "halfmoon", "serve", "--port", str(port), "--data-dir", str(data),
        "--countdown", "0.5", "--solver-workers", "0", "--log-level", "WARNING",
    ]  # fmt: skip
    # every bot connects from 127.0.0.1: lift the per-address limit on new rooms
    env = {**os.environ, "HALFMOON_ROOM_BURST": "1000000", "HALFMOON_MAX_CONNECTIONS_PER_ADDRESS": "0"}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    why = process.stderr.read().decode() if process.stderr else ""
                    raise RuntimeError("the server did not start: " + why) from None
                time.sleep(0.1)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(10)


async def one_run(url: str, bots: int, think_ms: int, strategy: str, seed: int) -> dict[str, float]:
    baseline = rss_kib()
    peak = baseline
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_kib())
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    cpu0 = time.process_time()
    t0 = time.time()
    reports = await run_bots(url, players=bots, think_ms=think_ms, strategy=strategy, seed=seed)
    t1 = time.time()
    cpu = time.process_time() - cpu0
    done.set()
    await sampler
    moves = sum(r.session.players[r.session.you].moves for r in reports if r.session.you)
    first_start = min(r.session.started_at for r in reports if r.session.started_at) / 1000
    return {
        "wall_s": t1 - t0,
        "moves": moves,
        "moves_per_s": moves / max(1e-9, t1 - first_start),
        "kib_per_bot": (peak - baseline) / bots,
        "peak_mib": peak / 1024,
        "cpu_share": cpu / (t1 - t0),
        "cpu_us_per_move": cpu * 1e6 / max(1, moves),
    }


def child(url: str, bots: int, think: int, strategy: str, seed: int) -> int:
    """One run in a fresh process, so that its memory figures start from a clean baseline."""
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    print(json.dumps(asyncio.run(one_run(url, bots, think, strategy, seed))))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, nargs="+", default=[100, 500], help="bot counts to run")
    parser.add_argument("--think", type=int, default=100, help="ms between a bot's moves (default 100)")
    parser.add_argument("--strategy", default="greedy", choices=("greedy", "random"))
    parser.add_argument("--repeat", type=int, default=3, help="runs per bot count (the median is reported)")
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.bots[0], args.think, args.strategy, args.seed)
    print(f"# Python {platform.python_version()}, {os.cpu_count()} CPUs, think {args.think} ms, {args.strategy}")
    print(f"# load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp, server(Path(tmp)) as (url, server_pid):
        for bots in args.bots:
            runs = []
            for seed in range(args.repeat):
                command = [sys.executable, __file__, "--child", url, "--bots", str(bots), "--think", str(args.think)]
                command += ["--strategy", args.strategy, "--seed", str(seed)]
                server_cpu = cpu_seconds(server_pid)
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                server_cpu = cpu_seconds(server_pid) - server_cpu
                if done.returncode != 0:
                    print(f"bots {bots:>5}: run {seed} failed: {done.stderr.strip().splitlines()[-1:]}")
                    continue
                run = json.loads(done.stdout)
                run["server_share"] = server_cpu / run["wall_s"]
                run["server_us_per_move"] = server_cpu * 1e6 / max(1, run["moves"])
                runs.append(run)
            if not runs:
                continue
            med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            print(
                f"bots {bots:>5}: wall {med['wall_s']:.1f} s, {med['moves']:.0f} moves, "
                f"{med['moves_per_s']:.0f} moves/s, {med['kib_per_bot']:.1f} KiB/bot "
                f"(peak RSS {med['peak_mib']:.0f} MiB), bot process CPU {med['cpu_share']:.0%} of a core, "
                f"{med['cpu_us_per_move']:.0f} µs CPU per move; server CPU {med['server_share']:.0%} of a core, "
                f"{med['server_us_per_move']:.0f} µs per move — median of {len(runs)}"
            )
    print(f"# load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
