"""The race core's domain events: what happened in a room, in the room's terms (player ids,
engine moves and cards), before anyone decides who may see what. :mod:`halfmoon_server.core.race`
returns them; :mod:`halfmoon_server.core.audience` turns each into the wire message of each audience.

An event that every audience is told as it is *is* its wire message (:mod:`halfmoon.protocol`):
its class derives from the message's and adds only what the room needs beside it (a player who
left the lobby loses their seat: ``removed``; a game's end goes to its ``player`` alone), so each
shape is defined once, in the protocol. :class:`RaceStarted` and :class:`Moved` are the room's own
(every player's board, the engine's move and cards): the audience makes each audience's message of
them. :class:`GameEnded` never reaches the wire.

They are values, never changed once made; they are not ``frozen`` only because a frozen
dataclass pays for ``object.__setattr__`` on every field, and a move makes several of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from halfmoon import protocol as wire
from halfmoon.cards import Card
from halfmoon.game import Move
from halfmoon.protocol import PlayerStatus
from halfmoon.view import BoardView


class PlayerJoined(wire.PlayerJoined):
    """A player joined (``player``, and the lobby's ``host``)."""

    __slots__ = ()


@dataclass(slots=True)
class PlayerLeft(wire.PlayerLeft):
    """A player left: from the lobby (``removed``: their seat is gone) or from their game."""

    removed: bool


class PlayerChanged(wire.Progress):
    """A player's summary changed (came back, dropped, gave up, timed out). ``with_host``: the
    lobby's host is part of the news (a dropped host hands over)."""

    __slots__ = ()


class SpectatorsChanged(wire.Spectators):
    """How many watch (the room's shell counts them: watching is not part of the race)."""

    __slots__ = ()


class CountdownStarted(wire.Countdown):
    """The host started the countdown: the race starts at ``starts_at``."""

    __slots__ = ()


@dataclass(slots=True)
class RaceStarted:
    """Everyone starts on the same deal at ``started_at``; ``code`` is None while it is hidden."""

    started_at: int
    code: str | None
    boards: dict[str, BoardView]
    commitment: str | None = None
    #: a sealed race's: the contributions its deal was derived from
    contributions: tuple[str, ...] | None = None


#: One position after a move: ``(position, its new top or None when empty, its card count)``
#: (a plain tuple: a move makes two or three, on the hot path).
BoardChange = tuple[int, Card | None, int]


@dataclass(slots=True)
class Moved:
    """A player's move or undo, checked by the engine and applied. Its ``move`` (positions) and
    ``changes`` tell cards — a move's cards pair to 11 or are a J, Q and K — so only the mover
    gets them as they are; spectators once every card the move removed is public, the other
    players never (:mod:`halfmoon_server.core.audience`)."""

    player: str
    action: str  # "move" | "undo"
    move: Move
    changes: list[BoardChange]
    score: int
    moves: int
    cards_left: int
    status: PlayerStatus
    elapsed_ms: int
    can_undo: bool


@dataclass(slots=True)
class GameEnded:
    """A player's game is over and must be recorded; the race waits for
    :meth:`halfmoon_server.core.race.Race.recorded` before that player's :class:`GameOver`."""

    player: str


@dataclass(slots=True)
class GameOver(wire.GameOver):
    """A player's game is recorded: its ``game_over``, for that ``player``'s eyes only (``code``
    None: a daily code before its day's attempts have all ended; ``seed``: a sealed race's, with
    its code)."""

    player: str = field(kw_only=True)


class RaceOver(wire.RaceOver):
    """The race is over: the results, and the deal code (with what opens its commitment, for a
    sealed race: its seed and contributions, or a previous release's salt)."""

    __slots__ = ()


class Rematched(wire.RematchProposed):
    """A rematch: race number ``round`` on a new deal, a lobby again; ``players``: the proposer
    (its host), ``seated``: the room's other players, who may accept."""

    __slots__ = ()


Event = (
    PlayerJoined
    | PlayerLeft
    | PlayerChanged
    | SpectatorsChanged
    | CountdownStarted
    | RaceStarted
    | Moved
    | GameEnded
    | GameOver
    | RaceOver
    | Rematched
)
