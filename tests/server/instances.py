"""Real server processes for the durability and cluster tests: ``halfmoon serve`` started as a
child process on 127.0.0.1, killed with the signal a test chooses, started again; and a
``redis-server`` of the test's own (on another port, in a temporary folder) to kill and restart."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.conftest import ROOT
from tests.ports import free_port


async def wait_healthy(base: str, timeout: float = 30.0) -> None:
    async with aiohttp.ClientSession() as http:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    if (await http.get(f"{base}/healthz")).status == 200:
                        return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)


class Instance:
    """One ``halfmoon serve`` process."""

    def __init__(
        self,
        data_dir: Path,
        *,
        db: str | None = None,
        redis: str | None = None,
        port: int | None = None,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ):
        self.data_dir = data_dir
        self.args = args  # more of ``halfmoon serve``'s options
        self.env = env or {}  # more (or other) environment variables
        self.db = db
        self.redis = redis
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir / f"server-{self.port}.log"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    async def start(self) -> Instance:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "halfmoon", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--data-dir", str(self.data_dir), "--secret", "instances-test-secret-32-bytes-long"]
        command += ["--countdown", "0.2"]
        command += ["--solver-workers", "0", "--no-winnable-daily"]
        if self.db:
            command += ["--db", self.db]
        if self.redis:
            command += ["--redis", self.redis]
        command += self.args
        env = {
            **os.environ,
            "HALFMOON_ROOM_BURST": "10000",
            "HALFMOON_RATE_BURST": "10000",
            "HALFMOON_RATE_PER_S": "10000",
            "HALFMOON_METRICS_ON_APP_PORT": "1",  # a test's own server: its /metrics where its tests look
            # this tree's sources first (a git worktree runs its own code, not the installed one)
            "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", "")),
            **self.env,
        }
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.data_dir)
        try:
            await wait_healthy(self.base)
        except TimeoutError:
            tail = self.log.read_text()[-3000:]
            raise AssertionError(f"the server on port {self.port} did not start:\n{tail}") from None
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        self.process.wait(30)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill(signal.SIGTERM)


class RedisServer:
    """A ``redis-server`` of the test's own, with its append-only file in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @staticmethod
    def binary() -> str | None:
        return shutil.which("redis-server")

    async def start(self) -> RedisServer:
        binary = self.binary()
        assert binary is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        options = ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        options += ["--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no"]
        self.process = subprocess.Popen(
            [binary, *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        async with asyncio.timeout(10):
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                    writer.close()
                    return self
                except OSError:
                    await asyncio.sleep(0.05)

    def kill(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None:
            self.process.send_signal(sig)
            self.process.wait(30)
            self.process = None


def tracebacks(inst: Instance) -> list[str]:
    """The tracebacks in an instance's log (the first 1,500 characters of each)."""
    text = inst.log.read_text(errors="replace")
    return [chunk[:1500] for chunk in text.split("Traceback")[1:]]
