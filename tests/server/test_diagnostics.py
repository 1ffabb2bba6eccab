"""What a running server is doing, for an operator (:mod:`halfmoon_server.diagnostics`):
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

from halfmoon_server import cli, diagnostics
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
