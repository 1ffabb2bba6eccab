"""Time for the server: the :class:`Clock` interface and its two implementations.

Every time that counts (start, finish, elapsed, the UTC day of the daily challenge) is read from
the injected clock, so tests can move time exactly (:class:`ManualClock`).
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from typing import Protocol


class Clock(Protocol):
    """Wall-clock time in integer milliseconds since the Unix epoch."""

    def now_ms(self) -> int: ...


class SystemClock:
    """The real wall clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to (tests, benchmarks)."""

    def __init__(self, start_ms: int) -> None:
        self.ms = start_ms

    def now_ms(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms

    def set(self, ms: int) -> None:
        self.ms = ms


def utc_day(ms: int) -> date:
    """The UTC calendar day of an epoch-millisecond instant."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date()


def utc_datetime(ms: int) -> datetime:
    """An epoch-millisecond instant as an aware UTC datetime (for storage)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def day_start_ms(day: date) -> int:
    """Epoch milliseconds of 00:00 UTC on ``day``."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)
