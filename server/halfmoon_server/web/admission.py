"""Admission of TCP connections, before HTTP: what aiohttp leaves open.

aiohttp holds a connection that has not sent a whole request head yet (nothing at all, or a
header line a minute: slowloris) for as long as the peer likes on some versions, and counts no
connection per address; the per-address cap of ``ws.py`` only sees upgraded WebSockets. One
address could then hold every file descriptor and take the REST API and ``/ws`` down.

:class:`ConnectionGuard` watches the HTTP server's connections (``install`` on the runner's
:class:`aiohttp.web.Server`, done by ``halfmoon serve``):

- a connection whose first request head has not arrived within ``head_timeout_s`` is closed
  (the :func:`started` middleware marks a connection once a request reaches the application; after
  a response aiohttp's own keep-alive timeout takes over);
- one address holds at most ``limit`` TCP connections; one more is closed at once, before any
  byte is read. The limit is set above the WebSocket cap (``2 × cap + 16``), so a client over the
  WebSocket cap still gets the clear 1013 close, and a page's REST requests fit beside its sockets.
  Behind a trusted proxy every connection comes from the proxy, so only the deadline applies
  there (nginx's ``limit_conn`` counts the clients: deploy/nginx-site.conf).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Any

from aiohttp import web

from halfmoon_server.core.limits import AddressCount

log = logging.getLogger("halfmoon_server.admission")

#: At most one log line per this many seconds about refused connections.
LOG_EVERY_S = 10.0


def tcp_limit(websocket_cap: int) -> int:
    """TCP connections one address may hold, given the WebSocket cap (0: no limit)."""
    return 2 * websocket_cap + 16 if websocket_cap else 0


class ConnectionGuard:
    """Closes connections that send no request head in time, and those over the per-address limit."""

    def __init__(self, *, head_timeout_s: float, limit: int) -> None:
        self.head_timeout_s = head_timeout_s
        self.counts = AddressCount(limit)
        self.refused = 0
        self.timed_out = 0
        self._started: set[asyncio.Transport] = set()
        self._deadlines: dict[asyncio.Transport, asyncio.TimerHandle] = {}
        self._peers: dict[asyncio.Transport, str] = {}
        self._handlers: dict[Any, asyncio.Transport] = {}
        self._last_log = 0.0

    def install(self, server: web.Server) -> None:
        """Watch ``server``'s connections (its ``connection_made``/``connection_lost``, which every
        aiohttp request handler calls)."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: Any, transport: asyncio.Transport) -> None:
            made(handler, transport)
            self._handlers[handler] = transport
            self.opened(transport)

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            lost(handler, exc)
            transport = self._handlers.pop(handler, None)
            if transport is not None:
                self.closed(transport)

        server.connection_made = connection_made  # type: ignore[method-assign]
        server.connection_lost = connection_lost  # type: ignore[method-assign]

    def opened(self, transport: asyncio.Transport) -> None:
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        if not self.counts.acquire(address):
            self.refused += 1
            self._say(f"a connection from {address} refused: it holds {self.counts.limit} already")
            # on the loop's next round, not now: aiohttp's request handler has just scheduled its
            # start, which asserts it still has a server — aborted now, that start met none and
            # asyncio logged an AssertionError traceback per refused connection. Its reads are off
            # once aborted, so the connection still closes before any byte is read
            asyncio.get_running_loop().call_soon(transport.abort)
            return
        self._peers[transport] = address
        loop = asyncio.get_running_loop()
        self._deadlines[transport] = loop.call_later(self.head_timeout_s, self._deadline, transport)

    def started(self, transport: asyncio.Transport | None) -> None:
        """A request head arrived on ``transport``: its deadline is off."""
        if transport is None or transport in self._started:
            return
        self._started.add(transport)
        deadline = self._deadlines.pop(transport, None)
        if deadline is not None:
            deadline.cancel()

    def closed(self, transport: asyncio.Transport) -> None:
        deadline = self._deadlines.pop(transport, None)
        if deadline is not None:
            deadline.cancel()
        self._started.discard(transport)
        address = self._peers.pop(transport, None)
        if address is not None:
            self.counts.release(address)

    def _deadline(self, transport: asyncio.Transport) -> None:
        self._deadlines.pop(transport, None)
        if transport in self._started or transport.is_closing():
            return
        self.timed_out += 1
        self._say(f"a connection sent no request within {self.head_timeout_s:g} s: closed")
        transport.abort()

    def _say(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_log >= LOG_EVERY_S:
            self._last_log = now
            log.info("%s (%d refused, %d timed out so far)", message, self.refused, self.timed_out)


def started_middleware(guard: ConnectionGuard) -> Any:
    """The middleware that tells ``guard`` a connection's request head has arrived. It is not a
    coroutine: it tells the guard and hands the request on, so nothing of it stays in the call
    chain of a WebSocket's handler, which lives (and is resumed on every message) as long as
    the socket."""

    @web.middleware
    def started(request: web.Request, handler: Any) -> Awaitable[web.StreamResponse]:
        guard.started(request.transport)
        response: Awaitable[web.StreamResponse] = handler(request)
        return response

    return started
