"""The solver benchmark still runs and reports what docs/solver.md quotes (a few deals only:
the figures themselves are measured by hand, never in a timed test)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT


def run_bench(*args: str) -> dict[str, object]:
    command = [sys.executable, str(ROOT / "bench" / "bench_solver.py"), "--deals", "6", "--json", *args]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    figures: dict[str, object] = json.loads(result.stdout)
    return figures


def test_the_solver_benchmark_reports_every_deal_and_both_simple_strategies() -> None:
    figures = run_bench("--cpu-clock")
    counts = figures["counts"]
    assert isinstance(counts, dict)
    assert sum(counts.values()) == 6
    assert set(counts) == {"winnable", "unwinnable", "unknown"}
    assert figures["clock"] == "process_time"
    assert isinstance(figures["random_win_rate"], float) and isinstance(figures["greedy_win_rate"], float)


def test_the_solver_benchmark_can_leave_out_random_play() -> None:
    figures = run_bench("--random-games", "0", "--budget-ms", "200")
    assert figures["random_win_rate"] is None
    assert figures["budget_ms"] == 200.0
