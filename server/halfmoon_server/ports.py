"""The ports: the small interfaces the race server's shell talks to, each with the
implementations beside it named here. The race core (:mod:`halfmoon_server.race`) needs none of
them; the room shell (:mod:`halfmoon_server.room`) and the handlers use them.

- :class:`Outbox` — one connection's way out: ``send(frame)`` never waits
  (:class:`halfmoon_server.connection.Connection`; tests use a list).
- :class:`Storage` — what lasts: finished games, leaderboards, the daily challenge
  (:class:`halfmoon_server.storage.SqlStorage` on SQLite or PostgreSQL,
  :class:`halfmoon_server.memory_storage.MemoryStorage`; chosen by URL in
  :func:`halfmoon_server.storage.open_storage`).
- :class:`LiveState` — what is live: the rooms and the players' seats (tokens)
  (:class:`halfmoon_server.live.LocalLiveState`, in this process).
- :class:`~halfmoon_server.clock.Clock` — the time (:class:`~halfmoon_server.clock.SystemClock`,
  :class:`~halfmoon_server.clock.ManualClock`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Protocol

from halfmoon_server.clock import Clock

if TYPE_CHECKING:
    from halfmoon_server.room import Room

__all__ = ["Clock", "DailyDay", "FinishedGame", "LiveState", "Outbox", "Seat", "Storage", "StoredGame"]


class Outbox(Protocol):
    """Where a connection's frames go. Neither method waits. ``room`` is the id of the room it
    is in (None: none, e.g. after a ``leave``)."""

    room: str | None

    @property
    def closed(self) -> bool:
        """The connection is gone (or going): nothing sent now reaches anyone."""
        ...

    def send(self, frame: bytes) -> None:
        """Queue one text frame (a connection that cannot keep up is dropped, not waited for)."""

    def close(self, code: int, reason: str) -> None:
        """Close after the frames already sent, with a WebSocket close code and reason."""


@dataclass(frozen=True, slots=True)
class FinishedGame:
    """A game to store (the id is given by the storage)."""

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


@dataclass(frozen=True, slots=True)
class StoredGame(FinishedGame):
    """A finished game as stored: the same fields and the id the storage gave it."""

    id: str


@dataclass(frozen=True, slots=True)
class DailyDay:
    day: date
    code: str
    players: int


class Storage(Protocol):
    """What the server needs from a database. Every method raises
    :class:`~halfmoon_server.errors.StorageError` on failure. Rankings follow
    :func:`halfmoon.protocol.ranking_key`: score, then time, then who finished first."""

    async def ping(self) -> None: ...
    async def save_game(self, game: FinishedGame) -> str: ...
    async def get_game(self, game_id: str) -> StoredGame | None: ...
    async def leaderboard_for_code(self, code: str, limit: int) -> list[StoredGame]: ...
    async def daily_leaderboard(self, day: date, limit: int) -> list[StoredGame]: ...
    async def games_of_room(self, room: str, limit: int) -> list[StoredGame]: ...
    async def claim_daily_attempt(self, day: date, name_key: str, at: datetime) -> bool: ...
    async def daily_code(self, day: date) -> str | None: ...
    async def save_daily_code(self, day: date, code: str, at: datetime) -> str: ...
    async def daily_days(self, before: date, limit: int) -> list[DailyDay]: ...
    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Seat:
    """A player's place, found by their token: which room, which player."""

    room: str
    player: str


class LiveState(Protocol):
    """The live rooms and the seats their players hold."""

    def new_room_id(self) -> str:
        """A room id no live room has."""
        ...

    def add(self, room: Room) -> None: ...
    def get(self, room_id: str) -> Room | None: ...
    def drop(self, room: Room) -> None:
        """Forget the room and its seats."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Room]: ...
    def seat(self, token: str) -> Seat | None: ...
    def add_seat(self, token: str, seat: Seat) -> None: ...
    def forget_seat(self, token: str) -> None: ...
