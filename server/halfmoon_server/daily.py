"""The daily challenge: which deal each UTC day gets. Choosing it runs the solver, which is
CPU-bound: it runs in the app's small executor, never on the loop.

The day's code is ``halfmoon.solver.first_winnable_daily(day, secret)`` (a deal the solver
proves winnable) when ``daily_requires_winnable`` is on, else ``halfmoon.codes.daily_code(day,
secret)``. Once chosen, a day's code is stored and never recomputed.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from concurrent.futures import Executor
from datetime import date

from halfmoon.codes import daily_code
from halfmoon.solver import NoWinnableDealError, first_winnable_daily, solve
from halfmoon_server.clock import Clock, day_start_ms, utc_datetime, utc_day
from halfmoon_server.ports import Storage

log = logging.getLogger("halfmoon_server.daily")

DAY_MS = 86_400_000


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
    return str(daily_code(day, secret))


def warm_up() -> bool:
    """Touch the solver in a worker so the first real job does not pay for starting it."""
    return solve is not None


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
        self.storage = storage
        self.clock = clock
        self.secret = secret
        self.executor = executor
        self.requires_winnable = requires_winnable
        self.node_budget = node_budget
        self.time_limit_s = time_limit_s
        self._codes: dict[date, str] = {}
        self._pending: dict[date, asyncio.Future[str]] = {}

    def today(self) -> date:
        return utc_day(self.clock.now_ms())

    def reveal_at(self, day: date) -> int:
        """When a day's code (and its games' records) may be public: the day is over and every
        attempt of it has ended (none starts after midnight; each lasts at most its limit)."""
        return day_start_ms(day) + DAY_MS + self.time_limit_s * 1000

    def revealed(self, day: date) -> bool:
        return self.clock.now_ms() >= self.reveal_at(day)

    def address_key(self, address: str) -> str:
        """A client address as the daily attempts keep it: hashed with the secret (the limit per
        address needs to tell addresses apart, never to know them)."""
        return hashlib.sha256(self.secret + b"|" + address.encode()).hexdigest()[:32]

    async def code_for(self, day: date) -> str:
        """The day's deal code, chosen once (solver in the executor) and stored.

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
                loop = asyncio.get_running_loop()
                chosen = await loop.run_in_executor(
                    self.executor,
                    choose_daily_code,
                    day.isoformat(),
                    self.secret,
                    self.requires_winnable,
                    self.node_budget,
                )
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
