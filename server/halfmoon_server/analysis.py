"""The post-game analysis: the solver, run in the app's worker process on a finished game's
record, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from typing import Any

from halfmoon.record import GameRecord
from halfmoon.solver import analyse

log = logging.getLogger("halfmoon_server.analysis")


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


class Analyst:
    """Runs the post-game analysis in the solver's executor (None: analysis is off)."""

    def __init__(self, executor: Executor | None, *, node_budget: int, time_budget_ms: int) -> None:
        self.executor = executor
        self.node_budget = node_budget
        self.time_budget_ms = time_budget_ms

    async def analyse(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """The post-game analysis, or None when analysis is off, unavailable, too slow or failed."""
        if self.executor is None:
            return None
        loop = asyncio.get_running_loop()
        # the solver stops itself at its time budget; waiting is bounded too, so analyses queued
        # behind others (many players finishing at once) give up instead of delaying game_over
        deadline = self.time_budget_ms / 1000 + 2.0
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(self.executor, analyse_record, record, self.node_budget, self.time_budget_ms),
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
