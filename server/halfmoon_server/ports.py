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
- :class:`LiveList` — the public races in play, as strangers may see them (``GET /api/live``):
  each room's instance puts its summary and drops it, the API reads the list
  (:class:`halfmoon_server.adapters.live_list.MemoryLiveList` for one process,
  :class:`halfmoon_server.adapters.live_list.RedisLiveList` shared by a cluster).
- :class:`Accounts` — optional accounts: passkeys, linked player keys, sessions, one-time tokens
  (:class:`halfmoon_server.adapters.accounts.SqlAccounts` beside the SQL storage,
  :class:`halfmoon_server.adapters.accounts.MemoryAccounts`; :func:`halfmoon_server.adapters.accounts.accounts_for`).
- :class:`QueueStore` — the quick-race queue a cluster's instances share
  (:class:`halfmoon_server.adapters.redis_queue.RedisQueue`; the embedded server keeps its queue
  in the process, :mod:`halfmoon_server.rooms.quick`).
- :class:`~halfmoon_server.clock.Clock` — the time (:class:`~halfmoon_server.clock.SystemClock`,
  :class:`~halfmoon_server.clock.ManualClock`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from halfmoon_server.clock import Clock
from halfmoon_server.core.accounts import Account, Passkey, Session
from halfmoon_server.core.queue import Waiting
from halfmoon_server.core.rating import Rated, RatedGame
from halfmoon_server.core.records import DailyDay, FinishedGame, PlayerGame, StoredGame

__all__ = [
    "Account",
    "Accounts",
    "Claim",
    "Clock",
    "DailyDay",
    "FinishedGame",
    "Follower",
    "LiveList",
    "LoadedRoom",
    "Outbox",
    "Passkey",
    "PlayerGame",
    "QueueStore",
    "RoomLog",
    "Session",
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
    async def games_of_players(self, players: list[str], limit: int) -> list[PlayerGame]:
        """The newest ``limit`` games stored under any of these player key hashes (an account's),
        newest first."""
        ...

    async def claim_daily_attempt(
        self,
        day: date,
        name_key: str,
        at: datetime,
        *,
        address: str | None = None,
        per_address: int = 0,
        account: str | None = None,
        room: str | None = None,
        retrying: tuple[str, ...] = (),
    ) -> bool:
        """Record a name's attempt of the day; True when it is the ranked one: the name's first of
        the day, (with ``account``) the account's first of the day, and (with ``per_address``) one
        of the first that many ranked from ``address``. One step: of two claims at once for one
        name or one account, one alone is ranked. An account's first attempt of the day is its
        attempt even when it is not ranked (its name was played today): no later one is ranked.
        ``room``: where the attempt is played (found again by :meth:`daily_attempt_room`).
        ``retrying``: the rooms of earlier claims of this name, address and account whose answers
        were lost (the caller dropped those rooms before anybody saw a card of them); if one of
        them was recorded and no claim of the day sharing its name, address or account was made
        since (whoever made it may have seen the cards), it is this claim — moved to ``room``,
        ranked as it was — once: of two retries of one claim, one alone finds it."""
        ...

    async def daily_attempt_room(self, day: date, account: str) -> str | None:
        """The room of ``account``'s attempt of ``day`` (None: it has none)."""
        ...

    async def daily_code(self, day: date) -> str | None: ...
    async def save_daily_code(self, day: date, code: str, at: datetime) -> str: ...
    async def daily_days(self, before: date, limit: int) -> list[DailyDay]: ...
    async def rate_due(self, now: datetime, limit: int) -> int:
        """One pass of the ratings job (:mod:`halfmoon_server.core.rating`): rate the stored races
        whose every seat is stored and that no pass rated, in the rating order, at most ``limit``;
        how many it took. Never on the way of a game being stored (a job of its own)."""
        ...
    async def rebuild_ratings(self, now: datetime) -> int:
        """Rate every stored race again, from the games (the races rated before in the order they
        were, then the rest as the job would): the same numbers as the job's. How many races."""
        ...
    async def rating_board(self, limit: int, *, provisional: bool = False) -> list[Rated]:
        """The best ratings, best first; the provisional ones only with ``provisional``."""
        ...
    async def player_rating(self, player: str, limit: int) -> tuple[Rated | None, list[RatedGame]]:
        """An identity's rating (None: never rated) and its newest ``limit`` changes, newest first."""
        ...
    async def game_rating(self, game_id: str) -> tuple[str, RatedGame | None]:
        """``rated`` (with the change), ``due`` (the job has not come to it) or ``not_rated``."""
        ...
    async def close(self) -> None: ...


class Accounts(Protocol):
    """Optional accounts (:mod:`halfmoon_server.core.accounts`). Times are ms of the injected
    clock; secrets are looked up by their hash only. Every method raises
    :class:`~halfmoon_server.errors.StorageError` on failure."""

    async def put_token(self, token_hash: str, purpose: str, data: dict[str, Any], expires_ms: int) -> None:
        """Keep a one-time token (a ceremony's challenge, a device link) until ``expires_ms``."""
    async def take_token(self, token_hash: str, purpose: str, now_ms: int) -> dict[str, Any] | None:
        """The token's data, once: it is gone after this call whatever it answers. None: no such
        token for that purpose, or it expired. Two calls at once: only one gets the data."""
        ...
    async def create_account(self, account: Account, passkey: Passkey) -> bool:
        """Make the account with its first passkey; False (nothing made) when another account holds
        the name (by ``name_key``)."""
        ...
    async def account(self, account_id: str) -> Account | None: ...
    async def account_of_name(self, name_key: str) -> Account | None: ...
    async def add_passkey(self, passkey: Passkey) -> None: ...
    async def passkey(self, credential_id: str) -> Passkey | None: ...
    async def passkeys_of(self, account_id: str) -> list[Passkey]: ...
    async def passkey_used(self, credential_id: str, sign_count: int, at_ms: int) -> None: ...
    async def revoke_passkey(self, account_id: str, credential_id: str) -> bool:
        """Remove the account's passkey and end every session it signed in; False: no such passkey
        of that account (nothing changed)."""
        ...
    async def link_player(self, account_id: str, player: str, at_ms: int) -> bool:
        """Link a player key hash to the account (again: nothing changes); False when another
        account holds it (nothing changes)."""
        ...
    async def players_of(self, account_id: str) -> list[str]: ...
    async def account_of_player(self, player: str) -> str | None:
        """The id of the account a player key hash is linked to (None: none)."""
        ...
    async def add_session(self, session: Session) -> None: ...
    async def session(self, secret_hash: str, now_ms: int) -> Session | None:
        """The unexpired session whose secret hashes to ``secret_hash``."""
        ...
    async def sessions_of(self, account_id: str, now_ms: int) -> list[Session]: ...
    async def end_session(self, account_id: str, session_id: str) -> bool:
        """End the account's session by its public id; False: no such session of that account."""
        ...


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
class LoadedRoom:
    """A room as :meth:`RoomLog.load` reads it: its header, its latest snapshot (None: none, or
    not asked for) and the entries after it — numbered ``base + 1``, ``base + 2``, … where
    ``base`` is how many entries the snapshot covers (0 without one: every entry)."""

    header: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    snapshot: dict[str, Any] | None = None
    base: int = 0


class QueueStore(Protocol):
    """The quick-race queue shared by a cluster's instances: every waiting player (the hash of
    their key) with the ``holder`` that queued them (``instance:serial``), one lock for the
    instance that seats the matched groups, and the notes it leaves each matched player for their
    instance to hand over. Every method may raise :class:`~halfmoon_server.errors.LogUnavailable`."""

    async def beat(self, instance: str, ttl_ms: int) -> None:
        """``instance`` (the first part of its holders) is alive for the next ``ttl_ms``: the places
        of an instance that stopped saying so are left out, and taken over by a new ``join``."""
        ...

    async def join(self, entry: Waiting, holder: str) -> str | None:
        """Put ``entry`` in under ``holder``: None, or the holder already holding that player."""
        ...

    async def keep(self, entry: Waiting, holder: str) -> None: ...
    async def leave(self, player: str, holder: str) -> None:
        """Take the player out, if ``holder`` still holds their place."""
        ...

    async def waiting(self) -> list[tuple[Waiting, str]]:
        """Every place of an instance alive, with its holder."""
        ...
    async def claim(self, owner: str, ttl_ms: int) -> bool:
        """Whether ``owner`` holds the matching lock for the next ``ttl_ms`` (taken or renewed)."""
        ...

    async def seat(self, notes: dict[str, dict[str, Any]]) -> None:
        """The matched players out of the queue, each with their note (player → note)."""
        ...

    async def matched(self, players: list[str]) -> dict[str, dict[str, Any]]:
        """The notes left for these players (each handed over once)."""
        ...


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

    async def create(self, header: dict[str, Any], *, own: bool = True) -> bool:
        """Claim the header's room id for a new room; False when the id is taken. ``own``: this
        instance owns it from now on (a cluster); False: nobody does until an instance claims it
        (a room made for players connected elsewhere). One process owns every room anyway."""
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

    def shared_reads(self) -> int | None:
        """The newest room log format every instance sharing this log reads, as far as it is
        known (None: no other instance reads it). A new room's log is written in no newer one, so
        that during a rolling upgrade an instance of the earlier release can still take it over."""
        ...

    async def adopt(self) -> list[str]:
        """Rooms whose owner stopped being heard from and whose lease ran out: a surviving
        instance takes them over (:meth:`claim`, then loads them)."""
        ...

    async def catch_up(self, room_id: str) -> None:
        """Deliver to the room's follower here the entries after the ones it has applied."""

    async def load(self, room_id: str, *, snapshot: bool = True) -> LoadedRoom | None:
        """A room's header, its latest snapshot and only the entries after it (``snapshot``
        False: no snapshot, every entry from the first); None when there is no such room. In one
        read: the snapshot and the entries agree."""
        ...

    async def save_snapshot(self, room_id: str, number: int, snapshot: dict[str, Any]) -> None:
        """Keep ``snapshot``, the room's state after its entry ``number``, beside its log (in
        place of an older one; an older one than the one kept is dropped). Loads start from it."""

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


class LiveList(Protocol):
    """The live list: the public races in play, by room id, each with the summary a stranger may
    see (:func:`halfmoon_server.core.live.live_summary`). Every instance that holds a listed room
    in play puts its summary (again whenever it changes, and at least every ``ttl_ms / 3``), and
    drops it once the race is over; an entry not put again within ``ttl_ms`` is gone (its
    instances died). Every method may raise :class:`~halfmoon_server.errors.LogUnavailable`."""

    #: how long an entry lasts without being put again (ms)
    ttl_ms: int

    async def put(self, room_id: str, summary: dict[str, Any]) -> None:
        """List ``room_id`` with ``summary`` for the next ``ttl_ms``."""

    async def drop(self, room_id: str) -> None:
        """Take ``room_id`` off the list (its race is over); nothing if it is not on it."""

    async def races(self, limit: int) -> list[dict[str, Any]]:
        """The summaries listed now (not expired), at most ``limit`` of them, in no given order."""
        ...

    async def close(self) -> None: ...
