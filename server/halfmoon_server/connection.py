"""One WebSocket connection: its bounded outgoing queue and writer task, its rate limit, and
which room and role it holds.

:meth:`Connection.send` never waits: it queues the frame, and a connection whose queue is full
is dropped (its transport aborted) so one slow socket never stalls a room's broadcast.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from aiohttp import WSMsgType, web

if TYPE_CHECKING:
    from halfmoon_server.rooms import Room

log = logging.getLogger("halfmoon_server.connection")


class RateLimit:
    """Credits: a burst of ``burst`` messages refilled at ``per_s`` a second (lila-ws style)."""

    __slots__ = ("burst", "credits", "last", "per_s", "refused_in_row")

    def __init__(self, burst: float, per_s: float, now: float) -> None:
        self.burst = burst
        self.per_s = per_s
        self.credits = burst
        self.last = now
        self.refused_in_row = 0

    def allow(self, now: float) -> bool:
        self.credits = min(self.burst, self.credits + (now - self.last) * self.per_s)
        self.last = now
        if self.credits >= 1.0:
            self.credits -= 1.0
            self.refused_in_row = 0
            return True
        self.refused_in_row += 1
        return False


class Connection:
    """A connected client, as rooms see it: ``send(frame)`` and where it belongs."""

    __slots__ = ("_queue", "_transport", "_writer", "dropped", "peer", "player_id", "rate", "room", "ws")

    def __init__(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport | None,
        *,
        queue_size: int,
        rate: RateLimit,
        peer: str,
    ) -> None:
        self.ws = ws
        self._transport = transport
        self.peer = peer
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=queue_size)
        self._writer: asyncio.Task[None] | None = None
        self.rate = rate
        self.room: Room | None = None
        self.player_id: str | None = None  # None: a spectator (when ``room`` is set)
        self.dropped = False

    def start_writer(self) -> None:
        self._writer = asyncio.get_running_loop().create_task(self._write_loop())

    @property
    def is_open(self) -> bool:
        return not self.dropped and not self.ws.closed

    def send(self, frame: bytes) -> None:
        """Queue a frame; never waits. A full queue drops the connection."""
        if not self.is_open:
            return
        try:
            self._queue.put_nowait(frame)
        except asyncio.QueueFull:
            self.drop("too slow: the outgoing queue overflowed")

    def drop(self, why: str) -> None:
        """Abort the connection at once (it cannot keep up, or it is being replaced)."""
        if self.dropped:
            return
        self.dropped = True
        log.info("dropping connection %s: %s", self.peer, why)
        if self._writer is not None:
            self._writer.cancel()
        if self._transport is not None:
            self._transport.abort()

    async def _write_loop(self) -> None:
        queue = self._queue
        ws = self.ws
        try:
            while True:
                frame = await queue.get()
                await ws.send_frame(frame, WSMsgType.TEXT)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, RuntimeError) as exc:
            log.debug("writer for %s stopped: %s", self.peer, exc)

    async def flush_and_close(self, code: int, reason: str) -> None:
        """Send what is queued (briefly), then close with ``code`` and ``reason``."""
        if self.dropped or self.ws.closed:
            return
        try:
            async with asyncio.timeout(1.0):
                while not self._queue.empty():
                    await asyncio.sleep(0.005)
                await self.ws.close(code=code, message=reason.encode("utf-8"))
        except (TimeoutError, ConnectionError, RuntimeError):
            self.drop(f"could not close cleanly ({reason})")

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
