"""Fixtures for the client tests that need a real server: ``create_app`` on 127.0.0.1 (a free
port, a temporary SQLite database, a short countdown), and a TCP proxy in front of it that a
test can cut to drop every connection and refuse new ones for a while."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from halfmoon_server import create_app
from halfmoon_server.settings import Settings


@pytest.fixture(autouse=True)
def _state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Seats kept by ``halfmoon join`` (and the subprocesses it starts) go to a temporary folder."""
    monkeypatch.setenv("HALFMOON_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
async def server_url(aiohttp_server: Callable[..., Awaitable[TestServer]], tmp_path: Path) -> str:
    settings = Settings(
        data_dir=tmp_path,
        db_url=f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}",
        secret=b"client-tests",
        countdown_s=0.2,
        tick_s=0.05,
        solver_workers=0,
        daily_requires_winnable=False,
    )
    server = await aiohttp_server(create_app(settings))
    return f"http://127.0.0.1:{server.port}"


class Proxy:
    """Forwards 127.0.0.1:<port> to the server; ``cut()`` drops every connection and refuses
    new ones until ``restore()``. ``requests`` holds each connection's HTTP request line
    (``GET /ws?room=K7WQ2M HTTP/1.1``): what a balancer in its place would route on."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.accepting = True
        self.cuts = 0
        self.requests: list[str] = []
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.accepting:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers |= {writer, up_writer}
        with contextlib.suppress(ConnectionError, OSError):
            first = await reader.readline()
            self.requests.append(first.decode("latin-1").strip())
            up_writer.write(first)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while chunk := await src.read(65536):
                dst.write(chunk)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dst.close()

    def cut(self) -> None:
        self.accepting = False
        self.cuts += 1
        for writer in list(self._writers):
            transport = writer.transport
            transport.abort()  # like a dropped network: no close handshake
        self._writers.clear()

    def restore(self) -> None:
        self.accepting = True

    async def close(self) -> None:
        self.cut()
        for task in list(self._pipes):
            task.cancel()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()


@pytest.fixture
async def proxy(server_url: str) -> AsyncIterator[Proxy]:
    proxy = Proxy(int(server_url.rsplit(":", 1)[1]))
    await proxy.start()
    yield proxy
    await proxy.close()
