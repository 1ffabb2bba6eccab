"""Where a move's CPU goes, layer by layer, run by hand (root, Linux ``perf``, the compiled build):
``python bench/perf_layers.py -- --players 10000 --rate 1811 --seconds 20 --warmup 8``.

Everything after ``--`` is ``bench/load.py``'s arguments. The load runs as ``load.py`` runs it;
once its server has connected its players and warmed up (``--wait`` seconds), ``perf record
--call-graph dwarf`` samples that server (every thread, on the CPU only) for ``--window``
seconds, and each sample is put in the first layer of :data:`LAYERS` that one of its frames
belongs to — the layers are looked for in that order, so a socket write made while a room
applies an entry counts as a write, not as the room. ``--from-script FILE`` classifies the text
of an earlier ``perf script`` instead. One JSON line: the run's moves/s and CPU a move
(``load.py``'s, from /proc), each layer's share of the samples and that share of the CPU a move.

The layers are told apart by the names of C functions: the compiled build's (mypyc's
``CPyDef_<module>___<function>``), aiohttp's compiled reader's, the kernel's and libc's — perf on
Python 3.11 names no Python function —, so the server must be the compiled build (run this script
from ``bench/compiled_tree.py``'s copy); on the pure-Python build every frame of Half Moon's is
the interpreter's, and its samples fall in "other". What the layers miss also falls there: asyncio's and aiohttp's
Python between them (the loop's turns, a task's steps, futures), frames the unwinder did not
reach (perf copies 16 KiB of each stack), other threads. docs/benchmarks.md quotes it.
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
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from syscalls_per_move import busiest_server

BENCH = Path(__file__).resolve().parent
Frames = list[str]


def _any_starts(frames: Frames, *prefixes: str) -> bool:
    return any(frame.startswith(prefixes) for frame in frames)


#: (name, whether a sample's frames are in it), looked for in this order: the first that holds wins
LAYERS: list[tuple[str, Callable[[Frames], bool]]] = [
    (
        "the journal's thread (the rounds it commits, checkpoints)",
        lambda f: _any_starts(f, "CPyDef_journal____Worker____serve", "sqlite3Checkpoint", "sqlite3_wal_checkpoint"),
    ),
    (
        "the journal's commits on the loop's thread (SQLite)",
        # (the name whole: a prefix would take ``_commit_inline``, under which the room applies)
        lambda f: "CPyDef_journal___JournalLog____commit" in f,
    ),
    (
        "the writes to the sockets (a turn's flush: asyncio's transport.write, the kernel's send)",
        lambda f: _any_starts(f, "CPyDef_connection___Connection___flush"),
    ),
    ("the garbage collector", lambda f: "gc_collect_main" in f),
    (
        "the room: an entry applied, the rules, events, frames encoded",
        lambda f: _any_starts(f, "CPyDef_room___Room___deliver"),
    ),
    (
        "a command's checks and its append (dispatch, submit)",
        lambda f: _any_starts(f, "CPyDef_ws___dispatch", "CPyDef_room___submit", "CPyDef_journal___append"),
    ),
    (
        "the ticker's rounds (the lobby's housekeeping)",
        lambda f: _any_starts(f, "CPyDef_lobby___tick", "CPyDef_lobby___run_ticker"),
    ),
    (
        "aiohttp: a read, its frames unmasked and parsed, the handler woken",
        lambda f: _any_starts(
            f, "sock_recv", "__pyx_f_7aiohttp_10_websocket_8reader_c", "CPyDef_masking", "CPyDef_ws___websocket_handler"
        ),
    ),
    ("the event loop's waits (epoll)", lambda f: _any_starts(f, "epoll_wait", "do_epoll_wait")),
]
OTHER = "other (interpreted Python perf cannot name: asyncio, aiohttp; frames not reached)"


def samples(script: Iterable[str]) -> list[Frames]:
    """The samples of ``perf script``'s text: each its frames' symbols, innermost first, without
    their offsets and libraries."""
    found: list[Frames] = []
    frames: Frames | None = None
    for line in script:
        if not line.strip():
            if frames is not None:
                found.append(frames)
            frames = None
        elif not line[0].isspace():
            frames = []  # a sample's header line (command, pid, time, event)
        elif frames is not None:
            parts = line.split(None, 1)
            if len(parts) == 2:
                symbol = re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (", 1)[0].strip())
                frames.append(symbol)
    if frames is not None:
        found.append(frames)
    return found


def layer_of(frames: Frames) -> str:
    """The first layer of :data:`LAYERS` that the sample's frames are in (:data:`OTHER` if none)."""
    return next((name for name, holds in LAYERS if holds(frames)), OTHER)


def shares(found: list[Frames]) -> dict[str, float]:
    """Each layer's share of the samples, in :data:`LAYERS`' order, :data:`OTHER` last."""
    counts = Counter(layer_of(frames) for frames in found)
    total = max(1, len(found))
    return {name: round(counts[name] / total, 4) for name in [*(n for n, _ in LAYERS), OTHER]}


def record(pid: int, window_s: float, out: Path) -> None:
    """``perf record`` of every thread of ``pid`` for ``window_s`` seconds, DWARF call graphs."""
    command = ["perf", "record", "-q", "-F", "499", "-e", "cpu-clock", "--call-graph", "dwarf,16384"]
    subprocess.run(
        [*command, "-o", str(out), "-p", str(pid), "--", "sleep", str(window_s)], check=True, capture_output=True
    )


def script_of(data: Path) -> list[str]:
    done = subprocess.run(["perf", "script", "-i", str(data)], check=True, capture_output=True)
    return done.stdout.decode(errors="replace").splitlines()


def measure(load_args: list[str], wait_s: float, window_s: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as scratch:
        results, data = Path(scratch) / "load.json", Path(scratch) / "perf.data"
        load = subprocess.Popen(
            [sys.executable, str(BENCH / "load.py"), *load_args, "--out", str(results)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(wait_s)
        pid = busiest_server(load.pid)
        if pid is not None and load.poll() is None:
            record(pid, window_s, data)
        whole_window = load.poll() is None  # (the run was still measuring when the window closed)
        if load.wait() != 0 or pid is None or not whole_window:
            raise SystemExit("the load run failed, or ended inside the window (a shorter --wait or --window?)")
        run = json.loads(results.read_text())[-1]
        found = samples(script_of(data))
    cpu_us = float(run["server_cpu_us_per_move"])
    layers = shares(found)
    return {
        "load": load_args,
        "wait_s": wait_s,
        "window_s": window_s,
        "moves_per_s": run["moves_per_s_median"],
        "server_cpu_us_per_move": cpu_us,
        "samples": len(found),
        "layers": layers,
        "layers_us_per_move": {name: round(share * cpu_us, 1) for name, share in layers.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait", type=float, default=26.0, help="seconds from the run's start to the window (26)")
    parser.add_argument("--window", type=float, default=5.0, help="seconds sampled (5)")
    parser.add_argument("--from-script", type=Path, metavar="FILE", help="classify this `perf script` text instead")
    parser.add_argument("load", nargs="*", help="after --: bench/load.py's arguments")
    args = parser.parse_args()
    if args.from_script is not None:
        found = samples(args.from_script.read_text().splitlines())
        print(json.dumps({"samples": len(found), "layers": shares(found)}))
        return 0
    if not args.load:
        parser.error("give bench/load.py's arguments after --, or --from-script")
    if shutil.which("perf") is None:
        print("perf is missing (Debian: apt-get install linux-perf)", file=sys.stderr)
        return 2
    print(json.dumps(measure(args.load, args.wait, args.window)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
