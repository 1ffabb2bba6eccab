"""The ports: the small interfaces the race server's shell talks to, each with the
implementations beside it named here. The race core (:mod:`halfmoon_server.core.race`) needs none of
them; the room shell (:mod:`halfmoon_server.rooms.room`) and the handlers use them.

- :class:`Outbox` — one connection's way out: ``send(frame)`` never waits
  (:class:`halfmoon_server.web.connection.Connection`; tests use a list).
- :class:`Storage` — what lasts: finished games, leaderboards, the daily challenge
  (:class:`halfmoon_server.adapters.storage.SqlStorage` on SQLite or PostgreSQL,
  :class:`halfmoon_server.adapters.memory_storage.MemoryStorage`; chosen by URL in
  :func:`halfmoon_server.adapters.storage.open_storage`).
- :class:`RoomLog` — what is live: each room's header and its log of commands, from which any
  instance rebuilds the room; it delivers each room's entries, numbered, to the room's
  :class:`Follower` on every instance (:class:`halfmoon_server.rooms.room.Room`), by room id and
  entry number (:class:`halfmoon_server.adapters.journal.JournalLog`, a SQLite journal for
  one process; :class:`halfmoon_server.adapters.journal.MemoryLog`, nothing kept; and
  :class:`halfmoon_server.adapters.redis_log.RedisLog`, shared by a cluster). In a cluster each
  room has one owner at a time (:meth:`RoomLog.claim`: a fenced lease): only the owner appends.
- :class:`~halfmoon_server.clock.Clock` — the time (:class:`~halfmoon_server.clock.SystemClock`,
  :class:`~halfmoon_server.clock.ManualClock`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Protocol

from halfmoon_server.clock import Clock
from halfmoon_server.core.records import DailyDay, FinishedGame, PlayerGame, StoredGame

__all__ = [
    "Claim",
    "Clock",
    "DailyDay",
    "FinishedGame",
    "Follower",
    "Outbox",
    "PlayerGame",
    "RoomLog",
    "Storage",
    "StoredGame",
]


class Outbox(Protocol):
    """Where a connection's frames go. Neither method waits. ``room`` is the id of the room it
    is in (None: none, e.g. after a ``leave``), ``player_id`` as which player (None: watching)."""

    room: str | None
    player_id: str | None

    @property
    def closed(self) -> bool:
        """The connection is gone (or going): nothing sent now reaches anyone."""
        ...

    def send(self, frame: bytes) -> None:
        """Queue one text frame (a connection that cannot keep up is dropped, not waited for)."""

    def close(self, code: int, reason: str) -> None:
        """Close after the frames already sent, with a WebSocket close code and reason."""


class Storage(Protocol):
    """What the server needs from a database. Every method raises
    :class:`~halfmoon_server.errors.StorageError` on failure. Rankings follow
    :func:`halfmoon.protocol.ranking_key`: score, then time, then who finished first."""

    async def ping(self) -> None: ...
    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        """Store a finished game under its id (fixed up front), once: a second write changes nothing."""
    async def get_game(self, game_id: str) -> StoredGame | None: ...
    async def leaderboard_for_code(self, code: str, limit: int) -> list[StoredGame]: ...
    async def daily_leaderboard(self, day: date, limit: int) -> list[StoredGame]: ...
    async def daily_players(self, day: date) -> int:
        """How many players have a ranked attempt on ``day`` (a COUNT, not a capped list)."""
    async def games_of_room(self, room: str, limit: int) -> list[StoredGame]: ...
    async def games_of_player(self, player: str, limit: int) -> list[PlayerGame]:
        """The newest ``limit`` games stored under a player key's hash, newest first."""
        ...
    async def claim_daily_attempt(
        self, day: date, name_key: str, at: datetime, *, address: str | None = None, per_address: int = 0
    ) -> bool:
        """Record a name's attempt of the day; True when it is the ranked one: the name's first of
        the day, and (with ``per_address``) one of the first that many ranked from ``address``."""
        ...
    async def daily_code(self, day: date) -> str | None: ...
    async def save_daily_code(self, day: date, code: str, at: datetime) -> str: ...
    async def daily_days(self, before: date, limit: int) -> list[DailyDay]: ...
    async def close(self) -> None: ...


class Follower(Protocol):
    """What a :class:`RoomLog` delivers a room's entries to, on each instance that holds the room
    (the room's shell, :class:`halfmoon_server.rooms.room.Room`)."""

    @property
    def id(self) -> str:
        """The room's id."""
        ...

    @property
    def applied(self) -> int:
        """How many of the room's entries it has applied (entries 1 to ``applied``)."""
        ...

    def fenced(self) -> None:
        """Another instance owns the room now (this one's lease ran out, e.g. while the process
        was paused): nothing more is appended from here; the room must be let go and its members
        told to connect again."""

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        """The room's entry ``number``: applied if it is the next one, ignored if applied already;
        past a gap, the follower fills the gap itself (:meth:`RoomLog.catch_up`)."""

    def went_back(self) -> None:
        """The log holds fewer entries than the follower applied (it lost some): what the
        follower holds is wrong, and the room must be loaded again."""


@dataclass(frozen=True, slots=True)
class Claim:
    """Who owns a room after :meth:`RoomLog.claim`: this instance (``mine``), another one
    (``owner``, for ``ttl_ms`` more unless it renews its lease), or nobody (``owner`` None:
    there is no such live room)."""

    owner: str | None
    mine: bool = False
    ttl_ms: int = 0


class RoomLog(Protocol):
    """Where live rooms are kept: each room's header and its log of commands, numbered 1, 2, …
    and delivered in order to the room's :class:`Follower` on every instance that follows the
    room. Appending is what makes a command durable. Rooms are named by id, entries by number:
    no port knows the room's shell. Every method may raise
    :class:`~halfmoon_server.errors.LogUnavailable`."""

    #: this instance's name, unique per process start (no ``:`` in it)
    instance: str

    async def create(self, header: dict[str, Any]) -> bool:
        """Claim the header's room id for a new room; False when the id is taken."""
        ...

    async def append(self, room_id: str, entry: dict[str, Any]) -> int:
        """Make ``entry`` the room's next command, durably, and return its number; it is
        delivered to every follower, this instance's included, in log order (this instance's
        before this returns). A room not followed here cannot be appended to
        (:class:`~halfmoon_server.errors.LogUnavailable`, nothing appended)."""
        ...

    async def claim(self, room_id: str) -> Claim:
        """Take (or renew) the room's ownership for this instance, unless another instance's
        lease on it is live. Only the owner may append; one log of one process owns every room."""
        ...

    async def owner(self, room_id: str) -> str | None:
        """The instance whose lease on the room is live (None: nobody's), without claiming."""
        ...

    def route(self, instance: str) -> str | None:
        """The internal URL another instance advertises, while it is heard from and was not
        found unreachable (None otherwise, and for this instance)."""
        ...

    def unreachable(self, instance: str) -> None:
        """A connection to ``instance`` failed: :meth:`route` gives no URL for it for a while."""

    async def adopt(self) -> list[str]:
        """Rooms whose owner stopped being heard from and whose lease ran out: a surviving
        instance takes them over (:meth:`claim`, then loads them)."""
        ...

    async def catch_up(self, room_id: str) -> None:
        """Deliver to the room's follower here the entries after the ones it has applied."""

    async def load(self, room_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """A room's header and every entry so far; None when there is no such room."""
        ...

    def follow(self, follower: Follower) -> None:
        """Deliver the room's new entries to ``follower`` from now on (it replaces the room's
        follower here, if any)."""

    def unfollow(self, room_id: str) -> None:
        """Stop delivering the room's entries here."""

    async def room_ids(self) -> list[str]:
        """The rooms this log holds (at start-up, the embedded server rebuilds them all)."""
        ...

    async def forget(self, room_id: str) -> None:
        """The room is over and dropped: its log may go."""

    async def due(self, now: int) -> list[str]:
        """Rooms that need a look at ``now`` (a deadline, or staleness) that no instance may hold."""
        ...

    async def wake(self, room_id: str, at: int | None) -> None:
        """When ``room_id`` next needs a look (None: never again)."""

    def alive(self, instance: str) -> bool:
        """Whether an instance is still running (its players are still connected to it)."""
        ...

    async def ping(self) -> None:
        """Return once the log answers a trivial request (``/readyz``); raise
        :class:`~halfmoon_server.errors.LogUnavailable` when it cannot. Bounded by the log's own
        timeouts; callers bound it further as they need."""

    async def close(self) -> None: ...
