"""The daily challenge: which deal each UTC day gets. Choosing it runs the solver, which is
CPU-bound: it runs in the app's solver worker (:class:`~halfmoon_server.solver.pool.SolverPool`),
never on the loop.

The day's code is ``halfmoon_server.solver.search.first_winnable_daily(day, secret)`` (a deal the solver
proves winnable) when ``daily_requires_winnable`` is on, else ``halfmoon.codes.daily_code(day,
secret, long=True)``: a long code (a day stored before long codes keeps its short one). Once
chosen, a day's code is stored and never recomputed.

Each day's **commitment**, ``commitment_of(code, salt)`` with a salt derived from the secret and
the day (:meth:`DailyService.salt_for`), is public a day ahead (``GET /api/daily``'s ``next``): the
day's deal cannot change once anyone can see who plays it. Its reveal gives the code and the salt.

Midnight never waits on the solver: a background task (:meth:`DailyService.run_ahead`) keeps
today's and tomorrow's codes chosen and stored, a day ahead. Tomorrow's code stays secret like
today's: every door asks for today (the ``daily`` message, ``GET /api/daily``) or for a day
whose attempts have all ended (:meth:`DailyService.revealed`). Should the worker be broken or
hung when a day has no code yet, the day's code is chosen in a thread instead, with a warning.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import BrokenExecutor, Executor
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Generic, TypeVar

from halfmoon.codes import daily_code
from halfmoon.protocol import commitment_of
from halfmoon_server.clock import Clock, utc_datetime, utc_day
from halfmoon_server.core import visibility
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import DailyDay, Storage
from halfmoon_server.solver.search import NoWinnableDealError, first_winnable_daily

log = logging.getLogger("halfmoon_server.daily")
K = TypeVar("K")
V = TypeVar("V")

#: How long a day's choice waits for the solver's worker before choosing in a thread instead
#: (the search takes milliseconds; a worker this late is hung or far behind).
SOLVER_WAIT_S = 60.0
#: How often :meth:`DailyService.run_ahead` makes sure today's and tomorrow's codes are stored.
AHEAD_EVERY_S = 600.0
#: ``GET /api/daily`` counts today's players (a count of the day's ranked games: 0.4 s at a
#: million, docs/capacity.md) at most this often, and lists the past days (which aggregates
#: them all) at most every ``PAST_DAYS_FOR_MS``, or sooner once another day is revealed.
PLAYERS_FOR_MS = 5_000
PAST_DAYS_FOR_MS = 60_000


def choose_daily_code(day_iso: str, secret: bytes, requires_winnable: bool, node_budget: int) -> str:
    """The code for a day (runs in a worker): the first candidate the solver proves winnable,
    or the plain daily code when that setting is off."""
    day = date.fromisoformat(day_iso)
    if requires_winnable:
        try:
            return str(first_winnable_daily(day, secret, node_budget=node_budget))
        except NoWinnableDealError:
            # 50 candidates, each proved winnable ~95 % of the time: practically never happens
            log.warning("no daily candidate for %s was proved winnable; using the first one", day_iso)
    return str(daily_code(day, secret, long=True))


class DailyService:
    """Today's challenge and past days, for the lobby and the REST API."""

    def __init__(
        self,
        *,
        storage: Storage,
        clock: Clock,
        secret: bytes,
        executor: Executor | None,
        requires_winnable: bool,
        node_budget: int,
        time_limit_s: int = 1800,
    ) -> None:
        """``executor`` runs the solver's jobs (the app's
        :class:`~halfmoon_server.solver.pool.SolverPool`; None: a thread)."""
        self.storage = storage
        self.clock = clock
        self.secret = secret
        self.executor = executor
        self.requires_winnable = requires_winnable
        self.node_budget = node_budget
        self.time_limit_s = time_limit_s
        self._codes: dict[date, str] = {}
        self._pending: dict[date, asyncio.Future[str]] = {}
        self._players: _Cached[date, int] = _Cached()
        self._past: _Cached[tuple[date, int], list[_PastDay]] = _Cached()

    def today(self) -> date:
        return utc_day(self.clock.now_ms())

    def reveal_at(self, day: date) -> int:
        """When a day's code, salt and games' records may be public, under this server's daily
        time limit (:func:`halfmoon_server.core.visibility.daily_opens_at`)."""
        return visibility.daily_opens_at(day, self.time_limit_s)

    def revealed(self, day: date) -> bool:
        """Whether ``day`` is public now (:func:`halfmoon_server.core.visibility.daily_open`)."""
        return visibility.daily_open(day, self.time_limit_s, self.clock.now_ms())

    async def players(self, day: date) -> int:
        """How many ranked attempts ``day`` has (``GET /api/daily``): counted at most every
        :data:`PLAYERS_FOR_MS`, one count at a time however many ask. Raises :class:`StorageError`."""
        now = self.clock.now_ms()
        return await self._players.get(day, now, PLAYERS_FOR_MS, lambda: self.storage.daily_players(day))

    async def past_days(self, today: date, limit: int) -> list[DailyDay]:
        """The revealed days before ``today``, newest first, with their players (``GET
        /api/daily``). Read at most every :data:`PAST_DAYS_FOR_MS`, and again as soon as a day
        that was not revealed when read is (its count is final only then). Raises
        :class:`StorageError`."""
        key = (today, limit)
        kept = self._past.kept(key)
        if kept is not None and any(self.revealed(d.day) and not d.players_final for d in kept):
            self._past.expire()

        async def read() -> list[_PastDay]:
            days = await self.storage.daily_days(today, limit)
            return [_PastDay(d, self.revealed(d.day)) for d in days]

        days = await self._past.get(key, self.clock.now_ms(), PAST_DAYS_FOR_MS, read)
        return [d.day_of for d in days if self.revealed(d.day)]

    def salt_for(self, day: date) -> str:
        """The salt of ``day``'s commitment (32 hex characters): derived from the secret and the day,
        so it needs no storing and nobody can compute it before the reveal gives it out. (Changing
        the secret changes the commitments of the days not revealed yet: see docs/server.md.)"""
        message = b"halfmoon-daily-salt:" + day.isoformat().encode()
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()[:32]

    async def commitment_for(self, day: date) -> str:
        """``day``'s commitment: ``commitment_of(code, salt)`` of its stored code (chosen now if it
        is not yet). Raises :class:`StorageError`."""
        return commitment_of(await self.code_for(day), self.salt_for(day))

    def address_key(self, address: str) -> str:
        """A client address as the daily attempts keep it: hashed with the secret (the limit per
        address needs to tell addresses apart, never to know them)."""
        return hashlib.sha256(self.secret + b"|" + address.encode()).hexdigest()[:32]

    async def code_for(self, day: date) -> str:
        """The day's deal code, chosen once (solver in the executor) and stored. Players are
        dealt today's only; tomorrow's is asked for by :meth:`prepare_ahead` alone, and like
        every day's it is shown nowhere until :meth:`revealed`.

        Raises :class:`StorageError` when the database fails.
        """
        code = self._codes.get(day)
        if code is not None:
            return code
        pending = self._pending.get(day)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[day] = future
        try:
            stored = await self.storage.daily_code(day)
            if stored is None:
                chosen = await self._choose(day)
                stored = await self.storage.save_daily_code(day, chosen, utc_datetime(self.clock.now_ms()))
            self._codes[day] = stored
            future.set_result(stored)
            return stored
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved
            raise
        finally:
            del self._pending[day]

    async def _choose(self, day: date) -> str:
        """Run :func:`choose_daily_code` in the solver's worker; in a thread when the worker is
        broken (it died twice in a row) or does not answer within ``SOLVER_WAIT_S``."""
        args = (day.isoformat(), self.secret, self.requires_winnable, self.node_budget)
        if not self.requires_winnable:
            return choose_daily_code(*args)  # a keyed hash: no solver, nothing to wait for
        if self.executor is not None:
            try:
                async with asyncio.timeout(SOLVER_WAIT_S):
                    return await asyncio.get_running_loop().run_in_executor(self.executor, choose_daily_code, *args)
            except BrokenExecutor:
                log.warning(
                    "the solver worker cannot choose the daily deal of %s (it keeps dying); choosing it in a thread",
                    day,
                )
            except TimeoutError:
                log.warning(
                    "the solver worker did not choose the daily deal of %s within %g s; choosing it in a thread",
                    day,
                    SOLVER_WAIT_S,
                )
        return await asyncio.to_thread(choose_daily_code, *args)

    async def prepare_ahead(self) -> None:
        """Make sure today's and tomorrow's codes are chosen and stored, so no player waits on the
        solver at midnight. Idempotent: a chosen day is kept in memory, so a later call costs
        nothing until the date changes (days before yesterday are forgotten then).

        Raises :class:`StorageError` when the database fails.
        """
        today = self.today()
        for day in (today, today + timedelta(days=1)):
            await self.code_for(day)
        for day in [d for d in self._codes if d < today - timedelta(days=1)]:
            del self._codes[day]

    async def run_ahead(self, every_s: float = AHEAD_EVERY_S) -> None:
        """The background task: :meth:`prepare_ahead` now and every ``every_s`` seconds until
        cancelled (so tomorrow's code is stored within ``every_s`` of each midnight, a day
        ahead). A failure is logged, and tried again at the next round."""
        while True:
            try:
                await self.prepare_ahead()
            except StorageError as exc:
                log.warning("the daily deals could not be stored ahead (%s); trying again in %.0f s", exc, every_s)
            except Exception as exc:  # (a driver's own error through an outage, say): said in one line;
                # its traceback at debug level — the task tries again anyway, and players ask for
                # the day's deal themselves (code_for) if this never succeeds
                first = (str(exc).strip().splitlines() or [""])[0]
                log.warning(
                    "the daily deals could not be chosen ahead (%s: %s); trying again in %.0f s",
                    type(exc).__name__,
                    first,
                    every_s,
                )
                log.debug("why the daily deals could not be chosen ahead", exc_info=True)
            await asyncio.sleep(every_s)


@dataclass(frozen=True, slots=True)
class _PastDay:
    """A past day as read, and whether it was revealed then (its count final)."""

    day_of: DailyDay
    players_final: bool

    @property
    def day(self) -> date:
        return self.day_of.day


class _Cached(Generic[K, V]):
    """One value read from the database under a key, kept ``for_ms``: one read at a time, in a
    task of its own (whoever asks meanwhile waits for it; a caller that goes away does not cancel
    it); a failed read is kept by nobody."""

    def __init__(self) -> None:
        self._key: K | None = None
        self._value: V | None = None
        self._read_at = 0
        self._reading: tuple[K, asyncio.Task[V]] | None = None

    def kept(self, key: K) -> V | None:
        return self._value if self._key == key else None

    def expire(self) -> None:
        self._key, self._value = None, None

    async def get(self, key: K, now: int, for_ms: int, read: Callable[[], Awaitable[V]]) -> V:
        if self._key == key and self._value is not None and now - self._read_at < for_ms:
            return self._value
        if self._reading is None or self._reading[0] != key:
            task = asyncio.get_running_loop().create_task(self._read(key, now, read))
            task.add_done_callback(lambda done: done.cancelled() or done.exception())  # never unretrieved
            self._reading = (key, task)
        return await asyncio.shield(self._reading[1])

    async def _read(self, key: K, now: int, read: Callable[[], Awaitable[V]]) -> V:
        try:
            value = await read()
        finally:
            if self._reading is not None and self._reading[1] is asyncio.current_task():
                self._reading = None
        self._key, self._value, self._read_at = key, value, now
        return value
