"""At its open-file limit the server refuses new WebSockets cleanly (1013), keeps answering REST
and /healthz, and logs the failed accepts once per interval — not once per attempt with a
traceback (asyncio's own handler wrote hundreds of thousands of lines in half a minute).

The server runs in a subprocess whose ``RLIMIT_NOFILE`` is lowered to a few dozen descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import ROOT
from tests.ports import free_port

pytestmark = pytest.mark.slow  # a real server at its open-file limit

SECRET = "a-daily-secret-of-forty-bytes-for-tests!"
LIMIT = 90


def _lower_the_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


async def _healthy(http: aiohttp.ClientSession, base: str) -> int:
    async with asyncio.timeout(5), http.get(f"{base}/healthz") as response:
        return response.status


async def test_at_the_open_file_limit_websockets_are_refused_and_rest_answers(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALFMOON_")}
    env.update(
        HALFMOON_SECRET=SECRET, HALFMOON_SOLVER_WORKERS="0", HALFMOON_MAX_CONNECTIONS_PER_ADDRESS="0",
        PYTHONPATH=os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", "")),
    )  # fmt: skip
    command = [sys.executable, "-m", "halfmoon", "serve", "--port", str(port), "--data-dir", str(tmp_path)]
    logfile = tmp_path / "server.log"
    with logfile.open("wb") as sink:
        server = subprocess.Popen(
            command, env=env, stdout=sink, stderr=subprocess.STDOUT, preexec_fn=_lower_the_limit, cwd=tmp_path
        )
    sockets: list[aiohttp.ClientWebSocketResponse] = []
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            for _ in range(200):
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    if await _healthy(http, base) == 200:
                        break
                await asyncio.sleep(0.05)
            # WebSockets until the descriptors run out: past the limit one waits in the backlog
            # (asyncio pauses accepting for a second), then it is opened and closed at once (1013)
            refused = None
            for _ in range(LIMIT):
                async with asyncio.timeout(5):
                    ws = await http.ws_connect(base.replace("http", "ws") + "/ws")
                sockets.append(ws)
                with contextlib.suppress(TimeoutError):
                    refused = await ws.receive(timeout=0.02)
                    break
            assert refused is not None, "the limit was never reached"
            assert refused.type is aiohttp.WSMsgType.CLOSE and refused.data == 1013, refused
            # REST and /healthz still answer, while the WebSockets kept stay open
            assert await _healthy(http, base) == 200
            async with asyncio.timeout(5), http.get(f"{base}/api/daily/2026-01-01/leaderboard") as response:
                assert response.status in (200, 404)
            assert not any(ws.closed for ws in sockets[:-1])
            for ws in sockets:
                await ws.close()
    finally:
        server.terminate()
        server.wait(20)
    log = logfile.read_text(encoding="utf-8", errors="replace")
    assert "socket.accept() out of system resource" not in log and "Traceback" not in log
    lines = [line for line in log.splitlines() if "open files: at the limit" in line]
    assert 1 <= len(lines) <= 2, lines  # once per 10 s
    assert f"RLIMIT_NOFILE {LIMIT}" in lines[0]
