"""Storing a finished game with ratings, against the tree before them: paired A/B in one run.

Each run is a fresh process on a fresh SQLite file (write-ahead, as the server's): it stores
``--races`` sealed races of 3 identified, ranked seats — one ``save_game`` at a time, as the
recorder does under light load — and reports the save's wall time (p50 / p99) and the process CPU
per stored game. Three variants, interleaved ``--rounds`` times, medians reported:

- ``before``: the tree before ratings (``--before``, e.g. /work/main): no ``seats``, no ``rating_due``;
- ``after``: this tree, the ratings job not running;
- ``after+job``: this tree with the ratings job passing every 0.2 s while the games are stored (its
  rating work is in the process's CPU; the save's wall time shows whether it stands in the way).

    python3 bench/bench_ratings_store.py --before /work/main --races 400 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

_RUN = r"""
import asyncio, dataclasses, json, sys, time
from datetime import UTC, datetime, timedelta
from halfmoon_server.adapters.storage import FinishedGame, open_storage

races, url, job = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
fields = {f.name for f in dataclasses.fields(FinishedGame)}
T0 = datetime(2026, 12, 6, tzinfo=UTC)

def game(r, k):
    extra = {"seats": 3} if "seats" in fields else {}
    return FinishedGame(nickname=f"p{k}", code=f"HM1-S-{r:07d}", mode="race", room=f"R{r:05d}", score=40 + 10 * k,
        moves=5, time_ms=60_000, outcome="gave_up", record={"code": "x", "moves": [["1", "2"]] * 40}, ranked=True,
        daily_date=None, finished_at=T0 + timedelta(seconds=r), player=f"{(r + k) % 50:064x}",
        seal={"seed": "s" * 64, "contributions": []}, **extra)

async def main():
    storage = await open_storage(url)
    rating = None
    if job:
        from halfmoon_server.clock import SystemClock
        from halfmoon_server.rooms.ratings import RatingJob
        rating = RatingJob(storage, SystemClock(), every_s=0.2)
        rating.start()
    for r in range(20):  # warm up: connections, statements
        for k in range(3):
            await storage.save_game(game(r, k), f"w{r}-{k}")
    waits = []
    cpu = time.process_time()
    for r in range(20, 20 + races):
        for k in range(3):
            started = time.perf_counter()
            await storage.save_game(game(r, k), f"g{r}-{k}")
            waits.append(time.perf_counter() - started)
        await asyncio.sleep(0)
    cpu = time.process_time() - cpu
    rated = 0
    if rating is not None:
        await asyncio.sleep(0.5)
        await rating.close()
        rated = rating.rated
    await storage.close()
    waits.sort()
    print(json.dumps({"p50_ms": waits[len(waits) // 2] * 1e3, "p99_ms": waits[int(len(waits) * 0.99)] * 1e3,
                      "cpu_us_per_game": cpu / len(waits) * 1e6, "rated": rated}))

asyncio.run(main())
"""


def run(tree: Path, races: int, job: bool, work: Path) -> dict[str, float]:
    db = work / f"{os.getpid()}-{tree.name}-{int(job)}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{tree}/shared:{tree}/server:{tree}/client"}
    out = subprocess.run(
        [sys.executable, "-c", _RUN, str(races), f"sqlite+aiosqlite:///{db}", "1" if job else "0"],
        env=env, capture_output=True, text=True, check=True, cwd=tree,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the tree before ratings")
    parser.add_argument("--races", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    variants = {"before": (args.before, False), "after": (HERE, False), "after+job": (HERE, True)}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, (tree, job) in variants.items():
                results[name].append(run(tree, args.races, job, Path(tmp)))
    print(f"{args.races * 3} games stored one at a time, SQLite (WAL), medians of {args.rounds} interleaved runs")
    print(f"{'variant':<10} {'save p50 ms':>11} {'save p99 ms':>11} {'CPU µs/game':>11} {'races rated':>11}")
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        figures = f"{med['p50_ms']:>11.3f} {med['p99_ms']:>11.3f} {med['cpu_us_per_game']:>11.0f} {med['rated']:>11.0f}"
        print(f"{name:<10} {figures}")


if __name__ == "__main__":
    main()
