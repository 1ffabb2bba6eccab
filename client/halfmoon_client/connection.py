"""The only module that opens sockets: one WebSocket link to ``/ws`` that reconnects by itself.

A :class:`Link` connects with the ``websockets`` asyncio client, sends JSON messages and yields
decoded ones. When the connection drops it says so (``on_event("reconnecting", …)``), waits
along a :class:`Backoff` schedule, reconnects and sends its ``hello`` again — for a player that
is ``resume`` with the token and the highest ``seq`` seen, so the game continues exactly where
it was. The first connection is not retried: an unreachable server is reported at once. A
close with code 4001 (the player resumed on another connection) is final, not a drop.

A link for a known room (``room=``: a join, a resume, a watch) puts it in its URL,
``/ws?room=ID``, on the first connection and on every reconnection, so that a balancer routing by
room sends every member of a room to the same instance (docs/protocol.md, "Routing by room").
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from halfmoon_client.address import normalize_server, websocket_url
from halfmoon_client.errors import ProtocolError, RefusedError, UnreachableError
from halfmoon_client.session import ENTRY_ERRORS, Message, Session

EventHook = Callable[[str, dict[str, Any]], None]
#: Seconds before each new try of an entry the server answered ``unavailable`` (it changed
#: nothing and asked to try again): ~30 s in all, past a short database outage.
ENTRY_RETRY_S: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 8.0, 8.0)
#: The close code of a connection whose player resumed on another one: never reconnect then.
RESUMED_ELSEWHERE = 4001
#: The close code of a connection whose URL named no room id (``/ws?room=``): the same URL would
#: be refused again, so never reconnect then.
BAD_ROOM_IN_URL = 4003


@dataclass(frozen=True, slots=True)
class Backoff:
    """Reconnection delays: ``first`` seconds, times ``factor`` each attempt, at most ``cap``,
    each shortened by up to ``jitter`` (a fraction) at random; ``attempts`` tries in all.

    >>> list(Backoff(first=0.5, factor=2, cap=3.0, jitter=0, attempts=5).delays())
    [0.5, 1.0, 2.0, 3.0, 3.0]
    """

    first: float = 0.5
    factor: float = 2.0
    cap: float = 10.0
    jitter: float = 0.25
    attempts: int = 12

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        rng = rng or random.Random()
        delay = self.first
        for _ in range(self.attempts):
            yield delay * (1 - self.jitter * rng.random()) if self.jitter else delay
            delay = min(self.cap, delay * self.factor)


def decode(raw: str | bytes) -> Message:
    """A server frame as a JSON object; raises :class:`ProtocolError` otherwise."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ProtocolError(f"the server sent a frame that is not JSON: {raw[:80]!r}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"the server sent JSON that is not an object: {raw[:80]!r}")
    return data


def _why(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


#: What an HTTP status that refuses a WebSocket upgrade means for a Half Moon server (or the nginx
#: in front of one): a refusal to wait out, not a wrong address.
_REFUSALS = {
    429: "too many connections from this address at once (rate limited, by nginx's limit_req or the "
    "server): try again in a moment, or with fewer at once",
    503: "it is not taking connections now (stopping, or its database is down): try again in a moment",
}


def _refused(server: str, exc: InvalidStatus) -> str:
    """The message of a WebSocket upgrade answered with an HTTP status instead of 101."""
    status = exc.response.status_code
    why = _REFUSALS.get(status)
    if why is None:
        return f"{server} is not a Half Moon server ({exc})"
    return f"the server at {server} refused the connection with HTTP {status}: {why}"


class Link:
    """One player's or spectator's connection; see the module docstring.

    ``hello()`` gives the first message on every (re)connection; ``on_event`` hears
    ``reconnecting`` (``delay``, ``attempt``, ``reason``) and ``reconnected``; ``room``: the room
    the link is for, put in its URL (raises :class:`~halfmoon_client.errors.AddressError` when it
    cannot be a room id).
    """

    def __init__(
        self,
        server: str,
        *,
        hello: Callable[[], Message],
        on_event: EventHook | None = None,
        backoff: Backoff | None = None,
        open_timeout: float = 5.0,
        room: str | None = None,
    ) -> None:
        self.server = normalize_server(server)
        self.url = websocket_url(self.server, room)
        self.hello = hello
        self.on_event = on_event or (lambda kind, data: None)
        self.backoff = backoff or Backoff()
        self.open_timeout = open_timeout
        self.reconnects = 0
        self._ws: ClientConnection | None = None
        self._closing = False

    async def _open(self) -> ClientConnection:
        try:
            return await connect(
                self.url,
                compression=None,  # ~14 KiB per connection instead of ~64 KiB: bots are many
                open_timeout=self.open_timeout,
                max_size=1 << 20,
                max_queue=64,
                ping_interval=20,
                ping_timeout=20,
            )
        except InvalidURI as exc:
            raise UnreachableError(f"cannot use {self.url}: {exc}") from None
        except InvalidStatus as exc:
            raise UnreachableError(_refused(self.server, exc)) from None
        except InvalidHandshake as exc:
            raise UnreachableError(f"{self.server} is not a Half Moon server ({exc})") from None
        except (OSError, TimeoutError) as exc:
            raise UnreachableError(f"cannot reach the server at {self.server}: {_why(exc)}") from None

    async def connect(self) -> None:
        """Open the first connection and send ``hello()``; raises :class:`UnreachableError`."""
        self._ws = await self._open()
        await self.send(self.hello())

    async def send(self, message: Message) -> bool:
        """Send one message; False when the connection is down (the message is dropped)."""
        ws = self._ws
        if ws is None:
            return False
        try:
            await ws.send(orjson.dumps(message).decode())
        except ConnectionClosed:
            return False
        return True

    async def messages(self) -> AsyncIterator[Message]:
        """Every server message, across reconnections, until :meth:`close`.

        Raises :class:`UnreachableError` when every reconnection attempt failed,
        :class:`RefusedError` when the player was resumed on another connection (close 4001) or
        the server refused the room in the URL (close 4003),
        and :class:`ProtocolError` on a frame that is not a JSON object.
        """
        while not self._closing:
            ws = self._ws
            if ws is None:
                await self._reconnect("not connected")
                continue
            try:
                raw = await ws.recv()
            except ConnectionClosed as exc:
                if self.closed:
                    return
                if exc.rcvd is not None and exc.rcvd.code == RESUMED_ELSEWHERE:
                    self._ws = None
                    raise RefusedError("resumed_elsewhere", "this player was resumed on another connection") from None
                if exc.rcvd is not None and exc.rcvd.code == BAD_ROOM_IN_URL:
                    self._ws = None
                    raise RefusedError("no_such_room", f"the server refused the room in {self.url}") from None
                reason = exc.rcvd.reason if exc.rcvd is not None and exc.rcvd.reason else "connection closed"
                await self._reconnect(reason)
                continue
            yield decode(raw)

    async def _reconnect(self, reason: str) -> None:
        self._ws = None
        last = reason
        for attempt, delay in enumerate(self.backoff.delays(), 1):
            self.on_event("reconnecting", {"delay": delay, "attempt": attempt, "reason": last})
            await asyncio.sleep(delay)
            if self.closed:
                return
            try:
                ws = await self._open()
            except UnreachableError as exc:
                last = str(exc)
                continue
            self._ws = ws
            self.reconnects += 1
            await self.send(self.hello())
            self.on_event("reconnected", {"attempt": attempt})
            return
        raise UnreachableError(
            f"lost the connection to {self.server} and could not reconnect "
            f"({self.backoff.attempts} attempts; last: {last})"
        )

    @property
    def closed(self) -> bool:
        """:meth:`close` was called."""
        return self._closing

    async def close(self) -> None:
        """Close the connection for good (no reconnection)."""
        self._closing = True
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()


def wall_ms() -> int:
    """The local wall clock in ms (what the session compares with the server's ``now``)."""
    return int(time.time() * 1000)


async def enter_room(link: Link, session: Session, feed: Callable[[Message], object]) -> AsyncIterator[Message]:
    """Connect, send the hello, and wait for ``welcome``; then yield every later message.

    Raises :class:`RefusedError` when the server refuses the entry (no such room, name
    taken…), or a later resume; :class:`~halfmoon_client.errors.UnreachableError` when the
    server cannot be reached.
    """
    await link.connect()
    asked_again = 0
    async for message in link.messages():
        feed(message)
        code = message.get("code") if message.get("type") == "error" else None
        # refused entry; or, once in, a resume the server refuses (it forgot the room or the token)
        if code in ENTRY_ERRORS and (not session.welcomed or code in ("bad_token", "no_such_room")):
            raise RefusedError(str(code), str(message.get("message") or code))
        if code == "unavailable" and not session.welcomed:
            # the server could not take the entry now (a database it needs did not answer) and
            # changed nothing: ask again a little later, a few times, then say so
            if asked_again == len(ENTRY_RETRY_S):
                raise RefusedError(str(code), str(message.get("message") or code))
            reconnects = link.reconnects
            await asyncio.sleep(ENTRY_RETRY_S[asked_again])
            asked_again += 1
            if link.reconnects == reconnects:  # (a reconnection meanwhile sent its own hello)
                await link.send(link.hello())
            continue
        if session.welcomed:
            yield message
