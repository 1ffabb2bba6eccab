"""The wire protocol (docs/protocol.md) as typed messages, one module that the server and the
terminal client both import: the version, the names of modes, phases and player statuses, the
closed set of client messages (parsed from frames, built by clients), and the server messages
(built by the server, encoded at the edge). No I/O.

Client messages go ``parse_message(frame)`` → one of :data:`ClientMessage` (or
:class:`~halfmoon.errors.BadMessageError` with the wire error code), and ``message.to_json()``
on the way out. Server messages are frozen dataclasses whose ``to_json()`` is the wire object
without ``v`` (and, for room events, without ``type``/``seq``); :func:`encode` and
:func:`encode_event` add those and make the frame.

>>> parse_message('{"type": "move", "v": 1, "positions": ["8", "12"], "id": 3}')
MoveMessage(move=Move(positions=(7, 11)), msg_id=3)
>>> Join("K7WQ2M", "Ada").to_json()
{'type': 'join', 'v': 1, 'room': 'K7WQ2M', 'name': 'Ada'}
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import orjson

from halfmoon.errors import BadMessageError, HalfMoonError
from halfmoon.game import Move
from halfmoon.positions import parse_position

VERSION: Final = 1
ROOM_ALPHABET: Final = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
ROOM_ID_LENGTH: Final = 6
NAME_MAX: Final = 20
NAME_EXTRA: Final = frozenset(" _-.'")
# letters by Unicode, yet drawn as nothing: a name of them would be invisible on a leaderboard
NAME_INVISIBLE: Final = frozenset("\u115f\u1160\u3164\uffa0")
TIME_LIMIT_MIN: Final = 30
TIME_LIMIT_MAX: Final = 7200

Json = dict[str, Any]


class Mode(enum.StrEnum):
    """What a room is for."""

    RACE = "race"
    SOLO = "solo"
    DAILY = "daily"


class Phase(enum.StrEnum):
    """A room's phase: ``lobby`` → ``countdown`` → ``running`` → ``finished``."""

    LOBBY = "lobby"
    COUNTDOWN = "countdown"
    RUNNING = "running"
    FINISHED = "finished"


class PlayerStatus(enum.StrEnum):
    """A player's status; the engine's :class:`~halfmoon.game.Status` names the first three."""

    WAITING = "waiting"
    PLAYING = "playing"
    STALLED = "stalled"
    WON = "won"
    GAVE_UP = "gave_up"
    LEFT = "left"
    TIMED_OUT = "timed_out"


#: A player whose game is on: moves are accepted.
ACTIVE: Final = frozenset({PlayerStatus.PLAYING, PlayerStatus.STALLED})
#: A player whose game is over, and how it ended (the ``outcome`` of results and stored games).
FINISHED: Final = frozenset({PlayerStatus.WON, PlayerStatus.GAVE_UP, PlayerStatus.LEFT, PlayerStatus.TIMED_OUT})


# -- client → server ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Join:
    room: str
    name: str

    def to_json(self) -> Json:
        return {"type": "join", "v": VERSION, "room": self.room, "name": self.name}


@dataclass(frozen=True, slots=True)
class Watch:
    room: str

    def to_json(self) -> Json:
        return {"type": "watch", "v": VERSION, "room": self.room}


@dataclass(frozen=True, slots=True)
class Solo:
    name: str
    code: str | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "solo", "v": VERSION, "name": self.name}
        if self.code is not None:
            out["code"] = self.code
        return out


@dataclass(frozen=True, slots=True)
class Daily:
    name: str

    def to_json(self) -> Json:
        return {"type": "daily", "v": VERSION, "name": self.name}


@dataclass(frozen=True, slots=True)
class Resume:
    room: str
    token: str
    since: int | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "resume", "v": VERSION, "room": self.room, "token": self.token}
        if self.since is not None:
            out["since"] = self.since
        return out


@dataclass(frozen=True, slots=True)
class Start:
    time_limit_s: int | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "start", "v": VERSION}
        if self.time_limit_s is not None:
            out["time_limit_s"] = self.time_limit_s
        return out


@dataclass(frozen=True, slots=True)
class MoveMessage:
    move: Move
    msg_id: int | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "move", "v": VERSION, "positions": self.move.names()}
        if self.msg_id is not None:
            out["id"] = self.msg_id
        return out


@dataclass(frozen=True, slots=True)
class Undo:
    msg_id: int | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "undo", "v": VERSION}
        if self.msg_id is not None:
            out["id"] = self.msg_id
        return out


@dataclass(frozen=True, slots=True)
class GiveUp:
    def to_json(self) -> Json:
        return {"type": "give_up", "v": VERSION}


@dataclass(frozen=True, slots=True)
class Leave:
    def to_json(self) -> Json:
        return {"type": "leave", "v": VERSION}


@dataclass(frozen=True, slots=True)
class Ping:
    def to_json(self) -> Json:
        return {"type": "ping", "v": VERSION}


ClientMessage = Join | Watch | Solo | Daily | Resume | Start | MoveMessage | Undo | GiveUp | Leave | Ping


def _bad(field: str, why: str, msg_id: int | None = None) -> BadMessageError:
    return BadMessageError("bad_message", f"'{field}' {why}", msg_id=msg_id)


def _str(data: Json, field: str, msg_id: int | None) -> str:
    value = data.get(field)
    if value is None:
        raise _bad(field, "is missing", msg_id)
    if not isinstance(value, str):
        raise _bad(field, f"must be a string, not {type(value).__name__}", msg_id)
    return value


def _optional_str(data: Json, field: str, msg_id: int | None) -> str | None:
    return None if data.get(field) is None else _str(data, field, msg_id)


def _int(data: Json, field: str, msg_id: int | None) -> int | None:
    value = data.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(field, f"must be an integer, not {type(value).__name__}", msg_id)
    return value


def normalise_room(room: str) -> str:
    """Canonical room id (upper case). Raises :class:`BadMessageError` ``no_such_room`` if malformed.

    >>> normalise_room(" k7wq2m ")
    'K7WQ2M'
    """
    canonical = room.strip().upper()
    if len(canonical) != ROOM_ID_LENGTH or any(ch not in ROOM_ALPHABET for ch in canonical):
        raise BadMessageError("no_such_room", f"no room {room[:40]!r}: a room id is 6 characters like 'K7WQ2M'")
    return canonical


def check_name(name: str) -> str:
    """A trimmed valid nickname. Raises :class:`BadMessageError` ``bad_name`` saying what is wrong."""
    trimmed = name.strip()
    if not trimmed:
        raise BadMessageError("bad_name", "the name is empty")
    if len(trimmed) > NAME_MAX:
        raise BadMessageError("bad_name", f"the name {trimmed[:40]!r} is longer than {NAME_MAX} characters")
    bad = sorted({ch for ch in trimmed if not (ch.isalnum() or ch in NAME_EXTRA) or ch in NAME_INVISIBLE})
    if bad:
        raise BadMessageError(
            "bad_name", f"the name {trimmed!r} holds {''.join(bad)!r}: use letters, digits, spaces and _-.'"
        )
    return trimmed


def parse_message(frame: str | bytes) -> ClientMessage:
    """Parse and validate one client frame.

    Raises :class:`BadMessageError` (``bad_json``, ``bad_version``, ``unknown_type``,
    ``bad_message``, ``bad_name``, ``illegal_move``) saying what is wrong.
    """
    try:
        data = orjson.loads(frame)
    except orjson.JSONDecodeError:
        raise BadMessageError("bad_json", "the frame is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadMessageError("bad_json", f"a message is a JSON object, not {type(data).__name__}")
    raw_id = data.get("id")
    msg_id = raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else None
    if type(data.get("v")) is not int or data.get("v") != VERSION:  # not True, not 1.0
        raise BadMessageError("bad_version", f"'v' must be {VERSION}, not {data.get('v')!r}", msg_id=msg_id)
    kind = data.get("type")
    if not isinstance(kind, str):
        raise _bad("type", "is missing or not a string", msg_id)
    if raw_id is not None and msg_id is None:
        raise _bad("id", "must be an integer", None)
    parser = _PARSERS.get(kind)
    if parser is None:
        raise BadMessageError("unknown_type", f"no message type {kind[:40]!r}", msg_id=msg_id)
    return parser(data, msg_id)


def _parse_resume(data: Json, msg_id: int | None) -> Resume:
    since = _int(data, "since", msg_id)
    if since is not None and since < 0:
        raise _bad("since", "cannot be negative", msg_id)
    return Resume(_str(data, "room", msg_id), _str(data, "token", msg_id), since)


def _parse_start(data: Json, msg_id: int | None) -> Start:
    limit = _int(data, "time_limit_s", msg_id)
    if limit is not None and not TIME_LIMIT_MIN <= limit <= TIME_LIMIT_MAX:
        raise _bad("time_limit_s", f"must be {TIME_LIMIT_MIN}-{TIME_LIMIT_MAX} seconds, not {limit}", msg_id)
    return Start(limit)


def _parse_move(data: Json, msg_id: int | None) -> MoveMessage:
    positions = data.get("positions")
    if positions is None:
        raise _bad("positions", "is missing", msg_id)
    if (
        not isinstance(positions, list)
        or len(positions) not in (2, 3)
        or not all(isinstance(p, str) for p in positions)
    ):
        raise _bad("positions", "must be a list of 2 or 3 position names such as [\"1\", \"R3\"]", msg_id)
    try:
        move = Move(tuple(parse_position(p) for p in positions))
    except HalfMoonError as exc:
        raise BadMessageError("illegal_move", str(exc), msg_id=msg_id, reason=exc.code) from None
    return MoveMessage(move, msg_id)


_PARSERS: Final[Mapping[str, Callable[[Json, int | None], ClientMessage]]] = {
    "join": lambda d, i: Join(_str(d, "room", i), check_name(_str(d, "name", i))),
    "watch": lambda d, i: Watch(_str(d, "room", i)),
    "solo": lambda d, i: Solo(check_name(_str(d, "name", i)), _optional_str(d, "code", i)),
    "daily": lambda d, i: Daily(check_name(_str(d, "name", i))),
    "resume": _parse_resume,
    "start": _parse_start,
    "move": _parse_move,
    "undo": lambda d, i: Undo(i),
    "give_up": lambda d, i: GiveUp(),
    "leave": lambda d, i: Leave(),
    "ping": lambda d, i: Ping(),
}


# -- server → client ------------------------------------------------------------------------------


@dataclass(slots=True)
class PlayerSummary:
    """A player as everyone in the room sees them (no cards)."""

    id: str
    name: str
    status: PlayerStatus
    score: int
    moves: int
    cards_left: int
    elapsed_ms: int
    connected: bool

    def to_json(self) -> Json:
        return {
            "id": self.id,
            "name": self.name,
            "status": str(self.status),
            "score": self.score,
            "moves": self.moves,
            "cards_left": self.cards_left,
            "elapsed_ms": self.elapsed_ms,
            "connected": self.connected,
        }


@dataclass(slots=True)
class Result:
    """One line of a race's results (``race_over``) or of a leaderboard (REST ``entries``):
    the same fields, ranked by :func:`ranking_key`. ``player`` is the room's player id (None on
    leaderboards, which list stored games)."""

    rank: int
    player: str | None
    name: str
    score: int
    moves: int
    time_ms: int
    outcome: PlayerStatus
    game: str | None

    def to_json(self) -> Json:
        out: Json = {"rank": self.rank}
        if self.player is not None:
            out["player"] = self.player
        out.update(
            name=self.name,
            score=self.score,
            moves=self.moves,
            time_ms=self.time_ms,
            outcome=str(self.outcome),
            game=self.game,
        )
        return out


def commitment_of(code: str, salt: str) -> str:
    """A sealed race's commitment to its deal: the lowercase hex SHA-256 of ``CODE:SALT``.

    Every racer gets it at the start; their ``game_over`` reveals the code and the salt, and
    anyone can check that the deal was the one committed to.

    >>> commitment_of("HM1-N-AAAAAAA", "0" * 32)[:16]
    '70febe9e42e57bb2'
    """
    return hashlib.sha256(f"{code}:{salt}".encode()).hexdigest()


def ranking_key(score: int, time_ms: int, finished_at_ms: int) -> tuple[int, int, int]:
    """The one ranking rule of races and leaderboards: the higher score first, then the shorter
    time, then whoever finished first. (The SQL leaderboards order by the same three columns.)"""
    return (-score, time_ms, finished_at_ms)


@dataclass(slots=True)
class Change:
    """A position's new top and count: in ``changes`` (of the mover's board) and, with the
    player, in ``reveals`` (spectators only). ``card`` is a card name, None for empty, or
    :data:`halfmoon.view.HIDDEN_TOP`."""

    pos: str
    card: str | None
    count: int
    player: str | None = None

    def to_json(self) -> Json:
        if self.player is None:
            return {"pos": self.pos, "card": self.card, "count": self.count}
        return {"player": self.player, "pos": self.pos, "card": self.card, "count": self.count}


@dataclass(slots=True)
class RoomSnapshot:
    """The room as one recipient may see it (``welcome.room``; ``GET /api/rooms/{room}``)."""

    room: str
    mode: Mode
    phase: Phase
    code: str | None
    host: str | None
    now: int
    starts_at: int | None
    started_at: int | None
    time_limit_s: int | None
    players: tuple[PlayerSummary, ...]
    spectators: int
    board: Json | None
    boards: Json | None
    can_undo: bool
    results: tuple[Result, ...] | None
    sealed: bool = False
    commitment: str | None = None
    game_over: Json | None = None  # the viewer's own game_over body, once their game is recorded
    salt: str | None = None  # a sealed race's salt, once its code is out (docs/protocol.md, "Sealed races")

    def to_json(self) -> Json:
        out: Json = {
            "room": self.room,
            "mode": str(self.mode),
            "phase": str(self.phase),
            "code": self.code,
            "sealed": self.sealed,
            "commitment": self.commitment,
            "host": self.host,
            "now": self.now,
            "starts_at": self.starts_at,
            "started_at": self.started_at,
            "time_limit_s": self.time_limit_s,
            "players": [p.to_json() for p in self.players],
            "spectators": self.spectators,
            "board": self.board,
            "boards": self.boards,
            "can_undo": self.can_undo,
            "results": None if self.results is None else [r.to_json() for r in self.results],
        }
        if self.game_over is not None:  # a resume after the end: the end box comes back with the board
            out["game_over"] = self.game_over
        if self.salt is not None:  # a reload after a sealed race can check its code again
            out["salt"] = self.salt
        return out


@dataclass(slots=True)
class Welcome:
    """The answer to join, watch, solo, daily and resume (``room`` None: a catch-up follows).

    ``ranked`` (players only): whether this attempt's result counts for the leaderboards — false
    for a daily attempt by a name that already played that day, so the screen can say so
    before the first move."""

    role: str
    you: str | None
    token: str | None
    room: RoomSnapshot | None
    seq: int
    ranked: bool | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "welcome", "role": self.role, "you": self.you}
        if self.token is not None:
            out["token"] = self.token
        if self.ranked is not None:
            out["ranked"] = self.ranked
        out["room"] = None if self.room is None else self.room.to_json()
        out["seq"] = self.seq
        return out


@dataclass(slots=True)
class Pong:
    now: int

    def to_json(self) -> Json:
        return {"type": "pong", "now": self.now}


@dataclass(slots=True)
class Error:
    """A refusal: nothing changed. ``id`` echoes the message's, ``reason`` refines ``code``."""

    code: str
    message: str
    id: int | None = None
    reason: str | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "error", "code": self.code, "message": self.message}
        if self.id is not None:
            out["id"] = self.id
        if self.reason is not None:
            out["reason"] = self.reason
        return out


# Room events: versioned (``seq``), kept for resume; their ``to_json`` is the body alone.


class RoomEvent:
    """Base of the versioned room events; ``kind`` is the wire ``type``."""

    __slots__ = ()
    kind: ClassVar[str]

    def to_json(self) -> Json:
        raise NotImplementedError


@dataclass(slots=True)
class PlayerJoined(RoomEvent):
    kind: ClassVar[str] = "player_joined"
    player: PlayerSummary
    host: str | None

    def to_json(self) -> Json:
        return {"player": self.player.to_json(), "host": self.host}


@dataclass(slots=True)
class PlayerLeft(RoomEvent):
    kind: ClassVar[str] = "player_left"
    player: PlayerSummary
    host: str | None

    def to_json(self) -> Json:
        return {"player": self.player.to_json(), "host": self.host}


@dataclass(slots=True)
class Progress(RoomEvent):
    """A player's summary changed (connected, dropped, gave up, timed out…); ``host`` is sent in
    the lobby only (``with_host``), where a dropped host hands over."""

    kind: ClassVar[str] = "progress"
    player: PlayerSummary
    host: str | None = None
    with_host: bool = False

    def to_json(self) -> Json:
        if self.with_host:
            return {"player": self.player.to_json(), "host": self.host}
        return {"player": self.player.to_json()}


@dataclass(slots=True)
class Countdown(RoomEvent):
    kind: ClassVar[str] = "countdown"
    starts_at: int
    now: int
    time_limit_s: int

    def to_json(self) -> Json:
        return {"starts_at": self.starts_at, "now": self.now, "time_limit_s": self.time_limit_s}


@dataclass(slots=True)
class Started(RoomEvent):
    """Players get their ``board``; spectators every board in ``boards`` (and no ``board``)."""

    kind: ClassVar[str] = "started"
    code: str | None
    started_at: int
    board: Json | None = None
    boards: Json | None = None
    commitment: str | None = None

    def to_json(self) -> Json:
        out: Json = {"code": self.code, "started_at": self.started_at}
        if self.commitment is not None:
            out["commitment"] = self.commitment
        if self.boards is not None:
            out["boards"] = self.boards
        else:
            out["board"] = self.board
        return out


@dataclass(slots=True)
class Moved(RoomEvent):
    """A move or an undo. Everyone gets the summary; the mover also ``changes``, ``can_undo``
    and the message's ``id``; spectators ``changes`` as they may see them."""

    kind: ClassVar[str] = "moved"
    player: str
    action: str
    positions: tuple[str, ...]
    score: int
    moves: int
    cards_left: int
    status: PlayerStatus
    elapsed_ms: int
    changes: tuple[Change, ...] | None = None
    can_undo: bool | None = None
    id: int | None = None

    def to_json(self) -> Json:
        out = moved_summary(
            self.player,
            self.action,
            list(self.positions),
            self.score,
            self.moves,
            self.cards_left,
            self.status,
            self.elapsed_ms,
        )
        if self.changes is not None:
            out["changes"] = [c.to_json() for c in self.changes]
        if self.can_undo is not None:
            out["can_undo"] = self.can_undo
        if self.id is not None:
            out["id"] = self.id
        return out


def moved_summary(
    player: str,
    action: str,
    positions: list[str],
    score: int,
    moves: int,
    cards_left: int,
    status: PlayerStatus,
    elapsed_ms: int,
) -> Json:
    """The part of ``moved`` that everyone gets (the server's hot path builds it directly)."""
    return {
        "player": player,
        "action": action,
        "positions": positions,
        "score": score,
        "moves": moves,
        "cards_left": cards_left,
        "status": status.value,
        "elapsed_ms": elapsed_ms,
    }


@dataclass(slots=True)
class GameOver(RoomEvent):
    """The end of your own game (you alone get it)."""

    kind: ClassVar[str] = "game_over"
    outcome: PlayerStatus
    score: int
    moves: int
    time_ms: int
    code: str | None
    game: str | None
    ranked: bool
    salt: str | None = None

    def to_json(self) -> Json:
        out: Json = {
            "outcome": str(self.outcome),
            "score": self.score,
            "moves": self.moves,
            "time_ms": self.time_ms,
            "code": self.code,
        }
        if self.salt is not None:
            out["salt"] = self.salt
        out.update(game=self.game, ranked=self.ranked)
        return out


@dataclass(slots=True)
class RaceOver(RoomEvent):
    kind: ClassVar[str] = "race_over"
    results: tuple[Result, ...]
    code: str | None = None
    salt: str | None = None
    sealed: bool = False

    def to_json(self) -> Json:
        out: Json = {"results": [r.to_json() for r in self.results]}
        if self.code is not None:
            out["code"] = self.code
            out["sealed"] = self.sealed
        if self.salt is not None:
            out["salt"] = self.salt
        return out


@dataclass(slots=True)
class Spectators(RoomEvent):
    kind: ClassVar[str] = "spectators"
    count: int

    def to_json(self) -> Json:
        return {"count": self.count}


ServerMessage = Welcome | Pong | Error


def encode(message: ServerMessage) -> bytes:
    """A message outside the room's event stream (welcome, pong, error) as a frame."""
    body = message.to_json()
    body["v"] = VERSION
    return orjson.dumps(body)


def encode_event(event: RoomEvent, seq: int, reveals: Sequence[Change] = ()) -> bytes:
    """A room event as a frame: its body, ``reveals`` (spectators), then ``type``, ``seq``, ``v``."""
    return encode_body(event.kind, event.to_json(), seq, reveals)


def encode_body(kind: str, body: Json, seq: int, reveals: Sequence[Change] = ()) -> bytes:
    """A room event's frame from its body (``kind``: its wire ``type``), which it extends.
    :func:`encode_event` is the typed way in; the server's hot path builds ``moved`` bodies itself."""
    if reveals:
        body["reveals"] = [r.to_json() for r in reveals]
    body["type"] = kind
    body["seq"] = seq
    body["v"] = VERSION
    return orjson.dumps(body)
