"""Storage in SQL: :class:`SqlStorage` implements :class:`halfmoon_server.ports.Storage` on
SQLAlchemy 2 async (SQLite through aiosqlite, PostgreSQL through asyncpg); :func:`migrate` brings
the schema to the newest Alembic revision; :func:`open_storage` picks the implementation a URL
names (``memory://`` is :class:`~halfmoon_server.memory_storage.MemoryStorage`).
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection as SyncConnection
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from halfmoon_server.errors import StorageError
from halfmoon_server.memory_storage import MemoryStorage
from halfmoon_server.models import DailyAttemptRow, DailyChallengeRow, GameRow
from halfmoon_server.names import name_key
from halfmoon_server.ports import DailyDay, FinishedGame, Storage, StoredGame

__all__ = ["FinishedGame", "MemoryStorage", "SqlStorage", "StoredGame", "migrate", "open_storage"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(connection: SyncConnection | None = None) -> Config:
    """The programmatic Alembic configuration (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _upgrade(connection: SyncConnection) -> None:
    command.upgrade(alembic_config(connection), "head")


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
    except (SQLAlchemyError, OSError) as exc:
        raise StorageError(f"cannot migrate the database: {exc}") from exc


def make_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An async engine for a SQLAlchemy URL; creates the SQLite file's directory if needed.

    Raises :class:`StorageError` for a URL SQLAlchemy cannot use.
    """
    try:
        if url.startswith("sqlite"):
            path = url.split(":///", 1)[1] if ":///" in url else ""
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        # hide_parameters: a failed write's error names no value (no deal code or salt in a log line)
        return create_async_engine(url, hide_parameters=True, **kwargs)
    except (SQLAlchemyError, ImportError, ValueError, OSError) as exc:
        raise StorageError(f"cannot use database {url!r}: {exc}") from exc


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
    )


class SqlStorage:
    """:class:`Storage` on any SQLAlchemy async engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def ping(self) -> None:
        try:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"the database does not answer: {exc}") from exc

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        """Store a finished game under ``game_id``, once: storing it again changes nothing."""
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
        )
        try:
            async with self._sessions.begin() as session:
                session.add(row)
        except IntegrityError:
            if await self.get_game(game_id) is None:  # not a second write of the same game
                raise StorageError(f"cannot store game {game_id!r}: the database refused it") from None
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot store the game: {exc}") from exc

    async def get_game(self, game_id: str) -> StoredGame | None:
        try:
            async with self._sessions() as session:
                row = await session.get(GameRow, game_id)
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot read game {game_id!r}: {exc}") from exc
        return None if row is None else _stored(row)

    async def _ranking(self, where: Any, limit: int) -> list[StoredGame]:
        query = (
            select(GameRow)
            .where(where)
            # halfmoon.protocol.ranking_key: score, then time, then who finished first
            .order_by(GameRow.score.desc(), GameRow.time_ms.asc(), GameRow.finished_at.asc())
            .limit(limit)
        )
        try:
            async with self._sessions() as session:
                rows = (await session.scalars(query)).all()
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot read the leaderboard: {exc}") from exc
        return [_stored(row) for row in rows]

    async def leaderboard_for_code(self, code: str, limit: int) -> list[StoredGame]:
        return await self._ranking(GameRow.code == code, limit)

    async def daily_leaderboard(self, day: date, limit: int) -> list[StoredGame]:
        return await self._ranking((GameRow.daily_date == day) & GameRow.ranked.is_(True), limit)

    async def daily_players(self, day: date) -> int:
        query = select(func.count()).select_from(GameRow).where(GameRow.daily_date == day, GameRow.ranked.is_(True))
        try:
            async with self._sessions() as session:
                return int((await session.execute(query)).scalar_one())
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot count the players of {day}: {exc}") from exc

    async def games_of_room(self, room: str, limit: int) -> list[StoredGame]:
        return await self._ranking(GameRow.room == room, limit)

    async def claim_daily_attempt(
        self, day: date, name_key: str, at: datetime, *, address: str | None = None, per_address: int = 0
    ) -> bool:
        try:
            async with self._sessions.begin() as session:
                ranked = True
                if address is not None and per_address > 0:
                    if self.engine.dialect.name == "postgresql":  # claims from one address, one at a time
                        await session.execute(
                            text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"daily:{day}:{address}"}
                        )
                    query = select(func.count()).where(
                        DailyAttemptRow.day == day,
                        DailyAttemptRow.address == address,
                        DailyAttemptRow.ranked.is_(True),
                    )
                    ranked = (await session.scalar(query) or 0) < per_address
                session.add(DailyAttemptRow(day=day, name_key=name_key, started_at=at, address=address, ranked=ranked))
        except IntegrityError:
            return False
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot record the daily attempt: {exc}") from exc
        return ranked

    async def daily_code(self, day: date) -> str | None:
        try:
            async with self._sessions() as session:
                row = await session.get(DailyChallengeRow, day)
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot read the daily challenge of {day}: {exc}") from exc
        return None if row is None else row.code

    async def save_daily_code(self, day: date, code: str, at: datetime) -> str:
        try:
            async with self._sessions.begin() as session:
                session.add(DailyChallengeRow(day=day, code=code, created_at=at))
        except IntegrityError:
            stored = await self.daily_code(day)
            if stored is None:
                raise StorageError(f"the daily challenge of {day} vanished") from None
            return stored
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot store the daily challenge of {day}: {exc}") from exc
        return code

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
        try:
            async with self._sessions() as session:
                rows = (await session.execute(query)).all()
        except (SQLAlchemyError, OSError) as exc:
            raise StorageError(f"cannot list the daily challenges: {exc}") from exc
        return [DailyDay(day, code, int(n or 0)) for day, code, n in rows]

    async def close(self) -> None:
        await self.engine.dispose()


MEMORY_URL = "memory://"


async def open_storage(url: str) -> Storage:
    """The storage a URL names, ready to use: ``memory://`` (nothing kept past the process), or a
    SQLAlchemy async URL (migrated to the newest revision). Raises :class:`StorageError`."""
    if url == MEMORY_URL:
        return MemoryStorage()
    engine = make_engine(url)
    try:
        await migrate(engine)
    except StorageError:
        await engine.dispose()
        raise
    return SqlStorage(engine)
