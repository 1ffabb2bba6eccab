"""Helpers the benchmark scripts share: CPU time of a process, a free loopback port, waiting
for a server to answer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path

import aiohttp


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (steadier than wall time under load)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_up(url: str, process: subprocess.Popen[bytes] | None = None, timeout_s: float = 60.0) -> None:
    """Wait until ``url``/healthz answers 200. Raises RuntimeError when ``process`` exits first
    or nothing answers within ``timeout_s``."""
    async with aiohttp.ClientSession() as http:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"the server at {url} exited with {process.returncode} before it answered")
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(url + "/healthz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.05)
    raise RuntimeError(f"the server at {url} did not answer /healthz within {timeout_s:g} s")
