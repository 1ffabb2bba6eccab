"""The records of what lasts: a finished game as the room hands it to storage
(:class:`FinishedGame`), as storage gives it back (:class:`StoredGame`: the same and its id), as a
player's history lists it (:class:`PlayerGame`: a stored game read without its record), and a day
of the daily challenge (:class:`DailyDay`). Every field of a game is defined once, in
:class:`FinishedGame`; the others derive from it. The :class:`~halfmoon_server.ports.Storage` port
takes and returns them (:mod:`halfmoon_server.ports` re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import date, datetime
from typing import Any

from halfmoon.record import UNDO

__all__ = ["DailyDay", "FinishedGame", "PlayerGame", "StoredGame"]


@dataclass(frozen=True, slots=True)
class FinishedGame:
    """A game to store (under an id fixed up front: :func:`halfmoon_server.core.room_state.game_id`)."""

    nickname: str
    code: str
    mode: str
    room: str
    score: int
    moves: int
    time_ms: int
    outcome: str
    record: dict[str, Any]
    ranked: bool
    daily_date: date | None
    finished_at: datetime
    #: what opens the commitment the game's deal was published under: a daily attempt's salt, or
    #: a sealed race's of the previous release (None: an open race, a solo game, a new sealed race)
    salt: str | None = None
    #: the hash of the player's key (:func:`halfmoon.protocol.player_key_hash`; None: none given)
    player: str | None = None
    #: a sealed race's ``{"seed", "contributions"}``: its code is ``sealed_code(seed,
    #: contributions)`` and its commitment ``seal_commitment(seed)`` (None: not a sealed race of
    #: this release)
    seal: dict[str, Any] | None = None
    #: why the game is not ranked (a :class:`halfmoon.protocol.Unranked` value; None: ranked)
    unranked_reason: str | None = None
    #: how many seats (games) its race has: the ratings wait for all of them
    #: (:mod:`halfmoon_server.core.rating`; None: not told, e.g. stored before ratings)
    seats: int | None = None

    @property
    def undos(self) -> int:
        """How many undos its record holds (a clean win has none); stored beside it, so a
        player's history is read without the records."""
        return sum(1 for step in self.record.get("moves", ()) if step == UNDO)

    @property
    def sealed(self) -> bool:
        """A sealed race's game (of this release or the previous one)."""
        return self.seal is not None or (self.salt is not None and self.daily_date is None)


@dataclass(frozen=True, slots=True)
class StoredGame(FinishedGame):
    """A finished game as stored: the same fields and its id."""

    id: str = field(kw_only=True)

    @classmethod
    def of(cls, game: FinishedGame, game_id: str) -> StoredGame:
        """``game`` as stored under ``game_id``."""
        return cls(**{f.name: getattr(game, f.name) for f in fields(FinishedGame)}, id=game_id)


@dataclass(frozen=True, slots=True)
class PlayerGame(StoredGame):
    """One game of a player's history: a stored game read without its record (``record`` is
    empty: a history lists games, it does not replay them) and with its undo count, which is
    stored beside the record."""

    undos: int = field(kw_only=True)  # (in place of the count FinishedGame.undos makes of the record)

    @classmethod
    def listed(cls, game: StoredGame) -> PlayerGame:
        """``game`` as a player's history lists it."""
        kept = {f.name: getattr(game, f.name) for f in fields(StoredGame) if f.name != "record"}
        return cls(**kept, record={}, undos=game.undos)


@dataclass(frozen=True, slots=True)
class DailyDay:
    day: date
    code: str
    players: int
