"""Long protocol fuzz, by hand: ``python bench/fuzz_long.py --minutes 3`` (or ``--examples 5000``).

The strategies of tests/server/web/test_fuzz_hypothesis.py — random frames, and valid messages of
every type mutated — run for minutes instead of seconds, against a real ``halfmoon serve``
subprocess on 127.0.0.1 (SQLite in a fresh data directory, the real clock, no countdown, the
per-connection and per-address limits lifted: every frame comes from one address, fast). The
same :class:`RaceFuzz` as the test: each example resumes the fuzzer's seat in a running race and
sends up to 6 frames, every answer checked; a new race starts each time the fuzzer's game has
ended, and every race ends with the other racer (untouched) playing his game to a win.

Hypothesis runs in chunks of ``--chunk`` examples, each chunk with its own seed (``--seed`` plus
the chunk's number: a run is reproducible), random and mutated chunks in turn, until the time
or the example count is reached. A failing example is shrunk, printed, counted, and the run goes
on with the next chunk.

Reports the examples, frames and races, the answers by type (errors by code), the frames that
closed the socket for being too big, and what must be 0: failing examples, ``internal`` errors
(the WebSocket's 5xx), HTTP 5xx, tracebacks and ERROR lines in the server's log, and a server
that died. Prints the summary as JSON, and exits 1 if any of those is not 0. Figures go in
docs/benchmarks.md ("Fuzzing (issue 14)").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from benchlib import free_port, wait_up

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the strategies live with the test
from tests.server.web.test_fuzz_hypothesis import (  # noqa: E402
    Frame,
    RaceFuzz,
    mutated_frames,
    random_frames,
    sequences,
)

KINDS: dict[str, st.SearchStrategy[Frame]] = {"random": random_frames(), "mutated": mutated_frames()}


@contextlib.contextmanager
def server(data: Path, log_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``halfmoon serve`` on a free port of 127.0.0.1, its log in ``log_path``; SIGTERM after."""
    port = free_port()
    command = [
        sys.executable, "-m", "halfmoon", "serve", "--port", str(port), "--data-dir", str(data),
        "--countdown", "0", "--solver-workers", "0", "--no-winnable-daily", "--log-level", "INFO",
        # one client sends everything, as fast as it can: lift the per-connection and per-address caps
        "--rate-burst", "1e9", "--rate-per-s", "1e9", "--room-burst", "1e9", "--room-per-min", "1e9",
        "--max-connections-per-address", "0", "--max-rooms", "1000000",
    ]  # fmt: skip
    path = os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", ""))
    env = {**os.environ, "PYTHONPATH": path}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_up(url, process))
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def read_log(path: Path) -> dict[str, Any]:
    """Tracebacks, ERROR lines and HTTP 5xx answers (access log) in the server's log."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    errors = [line for line in lines if " ERROR " in line or " CRITICAL " in line]
    http_5xx = [line for line in lines if "aiohttp.access" in line and '" 5' in line]
    return {
        "log_lines": len(lines),
        "tracebacks": text.count("Traceback (most recent call last)"),
        "error_lines": len(errors),
        "http_5xx": len(http_5xx),
        "log_examples": (errors + http_5xx)[:10],
    }


def run_chunk(
    race: RaceFuzz,
    loop: asyncio.AbstractEventLoop,
    frames: st.SearchStrategy[Frame],
    examples: int,
    chunk_seed: int,
    deadline: float,
) -> None:
    """One hypothesis run of ``examples`` examples (seeded) on ``race``, whose loop runs in
    another thread; examples past the deadline are skipped."""

    @seed(chunk_seed)
    @settings(settings.get_profile("halfmoon-fuzz-long"), max_examples=examples)
    @given(sequences(frames))
    def one_example(sequence: list[Frame]) -> None:
        if time.monotonic() < deadline:
            asyncio.run_coroutine_threadsafe(race.example(sequence), loop).result(timeout=120)

    one_example()


def fuzz(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run chunks of examples until the time or the count is reached; the tally and the failures."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzz-loop", daemon=True)
    thread.start()
    race = RaceFuzz(url, time_limit_s=7200)  # the real clock: a race outlasts the run
    failures: list[str] = []
    deadline = time.monotonic() + args.minutes * 60
    started = time.monotonic()
    chunk = 0
    try:
        while time.monotonic() < deadline and race.tally.examples < args.examples:
            kind = args.kinds[chunk % len(args.kinds)]
            budget = min(args.chunk, args.examples - race.tally.examples)
            try:
                run_chunk(race, loop, KINDS[kind], budget, args.seed + chunk, deadline)
            except Exception:
                failures.append(f"chunk {chunk} ({kind}, seed {args.seed + chunk}):\n{traceback.format_exc()}")
                print(failures[-1], file=sys.stderr)
                # a fresh race: the failed one may be stuck
                with contextlib.suppress(Exception):
                    asyncio.run_coroutine_threadsafe(race.abandon(), loop).result(timeout=30)
                race = RaceFuzz(url, race.tally, time_limit_s=7200)
            chunk += 1
        asyncio.run_coroutine_threadsafe(race.close(), loop).result(timeout=120)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    tally = race.tally
    return {
        "seconds": round(time.monotonic() - started, 1),
        "chunks": chunk,
        "examples": tally.examples,
        "frames": tally.frames,
        "races": tally.races,
        "frames_by_kind": dict(tally.labels.most_common()),
        "replies_by_type": dict(tally.replies.most_common()),
        "closed_too_big": tally.closed_too_big,
        "internal_errors": tally.internal_errors,
        "failing_examples": len(failures),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="stop after this long (default 3)")
    parser.add_argument("--examples", type=int, default=1_000_000, help="stop after this many examples")
    parser.add_argument("--chunk", type=int, default=500, help="examples per hypothesis run (default 500)")
    parser.add_argument("--seed", type=int, default=20261201, help="the first chunk's seed")
    parser.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=["mutated", "random"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="halfmoon-fuzz-") as tmp:
        log_path = Path(tmp) / "server.log"
        with server(Path(tmp) / "data", log_path) as (url, process):
            summary = fuzz(url, args)
            summary["server_died"] = process.poll() is not None
        summary.update(read_log(log_path))
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    bad = ("failing_examples", "internal_errors", "tracebacks", "error_lines", "http_5xx", "server_died")
    return 1 if any(summary[key] for key in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
