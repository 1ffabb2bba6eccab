"""A TCP proxy a test or a benchmark can cut and restore, to play a database (or Redis) outage
on loopback: ``TcpProxy(target_port).start()`` listens on a free port of 127.0.0.1 and forwards
every connection to ``127.0.0.1:target_port``.

- ``cut("reset")``: every open connection is closed at once and new ones are closed as they
  arrive (the server went down: clients see a reset or EOF straight away).
- ``cut("blackhole")``: connections stay open but nothing passes either way, and new ones are
  accepted and never answered (the server froze, or a firewall drops packets: only a timeout
  tells the client).
- ``restore()``: new connections are forwarded again (connections cut by a blackhole are closed
  then, as a frozen server's peers would eventually see).

The proxy runs its own event loop in a daemon thread, so synchronous tests, asyncio tests and
benchmark scripts drive it alike. Used by tests/server/system/test_faults_db.py and bench/soak.py.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Literal

Mode = Literal["reset", "blackhole"]


class TcpProxy:
    """Forward 127.0.0.1:``port`` to ``target_host``:``target_port``, cuttable on demand."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = 0
        self.cut_mode: Mode | None = None
        self.connections_seen = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    # -- control (any thread) --------------------------------------------------------------

    def start(self) -> TcpProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def cut(self, mode: Mode = "reset") -> None:
        """Stop forwarding (see the module's docstring for the two modes)."""
        asyncio.run_coroutine_threadsafe(self._cut(mode), self._loop).result(10)

    def restore(self) -> None:
        """Forward new connections again."""
        asyncio.run_coroutine_threadsafe(self._restore(), self._loop).result(10)

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the loop's side -------------------------------------------------------------------

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        sock: socket.socket = self._server.sockets[0]
        self.port = sock.getsockname()[1]

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        self._close_all()

    async def _cut(self, mode: Mode) -> None:
        self.cut_mode = mode
        if mode == "reset":
            self._close_all()

    async def _restore(self) -> None:
        if self.cut_mode == "blackhole":
            self._close_all()
        self.cut_mode = None

    def _close_all(self) -> None:
        for writer in list(self._writers):
            self._abort(writer)
        self._writers.clear()

    @staticmethod
    def _abort(writer: asyncio.StreamWriter) -> None:
        transport = writer.transport
        if not transport.is_closing():
            transport.abort()  # a reset, not a polite FIN

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections_seen += 1
        if self.cut_mode == "reset":
            self._abort(writer)
            return
        self._writers.add(writer)
        if self.cut_mode == "blackhole":
            return  # held open, never answered, until restore() closes it
        try:
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            self._abort(writer)
            self._writers.discard(writer)
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True)
        for w in (writer, up_writer):
            self._writers.discard(w)
            self._abort(w)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                while self.cut_mode == "blackhole":  # hold what arrives; pass nothing
                    if writer.transport.is_closing():
                        return
                    await asyncio.sleep(0.05)
                if writer.transport.is_closing():
                    return
                writer.write(data)
                await writer.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            self._abort(writer)
