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

A room's header (:func:`room_header`) holds the log format's version ``v`` (:data:`LOG_VERSION`;
a header without one is version 0, the logs written before: same entries, replayed unchanged;
from version 2, :data:`RECORDED_AT_END`, the entry that ends a game records it — its
``game_over`` goes out with that entry — where a log of version 0 or 1 holds a ``recorded`` entry
of its own after each game's end, and still does for as long as such a room lives),
a sealed race's ``seed`` (its ``code`` is null: the deal is derived at the start); a header of
the previous release holds its ``code`` and ``salt``. A quick race's header also holds ``quick``
(``{"seats": [the matched keys' hashes], "start_by": ms}``: :class:`~halfmoon_server.core.race.QuickSeats`;
its countdown starts from the ``join`` that takes the last seat, or the ``tick`` at ``start_by``)
and ``"listed": true`` (a public race).

:data:`COMMANDS` is the one list of entry kinds: each :class:`Command` says what its entry does
to a race and, for the commands clients send (:data:`CLIENT_KINDS`), the check that refuses it
before it is logged, and its entry class; :func:`apply_entry` and :func:`check_entry` dispatch
through it.

The entry classes (:mod:`halfmoon_server.core.entries`: ``Move``, ``Join``, ``Rematch``, … one
frozen class per kind, ``Command.entry``) are the log's schema and its validated view, with named
fields for the keys (``time`` ``t``, ``player`` ``p``, ``origin`` ``o``, ``message_id`` ``id``,
``holder`` ``h``, ``positions`` ``m``, ``token_hash`` ``th``, …): :func:`parse_entry` reads a
logged dict into its class (``bad_message`` for an unknown kind or a malformed entry) and
``to_json`` gives back the same keys and values (not always in the same order). The room still
appends and applies the dicts themselves, unchanged — a move, most of the log, is applied with
no parse — so a log's bytes are what the room appended; ``apply_entry(race, entry.to_json())``
runs a typed one. :func:`log_version` reads a header's version (0 without ``v``). Logs of
this release and the previous ones replay unchanged: ``tests/vectors/room_logs/`` holds a
journal and a Redis log of each kind of room (``tests/server/build_room_logs.py``).

>>> from halfmoon.codes import DealCode
>>> from halfmoon_server.core.race import Race, RaceConfig
>>> race = Race("K7WQ2M", Mode.SOLO, DealCode.parse("HM1-N-AAAAAAA"), RaceConfig(), now=0)
>>> [type(e).__name__ for e in apply_entry(race, {"k": "single", "n": "Ada", "tok": "t", "r": True, "t": 0})]
['PlayerJoined', 'RaceStarted']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from halfmoon.codes import DealCode
from halfmoon.errors import HalfMoonError
from halfmoon.game import Move
from halfmoon.protocol import Mode
from halfmoon_server.core.entries import ENTRY_CLASSES, LogEntry, parse_entry
from halfmoon_server.core.events import Event
from halfmoon_server.core.race import QuickSeats, Race, RaceConfig
from halfmoon_server.errors import Refusal

#: An entry as the log holds it and the room applies it (:func:`parse_entry` types it).
Entry = dict[str, Any]

#: The log format's version, in every room header (``"v"``); a header without one is version 0,
#: the logs written before it was there: the entries are the same, and they replay unchanged.
LOG_VERSION = 2
#: From this version on, a game is recorded by the entry that ends it (its ``game_over`` goes out
#: with that entry's events); a log of an earlier version records each game with a ``recorded``
#: entry of its own, appended after the game ended, and is replayed so.
RECORDED_AT_END = 2

__all__ = [
    "CLIENT_KINDS", "COMMANDS", "ENDING_KINDS", "KINDS", "LOG_VERSION", "RECORDED_AT_END", "Command", "Entry",
    "LogEntry", "apply_entry", "check_entry", "check_room_size", "is_listed", "log_version", "parse_entry",
    "room_header",
]  # fmt: skip


def _move_of(entry: Mapping[str, Any]) -> Move:
    """A logged move's positions as a :class:`Move`; a bad one is the refusal ``illegal_move``."""
    try:
        return Move.from_names(entry["m"])
    except HalfMoonError as exc:
        raise Refusal("illegal_move", str(exc), reason=exc.code) from None


Apply = Callable[[Race, Mapping[str, Any], int, "str | None"], list[Event]]
Check = Callable[[Race, Mapping[str, Any], "str | None"], None]


@dataclass(frozen=True, slots=True)
class Command:
    """One kind of log entry: what it does to a race (``apply``), and — for the commands clients
    send — the check that refuses it before it is logged (``check``: None for the room's own);
    ``entry``: its class (:mod:`halfmoon_server.core.entries`), its typed schema."""

    kind: str
    apply: Apply
    check: Check | None = None
    entry: type[LogEntry] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry", ENTRY_CLASSES[self.kind])  # (a kind with no class: no import)


def _move(race: Race, entry: Mapping[str, Any], now: int, player: str | None) -> list[Event]:
    return race.move(player, _move_of(entry), now)


def _single(race: Race, entry: Mapping[str, Any], now: int, player: str | None) -> list[Event]:
    bot, first = bool(entry.get("bot", False)), bool(entry.get("r", True))
    events = race.join(entry["n"], now, bot=bot, daily_first=first)[1]
    race.time_limit_s = entry.get("lim")  # a daily attempt's time limit
    return events + race.begin(now)


def _rematch(race: Race, entry: Mapping[str, Any], now: int, player: str | None) -> list[Event]:
    if "seed" in entry:
        return race.rematch(player, now, seed=entry["seed"], entropy=entry.get("e"))
    # an entry of the previous release: the next deal's code, and its salt
    return race.rematch(player, now, code=DealCode.parse(entry["c"]), salt=entry["salt"])


def _member(race: Race, entry: Mapping[str, Any], player: str | None) -> None:
    race.check_member(player)


def _recorded(race: Race, entry: Mapping[str, Any], now: int, player: str | None) -> list[Event]:
    if _player(player) not in race.unrecorded:
        return []  # recorded already (by another instance): the first one counts
    return race.recorded(_player(player), entry.get("g"), now)  # an old entry's "a" is ignored


#: Every command a log may hold, by kind: the one list (the room shell, the docs and the tests
#: read it from here).
COMMANDS: dict[str, Command] = {
    command.kind: command
    for command in (
        Command("move", _move, lambda race, e, p: race.check_move(p, _move_of(e), e.get("t", 0))),
        Command("undo", lambda race, e, now, p: race.undo(p, now), lambda race, e, p: race.check_undo(p)),
        Command("tick", lambda race, e, now, p: race.tick(now)),
        Command(
            "join",
            lambda race, e, now, p: race.join(
                e["n"], now, e.get("e"), bot=bool(e.get("bot", False)), player=e.get("pk")
            )[1],
            lambda race, e, p: race.check_join(e["n"], e.get("pk")),
        ),
        Command("single", _single),
        Command("watch", lambda race, e, now, p: race.watch(), lambda race, e, p: race.check_watch()),
        Command("unwatch", lambda race, e, now, p: race.unwatch()),
        # a seat's own commands: checked too (a seat a rematch left out has none)
        Command("connect", lambda race, e, now, p: race.connect(_player(p), now, e.get("e")), _member),
        Command("present", lambda race, e, now, p: race.connect(_player(p), now), _member),
        Command("disconnect", lambda race, e, now, p: race.disconnect(_player(p), now), _member),
        Command("leave", lambda race, e, now, p: race.leave(_player(p), now), _member),
        Command(
            "start",
            lambda race, e, now, p: race.start(p, e.get("lim"), now, e.get("ser")),
            lambda race, e, p: race.check_start(p, e.get("ser")),
        ),
        Command("rematch", _rematch, lambda race, e, p: race.check_rematch(p)),
        Command(
            "accept", lambda race, e, now, p: race.accept(p, now, e.get("e")), lambda race, e, p: race.check_accept(p)
        ),
        Command("give_up", lambda race, e, now, p: race.give_up(p, now), lambda race, e, p: race.check_give_up(p)),
        Command("abandon", lambda race, e, now, p: race.abandon(now)),
        Command("stored", lambda race, e, now, p: []),  # the game is in the database: the room's business
        Command("recorded", _recorded),
    )
}
#: The commands a log may hold.
KINDS = frozenset(COMMANDS)
#: The commands the race checks before they are logged (a refused one never is): the clients'
#: (move, undo, give_up, start, join, watch, rematch, accept) and a seat's own (connect, present,
#: disconnect, leave); the room's own (tick, abandon, recorded, …) are not refused.
CLIENT_KINDS = frozenset(kind for kind, command in COMMANDS.items() if command.check is not None)
#: The commands a room still takes once its log is full (:func:`check_room_size`): those that
#: bring it to its end — the room's own (a deadline's ``tick``, ``abandon``, a game's
#: ``recorded`` and ``stored``) and a player's or spectator's going (``give_up``, ``leave``,
#: ``disconnect``, ``unwatch``). Each is bounded by the room's seats and watches, so the log
#: stays bounded; anything else (a move, an undo, a join, a resume, a watch…) is refused.
ENDING_KINDS = frozenset(("tick", "abandon", "recorded", "stored", "give_up", "leave", "disconnect", "unwatch"))
_APPLY = {kind: command.apply for kind, command in COMMANDS.items()}
_CHECK = {kind: command.check for kind, command in COMMANDS.items() if command.check is not None}


def apply_entry(race: Race, entry: Mapping[str, Any]) -> list[Event]:
    """Run one log entry on ``race`` and return its events. Raises :class:`Refusal` when the
    race refuses it (nothing changes), exactly as when it was first given, and ``bad_message``
    for a kind no log holds."""
    kind = entry["k"]
    if kind == "move":  # (most entries: no registry lookup)
        return _move(race, entry, entry["t"], entry.get("p"))
    apply = _APPLY.get(kind)
    if apply is None:
        raise Refusal("bad_message", f"no room command {entry['k']!r}")
    return apply(race, entry, entry["t"], entry.get("p"))


def check_entry(race: Race, entry: Mapping[str, Any]) -> None:
    """Raise the :class:`Refusal` that :func:`apply_entry` would, for the kinds checked before they
    are logged (:data:`CLIENT_KINDS`; nothing for the others), changing nothing (a deadline due
    meanwhile is settled only when the entry is applied)."""
    check = _CHECK.get(entry["k"])
    if check is not None:
        check(race, entry, entry.get("p"))


def check_room_size(kind: str, entries: int, max_entries: int) -> None:
    """Raise :class:`Refusal` ``room_log_full`` for a command of ``kind`` in a room whose log holds
    ``entries`` of the ``max_entries`` it takes, unless the command ends something
    (:data:`ENDING_KINDS`). A refused command is never logged: it changes nothing."""
    if entries >= max_entries and kind not in ENDING_KINDS:
        raise Refusal(
            "room_log_full",
            f"this room's log is full ({max_entries:,} entries): it takes no new command; its games so far are kept",
        )


#: The share of a room's log (``--max-room-entries``) the racers' moves and undos may take in one
#: race, split evenly between them (:func:`step_budget`): the rest is left for what is not a step
#: (joins, resumes, ticks, recordings, watches, a rematch's). One client holding several seats
#: and sending moves and undos as fast as it may cannot fill the log in a race, and the others'
#: games go on to their end.
STEP_SHARE_PERCENT = 80


def step_budget(max_entries: int, players: int) -> int:
    """How many steps (moves and undos) each of a race's ``players`` may take in it: their even
    share of :data:`STEP_SHARE_PERCENT` of the ``max_entries`` the room's log has left for the
    race (:func:`check_step_budget`). A fresh room of 50,000 entries and 8 players (the most):
    5,000 steps each — an honest game is at most 52 moves (104 cards, 2 or 3 a move), and taking
    all of them back and playing them again 45 times over is ~4,700 steps. Three seats: 13,333
    each, 40,000 in all, where a client sending 10 a second on each of three seats for 30 minutes
    would log 54,000. (A race of one — a solo game, a daily attempt — shares its log with nobody:
    :func:`check_step_budget` leaves it to the cap.)"""
    return max(0, max_entries) * STEP_SHARE_PERCENT // 100 // max(1, players)


def check_step_budget(race: Race, entry: Mapping[str, Any], max_entries: int, logged: int) -> None:
    """Raise :class:`Refusal` ``too_many_steps`` for a move or an undo of a player whose game has
    taken its :func:`step_budget` already, in a race of two players or more. The budget is a share
    of what the room's log (``logged`` entries of its ``max_entries``) has left besides this
    race's steps: the entries of its earlier races count, so a rematch gives no fresh four fifths
    of a log its earlier races filled — one client holding seats cannot fill it over two races
    and freeze the others' games in the second. Checked before the entry is logged only (never on
    replay): a refused step is never logged, and what a log holds replays as it did."""
    if entry["k"] not in ("move", "undo") or len(race.players) < 2:
        return
    racer = race.players.get(str(entry.get("p")))
    if racer is None:
        return  # (the race's own check says why)
    steps = sum(r.step_count for r in race.players.values())  # this race's (a rematch's racers are new)
    budget = step_budget(max_entries - max(0, logged - steps), len(race.players))
    if racer.step_count >= budget:
        raise Refusal(
            "too_many_steps",
            f"your game has taken {racer.step_count:,} moves and undos; the most one player may take in "
            f"this race is {budget:,} (an even share of what the room's log has left); you can still give up",
        )


def _player(player: str | None) -> str:
    if player is None:
        raise Refusal("not_playing", "spectators cannot do that")
    return player


def log_version(header: Mapping[str, Any]) -> int:
    """The log format's version of a room's header: its ``v``, 0 for a header without one (the
    logs written before). Raises :class:`Refusal` (``bad_message``) for a ``v`` that is not a
    version, or one newer than this release reads (:data:`LOG_VERSION`)."""
    version = header.get("v", 0)
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= LOG_VERSION:
        raise Refusal("bad_message", f"a room log of version {version!r}: this release reads 0 to {LOG_VERSION}")
    return version


def room_header(
    room_id: str,
    mode: Mode,
    code: str | None,
    *,
    created_at: int,
    nonce: str,
    daily_day: str | None,
    listed: bool = False,
    version: int = LOG_VERSION,
) -> Entry:
    """What a room is made of, before any command: its id, mode, deal (None: a sealed race's,
    derived at its start from the header's ``seed``), creation time, a random nonce (the game ids
    of its players derive from it) and, for a daily attempt, the day. ``listed``: its host (or the
    server, for a quick race) made it public — it is shown on the live list while it is in play
    (:func:`is_listed`); the key is written only then, so a private room's header is as before.
    An optional key needs no new :data:`LOG_VERSION`: a release that does not know it replays the
    room the same (it only does not list it). ``version``: the log format to write (an earlier one
    while instances that read no newer one share the logs: ``Settings.room_log_version``)."""
    if not 1 <= version <= LOG_VERSION:
        raise ValueError(f"a room log is written in format 1 to {LOG_VERSION}, not {version}")
    header: Entry = {
        "v": version,
        "room": room_id,
        "mode": str(mode),
        "code": code,
        "created_at": created_at,
        "nonce": nonce,
        "day": daily_day,
    }
    if listed:
        header["listed"] = True
    return header


def is_listed(header: Mapping[str, Any]) -> bool:
    """Whether a room's header makes it public (``"listed": true``); absent, or anything but
    ``true``: private — a room made for a link is seen only by whoever has the link."""
    return header.get("listed") is True


def race_of(header: Entry) -> Race:
    """A new race from a room's header (:func:`room_header`). Raises :class:`Refusal`
    (``bad_message``) for a header of a log format this release does not read (:func:`log_version`:
    a newer server's)."""
    log_version(header)
    day = header.get("day")
    return Race(
        header["room"],
        Mode(header["mode"]),
        None if header["code"] is None else DealCode.parse(header["code"]),
        RaceConfig(**header["config"]),
        now=header["created_at"],
        daily_day=date.fromisoformat(day) if day else None,
        salt=header.get("salt"),
        seed=header.get("seed"),
        quick=QuickSeats.from_json(header["quick"]) if header.get("quick") else None,
    )
