"""The race core's domain events: what happened in a room, in the room's terms (player ids,
engine moves and cards), before anyone decides who may see what. :mod:`halfmoon_server.core.race`
returns them; :mod:`halfmoon_server.core.audience` turns each into the wire message of each audience.

They are values, never changed once made; they are not ``frozen`` only because a frozen
dataclass pays for ``object.__setattr__`` on every field, and a move makes several of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from halfmoon.cards import Card
from halfmoon.game import Move
from halfmoon.protocol import Json, PlayerStatus, PlayerSummary, Result
from halfmoon.view import BoardView


@dataclass(slots=True)
class PlayerJoined:
    player: PlayerSummary
    host: str | None


@dataclass(slots=True)
class PlayerLeft:
    """A player left: from the lobby (``removed``: their seat is gone) or from their game."""

    player: PlayerSummary
    host: str | None
    removed: bool


@dataclass(slots=True)
class PlayerChanged:
    """A player's summary changed (came back, dropped, gave up, timed out). ``with_host``: the
    lobby's host is part of the news (a dropped host hands over)."""

    player: PlayerSummary
    host: str | None = None
    with_host: bool = False


@dataclass(slots=True)
class SpectatorsChanged:
    """How many watch (the room's shell counts them: watching is not part of the race)."""

    count: int


@dataclass(slots=True)
class CountdownStarted:
    starts_at: int
    now: int
    time_limit_s: int


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
class GameOver:
    """A player's game is recorded (for that player's eyes only)."""

    player: str
    outcome: PlayerStatus
    score: int
    moves: int
    time_ms: int
    code: str | None  # None: a daily code before its day's attempts have all ended
    game: str | None
    ranked: bool
    salt: str | None = None
    seed: str | None = None  # a sealed race's, with its code
    unranked_reason: str | None = None


@dataclass(slots=True)
class RaceOver:
    """The race is over: the results, and the deal code (with what opens its commitment, for a
    sealed race: its seed and contributions, or a previous release's salt)."""

    results: tuple[Result, ...]
    code: str | None = None
    salt: str | None = None
    sealed: bool = False
    round: int = 1
    series: Json | None = None  # the series as it stands after this race (its points table)
    seed: str | None = None
    contributions: tuple[str, ...] | None = None


@dataclass(slots=True)
class Rematched:
    """A rematch: race number ``round`` on a new deal, a lobby again; ``players``: the proposer
    (its host), ``seated``: the room's other players, who may accept."""

    round: int
    host: str | None
    players: tuple[PlayerSummary, ...]
    seated: tuple[PlayerSummary, ...]
    code: str | None
    sealed: bool
    commitment: str | None
    series: Json | None


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
