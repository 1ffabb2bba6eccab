"""The long-log benchmark (bench/bench_long_log.py) still runs, quick, both ways in one run: a
room whose history is made through the room's real path, read and rebuilt with snapshots off
(every entry replayed) and on (the snapshot and at most an interval after it). Its figures are
measured by hand and written in docs/benchmarks.md, never asserted here (the machine is shared)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_the_long_log_benchmark_runs_quick_with_snapshots_off_and_on() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_long_log.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    before, after, summary = (json.loads(line) for line in result.stdout.strip().splitlines()[-3:])
    assert before["snapshot_every"] == 0 and after["snapshot_every"] == 200
    entries = 1 + 2 * 1_000 + 2  # the start, the pairs, the give-up (which records the game) and its stored
    assert before["entries"] == after["entries"] == entries
    assert before["replayed_on_load"] == before["entries"], "no snapshot: every entry replayed"
    assert after["replayed_on_load"] <= 200, "from the snapshot: at most an interval"
    for mode in (before, after):
        assert mode["get_median_ms"] > 0 and mode["rebuild_median_ms"] > 0 and mode["loop_stall_max_ms"] >= 0
    assert set(summary) == {"get_speedup", "rebuild_speedup", "stall_before_ms", "stall_after_ms"}


@pytest.mark.slow
def test_the_long_log_benchmark_measures_cold_first_reads_of_one_mode_of_a_given_tree() -> None:
    script = str(ROOT / "bench" / "bench_long_log.py")
    result = subprocess.run(
        [sys.executable, script, "--quick", "--modes", "200", "--cold", "--tree", str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    (only,) = (json.loads(line) for line in result.stdout.strip().splitlines())
    assert only["tree"] == str(ROOT.resolve()) and only["cold"] is True and only["snapshot_every"] == 200
    for figure in ("first_get_ms", "first_get_cpu_ms", "first_stall_ms", "stall_median_ms", "loop_stall_max_ms"):
        assert only[figure] >= 0, figure
    assert only["first_stall_ms"] <= only["loop_stall_max_ms"]
