"""The decoding benchmark (``bench/bench_decode.py --quick``) times every client message and every
malformed frame it holds, and aiohttp's WebSocket readers. With msgspec installed (it is not a
dependency) it first checks that the msgspec implementation gives the same message or the same
error as ``parse_message`` on every frame and their mutations. Figures are measured by hand and
written in docs/benchmarks.md, never asserted here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_the_quick_decoding_run_times_every_frame_and_the_websocket_readers(tmp_path: Path) -> None:
    out = tmp_path / "decode.json"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_decode.py"), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client"))},
    )
    summary = json.loads(out.read_text())
    outcomes = {row["frame"]: row["outcome"] for row in summary["frames"]}
    moves = ("move (pair)", "move (browser)", "move (triple)", "move + extra field")
    assert {outcomes[label] for label in moves} == {"MoveMessage"}
    assert outcomes["not JSON"] == "error bad_json"
    assert outcomes["bad version"] == "error bad_version"
    assert outcomes["unknown type"] == "error unknown_type"
    assert outcomes["no such position"] == "error illegal_move"
    assert outcomes["join, 4 KB name"] == "error bad_name"
    assert all(row["current_ns"] > 0 for row in summary["frames"])
    if importlib.util.find_spec("msgspec") is not None:
        assert summary["frames_checked_same"] > 1000
        assert all(row["msgspec_ns"] > 0 for row in summary["frames"])
    else:
        assert summary["msgspec"] is None
    reader = summary["reader"]
    assert reader["in_use"].startswith("aiohttp.")
    assert reader["py_ns"] > 0 and reader["frame_watcher_ns"] > 0
