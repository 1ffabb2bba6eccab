"""The routing benchmark still runs: ``bench/bench_routing.py --quick`` plays the same rooms and
moves on one instance and on two behind a real nginx (by room, by room with each room held where
it routes, and round robin), and reads each
instance's CPU and Redis's publish counts. Figures are measured by hand and written in
docs/benchmarks.md, never asserted here: only what holds whatever the machine's load."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_service

pytestmark = [pytest.mark.slow, pytest.mark.redis]


def test_the_quick_routing_run_plays_the_same_moves_in_every_set_up(tmp_path: Path, nginx_path: str) -> None:
    require_service("redis-server", shutil.which("redis-server") is not None, "apt-get install redis")
    out = tmp_path / "routing.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALFMOON_")}
    env["PATH"] = f"{Path(nginx_path).parent}{os.pathsep}{env.get('PATH', '')}"
    command = [sys.executable, str(ROOT / "bench" / "bench_routing.py"), "--quick", "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(out.read_text())
    runs = {run["setup"]: run for run in summary["runs"]}
    assert set(runs) == {"one", "two-by-room", "two-round-robin"}
    line = [step for step in json.loads((ROOT / "tests/vectors/won_records.json").read_text())["records"][0]["moves"]]
    assert {run["moves"] for run in runs.values()} == {3 * 4 * len(line)}, "the same moves, all acknowledged"
    assert len(runs["one"]["instance_cpu_s"]) == 1 and len(runs["two-by-room"]["instance_cpu_s"]) == 2
    # (/proc counts CPU in 10 ms ticks: an instance of a quick run may have used less than one)
    assert all(cpu >= 0 for run in runs.values() for cpu in run["instance_cpu_s"])
    assert all(sum(run["instance_cpu_s"]) > 0 for run in runs.values())
    # what Redis did per move is counted, the room log's appends among it
    assert all(any(name.startswith(("evalsha", "fcall", "eval")) for name in run["redis_calls_per_move"])
               for run in runs.values()), [run["redis_calls_per_move"] for run in runs.values()]
    # one owner per room: nothing is ever published
    assert all(run["publish_per_move"] == 0 for run in runs.values())
    # routed by room, every member reaches the room's owner; round robin relays some to it
    assert runs["one"]["relayed_connections"] == runs["two-by-room"]["relayed_connections"] == 0
    assert runs["two-round-robin"]["relayed_connections"] > 0
    (ratios,) = summary["ratios"]
    kinds = ("by_room", "round_robin")
    assert set(ratios) == {f"cpu_two_{k}_over_one" for k in kinds} | {f"publish_per_move_{k}" for k in kinds}
    assert summary["median"] == ratios
