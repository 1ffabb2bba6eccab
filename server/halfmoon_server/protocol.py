"""The wire protocol (docs/protocol.md): the closed set of client messages, parsed and validated
from raw frames, and the encoding of server messages. No I/O here.

:func:`parse_message` turns a frame into one of the typed message classes or raises
:class:`ProtocolError` with the wire error code; :func:`encode` turns a server message into bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

from halfmoon.errors import HalfMoonError
from halfmoon.game import Move
from halfmoon.positions import parse_position
from halfmoon_server.errors import ProtocolError

VERSION: Final = 1
ROOM_ALPHABET: Final = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
ROOM_ID_LENGTH: Final = 6
NAME_MAX: Final = 20
NAME_EXTRA: Final = frozenset(" _-.'")
# letters by Unicode, yet drawn as nothing: a name of them would be invisible on a leaderboard
NAME_INVISIBLE: Final = frozenset("\u115f\u1160\u3164\uffa0")
TIME_LIMIT_MIN: Final = 30
TIME_LIMIT_MAX: Final = 7200


@dataclass(frozen=True, slots=True)
class Join:
    room: str
    name: str


@dataclass(frozen=True, slots=True)
class Watch:
    room: str


@dataclass(frozen=True, slots=True)
class Solo:
    name: str
    code: str | None


@dataclass(frozen=True, slots=True)
class Daily:
    name: str


@dataclass(frozen=True, slots=True)
class Resume:
    room: str
    token: str
    since: int | None


@dataclass(frozen=True, slots=True)
class Start:
    time_limit_s: int | None


@dataclass(frozen=True, slots=True)
class MoveMessage:
    move: Move
    msg_id: int | None


@dataclass(frozen=True, slots=True)
class Undo:
    msg_id: int | None


@dataclass(frozen=True, slots=True)
class GiveUp:
    pass


@dataclass(frozen=True, slots=True)
class Leave:
    pass


@dataclass(frozen=True, slots=True)
class Ping:
    pass


ClientMessage = Join | Watch | Solo | Daily | Resume | Start | MoveMessage | Undo | GiveUp | Leave | Ping


def encode(message: dict[str, Any]) -> bytes:
    """A server message as a UTF-8 JSON frame; adds ``"v"``."""
    message["v"] = VERSION
    return orjson.dumps(message)


def error_message(code: str, message: str, *, msg_id: int | None = None, reason: str | None = None) -> bytes:
    out: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if msg_id is not None:
        out["id"] = msg_id
    if reason is not None:
        out["reason"] = reason
    return encode(out)


def _bad(field: str, why: str, msg_id: int | None = None) -> ProtocolError:
    return ProtocolError("bad_message", f"'{field}' {why}", msg_id=msg_id)


def _str(data: dict[str, Any], field: str, msg_id: int | None, *, optional: bool = False) -> str | None:
    value = data.get(field)
    if value is None:
        if optional:
            return None
        raise _bad(field, "is missing", msg_id)
    if not isinstance(value, str):
        raise _bad(field, f"must be a string, not {type(value).__name__}", msg_id)
    return value


def _int(data: dict[str, Any], field: str, msg_id: int | None) -> int | None:
    value = data.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(field, f"must be an integer, not {type(value).__name__}", msg_id)
    return value


def normalise_room(room: str) -> str:
    """Canonical room id (upper case). Raises :class:`ProtocolError` ``no_such_room`` if malformed."""
    canonical = room.strip().upper()
    if len(canonical) != ROOM_ID_LENGTH or any(ch not in ROOM_ALPHABET for ch in canonical):
        raise ProtocolError("no_such_room", f"no room {room[:40]!r}: a room id is 6 characters like 'K7WQ2M'")
    return canonical


def check_name(name: str) -> str:
    """A trimmed valid nickname. Raises :class:`ProtocolError` ``bad_name`` saying what is wrong."""
    trimmed = name.strip()
    if not trimmed:
        raise ProtocolError("bad_name", "the name is empty")
    if len(trimmed) > NAME_MAX:
        raise ProtocolError("bad_name", f"the name {trimmed[:40]!r} is longer than {NAME_MAX} characters")
    bad = sorted({ch for ch in trimmed if not (ch.isalnum() or ch in NAME_EXTRA) or ch in NAME_INVISIBLE})
    if bad:
        raise ProtocolError(
            "bad_name", f"the name {trimmed!r} holds {''.join(bad)!r}: use letters, digits, spaces and _-.'"
        )
    return trimmed


def parse_message(frame: str | bytes) -> ClientMessage:
    """Parse and validate one client frame.

    Raises :class:`ProtocolError` (``bad_json``, ``bad_version``, ``unknown_type``,
    ``bad_message``, ``bad_name``, ``illegal_move``) saying what is wrong.
    """
    try:
        data = orjson.loads(frame)
    except orjson.JSONDecodeError:
        raise ProtocolError("bad_json", "the frame is not valid JSON") from None
    if not isinstance(data, dict):
        raise ProtocolError("bad_json", f"a message is a JSON object, not {type(data).__name__}")
    raw_id = data.get("id")
    msg_id = raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else None
    if type(data.get("v")) is not int or data.get("v") != VERSION:  # not True, not 1.0
        raise ProtocolError("bad_version", f"'v' must be {VERSION}, not {data.get('v')!r}", msg_id=msg_id)
    kind = data.get("type")
    if not isinstance(kind, str):
        raise _bad("type", "is missing or not a string", msg_id)
    if raw_id is not None and msg_id is None:
        raise _bad("id", "must be an integer", None)
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ProtocolError("unknown_type", f"no message type {kind[:40]!r}", msg_id=msg_id)
    return parser(data, msg_id)


def _join(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    room = _str(data, "room", msg_id)
    name = _str(data, "name", msg_id)
    assert room is not None and name is not None
    return Join(room, check_name(name))


def _watch(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    room = _str(data, "room", msg_id)
    assert room is not None
    return Watch(room)


def _solo(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    name = _str(data, "name", msg_id)
    assert name is not None
    return Solo(check_name(name), _str(data, "code", msg_id, optional=True))


def _daily(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    name = _str(data, "name", msg_id)
    assert name is not None
    return Daily(check_name(name))


def _resume(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    room = _str(data, "room", msg_id)
    token = _str(data, "token", msg_id)
    assert room is not None and token is not None
    since = _int(data, "since", msg_id)
    if since is not None and since < 0:
        raise _bad("since", "cannot be negative", msg_id)
    return Resume(room, token, since)


def _start(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    limit = _int(data, "time_limit_s", msg_id)
    if limit is not None and not TIME_LIMIT_MIN <= limit <= TIME_LIMIT_MAX:
        raise _bad("time_limit_s", f"must be {TIME_LIMIT_MIN}-{TIME_LIMIT_MAX} seconds, not {limit}", msg_id)
    return Start(limit)


def _move(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
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
        raise ProtocolError("illegal_move", str(exc), msg_id=msg_id, reason=exc.code) from None
    return MoveMessage(move, msg_id)


def _undo(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    return Undo(msg_id)


def _give_up(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    return GiveUp()


def _leave(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    return Leave()


def _ping(data: dict[str, Any], msg_id: int | None) -> ClientMessage:
    return Ping()


_PARSERS: Final = {
    "join": _join,
    "watch": _watch,
    "solo": _solo,
    "daily": _daily,
    "resume": _resume,
    "start": _start,
    "move": _move,
    "undo": _undo,
    "give_up": _give_up,
    "leave": _leave,
    "ping": _ping,
}
