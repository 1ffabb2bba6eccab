"""The Node.js peers still run: ``bench/load.py --quick --peers`` drives the ``ws`` game-like server
(bench/peers/gamelike.mjs, through load.py's own client) and the Colyseus room (through
bench/peers/colyseus-load.mjs) for a second each, and both answer the moves and report in
load.py's shape. Figures are measured by hand (docs/benchmarks.md, "Peers"), never asserted here.

Needs node and ``npm ci --prefix bench/peers``: skipped without them, a failure under CI=true."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, require_service

sys.path.insert(0, str(ROOT / "bench"))
try:
    import load
finally:
    sys.path.remove(str(ROOT / "bench"))


def test_each_peer_answers_the_moves_and_reports_in_the_load_shape(tmp_path: Path) -> None:
    missing = load.peers_missing()
    require_service("node with bench/peers' packages", missing is None, str(missing))
    out = tmp_path / "peers.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALFMOON_")}
    command = [sys.executable, str(ROOT / "bench" / "load.py"), "--quick", "--peers"]
    command += ["--only", "node-gamelike", "colyseus", "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    runs = {r["config"]["loop"]: r for r in results if "config" in r}
    assert set(runs) == {"node-gamelike", "colyseus"}
    for loop, run in runs.items():
        assert run["errors"] == {}, (loop, run["errors"])
        assert (run["players"], run["spectators"]) == (8, 1), loop  # two tables of 4, one watched
        assert run["ack_ms"]["n"] > 0 and run["ack_ms"]["p50"] is not None, loop  # moves answered
        assert run["moves_per_s_median"] > 0 and run["server_cpu_us_per_move"] > 0, loop  # its CPU read
    summary = results[-1]["summary"]  # the side-by-side medians, with no Half Moon run to compare
    assert set(summary["medians"]) == {"node-gamelike", "colyseus"} and summary["halfmoon/"] == {}
