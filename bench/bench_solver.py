"""Solver benchmark, run by hand: ``python bench/bench_solver.py --deals 2000``.

Solves N deals from a fixed seeded list of codes (``random.Random(seed)`` → ``random_code``),
each with a time budget (1 s by default) and a node budget, and prints the table that goes
in docs/solver.md and in the "Solver" section of docs/benchmarks.md: the share of winnable,
unwinnable and unknown verdicts, the time per deal (median, p90, p99, max; wall clock and the
process's CPU time, since the machine is shared), the nodes per deal, and for contrast the win
rates of two simple strategies on the same deals:

* random — a uniformly random legal move (seeded generator) until the game ends;
* greedy — a triple whenever there is one; otherwise the pair with more pile cards (a reserve
  card is kept for later); among those, the pair whose piles are tallest in total; ties by
  position order.

Every winning line the solver returns is replayed through the engine and must reach ``won``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from halfmoon import DealCode, Game, GameRecord, Move, Status, random_code, replay
from halfmoon.positions import PILE_COUNT
from halfmoon_server.solver.search import Verdict, solve


def codes(count: int, seed: int) -> list[DealCode]:
    rng = random.Random(seed)
    return [random_code(rng) for _ in range(count)]


def play_random(code: DealCode, rng: random.Random) -> bool:
    game = Game.from_code(code)
    while True:
        moves = list(game.legal_moves())
        if not moves:
            return game.is_won
        game.push(rng.choice(moves))


def greedy_key(game: Game, move: Move) -> tuple[int, int, int]:
    """Bigger is better: a triple, then more pile cards, then taller piles."""
    piles = [p for p in move.positions if p < PILE_COUNT]
    return (len(move.positions), len(piles), sum(game.count_at(p) for p in piles))


def play_greedy(code: DealCode) -> bool:
    game = Game.from_code(code)
    while True:
        moves = list(game.legal_moves())
        if not moves:
            return game.is_won
        best = max(moves, key=lambda move: greedy_key(game, move))  # max keeps the first of equals
        game.push(best)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=2000, help="how many deals (default 2000)")
    parser.add_argument("--seed", type=int, default=20261129, help="seed of the list of codes")
    parser.add_argument("--budget-ms", type=float, default=1000.0, help="time budget per deal (wall clock)")
    parser.add_argument("--nodes", type=int, default=2_000_000, help="node budget per deal")
    parser.add_argument(
        "--cpu-clock",
        action="store_true",
        help="give the solver the process's CPU time as its clock (steadier on a shared machine)",
    )
    parser.add_argument("--random-games", type=int, default=1, help="random games per deal (0: none)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--verbose", action="store_true", help="print each deal that ends unknown")
    args = parser.parse_args(argv)

    deal_codes = codes(args.deals, args.seed)
    solver_clock = time.process_time if args.cpu_clock else time.perf_counter
    verdicts: Counter[str] = Counter()
    clock_ms: list[float] = []
    cpu: list[float] = []
    nodes: list[int] = []
    unknown: list[str] = []
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    for code in deal_codes:
        game = Game.from_code(code)
        cpu_start = time.process_time()
        result = solve(game, node_budget=args.nodes, time_budget_ms=args.budget_ms, clock=solver_clock)
        cpu.append((time.process_time() - cpu_start) * 1000.0)
        clock_ms.append(result.ms)  # measured with the solver's clock
        nodes.append(result.nodes)
        verdicts[result.verdict.value] += 1
        if result.verdict is Verdict.WINNABLE:
            assert result.moves is not None
            outcome = replay(GameRecord(code, list(result.moves)))
            if outcome.game.status is not Status.WON:
                print(f"BUG: the solver's line for {code} does not win", file=sys.stderr)
                return 1
        elif result.verdict is Verdict.UNKNOWN:
            unknown.append(str(code))
            if args.verbose:
                print(f"unknown: {code} ({result.nodes} nodes, {result.ms:.0f} ms)", file=sys.stderr)
    solve_seconds = time.perf_counter() - started
    rng = random.Random(args.seed + 1)
    random_wins = sum(play_random(code, rng) for code in deal_codes for _ in range(args.random_games))
    greedy_wins = sum(play_greedy(code) for code in deal_codes)
    load_after = os.getloadavg()[0]

    n = len(deal_codes)
    figures: dict[str, Any] = {
        "command": "python bench/bench_solver.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": f"{os.cpu_count()} CPU, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        "load_average": [round(load_before, 1), round(load_after, 1)],
        "deals": n,
        "seed": args.seed,
        "budget_ms": args.budget_ms,
        "clock": "process_time" if args.cpu_clock else "perf_counter",
        "node_budget": args.nodes,
        "share": {v.value: verdicts[v.value] / n for v in Verdict},
        "counts": {v.value: verdicts[v.value] for v in Verdict},
        "clock_ms": {
            "median": statistics.median(clock_ms),
            "p90": percentile(clock_ms, 0.90),
            "p99": percentile(clock_ms, 0.99),
            "max": max(clock_ms),
        },
        "cpu_ms": {
            "median": statistics.median(cpu),
            "p90": percentile(cpu, 0.90),
            "p99": percentile(cpu, 0.99),
            "max": max(cpu),
        },
        "nodes": {"median": statistics.median(nodes), "p99": percentile(nodes, 0.99), "max": max(nodes)},
        "solve_seconds": solve_seconds,
        "random_win_rate": random_wins / (n * args.random_games) if args.random_games else None,
        "greedy_win_rate": greedy_wins / n,
        "unknown_codes": unknown,
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    share = figures["share"]
    clock_name = "CPU time" if args.cpu_clock else "wall clock"
    print(f"{figures['command']}")
    print(f"{figures['machine']}; load average {figures['load_average'][0]} → {figures['load_average'][1]}")
    print(
        f"{n} deals (seed {args.seed}), budget {args.budget_ms:g} ms ({clock_name}) and {args.nodes:,} nodes per deal\n"
    )
    print("| measure | value |")
    print("|---|---|")
    print(f"| winnable (proved, line replayed to `won`) | {share['winnable']:.2%} ({verdicts['winnable']}) |")
    print(f"| unwinnable (proved) | {share['unwinnable']:.2%} ({verdicts['unwinnable']}) |")
    print(f"| unknown (budget spent) | {share['unknown']:.2%} ({verdicts['unknown']}) |")
    rows = [(f"{clock_name} (the budget's clock)", "clock_ms")]
    if not args.cpu_clock:  # with --cpu-clock the two rows would be the same measure
        rows.append(("CPU time", "cpu_ms"))
    for label, key in rows:
        t = figures[key]
        print(
            f"| time per deal, {label}: median / p90 / p99 / max | "
            f"{t['median']:.1f} / {t['p90']:.0f} / {t['p99']:.0f} / {t['max']:.0f} ms |"
        )
    nd = figures["nodes"]
    print(f"| nodes per deal: median / p99 / max | {nd['median']:.0f} / {nd['p99']:,} / {nd['max']:,} |")
    if figures["random_win_rate"] is not None:
        print(f"| random play wins | {figures['random_win_rate']:.2%} |")
    print(f"| greedy play wins | {figures['greedy_win_rate']:.2%} |")
    print(f"\nsolver total: {solve_seconds:.0f} s; unknown: {' '.join(unknown) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
