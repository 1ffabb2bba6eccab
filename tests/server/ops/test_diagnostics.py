"""What a running server is doing, for an operator (:mod:`halfmoon_server.ops.diagnostics`):
``kill -USR1`` logs every task's await chain and every thread's stack without stopping the
server, and a shutdown that overruns ``--shutdown-timeout`` logs the same and is cut short
instead of hanging (a SIGTERM'd cluster instance was once seen not exiting in CI)."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from halfmoon_server.ops import cli, diagnostics
from tests.server.instances import Instance


async def _inner(release: asyncio.Event) -> None:
    await release.wait()


async def _outer(release: asyncio.Event) -> None:
    await _inner(release)


async def test_a_task_is_shown_with_every_coroutine_it_waits_in() -> None:
    release = asyncio.Event()
    task = asyncio.create_task(_outer(release), name="the-waiter")
    await asyncio.sleep(0)
    chain = diagnostics.await_chain(task.get_coro())
    assert [line.rsplit(" in ", 1)[1] for line in chain[:3]] == ["_outer", "_inner", "Event.wait"]
    described = diagnostics.describe_tasks()
    assert "task the-waiter:" in described and "in _inner" in described
    assert "thread MainThread:" in diagnostics.describe_threads()
    release.set()
    await task


async def test_tasks_waiting_in_the_same_place_are_one_block_and_the_record_is_bounded() -> None:
    release = asyncio.Event()
    crowd = [asyncio.create_task(_outer(release), name=f"crowd-{n:03d}") for n in range(500)]
    others = [asyncio.create_task(asyncio.sleep(3600), name=f"sleeper-{n}") for n in range(3)]
    await asyncio.sleep(0)
    described = diagnostics.describe_tasks()
    assert "500 tasks (crowd-000, crowd-001, crowd-002, …):" in described
    assert described.count("in _inner") == 1
    assert "3 tasks (sleeper-0, sleeper-1, sleeper-2):" in described
    release.set()
    for task in others:
        task.cancel()
    await asyncio.gather(*crowd, *others, return_exceptions=True)


async def test_at_most_so_many_await_chains_are_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diagnostics, "MAX_CHAINS", 2)
    release = asyncio.Event()
    tasks = [
        asyncio.create_task(_outer(release)),
        asyncio.create_task(_inner(release)),
        asyncio.create_task(release.wait()),
        asyncio.create_task(asyncio.sleep(3600)),
    ]
    await asyncio.sleep(0)
    described = diagnostics.describe_tasks()
    assert described.endswith("more await chains") and described.count("\ntask ") + described.startswith("task ") <= 3
    release.set()
    tasks[-1].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _stuck_cleanup(_app: web.Application) -> None:
    await asyncio.sleep(3600)  # a service that never answers


async def test_a_shutdown_that_overruns_is_logged_and_cut_short(caplog: pytest.LogCaptureFixture) -> None:
    app = web.Application()
    app.on_cleanup.append(_stuck_cleanup)
    runner = web.AppRunner(app)
    await runner.setup()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        await cli._clean_up(runner, 0.3)
    assert time.monotonic() - started < 3
    text = caplog.text
    assert "shutdown: not finished after 0.3 s (--shutdown-timeout); cutting it short" in text
    assert "shutdown overran: what is running now" in text and "in _stuck_cleanup" in text


async def test_a_shutdown_in_time_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    runner = web.AppRunner(web.Application())
    await runner.setup()
    with caplog.at_level(logging.WARNING):
        await cli._clean_up(runner, 5)
    assert caplog.text == ""


async def test_sigusr1_logs_what_the_server_is_doing_and_it_carries_on(tmp_path: Path) -> None:
    server = await Instance(tmp_path / "usr1").start()
    try:
        assert server.process is not None
        server.process.send_signal(signal.SIGUSR1)
        for _ in range(200):
            text = server.log.read_text()
            if "SIGUSR1: what is running now" in text and "thread MainThread" in text:
                break
            await asyncio.sleep(0.05)
        assert "SIGUSR1: what is running now" in text
        assert "in Lobby.run_ticker" in text, text[-3000:]  # the room ticker, waiting for its next round
        assert "thread MainThread:" in text
        async with aiohttp.ClientSession() as http:
            assert (await http.get(f"{server.base}/healthz")).status == 200
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text()


STUCK_SERVER = """
import asyncio, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from halfmoon_server.web import logs
from halfmoon_server.web.app import create_app
from halfmoon_server.ops.cli import run_server
from halfmoon_server.settings import Settings

logs.configure("INFO")
settings = Settings(
    data_dir=Path(sys.argv[1]), secret=b"s" * 32, solver_workers=0, daily_requires_winnable=False,
    shutdown_timeout_s=0.5,
)
app = create_app(settings)
pool = ThreadPoolExecutor(1)


async def stuck_in_a_thread(app):  # a close that never returns (a commit on a stalled disk)
    await asyncio.get_running_loop().run_in_executor(pool, time.sleep, 3600)


app.on_cleanup.append(stuck_in_a_thread)
run_server(app, "127.0.0.1", int(sys.argv[2]), lambda banner: print("listening", flush=True))
"""


def test_a_shutdown_stuck_in_a_thread_still_ends_the_process(tmp_path: Path) -> None:
    """Python joins a pool's worker threads at exit: a thread stuck in the shutdown would keep
    the process alive after the shutdown was cut short (until systemd's SIGKILL)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    from tests.ports import free_port

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("shared", "server", "client", ""))}
    process = subprocess.Popen(
        [sys.executable, "-c", STUCK_SERVER, str(tmp_path), str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    assert process.stdout is not None
    try:
        for _ in range(200):  # (the start-up's log lines come first)
            if process.stdout.readline().strip() in (b"listening", b""):
                break
        process.send_signal(signal.SIGTERM)
        code = process.wait(20)
    finally:
        if process.poll() is None:
            process.kill()
    output = process.stdout.read().decode()
    assert code == 1, output
    assert "cutting it short" in output and "in stuck_in_a_thread" in output


async def _deep(depth: int, release: asyncio.Event, where: str) -> None:
    if depth:
        await _deep(depth - 1, release, where)
    elif where == "a":
        await _waits_in_a(release)
    else:
        await _waits_in_b(release)


async def _waits_in_a(release: asyncio.Event) -> None:
    await release.wait()


async def _waits_in_b(release: asyncio.Event) -> None:
    await release.wait()


async def test_tasks_stuck_in_different_places_under_a_deep_chain_are_not_merged() -> None:
    """``await_chain`` keeps the *outermost* ``DEPTH`` (12) frames, though ``DEPTH``'s own comment
    says the innermost (where a task waits) matter most (threads do keep the innermost:
    ``format_stack(limit=12)``). c5942f4 now groups tasks by that truncated chain: two tasks under
    the same 12 outer frames, one stuck in a journal commit and one in a Redis call, become
    "2 tasks" with neither place shown. An aiohttp WebSocket handler's chain (RequestHandler.start,
    _handle_request, Application._handle, three middlewares, websocket_handler, dispatch, handle,
    Room.submit, the log's append, ...) is about that deep."""
    release = asyncio.Event()
    tasks = [asyncio.create_task(_deep(12, release, where), name=f"deep-{where}") for where in "ab"]
    await asyncio.sleep(0)
    try:
        described = diagnostics.describe_tasks()
        assert "in _waits_in_a" in described and "in _waits_in_b" in described, described
    finally:
        release.set()
        await asyncio.gather(*tasks)
