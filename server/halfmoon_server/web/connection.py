"""One WebSocket connection: how frames leave (never waiting), its rate limit, and which room
and role it holds. It is the :class:`halfmoon_server.ports.Outbox` of the WebSocket transport.

:meth:`Connection.send` never waits: it writes the frame straight into the connection's
transport, whose buffer holds what the kernel has not taken yet. A connection whose buffer
grows past ``max_buffer`` bytes (it stopped reading, or cannot keep up) is dropped — its
transport aborted — so one slow socket never stalls a room's broadcast and never pins
unbounded memory. There is no writer task per connection: the frames a connection is sent in
one turn of the event loop (a group commit of the room log delivers many moves at once) leave
together at its end, in one ``write`` — one system call instead of one a frame — and the
:class:`Flusher` writes every such connection in one callback (not one callback each).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
from typing import Any

from aiohttp import web

from halfmoon_server.core.limits import RateLimit

log = logging.getLogger("halfmoon_server.connection")

_TEXT_FIN = 0x81  # FIN + opcode 1 (text); server frames are never masked
#: A ping with no payload (FIN + opcode 9); the client's pong is any frame it sends.
PING_FRAME = b"\x89\x00"
#: "try again later" (RFC 6455): the close code of a WebSocket refused at the open-file limit
CLOSE_TRY_LATER = 1013
#: Where clients open their WebSocket. The middlewares hand its requests straight on to the
#: handler (no coroutine of theirs lives as long as the socket, resumed on every message).
WEBSOCKET_PATH = "/ws"


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


class OpenFiles:
    """What the server does at its open-file limit (``RLIMIT_NOFILE``), where ``accept()`` fails
    with EMFILE: asyncio logs each failed attempt with its traceback — up to its backlog (128)
    in a row, every time the listening socket is readable — hundreds of thousands of lines in
    half a minute, and with every descriptor held by a WebSocket, REST and ``/healthz`` are not
    answered at all.

    Installed on the event loop (:func:`~halfmoon_server.web.lifecycle.open_files_ctx`), it holds
    ``reserve`` descriptors (``/dev/null``) while all is well. The first failed ``accept()`` gives
    them back, so the connections waiting are taken (asyncio pauses accepting for a second after a
    failure); while the reserve is out, every new WebSocket is closed at once with 1013 "try again
    later" (its descriptor given back), so the descriptors freed serve REST and ``/healthz``. Once
    twice the reserve is free again (looked at every ``check_s``: room for the reserve and as many
    new connections), new WebSockets are welcome again. The failures are logged once per
    ``log_every_s``, with their count, and so is the way back."""

    def __init__(self, reserve: int = 32, *, log_every_s: float = 10.0, check_s: float = 1.0) -> None:
        self.size = reserve
        self.log_every_s = log_every_s
        self.check_s = check_s
        self.reserve: list[int] = []
        #: the reserve is out: new WebSockets are refused (1013)
        self.full = False
        self.failures = 0  # failed accepts since the last log line
        self._logged_at: float | None = None
        #: the loop's exception handler before this one (None: asyncio's default)
        self.previous: Any = None

    def refill(self, now: float = 0.0) -> bool:
        """Open the reserve again, if twice its size is free (when full); True once it is whole
        (then new WebSockets are welcome)."""
        spare: list[int] = []
        try:
            while len(self.reserve) < self.size:
                self.reserve.append(os.open(os.devnull, os.O_RDONLY))
            if self.full:  # headroom for new connections too, or the next WebSocket is the last
                while len(spare) < self.size:
                    spare.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            return False
        finally:
            for fd in spare:
                os.close(fd)
        if self.full:
            self.full = False
            if self._logged_at is None or now - self._logged_at >= self.log_every_s:
                self._logged_at = now
                log.warning("open files: below the limit again; new WebSockets are accepted")
        return True

    def release(self) -> None:
        while self.reserve:
            os.close(self.reserve.pop())

    def handle(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's exception handler: failed accepts at the limit are counted (and logged
        once per interval); anything else goes to the default handler."""
        exc = context.get("exception")
        if not (
            isinstance(exc, OSError)
            and exc.errno in (errno.EMFILE, errno.ENFILE)
            and "accept" in str(context.get("message", ""))
        ):
            if self.previous is not None:
                self.previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        self.failures += 1
        if not self.full:
            self.full = True
            self.release()
        now = loop.time()
        if self._logged_at is None or now - self._logged_at >= self.log_every_s:
            self._logged_at = now
            limit = _file_limit()
            log.error(
                "open files: at the limit (%s): accept() failed %d time(s); new WebSockets are refused (1013) "
                "until descriptors free up, REST still answers (logged every %g s at most)",
                limit,
                self.failures,
                self.log_every_s,
            )
            self.failures = 0

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.check_s)
            if self.full:
                self.refill(asyncio.get_running_loop().time())


def _file_limit() -> str:
    try:
        import resource

        return f"RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}"
    except (ImportError, OSError, ValueError):
        return "RLIMIT_NOFILE"


#: The process's open-file guard: descriptors are the process's, whatever the application.
OPEN_FILES = OpenFiles()


class Flusher:
    """The connections with frames waiting to be written, written together at the end of the
    event loop's turn: one callback a turn, however many connections a broadcast touched."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: list[Connection] = []

    def add(self, conn: Connection) -> None:
        if not self._waiting:
            asyncio.get_running_loop().call_soon(self.flush_all)
        self._waiting.append(conn)

    def flush_all(self) -> None:
        waiting, self._waiting = self._waiting, []
        for conn in waiting:
            try:
                conn.flush()
            except Exception:  # a bug: one connection's failure must not hold back the others'
                log.exception("writing to %s failed", conn.peer)
                conn.drop("writing failed")


class Connection:
    """A connected client: ``send(frame)``, ``close(code, reason)``, and which room it is in
    (``room``, a room id) as which player (``player_id``; None for a spectator)."""

    __slots__ = (
        "_closing", "_flusher", "_pending", "_transport", "dropped", "heard_at", "max_buffer", "peer", "pinged_at",
        "player_id", "rate", "room", "roomless_since", "session", "ws",
    )  # fmt: skip

    def __init__(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
        *,
        flusher: Flusher,
        max_buffer: int,
        rate: RateLimit,
        peer: str,
    ) -> None:
        self.ws = ws
        self._transport = transport if isinstance(transport, asyncio.WriteTransport) else None
        self._flusher = flusher
        self.max_buffer = max_buffer
        self.peer = peer
        self.rate = rate
        #: the account session cookie its handshake carried (its secret, looked up when a message
        #: needs it: resuming the account's daily attempt); None: none
        self.session: str | None = None
        self.room: str | None = None
        self.player_id: str | None = None  # None: a spectator (when ``room`` is set)
        #: since when (loop time) it has been seen outside every room; None: in one at the last look
        self.roomless_since: float | None = None
        #: when (loop time) the client was last heard from, as of the last look; when it was pinged
        #: since (None: not pinged)
        self.heard_at = 0.0
        self.pinged_at: float | None = None
        self.dropped = False
        self._closing: asyncio.Task[None] | None = None
        self._pending: list[bytes] = []  # frames sent in this turn of the loop, not yet written
        if OPEN_FILES.full:  # the reserve of descriptors is out: keep what is left for REST
            self.close(CLOSE_TRY_LATER, "the server is full (open files): try again later")

    @property
    def closed(self) -> bool:
        return self.dropped or self.ws.closed or self._closing is not None

    def close(self, code: int, reason: str) -> None:
        """Close with ``code`` and ``reason`` after the frames already written; never waits."""
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_task(self.flush_and_close(code, reason))

    def send(self, payload: bytes) -> None:
        """Send one text frame: written at the end of this turn of the event loop, with the
        others sent meanwhile; never waits. A connection too far behind is dropped."""
        transport = self._transport
        if self.dropped or transport is None or transport.is_closing() or self.ws.closed:
            return
        if not self._pending:
            self._flusher.add(self)
        self._pending.append(text_frame(payload))

    def ping(self) -> None:
        """Send a ping (with the frames sent in this turn of the loop); never waits."""
        transport = self._transport
        if self.dropped or transport is None or transport.is_closing() or self.ws.closed:
            return
        if not self._pending:
            self._flusher.add(self)
        self._pending.append(PING_FRAME)

    def flush(self) -> None:
        """Write the frames sent so far, in one ``write``. A connection too far behind is dropped."""
        pending, self._pending = self._pending, []
        transport = self._transport
        if not pending or self.dropped or transport is None or transport.is_closing() or self.ws.closed:
            return  # nothing after a close frame
        transport.write(pending[0] if len(pending) == 1 else b"".join(pending))
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
        """Close with ``code`` and ``reason`` (after the frames already sent), or drop."""
        if self.dropped or self.ws.closed:
            return
        self.flush()  # the frames sent before the close frame go first
        try:
            async with asyncio.timeout(1.0):
                await self.ws.close(code=code, message=reason.encode("utf-8"))
        except (TimeoutError, ConnectionError, RuntimeError):
            self.drop(f"could not close cleanly ({reason})")
