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
from typing import Any, Final

import orjson

from halfmoon.codes import check_contribution
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
#: A player key (docs/protocol.md, "Player keys"): a random secret of at least 128 bits that a
#: client makes once and keeps, written in URL-safe base64 (``secrets.token_urlsafe(32)``: 43).
PLAYER_KEY_MIN: Final = 22
PLAYER_KEY_MAX: Final = 64
PLAYER_KEY_ALPHABET: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
#: A won game is always 48 moves (40 pairs and 8 triples): a race's splits are taken every 12.
SPLIT_EVERY: Final = 12
SPLIT_MOVES: Final = tuple(range(SPLIT_EVERY, 49, SPLIT_EVERY))  # 12, 24, 36, 48
#: A series (``start`` with ``series``): this many races, 2 to 10, with a points table.
SERIES_MIN: Final = 2
SERIES_MAX: Final = 10

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


class Unranked(enum.StrEnum):
    """Why a result is not ranked (docs/security.md, "Ranked and casual results"): the
    ``unranked_reason`` of results, ``game_over``, stored games and REST answers."""

    #: the deal's code was known before the start (an open race, a solo game, a typed or shared code)
    CASUAL = "casual"
    #: a daily attempt after the name's first of the day (or past the address's ranked attempts)
    DAILY_RETRY = "daily_retry"
    #: the player declared itself a bot (``join`` with ``bot``)
    BOT = "bot"
    #: finished faster than a person can tap the game's moves (the server's tap floor)
    TOO_FAST = "too_fast"


#: A player whose game is on: moves are accepted.
ACTIVE: Final = frozenset({PlayerStatus.PLAYING, PlayerStatus.STALLED})
#: A player whose game is over, and how it ended (the ``outcome`` of results and stored games).
FINISHED: Final = frozenset({PlayerStatus.WON, PlayerStatus.GAVE_UP, PlayerStatus.LEFT, PlayerStatus.TIMED_OUT})


# -- client → server ------------------------------------------------------------------------------


def _with_key(out: Json, player_key: str | None) -> Json:
    if player_key is not None:
        out["player_key"] = player_key
    return out


def _with_entropy(out: Json, entropy: str | None) -> Json:
    if entropy is not None:
        out["entropy"] = entropy
    return out


@dataclass(frozen=True, slots=True)
class Join:
    room: str
    name: str
    #: the player's key (optional): their games are kept under its hash, for their history
    player_key: str | None = None
    #: the racer's contribution to a sealed race's deal (optional; docs/protocol.md, "Sealed races")
    entropy: str | None = None
    #: the player is a program (``halfmoon bot``): shown as a bot, its result never ranked
    bot: bool = False

    def to_json(self) -> Json:
        out = _with_key({"type": "join", "v": VERSION, "room": self.room, "name": self.name}, self.player_key)
        out = _with_entropy(out, self.entropy)
        if self.bot:
            out["bot"] = True
        return out


@dataclass(frozen=True, slots=True)
class Watch:
    room: str

    def to_json(self) -> Json:
        return {"type": "watch", "v": VERSION, "room": self.room}


def _with_bot(out: Json, bot: bool) -> Json:
    if bot:
        out["bot"] = True
    return out


@dataclass(frozen=True, slots=True)
class Solo:
    name: str
    code: str | None = None
    player_key: str | None = None
    #: the player is a program (as ``join``'s): shown as a bot, its result never ranked
    bot: bool = False

    def to_json(self) -> Json:
        out: Json = {"type": "solo", "v": VERSION, "name": self.name}
        if self.code is not None:
            out["code"] = self.code
        return _with_bot(_with_key(out, self.player_key), self.bot)


@dataclass(frozen=True, slots=True)
class Daily:
    name: str
    player_key: str | None = None
    #: the player is a program (as ``join``'s): shown as a bot, its attempt never ranked
    bot: bool = False

    def to_json(self) -> Json:
        return _with_bot(_with_key({"type": "daily", "v": VERSION, "name": self.name}, self.player_key), self.bot)


@dataclass(frozen=True, slots=True)
class Resume:
    room: str
    token: str
    since: int | None = None
    #: in a sealed race's lobby: a new contribution in place of the racer's last one
    entropy: str | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "resume", "v": VERSION, "room": self.room, "token": self.token}
        if self.since is not None:
            out["since"] = self.since
        return _with_entropy(out, self.entropy)


@dataclass(frozen=True, slots=True)
class Start:
    time_limit_s: int | None = None
    #: the host makes this race the first of a series of that many (none under way)
    series: int | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "start", "v": VERSION}
        if self.time_limit_s is not None:
            out["time_limit_s"] = self.time_limit_s
        if self.series is not None:
            out["series"] = self.series
        return out


@dataclass(frozen=True, slots=True)
class Rematch:
    """After a race: propose a new race on a new deal in the same room (you are in, and host it);
    ``entropy``: your contribution to its sealed deal."""

    entropy: str | None = None

    def to_json(self) -> Json:
        return _with_entropy({"type": "rematch", "v": VERSION}, self.entropy)


@dataclass(frozen=True, slots=True)
class Accept:
    """Take your place in the rematch proposed in your room (``entropy``: your contribution)."""

    entropy: str | None = None

    def to_json(self) -> Json:
        return _with_entropy({"type": "accept", "v": VERSION}, self.entropy)


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


@dataclass(frozen=True, slots=True)
class Queue:
    """Join the quick-race queue (docs/protocol.md, "Quick races"); sent again while queued: keep
    waiting (after an ``offer``). The player key is required: it is the identity the queue holds
    once and the race's seat is held for."""

    name: str
    player_key: str

    def to_json(self) -> Json:
        return {"type": "queue", "v": VERSION, "name": self.name, "player_key": self.player_key}


@dataclass(frozen=True, slots=True)
class Unqueue:
    """Leave the quick-race queue."""

    def to_json(self) -> Json:
        return {"type": "unqueue", "v": VERSION}


ClientMessage = (
    Join
    | Watch
    | Solo
    | Daily
    | Resume
    | Start
    | MoveMessage
    | Undo
    | GiveUp
    | Leave
    | Ping
    | Rematch
    | Accept
    | Queue
    | Unqueue
)


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


def check_player_key(key: str) -> str:
    """A well-formed player key (:data:`PLAYER_KEY_MIN`-:data:`PLAYER_KEY_MAX` URL-safe base64
    characters). Raises :class:`BadMessageError` ``bad_message`` (never quoting the key: it is a
    secret).

    >>> check_player_key("x" * 22)
    'xxxxxxxxxxxxxxxxxxxxxx'
    """
    if not PLAYER_KEY_MIN <= len(key) <= PLAYER_KEY_MAX or not PLAYER_KEY_ALPHABET.issuperset(key):
        raise _bad(
            "player_key", f"must be {PLAYER_KEY_MIN}-{PLAYER_KEY_MAX} URL-safe base64 characters (A-Z a-z 0-9 - _)"
        )
    return key


def _flag(data: Json, field: str, msg_id: int | None) -> bool:
    """An optional boolean field (absent or null: false)."""
    value = data.get(field)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _bad(field, f"must be true or false, not {type(value).__name__}", msg_id)
    return value


def _player_key(data: Json, msg_id: int | None) -> str | None:
    key = _optional_str(data, "player_key", msg_id)
    if key is None:
        return None
    try:
        return check_player_key(key)
    except BadMessageError as exc:
        raise BadMessageError(exc.code, exc.message, msg_id=msg_id) from None


def player_key_hash(key: str) -> str:
    """What the server keeps of a player key: its SHA-256, in hex (64 characters). The key is a
    random secret of at least 128 bits, so the hash needs no salt to resist guessing, and a leaked
    database does not let anyone act as the player (nor read their history)."""
    return hashlib.sha256(key.encode()).hexdigest()


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


def _entropy(data: Json, msg_id: int | None) -> str | None:
    """A racer's contribution to a sealed deal (docs/protocol.md, "Sealed races"): 32-64
    lowercase hex characters, or None when the message has none."""
    text = _optional_str(data, "entropy", msg_id)
    if text is None:
        return None
    try:
        return check_contribution(text)
    except ValueError:  # (HalfMoonError is one)
        raise _bad("entropy", "must be 32-64 lowercase hex characters (16 random bytes or more)", msg_id) from None


def _parse_resume(data: Json, msg_id: int | None) -> Resume:
    since = _int(data, "since", msg_id)
    if since is not None and since < 0:
        raise _bad("since", "cannot be negative", msg_id)
    return Resume(_str(data, "room", msg_id), _str(data, "token", msg_id), since, _entropy(data, msg_id))


def _parse_start(data: Json, msg_id: int | None) -> Start:
    limit = _int(data, "time_limit_s", msg_id)
    if limit is not None and not TIME_LIMIT_MIN <= limit <= TIME_LIMIT_MAX:
        raise _bad("time_limit_s", f"must be {TIME_LIMIT_MIN}-{TIME_LIMIT_MAX} seconds, not {limit}", msg_id)
    series = _int(data, "series", msg_id)
    if series is not None and not SERIES_MIN <= series <= SERIES_MAX:
        raise _bad("series", f"must be {SERIES_MIN}-{SERIES_MAX} races, not {series}", msg_id)
    return Start(limit, series)


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
    "join": lambda d, i: Join(
        _str(d, "room", i),
        check_name(_str(d, "name", i)),
        _player_key(d, i),
        _entropy(d, i),
        bot=_flag(d, "bot", i),
    ),
    "watch": lambda d, i: Watch(_str(d, "room", i)),
    "solo": lambda d, i: Solo(
        check_name(_str(d, "name", i)), _optional_str(d, "code", i), _player_key(d, i), bot=_flag(d, "bot", i)
    ),
    "daily": lambda d, i: Daily(check_name(_str(d, "name", i)), _player_key(d, i), bot=_flag(d, "bot", i)),
    "resume": _parse_resume,
    "start": _parse_start,
    "move": _parse_move,
    "undo": lambda d, i: Undo(i),
    "give_up": lambda d, i: GiveUp(),
    "leave": lambda d, i: Leave(),
    "ping": lambda d, i: Ping(),
    "rematch": lambda d, i: Rematch(_entropy(d, i)),
    "accept": lambda d, i: Accept(_entropy(d, i)),
    "queue": lambda d, i: Queue(check_name(_str(d, "name", i)), _required_key(d, i)),
    "unqueue": lambda d, i: Unqueue(),
}


def _required_key(data: Json, msg_id: int | None) -> str:
    key = _player_key(data, msg_id)
    if key is None:
        raise _bad("player_key", "is missing: the queue holds each player once, by their key", msg_id)
    return key


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
    #: a player that declared itself a bot (sent only when true)
    bot: bool = False

    def to_json(self) -> Json:
        out: Json = {
            "id": self.id,
            "name": self.name,
            "status": str(self.status),
            "score": self.score,
            "moves": self.moves,
            "cards_left": self.cards_left,
            "elapsed_ms": self.elapsed_ms,
            "connected": self.connected,
        }
        if self.bot:
            out["bot"] = True
        return out


@dataclass(slots=True)
class Result:
    """One line of a race's results (``race_over``) or of a leaderboard (REST ``entries``):
    the same fields, ranked by :func:`ranking_key`. ``player`` is the room's player id (None on
    leaderboards, which list stored games). ``splits`` (a room's results only, not leaderboards):
    the player's time when their game first held 12, 24, 36 and 48 moves, None where it never did.
    ``ranked``: whether the result counts for ranked boards; when not, ``unranked_reason`` says
    why (an :class:`Unranked` value)."""

    rank: int
    player: str | None
    name: str
    score: int
    moves: int
    time_ms: int
    outcome: PlayerStatus
    game: str | None
    splits: tuple[int | None, ...] | None = None
    ranked: bool = True
    unranked_reason: str | None = None

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
        if self.splits is not None:
            out["splits"] = list(self.splits)
        _with_ranking(out, self.ranked, self.unranked_reason)
        return out


def _with_ranking(out: Json, ranked: bool, reason: str | None) -> Json:
    """``ranked``, and ``unranked_reason``: why not (null when ranked)."""
    out["ranked"] = ranked
    out["unranked_reason"] = None if ranked else reason
    return out


def commitment_of(code: str, salt: str) -> str:
    """A commitment to a deal code: the lowercase hex SHA-256 of ``CODE:SALT``. The daily
    challenge's (published a day ahead, opened by the salt its reveal gives) and a sealed race's of
    the previous release (a new sealed race commits to its seed instead:
    :func:`halfmoon.codes.seal_commitment`).

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
    #: a daily's salt (or a sealed race's of the previous release), once its code is out
    #: (docs/protocol.md, "Sealed races")
    salt: str | None = None
    #: the room's race number (a rematch makes the next), its series, and the players seated in
    #: the room who have not taken their place in this race (yet): sent from the second race on,
    #: or in a series, so a one-race room's snapshot is unchanged
    round: int = 1
    series: Json | None = None
    seated: tuple[PlayerSummary, ...] = ()
    #: a sealed race's contributions, from its start (everyone can check theirs is in), and its
    #: seed once its code is out (docs/protocol.md, "Sealed races")
    contributions: tuple[str, ...] | None = None
    seed: str | None = None
    #: a quick race's first race (the queue matched its players): it starts by itself, never by
    #: its host, and its seats are held for the matched players (sent only when true)
    quick: bool = False

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
        if self.contributions is not None:
            out["contributions"] = list(self.contributions)
        if self.seed is not None:
            out["seed"] = self.seed
        if self.round > 1 or self.series is not None:
            out.update(round=self.round, series=self.series, seated=[p.to_json() for p in self.seated])
        if self.quick:
            out["quick"] = True
        return out


@dataclass(slots=True)
class Welcome:
    """The answer to join, watch, solo, daily and resume (``room`` None: a catch-up follows).

    ``ranked`` and ``unranked_reason`` (players only): whether this player's result will be ranked,
    and why not (:class:`Unranked`: a casual game on a code known in advance, a daily retry, a
    bot), so the screen can say so before the first move (``too_fast`` can only come at the end)."""

    role: str
    you: str | None
    token: str | None
    room: RoomSnapshot | None
    seq: int
    ranked: bool | None = None
    unranked_reason: str | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "welcome", "role": self.role, "you": self.you}
        if self.token is not None:
            out["token"] = self.token
        if self.ranked is not None:
            _with_ranking(out, self.ranked, self.unranked_reason)
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

    @property
    def kind(self) -> str:
        """The wire ``type`` (a property, not a class variable: mypyc counts a dataclass's
        ``ClassVar`` as a field, bench/compiled_tree.py)."""
        raise NotImplementedError

    def to_json(self) -> Json:
        raise NotImplementedError


@dataclass(slots=True)
class PlayerJoined(RoomEvent):
    player: PlayerSummary
    host: str | None

    @property
    def kind(self) -> str:
        return "player_joined"

    def to_json(self) -> Json:
        return {"player": self.player.to_json(), "host": self.host}


@dataclass(slots=True)
class PlayerLeft(RoomEvent):
    player: PlayerSummary
    host: str | None

    @property
    def kind(self) -> str:
        return "player_left"

    def to_json(self) -> Json:
        return {"player": self.player.to_json(), "host": self.host}


@dataclass(slots=True)
class Progress(RoomEvent):
    """A player's summary changed (connected, dropped, gave up, timed out…); ``host`` is sent in
    the lobby only (``with_host``), where a dropped host hands over."""

    player: PlayerSummary
    host: str | None = None
    with_host: bool = False

    @property
    def kind(self) -> str:
        return "progress"

    def to_json(self) -> Json:
        if self.with_host:
            return {"player": self.player.to_json(), "host": self.host}
        return {"player": self.player.to_json()}


@dataclass(slots=True)
class Countdown(RoomEvent):
    starts_at: int
    now: int
    time_limit_s: int

    @property
    def kind(self) -> str:
        return "countdown"

    def to_json(self) -> Json:
        return {"starts_at": self.starts_at, "now": self.now, "time_limit_s": self.time_limit_s}


@dataclass(slots=True)
class Started(RoomEvent):
    """Players get their ``board``; spectators every board in ``boards`` (and no ``board``)."""

    code: str | None
    started_at: int
    board: Json | None = None
    boards: Json | None = None
    commitment: str | None = None
    #: a sealed race's: the racers' contributions its code is derived from (sorted)
    contributions: tuple[str, ...] | None = None

    @property
    def kind(self) -> str:
        return "started"

    def to_json(self) -> Json:
        out: Json = {"code": self.code, "started_at": self.started_at}
        if self.commitment is not None:
            out["commitment"] = self.commitment
        if self.contributions is not None:
            out["contributions"] = list(self.contributions)
        if self.boards is not None:
            out["boards"] = self.boards
        else:
            out["board"] = self.board
        return out


def moved_summary(
    player: str,
    action: str,
    positions: list[str] | None,
    score: int,
    moves: int,
    cards_left: int,
    status: PlayerStatus,
    elapsed_ms: int,
) -> Json:
    """A ``moved`` body: the summary everyone gets, with the ``positions`` (None: left out) that
    only the mover, and spectators once the move's cards are public, get (the server's hot
    path builds it directly)."""
    if positions is None:
        return {
            "player": player,
            "action": action,
            "score": score,
            "moves": moves,
            "cards_left": cards_left,
            "status": status.value,
            "elapsed_ms": elapsed_ms,
        }
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

    outcome: PlayerStatus
    score: int
    moves: int
    time_ms: int
    code: str | None
    game: str | None
    ranked: bool
    salt: str | None = None
    #: a sealed race's seed, with its code (docs/protocol.md, "Sealed races")
    seed: str | None = None
    unranked_reason: str | None = None

    @property
    def kind(self) -> str:
        return "game_over"

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
        if self.seed is not None:
            out["seed"] = self.seed
        out["game"] = self.game
        return _with_ranking(out, self.ranked, self.unranked_reason)


@dataclass(slots=True)
class RaceOver(RoomEvent):
    """The results; from a room's second race on, or in a series, also ``round`` and ``series``
    (with its points table)."""

    results: tuple[Result, ...]
    code: str | None = None
    salt: str | None = None
    sealed: bool = False
    round: int = 1
    series: Json | None = None
    seed: str | None = None
    contributions: tuple[str, ...] | None = None

    @property
    def kind(self) -> str:
        return "race_over"

    def to_json(self) -> Json:
        out: Json = {"results": [r.to_json() for r in self.results]}
        if self.code is not None:
            out["code"] = self.code
            out["sealed"] = self.sealed
        if self.salt is not None:
            out["salt"] = self.salt
        if self.seed is not None:
            out["seed"] = self.seed
        if self.contributions is not None:
            out["contributions"] = list(self.contributions)
        if self.round > 1 or self.series is not None:
            out.update(round=self.round, series=self.series)
        return out


@dataclass(slots=True)
class RematchProposed(RoomEvent):
    """A rematch: the room is a lobby again for race number ``round`` on a new deal (its code as
    a race's code: null while sealed), hosted by the proposer, the only player in it so far;
    ``seated``: the room's other players, who may ``accept``."""

    round: int
    host: str | None
    players: tuple[PlayerSummary, ...]
    seated: tuple[PlayerSummary, ...]
    code: str | None
    sealed: bool
    commitment: str | None
    series: Json | None

    @property
    def kind(self) -> str:
        return "rematch"

    def to_json(self) -> Json:
        return {
            "round": self.round,
            "host": self.host,
            "players": [p.to_json() for p in self.players],
            "seated": [p.to_json() for p in self.seated],
            "code": self.code,
            "sealed": self.sealed,
            "commitment": self.commitment,
            "series": self.series,
        }


@dataclass(slots=True)
class Spectators(RoomEvent):
    count: int

    @property
    def kind(self) -> str:
        return "spectators"

    def to_json(self) -> Json:
        return {"count": self.count}


@dataclass(slots=True)
class Queued:
    """A player in the quick-race queue, told on joining it and whenever what they see changes:
    ``count`` players in their group (themselves included), ``starts_in_ms`` until it starts
    (None: not before a second player comes; ``starts_at`` the same on the server's clock),
    ``offer``: alone long enough to be offered to keep waiting, race ``ghost`` (a recent public
    race's game: ``{"game", "code", "name"}``, or None) or play solo."""

    count: int
    starts_at: int | None
    starts_in_ms: int | None
    offer: bool = False
    ghost: Json | None = None

    def to_json(self) -> Json:
        out: Json = {"type": "queued", "count": self.count, "starts_at": self.starts_at}
        out["starts_in_ms"] = self.starts_in_ms
        out["offer"] = self.offer
        if self.offer:
            out["ghost"] = self.ghost
        return out


@dataclass(slots=True)
class Unqueued:
    """Out of the quick-race queue (``unqueue``)."""

    def to_json(self) -> Json:
        return {"type": "unqueued"}


@dataclass(slots=True)
class Matched:
    """The queue matched this player into the quick race in ``room``, with ``players`` players:
    they ``join`` it under ``name`` (the name they queued with, or — when another player of the
    race queued with the same or a look-alike name — that name with a number added) with their
    player key (their seat is held for it), and it starts when everyone is in."""

    room: str
    players: int
    name: str

    def to_json(self) -> Json:
        return {"type": "matched", "room": self.room, "players": self.players, "name": self.name}


ServerMessage = Welcome | Pong | Error | Queued | Unqueued | Matched


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
