"""Storage in SQL: :class:`SqlStorage` implements :class:`halfmoon_server.ports.Storage` on
SQLAlchemy 2 async (SQLite through aiosqlite, PostgreSQL through asyncpg); :func:`migrate` brings
the schema to the newest Alembic revision; :func:`open_storage` picks the implementation a URL
names (``memory://`` is :class:`~halfmoon_server.adapters.memory_storage.MemoryStorage`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection as SyncConnection
from sqlalchemy import bindparam, delete, event, func, insert, or_, select, text, update
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.adapters.models import (
    AccountPlayerRow,
    DailyAttemptRow,
    DailyChallengeRow,
    GameRow,
    RatedRaceRow,
    RatingHistoryRow,
    RatingRow,
)
from halfmoon_server.adapters.private_files import private_sqlite_file
from halfmoon_server.core.names import name_key
from halfmoon_server.core.rating import (
    DUE,
    NOT_RATED,
    PROVISIONAL_GAMES,
    RATED,
    Rated,
    RatedGame,
    Seat,
    Skill,
    as_identities,
    complete_races,
    identities,
    rate_race,
    rateable,
)
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import DailyDay, FinishedGame, PlayerGame, Storage, StoredGame

__all__ = ["FinishedGame", "MemoryStorage", "SqlStorage", "StoredGame", "migrate", "open_storage"]

log = logging.getLogger("halfmoon_server.storage")

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
T = TypeVar("T")


def alembic_config(connection: SyncConnection | None = None) -> Config:
    """The programmatic Alembic configuration (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _upgrade(connection: SyncConnection) -> None:
    command.upgrade(alembic_config(connection), "head")


def _database_errors() -> tuple[type[Exception], ...]:
    """What a database call may raise when the database fails: SQLAlchemy's errors, the
    operating system's, and the asyncpg driver's own (installed with the ``postgres`` extra) —
    the lowest SQLAlchemy this package allows lets asyncpg's connection errors through unwrapped
    when a connection drops while being set up (its JSON codecs are registered on connect)."""
    errors: list[type[Exception]] = [SQLAlchemyError, OSError]
    try:
        from asyncpg.exceptions import InterfaceError, PostgresError  # type: ignore[import-untyped]
    except ImportError:  # (SQLite only)
        return tuple(errors)
    return (*errors, PostgresError, InterfaceError)


DATABASE_ERRORS = _database_errors()


#: The PostgreSQL advisory lock that makes instances starting together migrate one at a time.
MIGRATION_LOCK = 0x68616C66  # "half"


async def migrate(engine: AsyncEngine) -> None:
    """Upgrade the schema to the newest revision. Raises :class:`StorageError` on failure.

    On PostgreSQL the upgrade holds a transaction-level advisory lock: several instances started
    at once on an empty database wait for each other, and the later ones find the schema built."""
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            await conn.run_sync(_upgrade)
    except DATABASE_ERRORS as exc:
        raise StorageError(f"cannot migrate the database: {exc}") from exc


#: The PostgreSQL advisory lock the ratings job holds for a pass: one instance rates at a time.
RATING_LOCK = 0x68616C72  # "halr"

#: How long a database call may take by default (``--db-timeout``, :attr:`Settings.db_timeout_s`).
DEFAULT_TIMEOUT_S = 3.0


def _without_password(url: str) -> str:
    """The URL for an error message: its password hidden, and one that does not parse (a typo,
    ``postgresql+asyncpg//u:PASSWORD@h/db``) not quoted at all — it may hold the password."""
    try:
        return repr(make_url(url).render_as_string(hide_password=True))
    except (SQLAlchemyError, ValueError):
        return "(a URL that does not parse)"


def make_engine(
    url: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    command_timeout: bool = True,
    synchronous: str = "normal",
    **kwargs: Any,
) -> AsyncEngine:
    """An async engine for a SQLAlchemy URL; creates the SQLite file's directory if needed.

    Every connection attempt gives up after ``timeout_s`` (PostgreSQL's connect timeout, SQLite's
    busy timeout, the pool's wait for a free connection); with ``command_timeout`` every
    PostgreSQL statement does too (off for migrations, which may legitimately run long). Server
    connections are pinged before use (a SQLite file's cannot drop, so they are not), and every
    connection is recycled after errors (:func:`recycle_after_errors`), so a database that comes
    back is used at once. A SQLite file writes ahead (:func:`sqlite_wal`) with ``synchronous``
    ``normal`` or ``full`` (``--journal-sync``, as the room journal).

    Raises :class:`StorageError` for a URL SQLAlchemy cannot use.
    """
    try:
        options: dict[str, Any] = {}
        if url.startswith("sqlite"):
            path = url.split(":///", 1)[1] if ":///" in url else ""
            if path and path != ":memory:":
                private_sqlite_file(Path(path.split("?", 1)[0]))  # daily codes, games of races still on: owner-only
                options["pool_timeout"] = timeout_s  # a file's pool is a queue (memory's is one connection)
            options["connect_args"] = {"timeout": timeout_s}
        else:
            options.update(pool_pre_ping=True, pool_timeout=timeout_s)
            if url.startswith("postgresql+asyncpg"):
                connect_args: dict[str, Any] = {"timeout": timeout_s}
                if command_timeout:
                    connect_args["command_timeout"] = timeout_s
                options["connect_args"] = connect_args
        # hide_parameters: a failed write's error names no value (no deal code or salt in a log line)
        engine = create_async_engine(url, hide_parameters=True, **{**options, **kwargs})
    except (SQLAlchemyError, ImportError, ValueError, OSError) as exc:
        raise StorageError(f"cannot use database {_without_password(url)}: {exc}") from exc
    event.listen(engine.sync_engine, "handle_error", recycle_after_errors)
    if url.startswith("sqlite"):
        event.listen(engine.sync_engine, "connect", functools.partial(sqlite_wal, synchronous=synchronous))
    return engine


#: SQLite errors after which a connection cannot be trusted again: one opened while the file was
#: read-only stays read-only for good, even once the file is writable again.
_SQLITE_BROKEN = ("readonly database", "read-only", "disk i/o error", "unable to open database file")


def is_read_only(exc: BaseException) -> bool:
    """Whether a database error says the file could not be written (SQLITE_READONLY): nothing
    was written, so the write may be tried again on a fresh connection."""
    return isinstance(exc, OperationalError) and "readonly database" in str(exc.orig).lower()


def recycle_after_errors(context: ExceptionContext) -> None:
    """SQLAlchemy's ``handle_error`` hook: after an OperationalError, take the connection (and
    every connection opened before it) out of the pool, as after a lost connection — except
    SQLite's "database is locked", after which the connection is fine. SQLAlchemy already does
    this for the errors its dialects know as disconnects; a read-only SQLite file is not one of
    them, and the connections it left read-only lost results long after the file was writable."""
    error = context.sqlalchemy_exception
    if not isinstance(error, OperationalError) or context.is_disconnect:
        return
    message = str(error.orig).lower()
    if context.dialect.name == "sqlite":
        if any(sign in message for sign in _SQLITE_BROKEN):
            context.is_disconnect = True
    elif "lock" not in message:
        context.is_disconnect = True


def sqlite_wal(dbapi_connection: Any, _record: Any, *, synchronous: str = "normal") -> None:
    """SQLAlchemy's ``connect`` hook for SQLite: write-ahead logging with ``synchronous=NORMAL``
    (as the room journal): a commit is one append to the log, not a rollback journal written,
    synced and deleted (``journal_mode=delete``/``synchronous=FULL``, about 2 ms of CPU a game);
    readers never wait for the writer. A commit survives the process being killed; a power
    cut may lose the last ones (the room journal's default durability too); ``synchronous="full"``
    survives a power cut too, at a sync per commit."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={'FULL' if synchronous.lower() == 'full' else 'NORMAL'}")
    cursor.close()


def _stored(row: GameRow) -> StoredGame:
    return StoredGame(
        id=row.id,
        nickname=row.nickname,
        code=row.code,
        mode=row.mode,
        room=row.room,
        score=row.score,
        moves=row.moves,
        time_ms=row.time_ms,
        outcome=row.outcome,
        record=row.record,
        ranked=row.ranked,
        daily_date=row.daily_date,
        finished_at=row.finished_at,
        salt=row.salt,
        player=row.player,
        seal=row.seal,
        unranked_reason=row.unranked_reason,
        seats=row.seats,
    )


#: How many values one ``IN (…)`` of the ratings job carries.
_CHUNK = 500

_SEAT_COLUMNS = (
    GameRow.id,
    GameRow.room,
    GameRow.code,
    GameRow.player,
    GameRow.nickname,
    GameRow.score,
    GameRow.time_ms,
    GameRow.finished_at,
    GameRow.seats,
)


def _skill(mu: float, sigma: float, games: int) -> Skill:
    return Skill(float(mu), float(sigma), int(games))


def _rated_game(row: RatingHistoryRow) -> RatedGame:
    return RatedGame(
        row.game_id,
        row.player,
        row.race,
        row.place,
        _skill(row.mu_before, row.sigma_before, row.games - 1),
        _skill(row.mu_after, row.sigma_after, row.games),
        row.rated_at,
    )


class SqlStorage:
    """:class:`Storage` on any SQLAlchemy async engine.

    Every call answers within ``timeout_s``: past it, it raises :class:`StorageError` ("the
    database did not answer within N s") at once, and the call is cancelled in the background
    (its connection is thrown away) — a frozen or blackholed database never holds a request or a
    game's end longer than that."""

    def __init__(self, engine: AsyncEngine, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.engine = engine
        self.timeout_s = timeout_s
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._abandoned: set[asyncio.Task[Any]] = set()  # calls past their time, being cancelled

    async def _run(self, what: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run one database call within the time limit. A write that failed because the SQLite
        file was read-only is tried once more, on a fresh connection (the failed one was
        recycled: it may be one opened while the file was read-only). Raises
        :class:`StorageError` saying ``what`` failed."""

        async def attempt() -> T:
            try:
                return await work()
            except OperationalError as exc:
                if not is_read_only(exc):
                    raise
                log.warning("%s: the database file was read-only; trying again on a fresh connection", what)
                return await work()

        task = asyncio.get_running_loop().create_task(attempt())
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout_s)
        except asyncio.CancelledError:
            self._abandon(task)
            raise
        if not done:
            self._abandon(task)
            raise StorageError(f"{what}: the database did not answer within {self.timeout_s:g} s")
        try:
            return task.result()
        except TimeoutError:  # a connect or statement timeout of the driver's own
            raise StorageError(f"{what}: the database did not answer within {self.timeout_s:g} s") from None
        except DATABASE_ERRORS as exc:
            # its first line: a driver's message may go on with the statement, or with a traceback
            # of its own (asyncpg's, on a connection reset), which reach the logs through this
            raise StorageError(f"{what}: {_first_line(exc)}") from exc

    async def run(self, what: str, work: Callable[[], Awaitable[T]]) -> T:
        """One database call of a store kept beside this one (:mod:`halfmoon_server.adapters.accounts`),
        within the same time limit and with the same errors (:meth:`_run`)."""
        return await self._run(what, work)

    @property
    def sessions(self) -> async_sessionmaker[AsyncSession]:
        """The ORM session maker on this storage's engine (for a store kept beside this one)."""
        return self._sessions

    def _abandon(self, task: asyncio.Task[Any]) -> None:
        """Cancel a call nobody waits for any more; keep it until it has unwound (its
        connection is invalidated on the way out), and swallow what it raises."""
        task.cancel()
        self._abandoned.add(task)
        task.add_done_callback(self._unwound)

    def _unwound(self, task: asyncio.Task[Any]) -> None:
        self._abandoned.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: it failed after its caller had gone, nothing to report

    async def ping(self) -> None:
        """Return once the database answers ``SELECT 1`` — and, for a SQLite file, once the file,
        its write-ahead log and its folder (where SQLite makes its journals) can be written: a
        read-only file may answer reads while every write fails. Raises :class:`StorageError`."""

        async def select_one() -> None:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))

        await self._run("the database does not answer", select_one)
        path = self.engine.url.database if self.engine.dialect.name == "sqlite" else None
        if path and path != ":memory:" and not path.startswith("file:"):
            file = Path(path)
            for where in (file, file.with_name(f"{file.name}-wal"), file.parent):
                if where.exists() and not os.access(where, os.W_OK):
                    raise StorageError(f"the database answers, but {where} cannot be written")

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        """Store a finished game under ``game_id``, once: storing it again changes nothing."""

        async def insert() -> None:
            row = GameRow(
                id=game_id,
                nickname=game.nickname,
                name_key=name_key(game.nickname),
                code=game.code,
                mode=game.mode,
                room=game.room,
                score=game.score,
                moves=game.moves,
                time_ms=game.time_ms,
                outcome=game.outcome,
                record=game.record,
                ranked=game.ranked,
                daily_date=game.daily_date,
                finished_at=game.finished_at,
                salt=game.salt,
                player=game.player,
                undos=game.undos,
                seal=game.seal,
                unranked_reason=game.unranked_reason,
                seats=game.seats,
                rating_due=True if rateable(game) else None,
            )
            try:
                async with self._sessions.begin() as session:
                    session.add(row)
            except IntegrityError:
                async with self._sessions() as session:
                    if await session.get(GameRow, game_id) is None:  # not a second write of the same game
                        raise StorageError(f"cannot store game {game_id!r}: the database refused it") from None

        await self._run("cannot store the game", insert)

    async def save_games(self, games: Sequence[tuple[FinishedGame, str]]) -> None:
        """Store finished games (each with its id) in one transaction, through one Core
        ``INSERT … ON CONFLICT (id) DO NOTHING``: a game already stored is skipped, so storing any
        of them again changes nothing. On a database other than SQLite and PostgreSQL, one
        :meth:`save_game` each. Raises :class:`StorageError` (then none of them was stored)."""
        if not games:
            return
        dialect = self.engine.dialect.name
        if dialect not in ("sqlite", "postgresql"):
            for game, game_id in games:
                await self.save_game(game, game_id)
            return
        from sqlalchemy.dialects import postgresql, sqlite

        statement: Any = (sqlite.insert if dialect == "sqlite" else postgresql.insert)(GameRow)
        statement = statement.on_conflict_do_nothing(index_elements=[GameRow.id])
        rows = [
            {
                "id": game_id,
                "nickname": game.nickname,
                "name_key": name_key(game.nickname),
                "code": game.code,
                "mode": game.mode,
                "room": game.room,
                "score": game.score,
                "moves": game.moves,
                "time_ms": game.time_ms,
                "outcome": game.outcome,
                "record": game.record,
                "ranked": game.ranked,
                "daily_date": game.daily_date,
                "finished_at": game.finished_at,
                "salt": game.salt,
                "player": game.player,
                "undos": game.undos,
                "seal": game.seal,
                "unranked_reason": game.unranked_reason,
                "seats": game.seats,
                "rating_due": True if rateable(game) else None,
            }
            for game, game_id in games
        ]

        async def insert() -> None:
            async with self.engine.begin() as conn:
                await conn.execute(statement, rows)

        await self._run(f"cannot store {len(rows)} games", insert)

    async def get_game(self, game_id: str) -> StoredGame | None:
        async def read() -> GameRow | None:
            async with self._sessions() as session:
                return await session.get(GameRow, game_id)

        row = await self._run(f"cannot read game {game_id!r}", read)
        return None if row is None else _stored(row)

    async def _ranking(self, where: Any, limit: int) -> list[StoredGame]:
        query = (
            select(GameRow)
            .where(where)
            # halfmoon.protocol.ranking_key: score, then time, then who finished first
            .order_by(GameRow.score.desc(), GameRow.time_ms.asc(), GameRow.finished_at.asc())
            .limit(limit)
        )

        async def read() -> list[GameRow]:
            async with self._sessions() as session:
                return list((await session.scalars(query)).all())

        return [_stored(row) for row in await self._run("cannot read the leaderboard", read)]

    async def leaderboard_for_code(self, code: str, limit: int) -> list[StoredGame]:
        return await self._ranking(GameRow.code == code, limit)

    async def daily_leaderboard(self, day: date, limit: int) -> list[StoredGame]:
        return await self._ranking((GameRow.daily_date == day) & GameRow.ranked.is_(True), limit)

    async def daily_players(self, day: date) -> int:
        query = select(func.count()).select_from(GameRow).where(GameRow.daily_date == day, GameRow.ranked.is_(True))

        async def count() -> int:
            async with self._sessions() as session:
                return int((await session.execute(query)).scalar_one())

        return await self._run(f"cannot count the players of {day}", count)

    async def games_of_room(self, room: str, limit: int) -> list[StoredGame]:
        return await self._ranking(GameRow.room == room, limit)

    async def games_of_player(self, player: str, limit: int) -> list[PlayerGame]:
        """A player key hash's newest games, newest first (:meth:`games_of_players`)."""
        return await self.games_of_players([player], limit)

    async def games_of_players(self, players: list[str], limit: int) -> list[PlayerGame]:
        """The newest games of any of these player key hashes, newest first (an index read each:
        ``ix_games_player``), without their records (the undo count is a column of its own)."""
        if not players:
            return []
        c = GameRow
        query = (
            select(c.id, c.nickname, c.code, c.mode, c.room, c.score, c.moves, c.time_ms, c.outcome, c.daily_date,
                   c.finished_at, c.salt, c.undos, c.seal, c.ranked, c.unranked_reason, c.player)
            .where(c.player.in_(players))
            .order_by(c.finished_at.desc(), c.id)
            .limit(limit)
        )

        async def read() -> list[PlayerGame]:
            async with self._sessions() as session:
                rows = (await session.execute(query)).all()
            return [
                PlayerGame(
                    id=r.id,
                    nickname=r.nickname,
                    code=r.code,
                    mode=r.mode,
                    room=r.room,
                    score=r.score,
                    moves=r.moves,
                    time_ms=r.time_ms,
                    outcome=r.outcome,
                    daily_date=r.daily_date,
                    finished_at=r.finished_at,
                    record={},
                    salt=r.salt,
                    player=r.player,
                    undos=r.undos or 0,
                    seal=r.seal,
                    ranked=r.ranked,
                    unranked_reason=r.unranked_reason,
                )
                for r in rows
            ]

        return await self._run("cannot read the player's games", read)

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
        async def claim() -> bool:
            if retrying:
                found = await claimed_before()
                if found is not None:
                    await mark_looked_at()
                    return found
            try:
                async with self._sessions.begin() as session:
                    ranked = True
                    if address is not None and per_address > 0:
                        # claims from one address, one at a time: the count and the insert below
                        # are one step, or concurrent claims all count the same few and all rank
                        if self.engine.dialect.name == "postgresql":
                            await session.execute(
                                text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"daily:{day}:{address}"}
                            )
                        elif self.engine.dialect.name == "sqlite":
                            # the driver would begin the transaction at the insert only, after the
                            # count: take SQLite's write lock first (other writers wait for it,
                            # within the busy timeout; readers never do, in write-ahead mode)
                            await session.execute(text("BEGIN IMMEDIATE"))
                        query = select(func.count()).where(
                            DailyAttemptRow.day == day,
                            DailyAttemptRow.address == address,
                            DailyAttemptRow.ranked.is_(True),
                        )
                        ranked = (await session.scalar(query) or 0) < per_address
                    # the primary key (day, name) and the unique index (day, account) decide: of two
                    # claims at once for one name or one account (two devices), one insert fails
                    session.add(
                        DailyAttemptRow(
                            day=day,
                            name_key=name_key,
                            started_at=at,
                            address=address,
                            ranked=ranked,
                            account=account,
                            room=room,
                        )
                    )
            except IntegrityError:
                if retrying:  # the earlier claim, committed while this one looked (PostgreSQL)
                    found = await claimed_before()
                    if found is not None:
                        await mark_looked_at()
                        return found
                if account is not None:  # the name's attempt is taken: the account's is spent all the same
                    await spend_the_accounts()
                await mark_looked_at()
                return False
            await mark_looked_at()
            return ranked

        async def claimed_before() -> bool | None:
            # an earlier claim whose answer was lost, if it was recorded: moved to the new room in
            # one statement, so that of two retries of it one alone finds it
            same = [
                DailyAttemptRow.day == day,
                DailyAttemptRow.name_key == name_key,
                DailyAttemptRow.room.in_(retrying),
                DailyAttemptRow.looked_since.is_(False),
                DailyAttemptRow.address.is_not_distinct_from(address),
                DailyAttemptRow.account.is_not_distinct_from(account),
            ]
            statement = update(DailyAttemptRow).where(*same).values(room=room).returning(DailyAttemptRow.ranked)
            async with self._sessions.begin() as session:
                return (await session.execute(statement)).scalar_one_or_none()

        async def mark_looked_at() -> None:
            # whoever makes this claim may see the cards: no other claim of the day sharing its
            # name, address (where the address has a limit) or account is handed back after a lost
            # answer (``retrying``). Made after this claim's own insert, so a claim still committing
            # that the insert waited for (the name's key, the account's index, the address's lock)
            # is marked too.
            shared = [DailyAttemptRow.name_key == name_key]
            if address is not None and per_address > 0:  # (with no limit an address is nobody's)
                shared.append(DailyAttemptRow.address == address)
            if account is not None:
                shared.append(DailyAttemptRow.account == account)
            statement = (
                update(DailyAttemptRow)
                .where(
                    DailyAttemptRow.day == day,
                    DailyAttemptRow.looked_since.is_(False),
                    or_(*shared),
                    DailyAttemptRow.room.is_distinct_from(room),  # (this claim's own row)
                )
                .values(looked_since=True)
            )
            async with self._sessions.begin() as session:
                await session.execute(statement)

        async def spend_the_accounts() -> None:
            # an unranked attempt (its name was played today) is still the account's attempt of the
            # day: recorded under a key no name has (a name's key is case-folded), or the account's
            # device could look at the cards first and play its ranked attempt after
            try:
                async with self._sessions.begin() as session:
                    session.add(
                        DailyAttemptRow(
                            day=day,
                            name_key=f"ACCOUNT:{account}",
                            started_at=at,
                            address=address,
                            ranked=False,
                            account=account,
                            room=room,
                        )
                    )
            except IntegrityError:  # the account has an attempt of the day already
                if retrying:  # its row names a room dropped unseen: the attempt is played here now
                    moved = (
                        update(DailyAttemptRow)
                        .where(
                            DailyAttemptRow.day == day,
                            DailyAttemptRow.account == account,
                            DailyAttemptRow.room.in_(retrying),
                        )
                        .values(room=room)
                    )
                    async with self._sessions.begin() as session:
                        await session.execute(moved)

        return await self._run("cannot record the daily attempt", claim)

    async def daily_attempt_room(self, day: date, account: str) -> str | None:
        query = select(DailyAttemptRow.room).where(DailyAttemptRow.day == day, DailyAttemptRow.account == account)

        async def read() -> str | None:
            async with self._sessions() as session:
                return await session.scalar(query)

        return await self._run("cannot read the account's daily attempt", read)

    async def daily_code(self, day: date) -> str | None:
        async def read() -> str | None:
            async with self._sessions() as session:
                row = await session.get(DailyChallengeRow, day)
            return None if row is None else row.code

        return await self._run(f"cannot read the daily challenge of {day}", read)

    async def save_daily_code(self, day: date, code: str, at: datetime) -> str:
        async def insert() -> str:
            try:
                async with self._sessions.begin() as session:
                    session.add(DailyChallengeRow(day=day, code=code, created_at=at))
            except IntegrityError:
                async with self._sessions() as session:
                    row = await session.get(DailyChallengeRow, day)
                if row is None:
                    raise StorageError(f"the daily challenge of {day} vanished") from None
                return row.code
            return code

        return await self._run(f"cannot store the daily challenge of {day}", insert)

    async def daily_days(self, before: date, limit: int) -> list[DailyDay]:
        players = (
            select(GameRow.daily_date, func.count().label("n"))
            .where(GameRow.ranked.is_(True), GameRow.daily_date.is_not(None))
            .group_by(GameRow.daily_date)
            .subquery()
        )
        query = (
            select(DailyChallengeRow.day, DailyChallengeRow.code, players.c.n)
            .outerjoin(players, players.c.daily_date == DailyChallengeRow.day)
            .where(DailyChallengeRow.day < before)
            .order_by(DailyChallengeRow.day.desc())
            .limit(limit)
        )

        async def read() -> list[DailyDay]:
            async with self._sessions() as session:
                rows = (await session.execute(query)).all()
            return [DailyDay(day, code, int(n or 0)) for day, code, n in rows]

        return await self._run("cannot list the daily challenges", read)

    # -- ratings ------------------------------------------------------------------------------
    # The ratings job's pass and the rebuild run in one transaction each, under a lock (on
    # PostgreSQL an advisory lock, tried: an instance that finds it held skips its pass; on SQLite
    # the write lock, taken first): one instance rates at a time, each race once, in one order.

    async def _locked(self, conn: AsyncConnection, *, wait: bool) -> bool:
        dialect = self.engine.dialect.name
        if dialect == "postgresql":
            lock = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
            got = await conn.scalar(text(f"SELECT {lock}(:key)"), {"key": RATING_LOCK})
            return got is not False
        if dialect == "sqlite":
            await conn.execute(text("BEGIN IMMEDIATE"))
        return True

    async def _rate_pass(self, conn: AsyncConnection, now: datetime, limit: int) -> int:
        """Rate the complete races among the due games, at most ``limit``, in the rating order."""
        rows = (await conn.execute(select(*_SEAT_COLUMNS).where(GameRow.rating_due.is_not(None)))).all()
        if not rows:
            return 0
        pending = [Seat(*row) for row in rows]
        rooms = sorted({seat.room for seat in pending})
        counted = select(GameRow.room, GameRow.code, func.count()).where(GameRow.room.in_(rooms))
        counts = await conn.execute(counted.group_by(GameRow.room, GameRow.code))
        stored = {(room, code): int(n) for room, code, n in counts}
        races = complete_races(pending, stored)[:limit]
        seq = int(await conn.scalar(select(func.coalesce(func.max(RatedRaceRow.seq), 0))) or 0)
        await self._rate_races(conn, races, seq + 1, now)
        return len(races)

    async def _identities(self, conn: AsyncConnection, players: list[str]) -> dict[str, str]:
        """The identity each of ``players`` (key hashes) is rated as, for those linked to an
        account (:func:`~halfmoon_server.core.rating.identities`)."""
        link = AccountPlayerRow
        accounts: set[str] = set()
        for start in range(0, len(players), _CHUNK):
            chunk = players[start : start + _CHUNK]
            accounts.update(await conn.scalars(select(link.account_id).where(link.player.in_(chunk))))
        ordered = sorted(accounts)
        links: list[tuple[str, str, int]] = []
        for start in range(0, len(ordered), _CHUNK):
            of = link.account_id.in_(ordered[start : start + _CHUNK])
            rows = await conn.execute(select(link.player, link.account_id, link.linked_ms).where(of))
            links += [(row.player, row.account_id, int(row.linked_ms)) for row in rows]
        return identities(links)

    async def _rate_races(
        self,
        conn: AsyncConnection,
        races: list[list[Seat]],
        first: int,
        now: datetime,
        recorded: dict[str, str] | None = None,
    ) -> None:
        """Rate ``races`` in their order, numbered from ``first``: the ratings they need read at
        once, the updates made in memory race after race, then written in a few statements (the
        pass holds the write lock a few milliseconds, not a few per race). Each seat is rated as
        its identity (an account's keys as its canonical key; ``recorded``: the identities a
        rebuild's races were rated under before)."""
        if not races:
            return
        keys_of = sorted({s.player for seats in races for s in seats if s.player is not None})
        identity = await self._identities(conn, keys_of)
        races = [as_identities(seats, identity, recorded or {}) for seats in races]
        players = sorted({s.player for seats in races for s in seats if s.player is not None})
        current: dict[str, Skill] = {}
        found = select(RatingRow.player, RatingRow.mu, RatingRow.sigma, RatingRow.games)
        for start in range(0, len(players), _CHUNK):
            for row in (await conn.execute(found.where(RatingRow.player.in_(players[start : start + _CHUNK])))).all():
                current[row.player] = _skill(row.mu, row.sigma, row.games)
        known = set(current)
        latest: dict[str, dict[str, Any]] = {}
        history: list[dict[str, Any]] = []
        rated: list[dict[str, Any]] = []
        for seq, seats in enumerate(races, first):
            changes = rate_race(seats, current)
            for c in changes:
                current[c.player] = c.after
                latest[c.player] = {"player": c.player, "nickname": c.nickname, "mu": c.after.mu,
                                    "sigma": c.after.sigma, "games": c.after.games, "updated_at": now}
                history.append({"game_id": c.game_id, "player": c.player, "race": seq, "place": c.place,
                                "mu_before": c.before.mu, "sigma_before": c.before.sigma, "mu_after": c.after.mu,
                                "sigma_after": c.after.sigma, "games": c.after.games, "rated_at": now})
            rated.append({"seq": seq, "room": seats[0].room, "code": seats[0].code, "players": len(changes),
                          "rated_at": now})
        fresh = [row for player, row in latest.items() if player not in known]
        moved = [{**row, "who": row["player"]} for player, row in latest.items() if player in known]
        if fresh:
            await conn.execute(insert(RatingRow), fresh)
        if moved:
            await conn.execute(
                update(RatingRow).where(RatingRow.player == bindparam("who")).values(
                    nickname=bindparam("nickname"), mu=bindparam("mu"), sigma=bindparam("sigma"),
                    games=bindparam("games"), updated_at=bindparam("updated_at"),
                ),
                [{k: v for k, v in row.items() if k != "player"} for row in moved],
            )
        if history:
            await conn.execute(insert(RatingHistoryRow), history)
        await conn.execute(insert(RatedRaceRow), rated)
        ids = [s.game_id for seats in races for s in seats]
        for start in range(0, len(ids), _CHUNK):
            done = GameRow.id.in_(ids[start : start + _CHUNK])
            await conn.execute(update(GameRow).where(done).values(rating_due=None))

    async def rate_due(self, now: datetime, limit: int) -> int:
        """One pass of the ratings job: rate the races whose every seat is stored, oldest first
        (:func:`~halfmoon_server.core.rating.race_order`), at most ``limit``; how many were
        taken. 0 at once when another instance holds the pass (PostgreSQL)."""

        async def work() -> int:
            async with self.engine.connect() as conn, conn.begin():
                if not await self._locked(conn, wait=False):
                    return 0
                return await self._rate_pass(conn, now, limit)

        return await self._run("cannot rate the finished races", work)

    async def rebuild_ratings(self, now: datetime) -> int:
        """Rate every stored race again from the games table: the races rated before in the
        order they were, then any complete race not rated yet (as the job would). How many races
        are rated. One transaction: readers see the old ratings until it commits. (A long job on a
        large table: ``halfmoon ratings rebuild`` opens the storage with a long time limit.)"""

        async def work() -> int:
            async with self.engine.begin() as conn:
                await self._locked(conn, wait=True)
                # the identity each rated game was rated under: rated again as the same one
                recorded = {
                    row.game_id: row.player
                    for row in (await conn.execute(select(RatingHistoryRow.game_id, RatingHistoryRow.player))).all()
                }
                await conn.execute(delete(RatingHistoryRow))
                await conn.execute(delete(RatingRow))
                rated_before = select(RatedRaceRow.room, RatedRaceRow.code).order_by(RatedRaceRow.seq)
                order = (await conn.execute(rated_before)).all()
                await conn.execute(delete(RatedRaceRow))
                await conn.execute(update(GameRow).where(GameRow.rating_due.is_not(None)).values(rating_due=None))
                candidates = select(
                    GameRow.id, GameRow.mode, GameRow.ranked, GameRow.player, GameRow.seal, GameRow.salt,
                    GameRow.daily_date, GameRow.seats,
                ).where(GameRow.seats.is_not(None), GameRow.player.is_not(None), GameRow.ranked.is_(True))
                due = [
                    r.id for r in (await conn.execute(candidates)).all()
                    if rateable(FinishedGame(
                        nickname="", code="", mode=r.mode, room="", score=0, moves=0, time_ms=0, outcome="",
                        record={}, ranked=r.ranked, daily_date=r.daily_date, finished_at=now, salt=r.salt,
                        player=r.player, seal=r.seal, seats=r.seats,
                    ))
                ]
                for start in range(0, len(due), 500):
                    chunk = due[start : start + 500]
                    await conn.execute(update(GameRow).where(GameRow.id.in_(chunk)).values(rating_due=True))
                again: list[list[Seat]] = []
                for room, code in order:  # the races rated before, in the order they were
                    of_race = (GameRow.room == room) & (GameRow.code == code)
                    rows = await conn.execute(select(*_SEAT_COLUMNS).where(of_race, GameRow.rating_due.is_not(None)))
                    stored = int(await conn.scalar(select(func.count()).where(of_race)) or 0)
                    again += complete_races([Seat(*r) for r in rows], {(room, code): stored})
                await self._rate_races(conn, again, 1, now, recorded)
                while await self._rate_pass(conn, now, 1000):
                    pass
                return int(await conn.scalar(select(func.count()).select_from(RatedRaceRow)) or 0)

        return await self._run("cannot rebuild the ratings", work)

    async def rating_board(self, limit: int, *, provisional: bool = False) -> list[Rated]:
        """The best ratings, best first (by μ − 3σ, then the identity's hash); only the
        non-provisional ones unless ``provisional``."""
        r = RatingRow
        query = select(r.player, r.nickname, r.mu, r.sigma, r.games)
        if not provisional:
            query = query.where(r.games >= PROVISIONAL_GAMES)
        query = query.order_by((r.mu - 3 * r.sigma).desc(), r.player).limit(limit)

        async def read() -> list[Rated]:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(query)).all()
            return [Rated(row.player, row.nickname, _skill(row.mu, row.sigma, row.games)) for row in rows]

        return await self._run("cannot read the ratings", read)

    async def player_rating(self, player: str, limit: int) -> tuple[Rated | None, list[RatedGame]]:
        """An identity's rating (None: never rated) and its newest ``limit`` changes, newest first;
        a key linked to an account: the account's (its canonical key's)."""

        async def read() -> tuple[Rated | None, list[RatedGame]]:
            async with self.engine.connect() as conn:
                identity = (await self._identities(conn, [player])).get(player, player)
            async with self._sessions() as session:
                row = await session.get(RatingRow, identity)
                history = await session.scalars(
                    select(RatingHistoryRow)
                    .where(RatingHistoryRow.player == identity)
                    .order_by(RatingHistoryRow.race.desc())
                    .limit(limit)
                )
                rated = None if row is None else Rated(row.player, row.nickname, _skill(row.mu, row.sigma, row.games))
                return rated, [_rated_game(h) for h in history]

        return await self._run("cannot read the player's rating", read)

    async def game_rating(self, game_id: str) -> tuple[str, RatedGame | None]:
        """Whether a game moved its player's rating (:data:`~halfmoon_server.core.rating.RATED`,
        with the change), waits for the ratings job (``DUE``) or is not rated (``NOT_RATED``).

        Two reads, each seeing what is committed when it runs (a job's pass may commit between
        them): whether the game waits, *then* its rating. A pass writes the rating and clears the
        wait in one transaction, so a game that no longer waited at the first read has its rating
        at the second if it ever will; read the other way round, a pass between the two would
        leave neither, and a rated game would read as not rated (the end screen stops asking)."""

        async def read() -> tuple[str, RatedGame | None]:
            async with self._sessions() as session:
                due = await session.scalar(select(GameRow.rating_due).where(GameRow.id == game_id))
                row = await session.get(RatingHistoryRow, game_id)
                if row is not None:
                    return RATED, _rated_game(row)
                return (DUE if due else NOT_RATED), None

        return await self._run("cannot read the game's rating", read)

    async def close(self) -> None:
        """Let calls past their time unwind, then close every connection (each step bounded:
        a blackholed database does not hold the shutdown)."""
        if self._abandoned:
            await asyncio.wait(set(self._abandoned), timeout=self.timeout_s)
        try:
            async with asyncio.timeout(self.timeout_s):
                await self.engine.dispose()
        except TimeoutError:
            log.warning("the database did not let its connections close within %g s", self.timeout_s)


MEMORY_URL = "memory://"


async def open_storage(url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, synchronous: str = "normal") -> Storage:
    """The storage a URL names, ready to use: ``memory://`` (nothing kept past the process), or a
    SQLAlchemy async URL (migrated to the newest revision), each call answering within
    ``timeout_s``. Raises :class:`StorageError`."""
    if url == MEMORY_URL:
        return MemoryStorage()
    engine = make_engine(url, timeout_s=timeout_s, synchronous=synchronous)
    # PostgreSQL migrates on an engine of its own, without the statement timeout (building an
    # index on a large table, or waiting for another instance's migration, may take longer)
    postgres = engine.dialect.name == "postgresql"
    migrating = make_engine(url, timeout_s=timeout_s, command_timeout=False) if postgres else engine
    try:
        await migrate(migrating)
    except StorageError:
        await engine.dispose()
        raise
    finally:
        if migrating is not engine:
            await migrating.dispose()
    return SqlStorage(engine, timeout_s=timeout_s)


def _first_line(exc: BaseException) -> str:
    """The first line of what an exception says (its type's name when it says nothing)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
