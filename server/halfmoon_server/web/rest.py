"""The REST API (docs/openapi.yaml): rooms, leaderboards, the daily challenge, finished games,
``/healthz`` (liveness) and ``/readyz`` (readiness). Lower-layer errors are translated here: a
missing row is a 404, a bad deal code a 400, a database failure a 503 — always as
``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from typing import Any, Final, Protocol, runtime_checkable

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from halfmoon.codes import DealCode, seal_commitment
from halfmoon.deal import Deal
from halfmoon.errors import BadMessageError, HalfMoonError, InvalidCodeError
from halfmoon.protocol import (
    PlayerStatus,
    Result,
    check_player_key,
    commitment_of,
    normalise_room,
    player_key_hash,
)
from halfmoon.record import UNDO, GameRecord
from halfmoon_server.adapters.storage import MEMORY_URL
from halfmoon_server.clock import day_start_ms
from halfmoon_server.core import visibility
from halfmoon_server.core.accounts import SESSION_COOKIE, Session, secret_hash, session_secret
from halfmoon_server.core.audience import right_sized
from halfmoon_server.core.modes import rules_for
from halfmoon_server.core.rating import PROVISIONAL_GAMES, RatedGame, Skill
from halfmoon_server.core.visibility import Hidden, StoredFacts
from halfmoon_server.errors import LogUnavailable, Refusal, StorageError
from halfmoon_server.ports import PlayerGame, StoredGame
from halfmoon_server.rooms.lobby import race_code
from halfmoon_server.rooms.room import Room
from halfmoon_server.web import keys
from halfmoon_server.web.connection import WEBSOCKET_PATH, client_address
from halfmoon_server.web.logs import Throttle

log = logging.getLogger("halfmoon_server.rest")

MAX_BODY = 4096
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INTEGER_RE = re.compile(r"-?[0-9]+")
#: A game id as the server makes them (url-safe base64: room.game_id); anything else is no game,
#: answered without a query (a NUL byte reaching PostgreSQL was a 503).
_GAME_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")
#: a player key's hash as the API names an identity: 64 lower-case hex digits
_PLAYER_RE = re.compile(r"[0-9a-f]{64}")


def json_response(data: Any, status: int = 200) -> web.Response:
    # right-sized: aiohttp keeps a keep-alive connection's last response until its next request
    # is answered — for the whole life of a WebSocket when the connection is then upgraded —
    # and orjson's bytes hold a 4 KiB buffer
    return web.Response(body=right_sized(orjson.dumps(data)), status=status, content_type="application/json")


def json_error(status: int, code: str, message: str) -> web.Response:
    return json_response({"error": {"code": code, "message": message}}, status)


class ClosingResponse(web.Response):
    """A response after which its connection is closed at once: what is left of the request (a
    body that stalled, or that cannot be decoded) is never read. Without it aiohttp, answering
    with ``Connection: close``, would still linger up to 10 s reading that rest first (and log a
    traceback when the rest fails to decode)."""

    def __init__(self, request: web.BaseRequest, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.connection = request.protocol

    async def write_eof(self, data: bytes = b"") -> None:
        await super().write_eof(data)
        self.connection.force_close()  # the transport sends what it holds, then closes


class ApiError(Exception):
    """An API refusal: becomes a JSON error response with ``status``; ``close``: the connection
    is closed after it (what is left of the request cannot be trusted to arrive)."""

    def __init__(self, status: int, code: str, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.close = close


async def read_body(request: web.Request, limit: int = MAX_BODY) -> bytes:
    """The request's whole body, at most ``limit`` bytes, received within the ``body_timeout_s``
    setting. Every handler that reads a body reads it here, so none waits on a slow client for
    ever, and none turns a client that went away into a 500.

    Raises :class:`ApiError`: 413 ``too_large`` (aiohttp then reads and drops the rest for up to
    10 s, so a client still sending gets the answer rather than a reset); and, each closing the
    connection after its answer, 408 ``timeout`` (the body came too slowly — or never completes:
    a broken chunk arriving after the headers leaves the body waiting, aiohttp says nothing), 400
    ``bad_body`` (a body aiohttp could not decode, such as a bad ``Content-Encoding``), 400
    ``incomplete_body`` (the client closed the connection before sending all of it: nobody reads
    that answer, and it is logged as one info line, never a traceback). With
    ``handler_cancellation`` on, the client going away cancels the handler instead
    (:class:`asyncio.CancelledError` goes through: nothing was created)."""
    if request.content_length is not None and request.content_length > limit:
        raise ApiError(413, "too_large", f"the body is larger than {limit} bytes")
    timeout_s = request.app[keys.SETTINGS].body_timeout_s
    # read(n) answers what has arrived so far: a body sent in pieces needs reading to its end
    raw = b""
    try:
        async with asyncio.timeout(timeout_s):
            while len(raw) <= limit:
                piece = await request.content.read(limit + 1 - len(raw))
                if not piece:
                    break
                raw += piece
    except TimeoutError:
        log.info("%s %s: the body did not arrive within %g s (408)", request.method, request.path, timeout_s)
        raise ApiError(408, "timeout", f"the request body did not arrive within {timeout_s:g} s", close=True) from None
    except ConnectionError:  # aiohttp's "Connection lost" (ConnectionResetError), on the peer's close
        log.info("%s %s: the client closed the connection before sending its body", request.method, request.path)
        raise ApiError(400, "incomplete_body", "the connection closed before the body was sent", close=True) from None
    except (web.RequestPayloadError, HttpProcessingError) as exc:
        log.info("%s %s: the body could not be read: %s", request.method, request.path, exc)
        message = "the request body could not be read (a broken chunk or encoding)"
        raise ApiError(400, "bad_body", message, close=True) from None  # aiohttp would read on, and fail again
    if len(raw) > limit:
        raise ApiError(413, "too_large", f"the body is larger than {limit} bytes")
    return raw


def base_url(request: web.Request) -> str:
    """The base of the links the API returns: ``--public-url``, else the request's own origin —
    behind a trusted proxy (``--trust-forwarded``) with the scheme it says (``X-Forwarded-Proto``:
    nginx ends TLS, so the instance itself sees http)."""
    settings = request.app[keys.SETTINGS]
    if settings.public_url:
        return settings.public_url.rstrip("/")
    scheme = request.scheme
    if settings.trust_forwarded:
        forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
        if forwarded in ("http", "https"):
            scheme = forwarded
    return f"{scheme}://{request.host}"


#: the stored games a leaderboard reads to find each player's best (and their other games)
MAX_ROWS = 5000


def _result(rank: int, g: StoredGame) -> Result:
    """A stored game as a result line: with whether it is ranked, and why not."""
    outcome = PlayerStatus(g.outcome)
    return Result(rank, None, g.nickname, g.score, g.moves, g.time_ms, outcome, g.id, None, g.ranked, g.unranked_reason)


def entries(games: list[StoredGame]) -> dict[str, Any]:
    """Stored games, already ranked, as results (the shape of ``race_over``'s, without ``player``)."""
    return {"entries": [_result(rank, g).to_json() for rank, g in enumerate(games, 1)]}


def best_entries(games: list[StoredGame], limit: int) -> dict[str, Any]:
    """A leaderboard: one entry per player (their name in any letter case) — their best game,
    ranked, with their other games, best first, in ``others`` — at most ``limit`` entries. A
    game its player left for a new one (a solo game: its mode's rules' ``new_game``) is not a
    result. ``games`` come ranked best first."""
    best: dict[str, dict[str, Any]] = {}
    for g in games:
        if g.outcome == PlayerStatus.LEFT and rules_for(g.mode).new_game:
            continue
        line = _result(0, g).to_json()
        held = best.get(g.nickname.casefold())
        if held is not None:
            del line["rank"]
            held["others"].append(line)
        elif len(best) < limit:
            best[g.nickname.casefold()] = {**line, "rank": len(best) + 1, "others": []}
    return {"entries": list(best.values())}


def _limit(request: web.Request, default: int = 100, most: int = 1000) -> int:
    """The query's ``limit``: 1 to ``most``, ``default`` without one. Raises :class:`ApiError` 400."""
    raw = request.query.get("limit", str(default))
    # int() alone also takes " 10", "1_0" and "１０" (and raises past 4,300 digits): the API
    # writes an integer one way only
    if not _INTEGER_RE.fullmatch(raw):
        raise ApiError(400, "bad_request", f"limit must be an integer, not {raw[:20]!r}")
    limit = int(raw) if len(raw.lstrip("-0")) <= 4 else 0  # more digits are out of range anyway
    if not 1 <= limit <= most:
        raise ApiError(400, "bad_request", f"limit must be 1-{most}, not {raw[:20]}")
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
    raw = await read_body(request)
    text: Any = None
    listed: bool = False
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
        listed = body.get("listed", False)
        if not isinstance(listed, bool):
            raise ApiError(400, "bad_request", f"'listed' must be true or false, not {orjson.dumps(listed)[:20]!r}")
    try:
        code = race_code(text) if text is not None else None  # none chosen: a sealed race
        client = client_address(request, trust_forwarded=request.app[keys.SETTINGS].trust_forwarded)
        room = await request.app[keys.LOBBY].create_race(code, client, listed=listed)
    except Refusal as exc:
        status = {"bad_code": 400, "rate_limited": 429}.get(exc.code, 503)
        raise ApiError(status, exc.code, exc.message) from None
    answer: dict[str, Any] = {
        "room": room.id,
        "url": f"{base_url(request)}/r/{room.id}",
        "sealed": room.race.sealed,
        "listed": room.listed,
    }
    shown = room.race.code_for(None, request.app[keys.SETTINGS].clock.now_ms())
    if shown is None:
        answer["commitment"] = room.race.commitment  # the code stays with the server until games end
    else:
        answer["code"] = shown
    return json_response(answer, 201)


async def get_room(request: web.Request) -> web.Response:
    try:
        room_id = normalise_room(request.match_info["room"])
    except BadMessageError as exc:
        raise ApiError(404, "no_such_room", exc.message) from None
    try:
        # a room not in memory (asleep, or held by another instance) is read from a copy that
        # takes no place here: reads of finished rooms cannot crowd out new games (--max-rooms)
        room = await request.app[keys.LOBBY].find(room_id, hold=False)
    except Refusal as exc:
        raise ApiError(503, exc.code, exc.message) from None
    if room is None:
        return await _past_room(request, room_id)
    now = request.app[keys.SETTINGS].clock.now_ms()
    snapshot = room.race.snapshot(None, now, watcher=False).to_json()
    del snapshot["board"], snapshot["boards"], snapshot["can_undo"]
    snapshot["url"] = f"{base_url(request)}/r/{room.id}"
    snapshot["listed"] = room.listed
    return json_response(snapshot)


async def _past_room(request: web.Request, room_id: str) -> web.Response:
    """A room no longer in memory (finished and expired, or before a restart): its results,
    rebuilt from the stored games. Raises :class:`ApiError` 404 when none were stored."""
    games = await request.app[keys.STORAGE].games_of_room(room_id, 100)
    if not games:
        raise ApiError(404, "no_such_room", f"there is no room {room_id!r}")
    first = games[0]
    now = request.app[keys.SETTINGS].clock.now_ms()
    # nobody plays in a room no longer in memory; a daily's code stays hidden until its day opens
    shown = visibility.stored_code_visible(stored_facts(request, first), now, running_since=None)
    code = first.code if shown else None
    results = entries(games)["entries"]
    opened: dict[str, Any] = {}  # what opens the deal's commitment, with its code (as GET /api/games)
    if first.seal is not None and shown:
        seed = first.seal["seed"]
        opened = {"sealed": True, "commitment": seal_commitment(seed), "seed": seed}
        opened["contributions"] = list(first.seal["contributions"])
    elif first.salt is not None and shown:  # a daily's salt, or a previous release's sealed race's
        opened = {"sealed": first.sealed, "commitment": commitment_of(first.code, first.salt), "salt": first.salt}
    return json_response(
        {
            **opened,
            "room": room_id,
            "mode": first.mode,
            "phase": "finished",
            "code": code,
            "host": None,
            "now": now,
            "starts_at": None,
            "started_at": None,
            "time_limit_s": None,
            "players": [],
            "spectators": 0,
            "results": results,
            "url": f"{base_url(request)}/r/{room_id}",
        }
    )


#: The live list's longest answer (``GET /api/live?limit=``), and its default.
LIVE_LIMIT_MAX = 50
LIVE_LIMIT = 12


def live_order(summary: dict[str, Any]) -> tuple[int, int]:
    """The live list's order: the most watched first, then the newest (started, or about to)."""
    return (-int(summary["spectators"]), -int(summary["started_at"] or summary["starts_at"] or 0))


async def live_races(request: web.Request) -> web.Response:
    """The public races in play (:class:`~halfmoon_server.ports.LiveList`, every instance's in a
    cluster; read at most once a second here: :meth:`~halfmoon_server.rooms.lobby.Lobby.live_races`),
    the most watched first, then the newest; ``featured`` names the first. Each says only what a
    stranger may see (:data:`halfmoon_server.core.visibility.LIVE_FIELDS`), with how long it has
    run and where to watch it. A private race is never here."""
    limit = _limit(request, LIVE_LIMIT, LIVE_LIMIT_MAX)
    now = request.app[keys.SETTINGS].clock.now_ms()
    try:
        listed = await request.app[keys.LOBBY].live_races(now)
    except LogUnavailable:
        raise ApiError(503, "unavailable", "the live list cannot be read right now; try again") from None
    base = base_url(request)
    races = []
    for summary in sorted(listed, key=live_order)[:limit]:
        shown = {field: summary.get(field) for field in sorted(visibility.LIVE_FIELDS)}
        started = shown["started_at"]
        shown["elapsed_ms"] = max(0, now - started) if isinstance(started, int) else 0
        shown["watch_url"] = f"{base}/watch/{shown['room']}"
        races.append(shown)
    return json_response({"now": now, "featured": races[0]["room"] if races else None, "races": races})


async def leaderboard_for_code(request: web.Request) -> web.Response:
    text = request.match_info["code"]
    try:
        code = DealCode.parse(text)
    except InvalidCodeError as exc:
        raise ApiError(400, "bad_code", str(exc)) from None
    games = await request.app[keys.STORAGE].leaderboard_for_code(str(code), MAX_ROWS)
    # a casual board: whoever played this code could know it before the start (docs/security.md)
    return json_response({"ranked": False, **best_entries(games, _limit(request))})


async def daily_leaderboard(request: web.Request) -> web.Response:
    day = _day(request.match_info["date"])
    today = request.app[keys.DAILY].today()
    if day > today:
        raise ApiError(404, "no_such_day", f"{day} has not come yet (today is {today} UTC)")
    games = await request.app[keys.STORAGE].daily_leaderboard(day, MAX_ROWS)  # ranked games only
    return json_response({"ranked": True, **best_entries(games, _limit(request))})


async def daily(request: web.Request) -> web.Response:
    service = request.app[keys.DAILY]
    today = service.today()
    base = base_url(request)
    players = await service.players(today)
    # a day is listed (with its code) once every attempt of it has ended, not at midnight
    past = await service.past_days(today, 60)
    # each day's deal is committed to a day ahead: today's and tomorrow's commitments are public,
    # a past day's code and salt open its commitment (docs/protocol.md, "The daily's commitment")
    tomorrow = today + timedelta(days=1)
    return json_response(
        {
            "date": today.isoformat(),
            "ends_at": day_start_ms(tomorrow),
            "players": players,
            "commitment": await service.commitment_for(today),
            "next": {"date": tomorrow.isoformat(), "commitment": await service.commitment_for(tomorrow)},
            "play": f"{base}/daily",
            "leaderboard": f"/api/daily/{today.isoformat()}/leaderboard",
            "past": [
                {
                    "date": d.day.isoformat(),
                    "code": d.code,
                    "salt": service.salt_for(d.day),
                    "commitment": commitment_of(d.code, service.salt_for(d.day)),
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
    playing (the deal is the same for all; a game of an earlier race of the room, before a
    rematch, is on a deal already out)."""
    game_id = request.match_info["game"]
    game = await request.app[keys.STORAGE].get_game(game_id) if _GAME_ID_RE.fullmatch(game_id) else None
    if game is None:
        raise ApiError(404, "no_such_game", f"there is no game {game_id[:40]!r}")
    facts = stored_facts(request, game)
    now = request.app[keys.SETTINGS].clock.now_ms()
    hidden = visibility.record_hidden(facts, now, running_since=None)  # what is known without its room
    if hidden is None:
        try:
            room = await request.app[keys.LOBBY].find(game.room, hold=False)
        except Refusal as exc:
            raise ApiError(503, exc.code, exc.message) from None
        hidden = visibility.record_hidden(facts, now, running_since=_running_since(room))
    if hidden is Hidden.DAILY_HIDDEN:
        raise ApiError(
            403,
            "daily_hidden",
            f"game {game_id!r} is a daily-challenge game; its record opens when every attempt of "
            f"{game.daily_date} has ended",
        )
    if hidden is not None:
        raise ApiError(
            403,
            "game_hidden",
            f"game {game_id!r} is from room {game.room}, where someone is still playing on the same deal; "
            "its record opens when they have finished",
        )
    # a record holds only positions: a client replaying it needs the cards (docs/protocol.md);
    # who played it and how it ended head the replay screen; what opens the commitment its deal
    # was dealt under (halfmoon verify), which comes with the record: a sealed race's seed and
    # contributions (a previous release's salt), a daily's salt
    body: dict[str, Any] = {
        **game.record,
        "deal": Deal.from_code(game.record["code"]).to_json(),
        "name": game.nickname,
        "score": game.score,
        "time_ms": game.time_ms,
        "outcome": game.outcome,
        "sealed": facts.sealed,
        "ranked": game.ranked,
        "unranked_reason": None if game.ranked else game.unranked_reason,
    }
    if game.seal is not None:
        body["seed"] = game.seal["seed"]
        body["contributions"] = list(game.seal["contributions"])
        body["commitment"] = seal_commitment(game.seal["seed"])
    elif game.salt is not None:
        body["salt"] = game.salt
        body["commitment"] = commitment_of(game.code, game.salt)
    return json_response(body)


#: The most of a player's games ``GET /api/me/history`` reads (newest first); its counts, best
#: times and streak are over these.
HISTORY_ROWS = 2000


async def daily_ghost(request: web.Request) -> web.Response:
    """Today's daily game ``game`` as a ghost for a reader who has finished their own attempt of
    the day (issue 17): only its progress over time — each step's time and the cards it removed —
    and its result; no position, card or code (its record stays hidden: :func:`get_game`). The
    reader is known by the player key (``Authorization: Bearer``); a past day's game is raced
    through ``GET /api/games/{game}`` once that day is public."""
    player = _player_of(request)
    day = _day(request.match_info["date"])
    today = request.app[keys.DAILY].today()
    hidden = visibility.ghost_day_hidden(day, today)
    if hidden is Hidden.NO_SUCH_DAY:
        raise ApiError(404, "no_such_day", f"{day} has not come yet (today is {today} UTC)")
    if hidden is not None:
        raise ApiError(
            403,
            "not_today",
            f"{day} is not today ({today} UTC): a past day's games are raced through /api/games/{{id}},"
            " once every attempt of that day has ended",
        )
    storage = request.app[keys.STORAGE]
    mine = await storage.games_of_player(player, HISTORY_ROWS)
    if visibility.ghost_hidden(reader_finished_today=any(g.daily_date == today for g in mine)) is not None:
        raise ApiError(
            403, "finish_your_attempt_first", "a daily ghost opens once your own attempt of today has ended"
        )
    game_id = request.match_info["game"]
    game = await storage.get_game(game_id) if _GAME_ID_RE.fullmatch(game_id) else None
    if game is None or game.daily_date != today:
        raise ApiError(404, "no_such_game", f"there is no game {game_id[:40]!r} of today's daily challenge")
    try:  # read as the engine reads records: a stored row that is not one is no ghost, never a 500
        record = GameRecord.from_json(game.record)
    except HalfMoonError:
        log.warning("daily ghost: the stored record of game %s cannot be read", game.id)
        record = None
    if record is None or record.times is None:
        raise ApiError(409, "no_times", f"game {game_id!r} has no time for each step: it cannot be raced")
    moves = [step if step == UNDO else step.names() for step in record.moves]
    steps = visibility.ghost_steps(moves, record.times)  # progress only: no position, card or code
    return json_response(
        {
            "game": game.id,
            "date": today.isoformat(),
            "name": game.nickname,
            "score": game.score,
            "time_ms": game.time_ms,
            "outcome": game.outcome,
            "steps": steps,
        }
    )


def _player_of(request: web.Request) -> str:
    """The hash of the player key in ``Authorization: Bearer <key>`` (a key never travels in a
    URL: URLs land in logs). Raises :class:`ApiError` 401 ``no_player_key`` / ``bad_player_key``."""
    header = request.headers.get("Authorization")
    if header is None:
        raise ApiError(401, "no_player_key", "send your player key as 'Authorization: Bearer <key>'")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "bad_player_key", "the Authorization header must be 'Bearer <key>'")
    try:
        return player_key_hash(check_player_key(key.strip()))
    except BadMessageError:
        raise ApiError(401, "bad_player_key", "a player key is 22-64 URL-safe base64 characters") from None


def stored_facts(request: web.Request, game: StoredGame | PlayerGame) -> StoredFacts:
    """A stored game as the visibility policy needs to know it (:mod:`halfmoon_server.core.visibility`)."""
    daily = game.daily_date
    return StoredFacts(
        game.sealed,
        round(game.finished_at.timestamp() * 1000),
        None if daily is None else request.app[keys.DAILY].reveal_at(daily),
    )


def _running_since(room: Room | None) -> int | None:
    """When the race someone in ``room`` still plays started (:meth:`Race.running_since`); None:
    nobody plays there, or the room is gone."""
    return None if room is None else room.race.running_since()


class _Entitlement:
    """Whether the reader may see a stored game's deal code now
    (:func:`halfmoon_server.core.visibility.stored_code_visible`), looking each room up once, and
    only when the policy needs to know whether it still plays (:func:`~halfmoon_server.core.visibility.room_needed`)."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.now_ms = request.app[keys.SETTINGS].clock.now_ms()
        self._running_since: dict[str, int | None] = {}

    async def code_shown(self, game: PlayerGame) -> bool:
        facts = stored_facts(self.request, game)
        running_since = None
        if visibility.room_needed(facts, self.now_ms):
            if game.room not in self._running_since:
                try:
                    room = await self.request.app[keys.LOBBY].find(game.room, hold=False)
                except Refusal as exc:
                    raise ApiError(503, exc.code, exc.message) from None
                self._running_since[game.room] = _running_since(room)
            running_since = self._running_since[game.room]
        return visibility.stored_code_visible(facts, self.now_ms, running_since)


def _streak(days: set[date], today: date) -> int:
    """Consecutive UTC days with a finished daily attempt, ending today (or yesterday: today's
    may be still to play)."""
    day = today if today in days else today - timedelta(days=1)
    streak = 0
    while day in days:
        streak += 1
        day -= timedelta(days=1)
    return streak


class _Tally:
    """A history's counts and best times over one kind of game (ranked, or casual)."""

    def __init__(self) -> None:
        self.games = self.wins = self.clean_wins = 0
        self.best: dict[str, dict[str, Any]] = {}

    def add(self, line: dict[str, Any]) -> None:
        won = line["outcome"] == PlayerStatus.WON
        self.games += 1
        self.wins += won
        self.clean_wins += line["clean"]
        code = line["code"]
        if won and code is not None:
            held = self.best.get(code)
            if held is None or line["time_ms"] <= held["time_ms"]:  # a tie: the earlier game
                self.best[code] = line

    def to_json(self) -> dict[str, Any]:
        best = sorted(self.best.values(), key=lambda line: (line["time_ms"], line["finished_at"]))
        return {"games": self.games, "wins": self.wins, "clean_wins": self.clean_wins, "best": best}


async def current_session(request: web.Request) -> Session | None:
    """The signed-in device's account session from its cookie (None: no cookie, or one that names
    no unexpired session; docs/protocol.md, "Accounts")."""
    secret = session_secret(request.cookies.get(SESSION_COOKIE))
    accounts = request.app.get(keys.ACCOUNTS)
    if secret is None or accounts is None:
        return None
    return await accounts.session(secret_hash(secret), request.app[keys.SETTINGS].clock.now_ms())


async def _history_players(request: web.Request) -> list[str]:
    """Whose games a history is: a signed-in device's account's every linked player key (and the
    key this device sends, if any), else the player key sent (:func:`_player_of`)."""
    session = await current_session(request)
    if session is None:
        return [_player_of(request)]
    players = await request.app[keys.ACCOUNTS].players_of(session.account)
    if "Authorization" in request.headers:
        mine = _player_of(request)
        if mine not in players:
            players.append(mine)
    return players


async def my_history(request: web.Request) -> web.Response:
    """The games kept under the reader's player key — or, on a device signed in to an account,
    under every player key linked to the account: counts, the daily streak and the best time
    of each deal won — over ranked games only, casual ones counted apart in ``casual`` — and
    the newest ``limit`` games of both kinds; no deal code the reader is not yet entitled to
    (:class:`_Entitlement`), no record, nothing of anyone else."""
    players = await _history_players(request)
    # whose rating the page shows: this device's key's — a key linked to an account reads the
    # account's one rating (core/rating.py: an account is one identity)
    player = _player_of(request) if "Authorization" in request.headers else players[0]
    limit = _limit(request)
    games = await request.app[keys.STORAGE].games_of_players(players, HISTORY_ROWS)
    entitled = _Entitlement(request)
    lines: list[dict[str, Any]] = []
    ranked, casual = _Tally(), _Tally()
    for g in games:  # newest first
        undos = g.undos
        clean = g.outcome == PlayerStatus.WON and undos == 0
        code = g.code if await entitled.code_shown(g) else None
        line = {
            "game": g.id,
            "mode": g.mode,
            "room": g.room,
            "code": code,
            "daily_date": None if g.daily_date is None else g.daily_date.isoformat(),
            "name": g.nickname,
            "score": g.score,
            "moves": g.moves,
            "time_ms": g.time_ms,
            "outcome": g.outcome,
            "undos": undos,
            "clean": clean,
            "finished_at": int(g.finished_at.timestamp() * 1000),
            "ranked": g.ranked,
            "unranked_reason": None if g.ranked else g.unranked_reason,
        }
        if len(lines) < limit:
            lines.append(line)
        (ranked if g.ranked else casual).add(line)
    today = request.app[keys.DAILY].today()
    ranked_days = {g.daily_date for g in games if g.daily_date is not None and g.ranked}
    return json_response(
        {
            "player": player,  # the key's hash: the reader's rating is /api/players/{player}/rating
            "name": games[0].nickname if games else None,
            "games": len(games),
            "ranked_games": ranked.games,
            "wins": ranked.wins,
            "clean_wins": ranked.clean_wins,
            "best": ranked.to_json()["best"],
            "streak": _streak(ranked_days, today),
            "daily_today": any(g.daily_date == today for g in games),
            "casual": casual.to_json(),
            "recent": lines,
        }
    )


def _skill_json(skill: Skill) -> dict[str, Any]:
    return {"rating": skill.shown, "provisional": skill.provisional, "games": skill.games}


def _change_json(change: RatedGame) -> dict[str, Any]:
    return {
        "game": change.game_id,
        "race": change.race,
        "place": change.place,
        "before": change.before.shown,
        "after": change.after.shown,
        "change": change.change,
        "provisional": change.after.provisional,
        "rated_at": int(change.rated_at.timestamp() * 1000),
    }


async def ratings_board(request: web.Request) -> web.Response:
    """The ratings leaderboard, best first: the ratings past their provisional games (with
    ``provisional=true``, the provisional ones too, each flagged)."""
    limit = _limit(request)
    raw = request.query.get("provisional", "false")
    if raw not in ("true", "false"):
        raise ApiError(400, "bad_request", f"provisional must be true or false, not {raw[:20]!r}")
    rated = await request.app[keys.STORAGE].rating_board(limit, provisional=raw == "true")
    return json_response(
        {
            "provisional_games": PROVISIONAL_GAMES,
            "entries": [
                {"rank": rank, "player": r.player, "name": r.nickname, **_skill_json(r.skill)}
                for rank, r in enumerate(rated, 1)
            ],
        }
    )


async def player_rating(request: web.Request) -> web.Response:
    """An identity's rating (``rating`` null: never rated) and its newest ``limit`` changes,
    newest first. An identity is its player key's hash, which names no one: what it reveals is
    what the ratings leaderboard shows. A key linked to an account answers the account's rating
    (kept under the key linked to it first: :mod:`halfmoon_server.core.rating`)."""
    player = request.match_info["player"]
    if not _PLAYER_RE.fullmatch(player):
        raise ApiError(400, "bad_player", "a player is named by its key's hash: 64 lower-case hex digits")
    rated, history = await request.app[keys.STORAGE].player_rating(player, _limit(request))
    skill = rated.skill if rated is not None else None
    return json_response(
        {
            "player": player,
            "name": None if rated is None else rated.nickname,
            "rating": None if skill is None else skill.shown,
            "provisional": True if skill is None else skill.provisional,
            "games": 0 if skill is None else skill.games,
            "provisional_games": PROVISIONAL_GAMES,
            "history": [_change_json(h) for h in history],
        }
    )


async def game_rating(request: web.Request) -> web.Response:
    """What a stored game did to its player's rating: ``rated`` (with the change), ``due`` (the
    ratings job has not come to it: a seat of its race may still be playing; ask again), or
    ``not_rated``. A race's end screen polls it: ratings are updated off the path that stores a
    game, about a second after the race's last game is stored."""
    game_id = request.match_info["game"]
    storage = request.app[keys.STORAGE]
    if not _GAME_ID_RE.fullmatch(game_id) or await storage.get_game(game_id) is None:
        raise ApiError(404, "no_such_game", f"there is no game {game_id[:40]!r}")
    status, change = await storage.game_rating(game_id)
    return json_response({"game": game_id, "status": status, **({} if change is None else _change_json(change))})


#: The lines of an application made without ``create_app`` (a test's): rate-limited all the same.
_THROTTLE = Throttle(log)


def throttle_of(app: web.Application) -> Throttle:
    """The application's log lines rate-limited by cause (``app[keys.THROTTLE]``)."""
    return app.get(keys.THROTTLE) or _THROTTLE


#: How long ``/healthz``, and each check of ``/readyz`` (run side by side), may take: both answer
#: within 2 s whatever is down.
HEALTH_BUDGET_S = 1.5
#: Checks past their budget, being cancelled in the background (nobody waits for them).
_UNWINDING: set[asyncio.Future[Any]] = set()


@runtime_checkable
class SelfChecking(Protocol):
    """A part ``/readyz`` can ask about (the solver's worker pool in ``app[keys.EXECUTOR]``):
    ``check()`` answers None when it is healthy, else what is wrong, in a few words."""

    async def check(self) -> str | None: ...


def _abandon(task: asyncio.Future[Any]) -> None:
    """Cancel a check nobody waits for any more, and keep it until it has unwound."""
    task.cancel()
    _UNWINDING.add(task)
    task.add_done_callback(_unwound)


def _unwound(task: asyncio.Future[Any]) -> None:
    _UNWINDING.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: it failed after nobody waited for it any more


async def _probe(part: str, check: Callable[[], Awaitable[str | None]], throttle: Throttle) -> str:
    """``"ok"``, or ``"down: <why>"`` — within :data:`HEALTH_BUDGET_S`: a check past it is
    cancelled and left to unwind in the background, never awaited. Failures are logged with their
    detail, at most one line per part every ``throttle.every_s`` (a poll every second during an
    outage would write a line each); the answer names none (no host, port or SQL leaves the server)."""
    task = asyncio.ensure_future(check())
    try:
        done, _ = await asyncio.wait({task}, timeout=HEALTH_BUDGET_S)
    except asyncio.CancelledError:  # the client went away (with handler_cancellation on)
        _abandon(task)
        raise
    if not done:
        _abandon(task)
        throttle.log(
            logging.WARNING, f"readiness:{part}", "readiness: the %s did not answer within %g s", part, HEALTH_BUDGET_S
        )
        return f"down: did not answer in {HEALTH_BUDGET_S:g} s"
    try:
        reason = task.result()
    except Exception as exc:
        throttle.log(logging.WARNING, f"readiness:{part}", "readiness: the %s failed: %s", part, exc)
        return "down: it failed (the server's log says why)"
    if reason is None:
        throttle.forget(f"readiness:{part}")
    return "ok" if reason is None else f"down: {reason}"


async def healthz(request: web.Request) -> web.Response:
    """Liveness: the process serves requests. It asks nothing of the database, Redis or the
    solver (``/readyz`` does): an outage of theirs is not a reason to restart the process, and
    play goes on through one."""
    return json_response({"status": "ok"})


#: ``/readyz``'s word for a server that is not stopping, and for one that is.
NOT_DRAINING = "no"
DRAINING = "down: the server is stopping (new games and reconnections go to another instance)"


async def readyz(request: web.Request) -> web.Response:
    """Readiness: whether this instance can take new games. The database, the room log (Redis in
    a cluster, else the local journal, which must be able to write) and the solver's worker pool,
    checked side by side, each within :data:`HEALTH_BUDGET_S`, and whether the server is draining
    (a stop signal came: it refuses new games and reconnections); 503 names each part that is down."""
    app = request.app
    settings = app[keys.SETTINGS]
    probes: dict[str, Callable[[], Awaitable[str | None]]] = {"database": app[keys.STORAGE].ping}
    lobby = app.get(keys.LOBBY)
    if lobby is not None and settings.redis_url:
        probes["redis"] = lobby.log.ping
    elif lobby is not None and settings.database_url() != MEMORY_URL:
        probes["journal"] = lobby.log.ping
    checks: dict[str, str] = {}
    executor = app.get(keys.EXECUTOR)
    if executor is None:
        checks["solver"] = "off"  # solver_workers=0: daily deals are chosen without proof
    elif isinstance(executor, SelfChecking) and inspect.iscoroutinefunction(executor.check):
        probes["solver"] = executor.check
    else:
        checks["solver"] = "unchecked"  # a plain executor cannot say whether its workers live
    throttle = throttle_of(app)
    answers = await asyncio.gather(*(_probe(part, check, throttle) for part, check in probes.items()))
    checks.update(zip(probes, answers, strict=True))
    checks["draining"] = DRAINING if lobby is not None and lobby.draining else NOT_DRAINING
    ready = not any(state.startswith("down") for state in checks.values())
    return json_response({"status": "ready" if ready else "unavailable", "checks": checks}, 200 if ready else 503)


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
def security_headers(request: web.Request, handler: Any) -> Awaitable[web.StreamResponse]:
    """Add :data:`SECURITY_HEADERS` to every answer (errors included). The WebSocket's handler
    is handed the request straight (it adds them to a refused handshake itself): a coroutine
    here would live as long as the socket, resumed on every message it sends. Any other method
    on ``/ws`` is the router's 405, and gets them like every other answer."""
    if request.path == WEBSOCKET_PATH and request.method == "GET":
        response: Awaitable[web.StreamResponse] = handler(request)
        return response
    return _with_security_headers(request, handler)


async def _with_security_headers(request: web.Request, handler: Any) -> web.StreamResponse:
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
def api_errors(request: web.Request, handler: Any) -> Awaitable[web.StreamResponse]:
    """JSON errors for the API (and plain ones elsewhere); no traceback ever leaves the server.
    The WebSocket's handler answers its own errors (and is handed the request straight, as in
    :func:`security_headers`)."""
    if request.path == WEBSOCKET_PATH and request.method == "GET":
        response: Awaitable[web.StreamResponse] = handler(request)
        return response
    return _with_api_errors(request, handler)


async def _with_api_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    is_api = request.path.startswith("/api/") or request.path in ("/healthz", "/readyz")
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except ApiError as exc:
        if exc.close:
            error = {"error": {"code": exc.code, "message": exc.message}}
            closing = ClosingResponse(
                request, body=orjson.dumps(error), status=exc.status, content_type="application/json"
            )
            closing.force_close()  # says Connection: close
            return closing
        refused = json_error(exc.status, exc.code, exc.message)
        if exc.status == 401:
            refused.headers["WWW-Authenticate"] = "Bearer"  # RFC 7235: a 401 names its scheme
        return refused
    except StorageError as exc:  # an outage is expected, and answered: one line each, no traceback
        throttle_of(request.app).log(logging.WARNING, "storage", "storage failure on %s: %s", request.path, exc)
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
    app.router.add_get("/api/live", live_races)
    app.router.add_get("/api/leaderboard/{code}", leaderboard_for_code)
    app.router.add_get("/api/daily", daily)
    app.router.add_get("/api/daily/{date}/leaderboard", daily_leaderboard)
    app.router.add_get("/api/daily/{date}/ghosts/{game}", daily_ghost)
    app.router.add_get("/api/games/{game}", get_game)
    app.router.add_get("/api/me/history", my_history)
    app.router.add_get("/api/games/{game}/rating", game_rating)
    app.router.add_get("/api/ratings", ratings_board)
    app.router.add_get("/api/players/{player}/rating", player_rating)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
