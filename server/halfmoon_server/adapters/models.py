"""The database tables, as SQLAlchemy 2 ORM classes. The schema itself is created and upgraded
only by the Alembic migrations in ``halfmoon_server/adapters/migrations``; these classes mirror it."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Date, DateTime, Double, Index, Integer, String, text
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
    #: how many racers its race had (0008; None: stored before it, never rated)
    racers: Mapped[int | None] = mapped_column(Integer, nullable=True)

    __table_args__ = (
        # the leaderboards' exact order (score DESC, time_ms, finished_at): an index read (0004)
        Index("ix_games_code_board", "code", text("score DESC"), "time_ms", "finished_at"),
        Index("ix_games_daily_board", "daily_date", "ranked", text("score DESC"), "time_ms", "finished_at"),
        Index("ix_games_room", "room"),
        Index("ix_games_player", "player", "finished_at"),
    )


class DailyChallengeRow(Base):
    """The deal chosen for one UTC day (fixed once chosen, whatever later settings say)."""

    __tablename__ = "daily_challenges"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    code: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class DailyAttemptRow(Base):
    """A nickname's first attempt of a UTC day (the ranked one)."""

    __tablename__ = "daily_attempts"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    name_key: Mapped[str] = mapped_column(String(40), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: the client's address, hashed with the daily secret (a limit per address, no address kept)
    address: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: whether the attempt is the ranked one (an attempt over the address's limit is not)
    ranked: Mapped[bool] = mapped_column(Boolean, default=True)


class RatingRow(Base):
    """An identity's rating (0008; :mod:`halfmoon_server.core.ratings`): kept race by race, and
    equal to what ``halfmoon ratings rebuild`` makes from the games alone."""

    __tablename__ = "ratings"

    #: the SHA-256 (hex) of the player's key
    player: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: the name of its latest rated race
    name: Mapped[str] = mapped_column(String(40))
    mu: Mapped[float] = mapped_column(Double)
    sigma: Mapped[float] = mapped_column(Double)
    #: ``mu - 3 sigma``: the leaderboard's order (an index read)
    ordinal: Mapped[float] = mapped_column(Double)
    #: how many races rated it
    games: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_ratings_board", text("ordinal DESC"), "player"),)


class RatingChangeRow(Base):
    """One identity's rating before and after one race (0008): its rating history, and what a race
    rated late replays (:func:`halfmoon_server.core.ratings.insert`)."""

    __tablename__ = "rating_changes"

    #: the race's id: the smallest id of its games
    race: Mapped[str] = mapped_column(String(16), primary_key=True)
    player: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: when the race ended (its last game's end, epoch ms): the ratings' order, then ``race``
    ended_at: Mapped[int] = mapped_column(BigInteger)
    #: the player's game in the race, and the name it raced under
    game: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(40))
    #: its place in the race (1: first; equal results share one)
    place: Mapped[int] = mapped_column(Integer)
    #: how many identities the race rated
    field: Mapped[int] = mapped_column(Integer)
    mu_before: Mapped[float] = mapped_column(Double)
    sigma_before: Mapped[float] = mapped_column(Double)
    games_before: Mapped[int] = mapped_column(Integer)
    mu_after: Mapped[float] = mapped_column(Double)
    sigma_after: Mapped[float] = mapped_column(Double)
    games_after: Mapped[int] = mapped_column(Integer)
    #: why it was not rated (``two_seats``), None: rated
    reason: Mapped[str | None] = mapped_column(String(16), nullable=True)

    __table_args__ = (
        Index("ix_rating_changes_order", "ended_at", "race"),
        Index("ix_rating_changes_player", "player", "ended_at"),
    )
