"""The REST API (docs/openapi.yaml): rooms, leaderboards, the daily challenge, finished games and
``/healthz``. Lower-layer errors are translated here: a missing row is a 404, a bad deal code a
400, a database failure a 503 — always as ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import logging
import re
from datetime import date, timedelta
from typing import Any, Final

import orjson
from aiohttp import web

from halfmoon.codes import DealCode
from halfmoon.deal import Deal
from halfmoon.errors import BadMessageError, InvalidCodeError
from halfmoon.protocol import PlayerStatus, Result, commitment_of, normalise_room
from halfmoon_server import keys
from halfmoon_server.clock import day_start_ms
from halfmoon_server.connection import client_address
from halfmoon_server.errors import Refusal, StorageError
from halfmoon_server.lobby import race_code
from halfmoon_server.ports import StoredGame

log = logging.getLogger("halfmoon_server.rest")

MAX_BODY = 4096
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def json_error(status: int, code: str, message: str) -> web.Response:
    return json_response({"error": {"code": code, "message": message}}, status)


class ApiError(Exception):
    """An API refusal: becomes a JSON error response with ``status``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def base_url(request: web.Request) -> str:
    public = request.app[keys.SETTINGS].public_url
    if public:
        return public.rstrip("/")
    return f"{request.scheme}://{request.host}"


#: the stored games a leaderboard reads to find each player's best (and their other games)
MAX_ROWS = 5000


def entries(games: list[StoredGame]) -> dict[str, Any]:
    """Stored games, already ranked, as results (the shape of ``race_over``'s, without ``player``)."""
    return {
        "entries": [
            Result(rank, None, g.nickname, g.score, g.moves, g.time_ms, PlayerStatus(g.outcome), g.id).to_json()
            for rank, g in enumerate(games, 1)
        ]
    }


def best_entries(games: list[StoredGame], limit: int) -> dict[str, Any]:
    """A leaderboard: one entry per player (their name in any letter case) — their best game,
    ranked, with their other games, best first, in ``others`` — at most ``limit`` entries. A
    solo game its player left is not a result. ``games`` come ranked best first."""
    best: dict[str, dict[str, Any]] = {}
    for g in games:
        if g.mode == "solo" and g.outcome == PlayerStatus.LEFT:
            continue
        line = Result(0, None, g.nickname, g.score, g.moves, g.time_ms, PlayerStatus(g.outcome), g.id).to_json()
        held = best.get(g.nickname.casefold())
        if held is not None:
            del line["rank"]
            held["others"].append(line)
        elif len(best) < limit:
            best[g.nickname.casefold()] = {**line, "rank": len(best) + 1, "others": []}
    return {"entries": list(best.values())}


def _limit(request: web.Request) -> int:
    raw = request.query.get("limit", "100")
    try:
        limit = int(raw)
    except ValueError:
        raise ApiError(400, "bad_request", f"limit must be an integer, not {raw[:20]!r}") from None
    if not 1 <= limit <= 1000:
        raise ApiError(400, "bad_request", f"limit must be 1-1000, not {limit}")
    return limit


def _day(text: str) -> date:
    # fromisoformat alone also takes "20261129" and "2026-W48-7": the API names days one way only
    try:
        if not _DATE_RE.fullmatch(text):
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise ApiError(400, "bad_date", f"{text[:20]!r} is not a date like 2026-11-29") from None


async def create_room(request: web.Request) -> web.Response:
    if request.content_type != "application/json":
        # a cross-site form (text/plain, form-encoded) cannot send JSON without a preflight
        raise ApiError(415, "bad_content_type", "send the body as application/json (an empty object is fine: {})")
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, "too_large", f"the body is larger than {MAX_BODY} bytes")
    # read(n) answers what has arrived so far: a body sent in pieces needs reading to its end
    raw = b""
    while len(raw) <= MAX_BODY:
        piece = await request.content.read(MAX_BODY + 1 - len(raw))
        if not piece:
            break
        raw += piece
    if len(raw) > MAX_BODY:
        raise ApiError(413, "too_large", f"the body is larger than {MAX_BODY} bytes")
    text: Any = None
    if raw.strip():
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError(400, "bad_json", "the body is not valid JSON") from None
        if not isinstance(body, dict):
            raise ApiError(400, "bad_json", "the body must be a JSON object such as {\"code\": \"HM1-N-AAAAAAB\"}")
        text = body.get("code")
        if text is not None and not isinstance(text, str):
            raise ApiError(400, "bad_code", "'code' must be a string such as \"HM1-N-AAAAAAB\"")
    try:
        code = race_code(text) if text is not None else None  # none chosen: a sealed race
        client = client_address(request, trust_forwarded=request.app[keys.SETTINGS].trust_forwarded)
        room = await request.app[keys.LOBBY].create_race(code, client)
    except Refusal as exc:
        status = {"bad_code": 400, "rate_limited": 429}.get(exc.code, 503)
        raise ApiError(status, exc.code, exc.message) from None
    answer: dict[str, Any] = {"room": room.id, "url": f"{base_url(request)}/r/{room.id}", "sealed": room.race.sealed}
    if room.race.sealed:
        answer["commitment"] = room.race.commitment  # the code stays with the server until games end
    else:
        answer["code"] = str(code)
    return json_response(answer, 201)


async def get_room(request: web.Request) -> web.Response:
    try:
        room_id = normalise_room(request.match_info["room"])
    except BadMessageError as exc:
        raise ApiError(404, "no_such_room", exc.message) from None
    try:
        room = await request.app[keys.LOBBY].find(room_id)
    except Refusal as exc:
        raise ApiError(503, exc.code, exc.message) from None
    if room is None:
        return await _past_room(request, room_id)
    now = request.app[keys.SETTINGS].clock.now_ms()
    snapshot = room.race.snapshot(None, now, watcher=False).to_json()
    del snapshot["board"], snapshot["boards"], snapshot["can_undo"]
    snapshot["url"] = f"{base_url(request)}/r/{room.id}"
    return json_response(snapshot)


async def _past_room(request: web.Request, room_id: str) -> web.Response:
    """A room no longer in memory (finished and expired, or before a restart): its results,
    rebuilt from the stored games. Raises :class:`ApiError` 404 when none were stored."""
    games = await request.app[keys.STORAGE].games_of_room(room_id, 100)
    if not games:
        raise ApiError(404, "no_such_room", f"there is no room {room_id!r}")
    first = games[0]
    code: str | None = first.code
    if first.daily_date is not None and not request.app[keys.DAILY].revealed(first.daily_date):
        code = None  # the daily code stays hidden until every attempt of the day has ended
    results = entries(games)["entries"]
    return json_response(
        {
            "room": room_id,
            "mode": first.mode,
            "phase": "finished",
            "code": code,
            "host": None,
            "now": request.app[keys.SETTINGS].clock.now_ms(),
            "starts_at": None,
            "started_at": None,
            "time_limit_s": None,
            "players": [],
            "spectators": 0,
            "results": results,
            "url": f"{base_url(request)}/r/{room_id}",
        }
    )


async def leaderboard_for_code(request: web.Request) -> web.Response:
    text = request.match_info["code"]
    try:
        code = DealCode.parse(text)
    except InvalidCodeError as exc:
        raise ApiError(400, "bad_code", str(exc)) from None
    games = await request.app[keys.STORAGE].leaderboard_for_code(str(code), MAX_ROWS)
    return json_response(best_entries(games, _limit(request)))


async def daily_leaderboard(request: web.Request) -> web.Response:
    day = _day(request.match_info["date"])
    today = request.app[keys.DAILY].today()
    if day > today:
        raise ApiError(404, "no_such_day", f"{day} has not come yet (today is {today} UTC)")
    games = await request.app[keys.STORAGE].daily_leaderboard(day, MAX_ROWS)
    return json_response(best_entries(games, _limit(request)))


async def daily(request: web.Request) -> web.Response:
    service = request.app[keys.DAILY]
    today = service.today()
    base = base_url(request)
    players = await request.app[keys.STORAGE].daily_players(today)
    # a day is listed (with its code) once every attempt of it has ended, not at midnight
    past = [d for d in await request.app[keys.STORAGE].daily_days(today, 60) if service.revealed(d.day)]
    return json_response(
        {
            "date": today.isoformat(),
            "ends_at": day_start_ms(today + timedelta(days=1)),
            "players": players,
            "play": f"{base}/daily",
            "leaderboard": f"/api/daily/{today.isoformat()}/leaderboard",
            "past": [
                {
                    "date": d.day.isoformat(),
                    "code": d.code,
                    "players": d.players,
                    "leaderboard": f"/api/daily/{d.day.isoformat()}/leaderboard",
                }
                for d in past
            ],
        }
    )


async def get_game(request: web.Request) -> web.Response:
    """A finished game's record and deal — once nobody can still use them: a daily game once
    every attempt of its day has ended, a race's game once nobody racing that room is still
    playing (the deal is the same for all)."""
    game_id = request.match_info["game"]
    game = await request.app[keys.STORAGE].get_game(game_id) if len(game_id) <= 32 else None
    if game is None:
        raise ApiError(404, "no_such_game", f"there is no game {game_id[:40]!r}")
    daily = request.app[keys.DAILY]
    if game.daily_date is not None and not daily.revealed(game.daily_date):
        raise ApiError(
            403,
            "daily_hidden",
            f"game {game_id!r} is a daily-challenge game; its record opens when every attempt of "
            f"{game.daily_date} has ended",
        )
    try:
        room = await request.app[keys.LOBBY].find(game.room, hold=False)
    except Refusal as exc:
        raise ApiError(503, exc.code, exc.message) from None
    if room is not None and any(racer.playing for racer in room.race.players.values()):
        raise ApiError(
            403,
            "game_hidden",
            f"game {game_id!r} is from room {game.room}, where someone is still playing on the same deal; "
            "its record opens when they have finished",
        )
    # a record holds only positions: a client replaying it needs the cards (docs/protocol.md);
    # who played it and how it ended head the replay screen; a sealed race's salt opens its
    # commitment (halfmoon verify)
    body: dict[str, Any] = {
        **game.record,
        "deal": Deal.from_code(game.record["code"]).to_json(),
        "name": game.nickname,
        "score": game.score,
        "time_ms": game.time_ms,
        "outcome": game.outcome,
        "sealed": game.salt is not None,
    }
    if game.salt is not None:
        body["salt"] = game.salt
        body["commitment"] = commitment_of(game.code, game.salt)
    return json_response(body)


async def healthz(request: web.Request) -> web.Response:
    try:
        await request.app[keys.STORAGE].ping()
    except StorageError as exc:
        log.warning("health check failed: %s", exc)
        return json_response({"status": "unavailable", "error": "the database does not answer"}, 503)
    return json_response({"status": "ok"})


#: What every answer says about itself: pages run only the origin's own scripts and styles, may
#: not be framed, leak no address in Referer, and are never content-sniffed.
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"
    ),
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


@web.middleware
async def security_headers(request: web.Request, handler: Any) -> web.StreamResponse:
    """Add :data:`SECURITY_HEADERS` to every answer (errors included)."""
    try:
        response: web.StreamResponse = await handler(request)
    except web.HTTPException as exc:
        exc.headers.update(SECURITY_HEADERS)
        raise
    if not response.prepared:  # a WebSocket is prepared (upgraded) already
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
    return response


@web.middleware
async def api_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """JSON errors for the API (and plain ones elsewhere); no traceback ever leaves the server."""
    is_api = request.path.startswith("/api/") or request.path == "/healthz"
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except ApiError as exc:
        return json_error(exc.status, exc.code, exc.message)
    except StorageError:
        log.exception("storage failure on %s", request.path)
        return json_error(503, "unavailable", "the database is unavailable; try again")
    except web.HTTPException as exc:
        if not is_api or exc.status < 400:
            raise
        codes = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}
        message = {
            404: f"no such endpoint: {request.path}",
            405: f"{request.method} is not allowed on {request.path}",
            413: "the request body is too large",
        }.get(exc.status, exc.reason)
        return json_error(exc.status, codes.get(exc.status, "http_error"), message)
    except Exception:
        log.exception("internal error on %s %s", request.method, request.path)
        if is_api:
            return json_error(500, "internal", "the server failed; nothing changed")
        return web.Response(status=500, text="internal server error")


def add_routes(app: web.Application) -> None:
    app.router.add_post("/api/rooms", create_room)
    app.router.add_get("/api/rooms/{room}", get_room)
    app.router.add_get("/api/leaderboard/{code}", leaderboard_for_code)
    app.router.add_get("/api/daily", daily)
    app.router.add_get("/api/daily/{date}/leaderboard", daily_leaderboard)
    app.router.add_get("/api/games/{game}", get_game)
    app.router.add_get("/healthz", healthz)
