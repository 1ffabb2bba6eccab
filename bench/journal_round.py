"""What a move that arrives alone costs the embedded journal, run by hand:
``python bench/journal_round.py [--appends 3000] [--rounds 5]`` (pin it: ``taskset -c 0``, as the
server is pinned in ``load.py``, so that the journal's thread and the loop share a core).

Each append waits for the last to be committed, so every round carries one entry: the light
load's case, where the group commit has nothing to group. Reports CPU time per append (both
threads: the process's) and the context switches per append of each thread, for:

- ``journal``: ``JournalLog.append`` with ``commit="thread"`` (a round on the journal's thread);
- ``auto``: ``JournalLog.append`` as the server runs it by default (``--journal-commit auto``: the
  round committed on the loop's thread, at the end of the loop turn);
- ``inline``: the bare SQLite commit run on the loop's thread (what the thread hop costs);
- ``hop``: a no-op job through the journal's thread and back (the hop alone);
- ``sqlite``: the one-row commit alone, and a commit of 50 rows per row (what batching saves).

Medians over ``--rounds`` (one process each, alternating). Figures: docs/benchmarks.md, "A lone
move (issue 31)".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENTRY = {"k": "move", "p": "p1a2b3", "m": [["T1", "F2"]], "o": "0123456789:17", "id": 5, "t": 1765000000000}


class _Follower:
    id = "R1"
    applied = 0

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        self.applied = number

    def went_back(self) -> None:
        return None


def _switches() -> dict[str, tuple[int, int]]:
    """Voluntary and involuntary context switches of each of this process's threads, by id."""
    found: dict[str, tuple[int, int]] = {}
    for tid in os.listdir("/proc/self/task"):
        status = Path(f"/proc/self/task/{tid}/status").read_text()
        counts = [
            int(re.search(rf"^{kind}_ctxt_switches:\s+(\d+)", status, re.M).group(1))
            for kind in ("voluntary", "nonvoluntary")
        ]  # type: ignore[union-attr]
        found[tid] = (counts[0], counts[1])
    return found


async def _measure(kind: str, appends: int, folder: str) -> dict[str, Any]:
    from halfmoon_server.adapters.journal import JournalLog

    journal = JournalLog(Path(folder) / f"{kind}.db", commit="auto" if kind == "auto" else "thread")
    await journal.open()
    await journal.create({"room": "R1"})
    journal.follow(_Follower())
    text = json.dumps(ENTRY)

    async def one(n: int) -> None:
        if kind in ("journal", "auto"):
            await journal.append("R1", dict(ENTRY))
        elif kind == "inline":
            journal._commit([("R1", n, text)])
        else:  # hop
            await journal._worker.submit(int)

    for n in range(1, 201):  # warm up
        await one(n)
    before, cpu = _switches(), time.process_time()
    for n in range(201, 201 + appends):
        await one(n)
    cpu, after = time.process_time() - cpu, _switches()
    threads = {
        tid: [round((after[tid][k] - before[tid][k]) / appends, 2) for k in (0, 1)] for tid in after if tid in before
    }
    main = str(os.getpid())
    result: dict[str, Any] = {"us_per_append": 1e6 * cpu / appends}
    result["loop_thread_switches_vol_invol"] = threads.pop(main, None)
    result["other_threads_switches_vol_invol"] = [v for v in threads.values() if sum(v) > 0]
    if kind == "inline":  # and a commit of 50 rows, per row
        rows = [("R2", n, text) for n in range(1, 50 * 60 + 1)]
        cpu = time.process_time()
        for k in range(0, len(rows), 50):
            journal._commit(rows[k : k + 50])
        result["us_per_row_in_commits_of_50"] = 1e6 * (time.process_time() - cpu) / len(rows)
    await journal.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as folder:
            print(json.dumps(asyncio.run(_measure(args.child, args.appends, folder))))
        return 0
    kinds = ("journal", "auto", "inline", "hop")
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for round_ in range(args.rounds):
        for kind in kinds if round_ % 2 == 0 else reversed(kinds):
            out = subprocess.run(
                [sys.executable, __file__, "--child", kind, "--appends", str(args.appends)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[kind].append(json.loads(out.strip().splitlines()[-1]))
    summary = {
        kind: {
            "us_per_append_median": round(statistics.median(r["us_per_append"] for r in got), 1),
            "loop_thread_switches_vol_invol": got[-1]["loop_thread_switches_vol_invol"],
            "other_threads_switches_vol_invol": got[-1]["other_threads_switches_vol_invol"],
        }
        for kind, got in runs.items()
    }
    summary["inline"]["us_per_row_in_commits_of_50_median"] = round(
        statistics.median(r["us_per_row_in_commits_of_50"] for r in runs["inline"]), 1
    )
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
