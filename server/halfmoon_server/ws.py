"""The ``/ws`` endpoint: prepare → check Origin → register → read messages → unregister.

Each frame is size-checked, rate-limited, parsed (:mod:`halfmoon_server.protocol`) and
dispatched to the connection's room. Every failure is caught here, at the boundary: a
:class:`ProtocolError` becomes an ``error`` message, anything else is logged and answered with
``internal`` — never a traceback on the wire.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
from datetime import UTC, datetime

from aiohttp import WSMsgType, web
from yarl import URL

from halfmoon.codes import DealCode, random_code
from halfmoon.errors import InvalidCodeError
from halfmoon_server import keys
from halfmoon_server.connection import Connection, RateLimit, client_address
from halfmoon_server.errors import ProtocolError, StorageError
from halfmoon_server.protocol import (
    ClientMessage,
    Daily,
    GiveUp,
    Join,
    Leave,
    MoveMessage,
    Ping,
    Resume,
    Solo,
    Start,
    Undo,
    Watch,
    encode,
    error_message,
    normalise_room,
    parse_message,
)
from halfmoon_server.rooms import Room, RoomRegistry

log = logging.getLogger("halfmoon_server.ws")

CLOSE_TOO_BIG = 1009
CLOSE_POLICY = 1008
_SYSTEM_RANDOM = secrets.SystemRandom()


def origin_allowed(request: web.Request, allowed: tuple[str, ...]) -> bool:
    """No Origin (not a browser) or the server's own origin (or a configured one)."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    if origin in allowed:
        return True
    try:
        url = URL(origin)
    except ValueError:
        return False
    if not url.host:
        return False
    try:
        own = URL(f"{url.scheme}://{request.host}")
    except ValueError:  # a Host header yarl cannot parse ("x:99999", "[::1") is not our origin
        return False
    return bool(own.host) and own.host == url.host and own.port == url.port


async def websocket_handler(request: web.Request) -> web.StreamResponse:
    app = request.app
    settings = app[keys.SETTINGS]
    registry = app[keys.REGISTRY]
    if not origin_allowed(request, settings.allowed_origins):
        raise web.HTTPForbidden(
            text='{"error": {"code": "forbidden_origin", "message": "cross-origin WebSocket refused"}}',
            content_type="application/json",
        )
    # no permessage-deflate: frames are small, and rooms write frames straight to the transport
    ws = web.WebSocketResponse(max_msg_size=settings.max_msg_size * 4, heartbeat=30.0, compress=False)
    await ws.prepare(request)
    if settings.ws_send_buffer is not None and request.transport is not None:
        sock = request.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, settings.ws_send_buffer)
    loop = asyncio.get_running_loop()
    peer = client_address(request, trust_forwarded=settings.trust_forwarded)
    conn = Connection(
        ws,
        request.transport,
        max_buffer=settings.max_send_buffer,
        rate=RateLimit(settings.rate_burst, settings.rate_per_s, loop.time()),
        peer=peer,
    )
    registry.connections.add(conn)
    limit = settings.max_msg_size
    try:
        async for msg in ws:
            if msg.type is WSMsgType.ERROR:
                break
            if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            data: str | bytes = msg.data
            size = len(data) if isinstance(data, bytes) or len(data) * 4 <= limit else len(data.encode("utf-8"))
            if size > limit:
                await conn.flush_and_close(CLOSE_TOO_BIG, "frame too big")
                break
            # binary frames count against the rate limit too, or a client could flood with them
            if not conn.rate.allow(loop.time()):
                if conn.rate.refused_in_row >= settings.rate_max_refused:
                    await conn.flush_and_close(CLOSE_POLICY, "rate limit")
                    break
                conn.send(error_message("rate_limited", "too many messages; this one was ignored"))
                continue
            if isinstance(data, bytes):
                conn.send(error_message("bad_json", "binary frames are not accepted: send JSON text frames"))
                continue
            await dispatch(app, conn, data)
    finally:
        room = conn.room
        if room is not None:
            try:
                room.disconnect(conn)
            except Exception:
                log.exception("disconnect failed in room %s", room.id)
        registry.connections.discard(conn)
    return ws


async def dispatch(app: web.Application, conn: Connection, frame: str) -> None:
    """Parse and handle one frame; every error is answered, none escapes."""
    msg_id: int | None = None
    try:
        message = parse_message(frame)
        msg_id = getattr(message, "msg_id", None)
        await handle(app, conn, message)
    except ProtocolError as exc:
        conn.send(error_message(exc.code, exc.message, msg_id=exc.msg_id or msg_id, reason=exc.reason))
    except Exception:
        log.exception("internal error handling a message from %s", conn.peer)
        conn.send(error_message("internal", "the server failed to handle this message; nothing changed", msg_id=msg_id))


def _room_of(conn: Connection) -> Room:
    if conn.room is None:
        raise ProtocolError("not_in_room", "join, watch or start a game first")
    return conn.room


def _not_in_room(conn: Connection) -> None:
    if conn.room is not None:
        raise ProtocolError("already_in_room", f"this connection is already in room {conn.room.id}; send leave first")


def _parse_code(text: str) -> DealCode:
    try:
        code = DealCode.parse(text)
    except InvalidCodeError as exc:
        raise ProtocolError("bad_code", str(exc)) from None
    if code.kind != "N":
        raise ProtocolError("bad_code", f"{code} is a daily-challenge deal; play it with 'daily' on its day")
    return code


def _spectate(room: Room, conn: Connection) -> None:
    if room.mode == "daily":
        raise ProtocolError("private_room", f"room {room.id} is a daily-challenge attempt and cannot be watched")
    room.add_spectator(conn)
    room.welcome(conn, None)


async def handle(app: web.Application, conn: Connection, message: ClientMessage) -> None:
    """Apply one parsed message. Raises :class:`ProtocolError` for a refused message."""
    registry: RoomRegistry = app[keys.REGISTRY]
    match message:
        case Ping():
            conn.send(encode({"type": "pong", "now": registry.clock.now_ms()}))
        case MoveMessage(move=move, msg_id=msg_id):
            _room_of(conn).move(conn, move, msg_id)
        case Undo(msg_id=msg_id):
            _room_of(conn).undo(conn, msg_id)
        case GiveUp():
            _room_of(conn).give_up(conn)
        case Leave():
            _room_of(conn).leave(conn)
        case Start(time_limit_s=limit):
            _room_of(conn).start(conn, limit)
        case Join(room=room_id, name=name):
            _not_in_room(conn)
            room = registry.get(normalise_room(room_id))
            if room.phase == "lobby" and room.mode == "race":
                player = room.add_player(conn, name)
                room.welcome(conn, player)
            else:
                _spectate(room, conn)
        case Watch(room=room_id):
            _not_in_room(conn)
            _spectate(registry.get(normalise_room(room_id)), conn)
        case Resume(room=room_id, token=token, since=since):
            _not_in_room(conn)
            entry = registry.tokens.get(token)
            if entry is None or entry[0].id != normalise_room(room_id) or entry[0].id not in registry.rooms:
                raise ProtocolError("bad_token", "no player of that room holds this token")
            room, player_id = entry
            room.resume(conn, room.players[player_id], since)
        case Solo(name=name, code=text):
            _not_in_room(conn)
            code = _parse_code(text) if text is not None else random_code(_SYSTEM_RANDOM)
            _start_single(registry, conn, registry.create("solo", code, client=conn.peer), name, ranked=True)
        case Daily(name=name):
            _not_in_room(conn)
            registry.ensure_capacity()  # before the ranked attempt is spent
            registry.check_creator(conn.peer)
            daily = registry.daily
            day = daily.today()
            try:
                code = DealCode.parse(await daily.code_for(day))
                ranked = await registry.storage.claim_daily_attempt(day, name.casefold(), datetime.now(UTC))
            except StorageError:
                log.exception("the daily challenge is unavailable")
                raise ProtocolError("internal", "the daily challenge is unavailable right now") from None
            if conn.dropped or conn.ws.closed:
                return
            _not_in_room(conn)
            room = registry.create("daily", code, client=None, daily_day=day)  # charged above
            _start_single(registry, conn, room, name, ranked=ranked)


def _start_single(registry: RoomRegistry, conn: Connection, room: Room, name: str, *, ranked: bool) -> None:
    """A room of one, started at once; its ``welcome`` already shows the running game."""
    player = room.add_player(conn, name)
    player.ranked = ranked
    player.conn = None  # the player learns everything from the welcome snapshot below
    room.begin()
    player.conn = conn
    room.welcome(conn, player)
