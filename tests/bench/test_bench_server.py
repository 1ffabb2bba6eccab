"""The server benchmark's in-process measure still runs on the race core and its room shell
(figures are measured by hand and written in docs/benchmarks.md, never asserted here)."""

from __future__ import annotations

import sys

from tests.conftest import ROOT


def test_the_in_process_measure_runs_on_the_core_and_reaches_every_player() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_server
    finally:
        sys.path.remove(str(ROOT / "bench"))
    per_move = bench_server.room_logic_us_per_move(moves=200)  # asserts the frames reached the room
    assert per_move > 0
