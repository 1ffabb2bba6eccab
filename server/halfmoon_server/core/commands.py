"""A room's log: every command the race accepted or refused, in order, with its time — the
durable truth of a live room.

A race is a pure function of its commands (:mod:`halfmoon_server.core.race` reads no clock and no
randomness), so a room is rebuilt anywhere, on any instance or after a crash, by replaying its
log: :func:`apply_entry` runs one entry on a :class:`~halfmoon_server.core.race.Race`. An entry is a
small JSON object::

    {"k": "move", "p": "p1", "t": 1795950004000, "m": ["8", "12"], "o": "i3:17:5"}

``k`` the command, ``p`` the player (absent for the room's own commands), ``t`` the time it was
given (epoch ms), command fields (``m`` a move, ``n`` a name, ``th`` the player's token hashed
(``room.token_hash``; ``tok``, the token in clear, in logs written before), ``lim`` a time limit,
``g`` a game id, ``r`` a daily attempt's ranked claim, ``bot`` a join's bot flag, ``ser`` a
series' length, ``e`` a racer's contribution to a sealed deal (on ``join``, ``connect``,
``accept`` and ``rematch``); a ``rematch``'s ``seed``, the secret the server drew for the next
race's deal — a log of the previous release has its ``c`` and ``salt`` instead, the next deal
itself and its salt), and ``o`` its origin: which instance and connection sent it and the message
id (so that instance can answer that connection alone).

A room's header (:func:`room_header`) holds a sealed race's ``seed`` (its ``code`` is null: the
deal is derived at the start); a header of the previous release holds its ``code`` and ``salt``.

>>> from halfmoon.codes import DealCode
>>> from halfmoon_server.core.race import Race, RaceConfig
>>> race = Race("K7WQ2M", Mode.SOLO, DealCode.parse("HM1-N-AAAAAAA"), RaceConfig(), now=0)
>>> [type(e).__name__ for e in apply_entry(race, {"k": "single", "n": "Ada", "tok": "t", "r": True, "t": 0})]
['PlayerJoined', 'RaceStarted']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from halfmoon.codes import DealCode
from halfmoon.errors import HalfMoonError
from halfmoon.game import Move
from halfmoon.protocol import Mode
from halfmoon_server.core.events import Event
from halfmoon_server.core.race import Race
from halfmoon_server.errors import Refusal

Entry = dict[str, Any]

#: The commands a log may hold.
KINDS = frozenset(
    {
        "join",
        "single",
        "watch",
        "unwatch",
        "connect",
        "present",
        "disconnect",
        "leave",
        "start",
        "move",
        "undo",
        "give_up",
        "tick",
        "abandon",
        "recorded",
        "stored",
        "rematch",
        "accept",
    }
)


def _move_of(entry: Mapping[str, Any]) -> Move:
    """A logged move's positions as a :class:`Move`; a bad one is the refusal ``illegal_move``."""
    try:
        return Move.from_names(entry["m"])
    except HalfMoonError as exc:
        raise Refusal("illegal_move", str(exc), reason=exc.code) from None


def apply_entry(race: Race, entry: Mapping[str, Any]) -> list[Event]:
    """Run one log entry on ``race`` and return its events. Raises :class:`Refusal` when the
    race refuses it (nothing changes), exactly as when it was first given."""
    kind = entry["k"]
    now: int = entry["t"]
    player: str | None = entry.get("p")
    match kind:
        case "move":
            return race.move(player, _move_of(entry), now)
        case "undo":
            return race.undo(player, now)
        case "tick":
            return race.tick(now)
        case "join":
            return race.join(entry["n"], now, entry.get("e"), bot=bool(entry.get("bot", False)))[1]
        case "single":
            bot, first = bool(entry.get("bot", False)), bool(entry.get("r", True))
            events = race.join(entry["n"], now, bot=bot, daily_first=first)[1]
            race.time_limit_s = entry.get("lim")  # a daily attempt's time limit
            return events + race.begin(now)
        case "watch":
            return race.watch()
        case "unwatch":
            return race.unwatch()
        case "connect":
            return race.connect(_player(player), now, entry.get("e"))
        case "present":
            return race.connect(_player(player), now)
        case "disconnect":
            return race.disconnect(_player(player), now)
        case "leave":
            return race.leave(_player(player), now)
        case "start":
            return race.start(player, entry.get("lim"), now, entry.get("ser"))
        case "rematch":
            if "seed" in entry:
                return race.rematch(player, now, seed=entry["seed"], entropy=entry.get("e"))
            # an entry of the previous release: the next deal's code, and its salt
            return race.rematch(player, now, code=DealCode.parse(entry["c"]), salt=entry["salt"])
        case "accept":
            return race.accept(player, now, entry.get("e"))
        case "give_up":
            return race.give_up(player, now)
        case "abandon":
            return race.abandon(now)
        case "stored":  # the game is in the database: the room's business, not the race's
            return []
        case "recorded":
            if _player(player) not in race.unrecorded:
                return []  # recorded already (by another instance): the first one counts
            return race.recorded(_player(player), entry.get("g"), now)  # an old entry's "a" is ignored
    raise Refusal("bad_message", f"no room command {kind!r}")


def check_entry(race: Race, entry: Mapping[str, Any]) -> None:
    """Raise the :class:`Refusal` that :func:`apply_entry` would, for the commands clients send,
    changing nothing (a deadline due meanwhile is settled only when the entry is applied)."""
    kind = entry["k"]
    player: str | None = entry.get("p")
    match kind:
        case "move":
            race.check_move(player, _move_of(entry), entry.get("t", 0))
        case "undo":
            race.check_undo(player)
        case "give_up":
            race.check_give_up(player)
        case "start":
            race.check_start(player, entry.get("ser"))
        case "rematch":
            race.check_rematch(player)
        case "accept":
            race.check_accept(player)
        case "join":
            race.check_join(entry["n"])
        case "watch":
            race.check_watch()
        case "connect" | "present" | "disconnect" | "leave":
            race.check_member(player)


def _player(player: str | None) -> str:
    if player is None:
        raise Refusal("not_playing", "spectators cannot do that")
    return player


def room_header(
    room_id: str, mode: Mode, code: str | None, *, created_at: int, nonce: str, daily_day: str | None
) -> Entry:
    """What a room is made of, before any command: its id, mode, deal (None: a sealed race's,
    derived at its start from the header's ``seed``), creation time, a random nonce (the game ids
    of its players derive from it) and, for a daily attempt, the day."""
    return {
        "room": room_id,
        "mode": str(mode),
        "code": code,
        "created_at": created_at,
        "nonce": nonce,
        "day": daily_day,
    }
