"""One WebSocket connection: how frames leave (never waiting), its rate limit, and which room
and role it holds. It is the :class:`halfmoon_server.ports.Outbox` of the WebSocket transport.

:meth:`Connection.send` never waits: it writes the frame straight into the connection's
transport, whose buffer holds what the kernel has not taken yet. A connection whose buffer
grows past ``max_buffer`` bytes (it stopped reading, or cannot keep up) is dropped — its
transport aborted — so one slow socket never stalls a room's broadcast and never pins
unbounded memory. There is no writer task per connection: a frame costs one ``write`` call.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging

from aiohttp import web

from halfmoon_server.limits import RateLimit

log = logging.getLogger("halfmoon_server.connection")

_TEXT_FIN = 0x81  # FIN + opcode 1 (text); server frames are never masked


def text_frame(payload: bytes) -> bytes:
    """A complete unmasked WebSocket text frame (RFC 6455 §5.2) around a UTF-8 payload."""
    n = len(payload)
    if n < 126:
        return bytes((_TEXT_FIN, n)) + payload
    if n < 65536:
        return bytes((_TEXT_FIN, 126)) + n.to_bytes(2, "big") + payload
    return bytes((_TEXT_FIN, 127)) + n.to_bytes(8, "big") + payload


def client_address(request: web.BaseRequest, *, trust_forwarded: bool) -> str:
    """The client's address as the limits count it: the socket's peer, or behind a trusted proxy
    the last X-Forwarded-For entry over every such header (the address the proxy itself saw;
    earlier entries, and earlier headers, are the client's own claims and not trusted). An IPv6
    address counts as its /64: one host holds a whole /64, so each of its addresses is no new
    client."""
    address = str(request.remote)
    if trust_forwarded:
        entries = ",".join(request.headers.getall("X-Forwarded-For", [])).split(",")
        last = entries[-1].strip()
        if last:
            address = last
    return _network(address)


def _network(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class Connection:
    """A connected client: ``send(frame)``, ``close(code, reason)``, and which room it is in
    (``room``, a room id) as which player (``player_id``; None for a spectator)."""

    __slots__ = ("_closing", "_transport", "dropped", "max_buffer", "peer", "player_id", "rate", "room", "ws")

    def __init__(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
        *,
        max_buffer: int,
        rate: RateLimit,
        peer: str,
    ) -> None:
        self.ws = ws
        self._transport = transport if isinstance(transport, asyncio.WriteTransport) else None
        self.max_buffer = max_buffer
        self.peer = peer
        self.rate = rate
        self.room: str | None = None
        self.player_id: str | None = None  # None: a spectator (when ``room`` is set)
        self.dropped = False
        self._closing: asyncio.Task[None] | None = None

    @property
    def closed(self) -> bool:
        return self.dropped or self.ws.closed or self._closing is not None

    def close(self, code: int, reason: str) -> None:
        """Close with ``code`` and ``reason`` after the frames already written; never waits."""
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_task(self.flush_and_close(code, reason))

    def send(self, payload: bytes) -> None:
        """Write one text frame now; never waits. A connection too far behind is dropped."""
        transport = self._transport
        if self.dropped or transport is None or transport.is_closing() or self.ws.closed:
            return
        transport.write(text_frame(payload))
        if transport.get_write_buffer_size() > self.max_buffer:
            self.drop(f"too slow: more than {self.max_buffer} bytes waiting to be sent")

    def drop(self, why: str) -> None:
        """Abort the connection at once (it cannot keep up)."""
        if self.dropped:
            return
        self.dropped = True
        log.info("dropping connection %s: %s", self.peer, why)
        if self._transport is not None:
            self._transport.abort()

    async def flush_and_close(self, code: int, reason: str) -> None:
        """Close with ``code`` and ``reason`` (after the frames already written), or drop."""
        if self.dropped or self.ws.closed:
            return
        try:
            async with asyncio.timeout(1.0):
                await self.ws.close(code=code, message=reason.encode("utf-8"))
        except (TimeoutError, ConnectionError, RuntimeError):
            self.drop(f"could not close cleanly ({reason})")
