"""The system-call count of a move (``bench/syscalls_per_move.py``): what it reads from ``perf
stat``, and that it counts a process's calls exactly (figures are measured by hand and written in
docs/benchmarks.md, never asserted here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from types import ModuleType

import pytest

from tests.bench.conftest import bench_script


def _script() -> ModuleType:
    return bench_script("syscalls_per_move")


def test_perf_csv_is_read_by_event_and_an_event_not_counted_is_left_out() -> None:
    text = (
        "# started on Sun Dec  6 23:45:35 2026\n\n"
        "50,,syscalls:sys_enter_sendto,171874,100.00,,\n"
        "<not counted>,,syscalls:sys_enter_recvfrom,0,100.00,,\n"
        "1,,context-switches,171874,100.00,,\n"
    )
    assert _script().parse_perf_csv(text) == {"sendto": 50.0, "context-switches": 1.0}


@pytest.mark.skipif(shutil.which("perf") is None or os.geteuid() != 0, reason="needs Linux perf, as root")
def test_the_sends_of_a_process_are_counted_exactly() -> None:
    # a child that waits, sends 40 one-byte messages on a socket pair, and waits again: the window
    # (2 s) opens during the first wait and closes during the second, with most of a second to
    # spare either side (perf is slow to attach while the other core's tests are busy)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, time\na, b = socket.socketpair()\ntime.sleep(1.0)\n"
            "for _ in range(40): a.send(b'x')\ntime.sleep(3)",
        ]
    )
    try:
        time.sleep(0.1)
        counts = _script().count_calls(child.pid, 2.0)
    finally:
        child.kill()
        child.wait()
    assert counts["sendto"] == 40
    assert counts["recvfrom"] == 0


def test_the_server_counted_is_the_runs_own_descendant() -> None:
    # a child of this process whose command line names a server of the benchmark; seen from
    # that child (a run with no server under it), there is none
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)", "serve_tree.py"])
    try:
        deadline = time.monotonic() + 5
        found = None
        while found is None and time.monotonic() < deadline:
            found = _script().busiest_server(os.getpid())
            time.sleep(0.05)
        assert found == child.pid
        assert _script().busiest_server(child.pid) is None
    finally:
        child.kill()
        child.wait()
