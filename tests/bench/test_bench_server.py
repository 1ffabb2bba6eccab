"""The server benchmark's in-process measure still runs on the race core and its room shell
(figures are measured by hand and written in docs/benchmarks.md, never asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_the_in_process_measure_runs_on_the_core_and_reaches_every_player() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_server
    finally:
        sys.path.remove(str(ROOT / "bench"))
    per_move = bench_server.room_logic_us_per_move(moves=200)  # asserts the frames reached the room
    assert per_move > 0


def test_the_paired_measure_runs_both_trees_and_gives_their_ratio(tmp_path: Path) -> None:
    """``room_logic_ab.py`` against a tree of the same code: each round measures both (in their own
    processes) and the ratio is theirs."""
    script = str(ROOT / "bench" / "room_logic_ab.py")
    result = subprocess.run(
        [sys.executable, script, "--compare", str(ROOT), "--rounds", "2", "--moves", "200"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    lines = result.stdout.strip().splitlines()
    assert len([line for line in lines if line.startswith("round ")]) == 2
    summary = json.loads(lines[-1])
    assert summary["before_median_us"] > 0 and summary["after_median_us"] > 0
    assert summary["paired_ratio_median"] > 0


def test_serve_tree_runs_the_serve_command_of_the_tree_on_the_path(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import serve_tree
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert serve_tree.server_cli().__file__ == str(ROOT / "server" / "halfmoon_server" / "ops" / "cli.py")
