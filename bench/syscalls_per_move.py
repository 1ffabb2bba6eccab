"""What a move costs the server in system calls, run by hand (root, Linux ``perf``):
``python bench/syscalls_per_move.py --only closed-1k open-10k-5k gamelike-1k gamelike-10k-5k``.

For each configuration of ``bench/load.py`` named, one at a time: the load runs as ``load.py
--only NAME`` does, and once its server has connected its players and warmed up, ``perf stat``
counts that server's ``sendto``, ``recvfrom`` and ``epoll_wait`` calls and its context switches
for ``--window`` seconds (the kernel's tracepoints: exact counts, not samples). Each count is
divided by the moves of the window (the run's median moves/s times the window). One JSON line a
configuration: moves/s, server CPU per move (load.py's, from /proc), and the calls per move.

What it shows: how many writes a move takes — one per connection per loop turn in Half Moon (its
frames of a turn are coalesced), one per frame in the ceilings — and how that changes between a
saturated closed loop (a room's four players in lockstep: their frames meet in one turn) and an
open loop at a human's pace (each frame alone). docs/benchmarks.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import cpu_seconds

BENCH = Path(__file__).resolve().parent
#: the server process of each kind of configuration, by a word of its command line
SERVER_PATTERNS = ("serve_tree.py", "gamelike.py", "gamelike.mjs", "colyseus-server.mjs")
EVENTS = (
    "syscalls:sys_enter_sendto",  # a Python server's writes to a socket (socket.send)
    "syscalls:sys_enter_write",  # node's (libuv's), and a Python server's wake-ups of its loop
    "syscalls:sys_enter_writev",  # node's, of several buffers at once
    "syscalls:sys_enter_recvfrom",  # a Python server's reads (socket.recv)
    "syscalls:sys_enter_read",  # node's
    "syscalls:sys_enter_epoll_wait",  # Python's selector
    "syscalls:sys_enter_epoll_pwait",  # libuv's
    "context-switches",
)


def _parent(pid: int) -> int | None:
    """The parent of process ``pid`` (None: it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def busiest_server(load_pid: int) -> int | None:
    """The server of the run: of the load run's descendants whose command line names one of
    :data:`SERVER_PATTERNS`, the one that has used the most CPU (its start-up helpers used
    little; a server of another run on the machine is not a descendant)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (parent := _parent(int(entry.name))) is not None:
            children.setdefault(parent, []).append(int(entry.name))
    best: tuple[int, float] | None = None
    waiting = list(children.get(load_pid, []))
    while waiting:
        pid = waiting.pop()
        waiting.extend(children.get(pid, []))
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if not any(pattern in command for pattern in SERVER_PATTERNS):
                continue
            used = cpu_seconds(pid)
        except OSError:  # (gone meanwhile)
            continue
        if best is None or used > best[1]:
            best = (pid, used)
    return None if best is None else best[0]


def parse_perf_csv(text: str) -> dict[str, float]:
    """The counts in ``perf stat -x ,``'s output, by event (``syscalls:sys_enter_`` taken off); an
    event perf did not count (``<not counted>``) is left out."""
    counts: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and re.fullmatch(r"\d+(\.\d+)?", fields[0]):
            counts[fields[2].removeprefix("syscalls:sys_enter_")] = float(fields[0])
    return counts


def count_calls(pid: int, window_s: float) -> dict[str, float]:
    """``perf stat``'s counts of :data:`EVENTS` for ``pid`` over ``window_s`` seconds."""
    with tempfile.NamedTemporaryFile("r", suffix=".stat") as out:
        command = ["perf", "stat", "-x", ",", "-e", ",".join(EVENTS), "-p", str(pid), "-o", out.name]
        subprocess.run([*command, "--", "sleep", str(window_s)], check=True, capture_output=True)
        return parse_perf_csv(out.read())


def measure(name: str, wait_s: float, window_s: float) -> dict[str, object]:
    with tempfile.NamedTemporaryFile(suffix=".json") as results:
        load = subprocess.Popen(
            [sys.executable, str(BENCH / "load.py"), "--only", name, "--out", results.name],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(wait_s)
        pid = busiest_server(load.pid)
        counts = count_calls(pid, window_s) if pid is not None and load.poll() is None else {}
        whole_window = load.poll() is None  # (the run was still measuring when the window closed)
        if load.wait() != 0 or not counts or not whole_window:
            raise SystemExit(f"{name}: the load run failed, or ended inside the window (a shorter --wait or --window?)")
        run = json.loads(Path(results.name).read_text())[-1]
    moves = run["moves_per_s_median"] * window_s
    line: dict[str, object] = {
        "config": name,
        "moves_per_s": run["moves_per_s_median"],
        "server_cpu_us_per_move": run["server_cpu_us_per_move"],
        "ack_ms_p99": run["ack_ms"]["p99"],
    }
    for event, count in counts.items():
        line[f"{event}_per_move"] = round(count / moves, 3)
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", required=True, help="load.py configurations, one after the other")
    parser.add_argument("--window", type=float, default=5.0, help="seconds counted in each run")
    parser.add_argument(
        "--wait", type=float, help="seconds from a run's start to the window (default: 25 at 10,000 players, 6 else)"
    )
    args = parser.parse_args()
    if shutil.which("perf") is None:
        print("perf is missing (Debian: apt-get install linux-perf)", file=sys.stderr)
        return 2
    for name in args.only:
        wait_s = args.wait if args.wait is not None else (25.0 if "10k" in name else 6.0)
        print(json.dumps(measure(name, wait_s, args.window)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
