"""Relaying a WebSocket to the instance that owns its room (a cluster: ``--redis``).

In a cluster each room has one owner (docs/server.md, "One owner per room"): only the owner
applies the room's moves and talks to its members. A connection that reaches another instance —
its first message names a room (``join``, ``watch``, ``resume``) or its URL does (``/ws?room=ID``)
and the lobby answers :class:`~halfmoon_server.rooms.lobby.OwnedElsewhere` — is relayed: this
instance opens a WebSocket to the owner's advertised URL (``--advertise``), ``/ws?room=ID``,
sends it the first message and then pumps frames both ways without parsing them, until either
side closes; a close (its code and reason) is passed on to the other side. Each direction awaits
its send (aiohttp waits while the socket's buffer is full), so nothing piles up here: a client
that cannot keep up is dropped by the owner (``max_send_buffer``) and its relay closes with it.
The relayed member is a normal member of the owner's room; the client's own socket here still
gets this instance's pings (a silent client is dropped, and its relay with it).

**The client's address** (per-address limits on the owner) travels in :data:`RELAYED_FOR`,
``"<address> <expires> <HMAC>"`` keyed by the server's secret, which the instances of a cluster
share (``--secret`` / ``HALFMOON_SECRET_FILE``). The owner trusts it only when the HMAC verifies
and it has not expired (:func:`relayed_for`); a client that sends the header itself gets its own
address counted as always. A connection that came through a relay is never relayed again: if its
room moved meanwhile it is closed with 1012 and connects again.

An owner that cannot be reached (it died; its heartbeat is still fresh) is marked unreachable
for a few seconds and the message is handled again here: the lobby then waits for its lease to run
out and takes the room over.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
from aiohttp import WSMsgType, web
from yarl import URL

from halfmoon.errors import BadMessageError
from halfmoon.protocol import normalise_room
from halfmoon_server.core.accounts import SESSION_COOKIE
from halfmoon_server.rooms.lobby import OwnedElsewhere
from halfmoon_server.rooms.room import CLOSE_MOVED, MOVED_REASON
from halfmoon_server.web import keys
from halfmoon_server.web.connection import Connection

log = logging.getLogger("halfmoon_server.relay")

#: The header a relay sends the owner: the client's address, signed.
RELAYED_FOR = "X-Halfmoon-Relayed-For"
#: How long a signed address is good for (s): a header seen once cannot be replayed for long.
SIGNATURE_TTL_S = 30
#: How long opening the relay to the owner may take (s): a paused owner never answers.
CONNECT_TIMEOUT_S = 2.0
#: How many owners in a row a message is relayed towards before its client is told to connect again.
RELAY_TRIES = 3
_CONTEXT = b"halfmoon relay address v1"


def _mac(secret: bytes, address: str, expires: int) -> str:
    key = hmac.new(secret, _CONTEXT, hashlib.sha256).digest()  # a key of its own, not the daily secret
    return hmac.new(key, f"{address} {expires}".encode(), hashlib.sha256).hexdigest()


def sign(secret: bytes, address: str, now_s: float) -> str:
    """The :data:`RELAYED_FOR` value for a client ``address``, good for :data:`SIGNATURE_TTL_S`."""
    expires = int(now_s) + SIGNATURE_TTL_S
    return f"{address} {expires} {_mac(secret, address, expires)}"


def relayed_for(request: web.BaseRequest, secret: bytes, now_s: float) -> str | None:
    """The client address a relay vouches for: only when the header's HMAC verifies with the
    cluster's secret and it has not expired (and is not dated far ahead); None otherwise, and the
    connection's own address counts."""
    value = request.headers.get(RELAYED_FOR)
    if value is None:
        return None
    parts = value.split(" ")
    if len(parts) != 3 or not parts[1].isdigit() or len(parts[1]) > 12:
        return None
    address, expires, mac = parts[0], int(parts[1]), parts[2]
    if not now_s <= expires <= now_s + 2 * SIGNATURE_TTL_S:
        return None
    if not hmac.compare_digest(mac.encode(), _mac(secret, address, expires).encode()):
        return None
    return address


class Relays:
    """The relays' HTTP client (one connection pool for the instance), opened at first use."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S)
            self._session = aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


#: The relays' client, under the application (kept here, not in :mod:`keys`: its type is this module's).
RELAYS: web.AppKey[Relays] = web.AppKey("relays")


async def relays_ctx(app: web.Application) -> AsyncIterator[None]:
    """The relays' client for the application's life (``cleanup_ctx``)."""
    relays = app[RELAYS] = Relays()
    yield
    await relays.close()


async def owned_elsewhere(app: web.Application, room: str | None) -> OwnedElsewhere | None:
    """The owner of the room a connection's URL names (``?room=ID``), when it is another live
    instance; None otherwise (no such parameter, a malformed id, nobody's, this instance's)."""
    if room is None:
        return None
    try:
        room_id = normalise_room(room)
    except BadMessageError:
        return None
    return await app[keys.LOBBY].owned_elsewhere(room_id)


async def relay(app: web.Application, conn: Connection, target: OwnedElsewhere, first: str | None) -> bool:
    """Relay ``conn`` to the room's owner until either side closes; ``first``: the message that
    named the room, sent on first. False when the owner cannot be reached (nothing was sent;
    it is marked unreachable): the caller handles the message here."""
    ws = conn.ws
    url = URL(target.url).with_path("/ws").with_query(room=target.room_id)
    secret = app[keys.DAILY].secret
    headers = {RELAYED_FOR: sign(secret, conn.peer, time.time())}
    if conn.session is not None:  # the owner checks the account's session itself (the daily's resume)
        headers["Cookie"] = f"{SESSION_COOKIE}={conn.session}"
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            upstream = await app[RELAYS].session.ws_connect(
                url, headers=headers, autoping=True, compress=0, max_msg_size=0
            )
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        log.warning("room %s: its owner %s at %s cannot be reached (%s)", target.room_id, target.instance, url, exc)
        app[keys.METRICS].relays.labels("unreachable").inc()
        app[keys.LOBBY].log.unreachable(target.instance)
        return False
    app[keys.METRICS].relays.labels("relayed").inc()
    # in a room (on the owner): the sweep's roomless clock never runs out; its pings still run
    conn.roomless_since = math.inf
    try:
        if first is not None:
            await upstream.send_str(first)
        await _pump(ws, upstream)
    except (aiohttp.ClientError, ConnectionError) as exc:
        log.debug("a relay of room %s ended: %s", target.room_id, exc)
    finally:
        await upstream.close()
        if not ws.closed:
            await ws.close(code=CLOSE_MOVED, message=MOVED_REASON.encode())
    return True


async def serve_elsewhere(
    app: web.Application,
    conn: Connection,
    target: OwnedElsewhere,
    first: str,
    *,
    relayed: bool,
    dispatch: Callable[[web.Application, Connection, str], Awaitable[OwnedElsewhere | None]],
) -> bool:
    """A message named a room another instance owns: relay the connection there. True: the
    socket is done here (relayed until it closed, or closed to connect again); False: the message
    was handled here after all (the owner could not be reached and the room was taken over)."""
    if not relayed:
        for _ in range(RELAY_TRIES):
            if await relay(app, conn, target, first):
                return True
            # the owner is marked unreachable: handled again, its lease is waited out and the room
            # taken over here — or another instance was first, and it is relayed there
            again = await dispatch(app, conn, first)
            if again is None:
                return False
            target = again
    # a relayed connection is never relayed again (no chains, no loops): it connects again
    conn.close(CLOSE_MOVED, MOVED_REASON)
    return True


async def _pump(ws: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse) -> None:
    """Frames both ways until one side closes; the close is passed on."""
    tasks = {asyncio.ensure_future(_to_owner(ws, upstream)), asyncio.ensure_future(_to_client(upstream, ws))}
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _close_code(code: int | None) -> int:
    """A close code that may be sent on (RFC 6455 §7.4): else 1000."""
    if code is not None and (1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999):
        return code
    return 1000


async def _to_owner(ws: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse) -> None:
    while True:
        msg = await ws.receive()
        if msg.type is WSMsgType.TEXT:
            await upstream.send_str(msg.data)
        elif msg.type is WSMsgType.BINARY:
            await upstream.send_bytes(msg.data)
        elif msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
            with contextlib.suppress(Exception):
                await upstream.close(code=_close_code(ws.close_code))
            return


async def _to_client(upstream: aiohttp.ClientWebSocketResponse, ws: web.WebSocketResponse) -> None:
    while True:
        msg = await upstream.receive()
        if msg.type is WSMsgType.TEXT:
            await ws.send_str(msg.data)
        elif msg.type is WSMsgType.BINARY:
            await ws.send_bytes(msg.data)
        elif msg.type is WSMsgType.CLOSE:
            await ws.close(code=_close_code(msg.data), message=(msg.extra or "").encode())
            return
        elif msg.type in (WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
            # the owner went without a close (killed, or it dropped a client too far behind)
            await ws.close(code=CLOSE_MOVED, message=MOVED_REASON.encode())
            return
