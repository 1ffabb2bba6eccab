"""The ``/ws`` endpoint: prepare → check Origin → register → read messages → unregister.

Each frame is size-checked, rate-limited, parsed (:mod:`halfmoon.protocol`) and dispatched:
room commands to the connection's :class:`~halfmoon_server.rooms.room.Room`, new rooms to the
:class:`~halfmoon_server.rooms.lobby.Lobby`. Every failure is caught here, at the boundary: a
:class:`Refusal` or a :class:`BadMessageError` becomes an ``error`` message, anything else is
logged and answered with ``internal`` — never a traceback on the wire.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time

from aiohttp import WSMsgType, web
from yarl import URL

from halfmoon.errors import BadMessageError
from halfmoon.protocol import (
    Accept,
    ClientMessage,
    Daily,
    Error,
    GiveUp,
    Join,
    Leave,
    MoveMessage,
    Phase,
    Ping,
    Pong,
    Queue,
    Rematch,
    Resume,
    Solo,
    Start,
    Undo,
    Unqueue,
    Unqueued,
    Watch,
    encode,
    normalise_room,
    parse_message,
    player_key_hash,
)
from halfmoon_server.core.accounts import SESSION_COOKIE, session_secret
from halfmoon_server.core.limits import RateLimit
from halfmoon_server.errors import Refusal
from halfmoon_server.rooms.lobby import Lobby, OwnedElsewhere, new_token, race_code
from halfmoon_server.rooms.room import Room
from halfmoon_server.settings import Settings
from halfmoon_server.web import keys, logs, relay
from halfmoon_server.web.accounts import check_ranked_name, daily_accounts
from halfmoon_server.web.connection import Connection, client_address
from halfmoon_server.web.cycles import forget_traceback
from halfmoon_server.web.masking import MaskedWebSocket
from halfmoon_server.web.rest import SECURITY_HEADERS

log = logging.getLogger("halfmoon_server.ws")

CLOSE_TOO_BIG = 1009
CLOSE_POLICY = 1008
CLOSE_TRY_LATER = 1013
#: A connection that stayed outside every room for ``join_timeout_s`` (docs/protocol.md): final,
#: the clients do not reconnect on it (there is nothing to come back to).
CLOSE_NO_ROOM = 4002
#: ``/ws?room=`` named no room id (docs/protocol.md, "Routing by room"): final, the clients do
#: not reconnect on it (the same URL would be refused again).
CLOSE_BAD_ROOM = 4003


def origin_allowed(request: web.Request, settings: Settings) -> bool:
    """No Origin (not a browser), a configured extra origin, or the server's own origin: the same
    scheme, host and port as the public URL (``--public-url``), else as this request (its scheme
    from ``X-Forwarded-Proto`` behind a trusted proxy)."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    if origin in settings.allowed_origins:
        return True
    try:
        url = URL(origin)
        if settings.public_url:
            own = URL(settings.public_url)
        else:
            scheme = request.scheme
            if settings.trust_forwarded:
                scheme = request.headers.get("X-Forwarded-Proto", scheme).split(",")[0].strip() or scheme
            own = URL(f"{scheme}://{request.host}")
        # yarl decodes a host lazily: an undecodable one (xn--…) raises here, not a 500
        if not url.host or not own.host:
            return False
        return (url.scheme, url.host, url.port) == (own.scheme, own.host, own.port)
    except (ValueError, UnicodeError):  # a Host header yarl cannot parse ("x:99999", "[::1") is not ours
        return False


async def websocket_handler(request: web.Request) -> web.StreamResponse:
    # The middlewares hand this handler the request straight (rest.security_headers): a refused
    # handshake gets the security headers and an unexpected failure its log line here.
    app = request.app
    settings = app[keys.SETTINGS]
    try:
        if not origin_allowed(request, settings):
            raise web.HTTPForbidden(
                text='{"error": {"code": "forbidden_origin", "message": "cross-origin WebSocket refused"}}',
                content_type="application/json",
            )
        lobby = app.get(keys.LOBBY)
        if lobby is None or lobby.draining:
            # stopping: a new connection (a reconnection too) would be closed again in a moment.
            # Refused before the upgrade, so the client tries again (through a balancer: on
            # another instance) and resumes there; its game is in the room log
            raise web.HTTPServiceUnavailable(
                text='{"error": {"code": "shutting_down", "message": "this server is restarting; connect again"}}',
                content_type="application/json",
                headers={"Retry-After": "1"},
            )
        # no permessage-deflate: frames are small, and rooms write frames straight to the transport
        # no heartbeat of aiohttp's (a callback per message received): look_after_connections pings
        ws = MaskedWebSocket(max_msg_size=settings.max_msg_size * 4, compress=False)
        await ws.prepare(request)
    except web.HTTPException as exc:
        exc.headers.update(SECURITY_HEADERS)
        raise
    except ConnectionResetError:  # the client hung up before the answer (aiohttp's is a subclass)
        log.debug("a WebSocket's client left during its handshake")
        return web.Response(status=400, headers=SECURITY_HEADERS)
    except Exception:
        log.exception("internal error opening a WebSocket")
        return web.Response(status=500, text="internal server error", headers=SECURITY_HEADERS)
    if settings.ws_send_buffer is not None and request.transport is not None:
        sock = request.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, settings.ws_send_buffer)
    loop = asyncio.get_running_loop()
    # a connection relayed by another instance of a cluster: the client's address it vouches for
    vouched = relay.relayed_for(request, app[keys.DAILY].secret, time.time())
    peer = vouched or client_address(request, trust_forwarded=settings.trust_forwarded)
    if not app[keys.ADDRESSES].acquire(peer):
        app[keys.METRICS].refused("too_many_connections")
        await ws.close(code=CLOSE_TRY_LATER, message=b"too many connections from this address")
        return ws
    conn = Connection(
        ws,
        request.transport,
        flusher=app[keys.FLUSHER],
        max_buffer=settings.max_send_buffer,
        rate=RateLimit(settings.rate_burst, settings.rate_per_s, loop.time()),
        peer=peer,
    )
    # (read when a message needs it: the daily's resume; a value that cannot be a session is none)
    conn.session = session_secret(request.cookies.get(SESSION_COOKIE))
    app[keys.CONNECTIONS].add(conn)
    logs.bind(conn)
    conn.roomless_since = conn.heard_at = loop.time()
    limit = settings.max_msg_size
    try:
        url_room, why = room_in_url(request)
        if why is not None:
            app[keys.METRICS].refused("no_such_room")
            conn.send(encode(Error("no_such_room", why)))
            await conn.flush_and_close(CLOSE_BAD_ROOM, "bad room id in the URL")
            return ws
        # a cluster: a room another instance owns is relayed there (web/relay.py)
        target = None if vouched else await relay.owned_elsewhere(app, url_room)
        if target is not None and await relay.relay(app, conn, target, None):
            return ws
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
                app[keys.METRICS].refused("rate_limited")
                conn.send(encode(Error("rate_limited", "too many messages; this one was ignored")))
                continue
            if isinstance(data, bytes):
                conn.send(encode(Error("bad_json", "binary frames are not accepted: send JSON text frames")))
                continue
            elsewhere = await dispatch(app, conn, data, url_room)
            if elsewhere is not None and await relay.serve_elsewhere(
                app, conn, elsewhere, data, relayed=vouched is not None, dispatch=dispatch
            ):
                break
    except ConnectionResetError:  # the peer went while aiohttp answered its ping: a close like any other
        log.debug("connection from %s reset", peer)
    except Exception:  # a bug: logged once, and the connection closes (never a traceback on the wire)
        log.exception("internal error on a WebSocket from %s", peer)
    finally:
        app[keys.QUICK].drop(conn)
        try:
            await leave_room(app, conn, closed=True)
        except Refusal as refusal:  # the log is down: the player stays marked as connected
            log.warning("could not log that a connection to room %s closed: %s", conn.room, refusal.message)
        except Exception:
            log.exception("disconnect failed")
        app[keys.CONNECTIONS].discard(conn)
        app[keys.ADDRESSES].release(peer)
        forget_traceback(ws.exception())  # (aiohttp keeps what its close met: a cycle with this frame)
    return ws


def in_room(app: web.Application, conn: Connection) -> bool:
    """Whether the connection is a member of a room held here: a player's current connection, or
    a spectator (a room that ended and was dropped, or a seat resumed elsewhere, no longer counts)."""
    room = app[keys.LOBBY].rooms.get(conn.room) if conn.room is not None else None
    return room is not None and room.holds(conn.player_id, conn)


#: Connections looked at per slice of a look, between which other work runs.
SWEEP_SLICE = 1000


def look_period(settings: Settings) -> float:
    """How often :func:`look_after_connections` looks at every connection."""
    return min(settings.join_timeout_s / 4, settings.ping_after_s / 2)


async def look_after_connections(app: web.Application, settings: Settings) -> None:
    """One task looks at every connection every :func:`look_period` (not a timer per
    connection, nor a callback per message received):

    - **Roomless**: a connection seen outside every room for ``join_timeout_s`` is closed
      (:data:`CLOSE_NO_ROOM`), so idle sockets cannot pile up. It counts from its opening, or
      from the first look that found it outside every room (it left, or its room ended and was
      dropped): one that never joins goes after ``join_timeout_s`` to 1¼ times that, one that
      left after ``join_timeout_s`` to 1½ times.
    - **Heartbeat**: a client silent for ``ping_after_s`` is pinged; one that still sends
      nothing (no pong) within half that is dropped — a peer gone without a close (a phone
      that lost its network) holds nothing for long. Any read of its bytes counts as heard
      (:attr:`halfmoon_server.web.masking.FrameWatcher.heard`)."""
    loop = asyncio.get_running_loop()
    connections: set[Connection] = app[keys.CONNECTIONS]
    timeout_s, ping_after_s = settings.join_timeout_s, settings.ping_after_s
    while True:
        await asyncio.sleep(look_period(settings))
        now = loop.time()
        for n, conn in enumerate(list(connections)):
            if n and not n % SWEEP_SLICE:
                await asyncio.sleep(0)
            if conn.closed:
                continue
            try:
                _look_at(app, conn, now, timeout_s, ping_after_s)
            except Exception:  # a bug met on one connection must not end every later look
                log.exception("looking after a connection from %s failed", conn.peer)


def _look_at(app: web.Application, conn: Connection, now: float, timeout_s: float, ping_after_s: float) -> None:
    """One connection's look: its heartbeat, then whether it has been roomless too long."""
    watcher = getattr(conn.ws, "watcher", None)
    if watcher is not None:
        if watcher.heard:
            watcher.heard = False
            conn.heard_at, conn.pinged_at = now, None
        elif conn.pinged_at is not None and now - conn.pinged_at >= ping_after_s / 2:
            conn.drop(f"no answer to a ping in {ping_after_s / 2:g} s")
            return
        elif conn.pinged_at is None and now - conn.heard_at >= ping_after_s:
            conn.pinged_at = now
            conn.ping()
    if in_room(app, conn) or app[keys.QUICK].holds(conn):  # (waiting in the quick-race queue counts)
        conn.roomless_since = None
    elif conn.roomless_since is None:
        conn.roomless_since = now
    elif now - conn.roomless_since >= timeout_s:
        log.debug("closing a connection from %s that was in no room for %g s", conn.peer, timeout_s)
        app[keys.METRICS].refused("no_room_joined")
        conn.close(CLOSE_NO_ROOM, f"no room joined within {timeout_s:g} s")


def room_in_url(request: web.Request) -> tuple[str | None, str | None]:
    """The room a connection was opened for, ``/ws?room=ID`` (what a balancer routes on: every
    member of a room reaches the same instance), as ``(room, None)``; ``(None, None)`` when the
    URL names none (an older client, or a new room); ``(None, why)`` when what it names cannot be
    a room id (one ``room`` parameter, :data:`~halfmoon.protocol.ROOM_ID_LENGTH` characters of
    :data:`~halfmoon.protocol.ROOM_ALPHABET`, any case)."""
    named = request.query.getall("room", [])
    if not named or named == [""]:
        return None, None
    if len(named) > 1:
        return None, "the URL names more than one room (?room= once: /ws?room=K7WQ2M)"
    try:
        return normalise_room(named[0]), None
    except BadMessageError:
        return None, f"the room in the URL is not a room id: {named[0][:40]!r} (6 characters like 'K7WQ2M')"


def _check_url_room(message: ClientMessage, url_room: str | None) -> None:
    """A connection opened for a room (``/ws?room=``) enters that room only: one that names another
    was routed for the wrong room. Raises :class:`Refusal` ``room_mismatch`` (nothing changes)."""
    if url_room is None or not isinstance(message, Join | Watch | Resume):
        return
    try:
        named = normalise_room(message.room)
    except BadMessageError:
        return  # malformed: refused as no_such_room by the handler, as without ?room=
    if named != url_room:
        raise Refusal("room_mismatch", f"this connection was opened for room {url_room} (?room=), not {named}")


async def dispatch(
    app: web.Application, conn: Connection, frame: str, url_room: str | None = None
) -> OwnedElsewhere | None:
    """Parse and handle one frame; every error is answered, none escapes. ``url_room``: the room
    the connection's URL names (:func:`room_in_url`), which a message may not contradict. A room
    owned by another instance (a cluster) is returned, not handled: the connection is relayed there."""
    msg_id: int | None = None
    try:
        message = parse_message(frame)
        msg_id = getattr(message, "msg_id", None)
        _check_url_room(message, url_room)
        await handle(app, conn, message)
    except OwnedElsewhere as elsewhere:
        return elsewhere
    except (Refusal, BadMessageError) as exc:
        app[keys.METRICS].refused(exc.code)
        log.debug("refused (%s): %s", exc.code, exc.message)
        conn.send(encode(Error(exc.code, exc.message, exc.msg_id or msg_id, exc.reason)))
    except Exception:
        log.exception("internal error handling a message from %s", conn.peer)
        app[keys.METRICS].refused("internal")
        conn.send(encode(Error("internal", "the server failed to handle this message; nothing changed", msg_id)))
    return None


def _held_room(app: web.Application, conn: Connection) -> Room | None:
    """The room this connection is a member of here, if any; a room gone, or a seat resumed
    elsewhere, is forgotten on the connection."""
    room = app[keys.LOBBY].rooms.get(conn.room) if conn.room is not None else None
    if room is None or not room.holds(conn.player_id, conn):
        conn.room = conn.player_id = None
        return None
    return room


def _room_of(app: web.Application, conn: Connection) -> Room:
    """The room this connection is a member of. Raises :class:`Refusal` ``not_in_room``."""
    room = _held_room(app, conn)
    if room is None:
        raise Refusal("not_in_room", "join, watch or start a game first")
    return room


def _not_in_room(app: web.Application, conn: Connection) -> None:
    """Raises :class:`Refusal` ``already_in_room`` for a connection in a room, ``already_queued``
    for one waiting in the quick-race queue (it sends ``unqueue`` first)."""
    if app[keys.QUICK].holds(conn):
        raise Refusal("already_queued", "this connection waits in the quick-race queue; send unqueue first")
    if _held_room(app, conn) is not None:
        raise Refusal("already_in_room", f"this connection is already in room {conn.room}; send leave first")


async def _find_room(lobby: Lobby, room_id: str) -> Room:
    """Raises :class:`Refusal` ``no_such_room``."""
    room = await lobby.find(normalise_room(room_id))
    if room is None:
        raise Refusal("no_such_room", f"there is no room {room_id!r} (it may have ended)")
    return room


async def leave_room(app: web.Application, conn: Connection, *, closed: bool) -> None:
    """The connection leaves its room: ``leave`` (a player still playing is ``left``), or the
    socket closed (``closed``: a player keeps their seat, the clock runs)."""
    room = app[keys.LOBBY].rooms.get(conn.room) if conn.room is not None else None
    player_id = conn.player_id
    conn.room = conn.player_id = None
    if room is None:
        return
    held = room.detach(player_id, conn)
    if held is None:
        return
    if player_id is None:
        await room.submit({"k": "unwatch", "h": held})
    elif closed:
        await room.submit({"k": "disconnect", "p": player_id, "h": held})
    else:
        await room.submit({"k": "leave", "p": player_id}, conn)


async def handle(app: web.Application, conn: Connection, message: ClientMessage) -> None:
    """Apply one parsed message. Raises :class:`Refusal` for a refused message."""
    lobby: Lobby = app[keys.LOBBY]
    match message:
        case Ping():
            conn.send(encode(Pong(app[keys.SETTINGS].clock.now_ms())))
        case MoveMessage(move=move, msg_id=msg_id):
            await _room_of(app, conn).submit({"k": "move", "p": conn.player_id, "m": move.names()}, msg_id=msg_id)
            app[keys.METRICS].moved("move")
        case Undo(msg_id=msg_id):
            await _room_of(app, conn).submit({"k": "undo", "p": conn.player_id}, msg_id=msg_id)
            app[keys.METRICS].moved("undo")
        case GiveUp():
            await _room_of(app, conn).submit({"k": "give_up", "p": conn.player_id})
        case Leave():
            _room_of(app, conn)
            await leave_room(app, conn, closed=False)
        case Start(time_limit_s=limit, series=series):
            start: dict[str, object] = {"k": "start", "p": conn.player_id, "lim": limit}
            if series is not None:
                start["ser"] = series
            await _room_of(app, conn).submit(start)
        case Rematch(entropy=entropy):
            # the next race's seed is drawn here and logged: every instance replays the same
            room = _room_of(app, conn)
            seed = lobby.seal_seed(room.id, room.race.round + 1)
            await room.submit(_with_entropy({"k": "rematch", "p": conn.player_id, "seed": seed}, entropy))
        case Accept(entropy=entropy):
            await _room_of(app, conn).submit(_with_entropy({"k": "accept", "p": conn.player_id}, entropy))
        case Join(room=room_id, name=name, player_key=key, entropy=entropy, bot=bot):
            _not_in_room(app, conn)
            room = await _find_room(lobby, room_id)
            if room.race.phase is Phase.LOBBY and room.race.rules.lobby:  # (no lobby: a game to watch)
                if room.race.sealed:  # ranked play: an account's name is the account's
                    await check_ranked_name(app, name, _hash_of(key))
                entry: dict[str, object] = _with_entropy({"k": "join", "n": name, "tok": new_token()}, entropy)
                if key is not None:
                    entry["pk"] = player_key_hash(key)  # only the hash is logged and stored
                if bot:
                    entry["bot"] = True  # shown as a bot, never ranked
                try:
                    await room.submit(entry, conn)
                    return  # the room seats the connection (conn.room, conn.player_id) and welcomes it
                except Refusal as refusal:
                    if refusal.code != "race_started":  # it started meanwhile: watch instead
                        raise
            await room.submit({"k": "watch"}, conn)
        case Watch(room=room_id):
            _not_in_room(app, conn)
            await (await _find_room(lobby, room_id)).submit({"k": "watch"}, conn)
        case Resume(room=room_id, token=token, since=since, entropy=entropy):
            _not_in_room(app, conn)
            seated = await lobby.find(normalise_room(room_id))
            player_id = seated.player_with_token(token) if seated is not None else None
            if seated is None or player_id is None:
                raise Refusal("bad_token", "no player of that room holds this token")
            # the token rides along for the welcome only: Room.submit takes it off before logging
            connect: dict[str, object] = {"k": "connect", "p": player_id, "since": since, "tok": token}
            await seated.submit(_with_entropy(connect, entropy), conn)
        case Solo(name=name, code=text, player_key=key, bot=bot):
            _not_in_room(app, conn)
            await lobby.solo(conn, name, race_code(text), conn.peer, player=_hash_of(key), bot=bot)
        case Daily(name=name, player_key=key, bot=bot):
            _not_in_room(app, conn)
            player = _hash_of(key)
            signed_in, linked = await daily_accounts(app, conn.session, player)
            # a device signed in to an account continues the account's attempt of today, if it is
            # still being played (started on another of its devices): no new deal, no second one
            if signed_in is not None and await lobby.resume_daily(conn, signed_in) is not None:
                return
            await check_ranked_name(app, name, player)  # ranked play: an account's name is the account's
            # the day's one ranked attempt is the account's, whichever of its keys asks
            await lobby.daily(conn, name, conn.peer, player=player, bot=bot, account=linked or signed_in)
        case Queue(name=name, player_key=key):
            quick = app[keys.QUICK]
            if not quick.holds(conn):  # (queued already: keep waiting)
                _not_in_room(app, conn)
            await quick.queue(conn, name, player_key_hash(key), conn.peer)
        case Unqueue():
            app[keys.QUICK].unqueue(conn)
            conn.send(encode(Unqueued()))


def _with_entropy(entry: dict[str, object], entropy: str | None) -> dict[str, object]:
    """A log entry with the racer's contribution to a sealed deal (``e``), when they sent one."""
    if entropy is not None:
        entry["e"] = entropy
    return entry


def _hash_of(player_key: str | None) -> str | None:
    return None if player_key is None else player_key_hash(player_key)
