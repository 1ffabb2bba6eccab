"""The room logic per move (``bench_server.room_logic_us_per_move``) of this tree beside another,
in one run: rounds alternate which tree goes first, each round one fresh process per tree, and
the figure is CPU time (steadier than wall time on a busy machine). Prints each tree's median
µs per move and the median of the rounds' paired ratios (this tree ÷ the other).

    python bench/room_logic_ab.py --compare REV|DIR [--rounds 7] [--moves 20000] [--journal]
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: run in the child: the tree's own bench_server, its clock read as CPU time
CHILD = """
import json, sys, tempfile, time
from pathlib import Path
time.perf_counter = time.process_time  # the benchmark times itself with perf_counter: CPU time instead
import bench_server
moves, journal = int(sys.argv[1]), sys.argv[2] == "1"
with tempfile.TemporaryDirectory() as folder:
    us = bench_server.room_logic_us_per_move(moves, journal=Path(folder) / "j.db" if journal else None)
print(json.dumps(us))
"""


def tree_of(spec: str, into: Path) -> Path:
    """A source tree: a folder as it is, or a git revision (``git archive``) unpacked in ``into``."""
    if Path(spec).is_dir():
        return Path(spec).resolve()
    sys.path.insert(0, str(HERE))
    from load import baseline_tree

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", spec, "bench"], check=True, capture_output=True)
    (into / "bench.tar").write_bytes(archive.stdout)
    subprocess.run(["tar", "-xf", str(into / "bench.tar"), "-C", str(into)], check=True)
    return baseline_tree(spec, into)


def measure(tree: Path, moves: int, journal: bool) -> float:
    path = os.pathsep.join(str(tree / part) for part in ("shared", "server", "client", "bench"))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(moves), "1" if journal else "0"],
        env={**os.environ, "PYTHONPATH": path},
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", required=True, metavar="REV|DIR", help="the other tree")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--moves", type=int, default=20_000)
    parser.add_argument("--journal", action="store_true", help="each move made durable in a SQLite journal")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="halfmoon-ab-") as folder:
        before, after = tree_of(args.compare, Path(folder)), ROOT
        rows = []
        for round_ in range(args.rounds):
            order = [("before", before), ("after", after)]
            if round_ % 2:
                order.reverse()
            got = {label: measure(tree, args.moves, args.journal) for label, tree in order}
            rows.append(got)
            print(f"round {round_ + 1}: before {got['before']:.2f} µs, after {got['after']:.2f} µs", flush=True)
    result = {
        "compare": args.compare,
        "journal": args.journal,
        "rounds": args.rounds,
        "before_median_us": round(statistics.median(r["before"] for r in rows), 2),
        "after_median_us": round(statistics.median(r["after"] for r in rows), 2),
        "paired_ratio_median": round(statistics.median(r["after"] / r["before"] for r in rows), 3),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
