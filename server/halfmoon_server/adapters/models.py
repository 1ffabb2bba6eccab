"""The database tables, as SQLAlchemy 2 ORM classes. The schema itself is created and upgraded
only by the Alembic migrations in ``halfmoon_server/adapters/migrations``; these classes mirror it."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
    text,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class GameRow(Base):
    """One finished game (race, solo or daily): who, which deal, how it went, and its record."""

    __tablename__ = "games"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    nickname: Mapped[str] = mapped_column(String(40))
    name_key: Mapped[str] = mapped_column(String(40))
    #: a long code (a sealed race's, a daily's) is 37 characters (0006)
    code: Mapped[str] = mapped_column(String(40))
    mode: Mapped[str] = mapped_column(String(8))
    room: Mapped[str] = mapped_column(String(8))
    score: Mapped[int] = mapped_column(Integer)
    moves: Mapped[int] = mapped_column(Integer)
    time_ms: Mapped[int] = mapped_column(BigInteger)
    outcome: Mapped[str] = mapped_column(String(16))
    record: Mapped[dict[str, Any]] = mapped_column(JSON)
    ranked: Mapped[bool] = mapped_column(Boolean)
    daily_date: Mapped[date | None] = mapped_column(Date, nullable=True)
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: what opens the commitment of the game's deal with its code: a daily attempt's salt, or a
    #: sealed race's of the previous release
    salt: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: a sealed race's seed and contributions, ``{"seed", "contributions"}`` (0006); none is SQL
    #: NULL (rows stored before 0007 may hold the JSON null instead: read back as None too)
    seal: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    #: the SHA-256 (hex) of the player's key, never the key: their history's games (0005)
    player: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: how many undos the record holds (0005; None: stored before it)
    undos: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: why the game is not ranked (0007: ``casual``, ``daily_retry``, ``bot``, ``too_fast``;
    #: None while ``ranked``)
    unranked_reason: Mapped[str | None] = mapped_column(String(16), nullable=True)
    #: how many seats (games) the game's race has (0008; None: not told)
    seats: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: True while a rateable game waits for the ratings job (0008; None: not rateable, or rated):
    #: the job reads the due games through a partial index that holds only these
    rating_due: Mapped[bool | None] = mapped_column(Boolean, nullable=True)

    __table_args__ = (
        # the leaderboards' exact order (score DESC, time_ms, finished_at): an index read (0004)
        Index("ix_games_code_board", "code", text("score DESC"), "time_ms", "finished_at"),
        Index("ix_games_daily_board", "daily_date", "ranked", text("score DESC"), "time_ms", "finished_at"),
        Index("ix_games_room", "room"),
        Index("ix_games_player", "player", "finished_at"),
        Index(
            "ix_games_rating_due",
            "rating_due",
            sqlite_where=text("rating_due IS NOT NULL"),
            postgresql_where=text("rating_due IS NOT NULL"),
        ),
    )


class DailyChallengeRow(Base):
    """The deal chosen for one UTC day (fixed once chosen, whatever later settings say)."""

    __tablename__ = "daily_challenges"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    code: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class DailyAttemptRow(Base):
    """A nickname's first attempt of a UTC day (the ranked one), and an account's (0010)."""

    __tablename__ = "daily_attempts"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    name_key: Mapped[str] = mapped_column(String(40), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: the client's address, hashed with the daily secret (a limit per address, no address kept)
    address: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: whether the attempt is the ranked one (an attempt over the address's limit is not)
    ranked: Mapped[bool] = mapped_column(Boolean, default=True)
    #: the account of the player key (or signed-in device) that started it (0010): one a day each
    account: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: the room it is played in (0010): another signed-in device of the account resumes it there
    room: Mapped[str | None] = mapped_column(String(16), nullable=True)
    #: a later claim of the day shared its name, address or account (0011): whoever made it may
    #: have seen the cards, so a lost answer to this claim is no longer handed back ranked
    looked_since: Mapped[bool] = mapped_column(Boolean, default=False, server_default=true())

    __table_args__ = (Index("uq_daily_attempts_account", "day", "account", unique=True),)


class RatingRow(Base):
    """An identity's current rating (0008): the model's μ and σ and how many rated races moved it
    (:mod:`halfmoon_server.core.rating`)."""

    __tablename__ = "ratings"

    #: the SHA-256 (hex) of the player's key
    player: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: the name of its latest rated game
    nickname: Mapped[str] = mapped_column(String(40))
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RatingHistoryRow(Base):
    """One identity's rating before and after one rated race, by its game in it (0008)."""

    __tablename__ = "rating_history"

    game_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    player: Mapped[str] = mapped_column(String(64))
    #: the rated race's number (:class:`RatedRaceRow`)
    race: Mapped[int] = mapped_column(Integer)
    place: Mapped[int] = mapped_column(Integer)
    mu_before: Mapped[float] = mapped_column(Float)
    sigma_before: Mapped[float] = mapped_column(Float)
    mu_after: Mapped[float] = mapped_column(Float)
    sigma_after: Mapped[float] = mapped_column(Float)
    #: rated races after this one
    games: Mapped[int] = mapped_column(Integer)
    rated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_rating_history_player", "player", "race"),)


class RatedRaceRow(Base):
    """A race the ratings job has taken, numbered in the order it was rated (0008): a race is
    rated once, and a rebuild rates them again in this order."""

    __tablename__ = "rated_races"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    room: Mapped[str] = mapped_column(String(8))
    code: Mapped[str] = mapped_column(String(40))
    #: how many identities it moved (0: fewer than two carried weight)
    players: Mapped[int] = mapped_column(Integer)
    rated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (UniqueConstraint("room", "code", name="uq_rated_races_race"),)


class AccountRow(Base):
    """An account (0009): no password, no e-mail; its name is reserved by its skeleton."""

    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    name_key: Mapped[str] = mapped_column(String(40), unique=True)
    created_ms: Mapped[int] = mapped_column(BigInteger)


class PasskeyRow(Base):
    """A WebAuthn credential of an account (0009): its id is the browser's base64url credential id."""

    __tablename__ = "passkeys"

    id: Mapped[str] = mapped_column(String(1400), primary_key=True)
    account_id: Mapped[str] = mapped_column(String(32), index=True)
    public_key: Mapped[bytes] = mapped_column(LargeBinary)
    sign_count: Mapped[int] = mapped_column(BigInteger)
    label: Mapped[str] = mapped_column(String(64))
    created_ms: Mapped[int] = mapped_column(BigInteger)
    used_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class AccountPlayerRow(Base):
    """A player key's hash linked to an account (0009): its games are the account's history."""

    __tablename__ = "account_players"

    player: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(String(32), index=True)
    linked_ms: Mapped[int] = mapped_column(BigInteger)


class AccountSessionRow(Base):
    """A signed-in device (0009), found by the SHA-256 of its cookie's secret; ``id`` is public."""

    __tablename__ = "account_sessions"

    secret_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    id: Mapped[str] = mapped_column(String(32), unique=True)
    account_id: Mapped[str] = mapped_column(String(32), index=True)
    passkey: Mapped[str | None] = mapped_column(String(1400), nullable=True, index=True)
    player: Mapped[str | None] = mapped_column(String(64), nullable=True)
    label: Mapped[str] = mapped_column(String(64))
    created_ms: Mapped[int] = mapped_column(BigInteger)
    expires_ms: Mapped[int] = mapped_column(BigInteger)


class AccountTokenRow(Base):
    """A one-time token (0009): a ceremony's challenge or a device link, by the SHA-256 of its id."""

    __tablename__ = "account_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    purpose: Mapped[str] = mapped_column(String(8))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    expires_ms: Mapped[int] = mapped_column(BigInteger, index=True)
