"""The daily challenge and the solver's work: which deal each UTC day gets, and the post-game
analysis. Solver calls are CPU-bound: they run in the app's small executor, never on the loop.

The day's code is ``halfmoon.solver.first_winnable_daily(day, secret)`` (a deal the solver
proves winnable) when ``daily_requires_winnable`` is on, else ``halfmoon.codes.daily_code(day,
secret)``. Once chosen, a day's code is stored and never recomputed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from datetime import UTC, date, datetime
from typing import Any

from halfmoon.codes import daily_code
from halfmoon.record import GameRecord
from halfmoon.solver import NoWinnableDealError, analyse, first_winnable_daily, solve
from halfmoon_server.clock import Clock, utc_day
from halfmoon_server.storage import Storage

log = logging.getLogger("halfmoon_server.daily")


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


def analyse_record(record: dict[str, Any], node_budget: int, time_budget_ms: int) -> dict[str, Any]:
    """``{"winnable", "last_winnable_move"}`` for a finished game's record (runs in a worker).

    The time budget is measured on the worker's ``time.perf_counter``; the node budget bounds
    the work as well."""
    result = analyse(
        GameRecord.from_json(record),
        node_budget=node_budget,
        time_budget_ms=time_budget_ms,
        clock=time.perf_counter,
    )
    return {"winnable": str(result.winnable.value), "last_winnable_move": result.last_winnable_move}


class DailyService:
    """Today's challenge and past days, and the solver's analysis, for the rooms and the REST API."""

    def __init__(
        self,
        *,
        storage: Storage,
        clock: Clock,
        secret: bytes,
        executor: Executor | None,
        requires_winnable: bool,
        node_budget: int,
        analysis_time_budget_ms: int,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.secret = secret
        self.executor = executor
        self.requires_winnable = requires_winnable
        self.node_budget = node_budget
        self.analysis_time_budget_ms = analysis_time_budget_ms
        self._codes: dict[date, str] = {}
        self._pending: dict[date, asyncio.Future[str]] = {}

    def today(self) -> date:
        return utc_day(self.clock.now_ms())

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
                stored = await self.storage.save_daily_code(day, chosen, datetime.now(UTC))
            self._codes[day] = stored
            future.set_result(stored)
            return stored
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved
            raise
        finally:
            del self._pending[day]

    async def analyse(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """The post-game analysis, or None when analysis is off, unavailable, too slow or failed."""
        if self.executor is None:
            return None
        loop = asyncio.get_running_loop()
        # the solver stops itself at its time budget; waiting is bounded too, so analyses queued
        # behind others (many players finishing at once) give up instead of delaying game_over
        deadline = self.analysis_time_budget_ms / 1000 + 2.0
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(
                    self.executor, analyse_record, record, self.node_budget, self.analysis_time_budget_ms
                ),
                deadline,
            )
        except TimeoutError:
            log.info("post-game analysis skipped: not done within %.1f s", deadline)
            return None
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("post-game analysis failed")
            return None
