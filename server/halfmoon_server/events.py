"""The race core's domain events: what happened in a room, in the room's terms (player ids,
engine moves and cards), before anyone decides who may see what. :mod:`halfmoon_server.race`
returns them; :mod:`halfmoon_server.audience` turns each into the wire message of each audience.
"""

from __future__ import annotations

from dataclasses import dataclass

from halfmoon.cards import Card
from halfmoon.game import Move
from halfmoon.protocol import PlayerStatus, PlayerSummary, Result
from halfmoon.view import BoardView


@dataclass(frozen=True, slots=True)
class PlayerJoined:
    player: PlayerSummary
    host: str | None


@dataclass(frozen=True, slots=True)
class PlayerLeft:
    """A player left: from the lobby (``removed``: their seat is gone) or from their game."""

    player: PlayerSummary
    host: str | None
    removed: bool


@dataclass(frozen=True, slots=True)
class PlayerChanged:
    """A player's summary changed (came back, dropped, gave up, timed out). ``with_host``: the
    lobby's host is part of the news (a dropped host hands over)."""

    player: PlayerSummary
    host: str | None = None
    with_host: bool = False


@dataclass(frozen=True, slots=True)
class SpectatorsChanged:
    """How many watch (the room's shell counts them: watching is not part of the race)."""

    count: int


@dataclass(frozen=True, slots=True)
class CountdownStarted:
    starts_at: int
    now: int
    time_limit_s: int


@dataclass(frozen=True, slots=True)
class RaceStarted:
    """Everyone starts on the same deal at ``started_at``; ``code`` is None while it is hidden."""

    started_at: int
    code: str | None
    boards: dict[str, BoardView]


@dataclass(frozen=True, slots=True)
class BoardChange:
    """One position after a move: its new top (None when empty) and its card count."""

    position: int
    card: Card | None
    count: int


@dataclass(frozen=True, slots=True)
class Moved:
    """A player's move or undo, checked by the engine and applied."""

    player: str
    action: str  # "move" | "undo"
    move: Move
    changes: tuple[BoardChange, ...]
    score: int
    moves: int
    cards_left: int
    status: PlayerStatus
    elapsed_ms: int
    can_undo: bool


@dataclass(frozen=True, slots=True)
class GameEnded:
    """A player's game is over and must be recorded; the race waits for
    :meth:`halfmoon_server.race.Race.recorded` before that player's :class:`GameOver`."""

    player: str


@dataclass(frozen=True, slots=True)
class GameOver:
    """A player's game is recorded (for that player's eyes only)."""

    player: str
    outcome: PlayerStatus
    score: int
    moves: int
    time_ms: int
    code: str
    game: str | None
    ranked: bool
    analysis: dict[str, object] | None


@dataclass(frozen=True, slots=True)
class RaceOver:
    results: tuple[Result, ...]


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
)
