"""The ratings job: rates the stored races off the path that stores them.

Storing a finished game costs what it did before ratings (one row, the same transaction): the
game only says whether it waits for a rating (``rating_due``). This job, one task per server,
asks the storage every :data:`RATE_EVERY_S` to rate the races whose every seat is now stored
(:meth:`halfmoon_server.ports.Storage.rate_due`), in the rating order, each once. In a cluster
every instance runs it; the storage lets one pass run at a time (a PostgreSQL advisory lock) and
a race is taken once (its games leave the due index in the pass that rates it). A pass that
fails (the database is down) is tried again at the next tick: nothing is lost, since what is due
is in the database. See :mod:`halfmoon_server.core.rating` for what is rated, and how.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from halfmoon_server.clock import Clock, utc_datetime
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import Storage

log = logging.getLogger("halfmoon_server.ratings")

#: How often the job looks for races to rate (s): a race's end screen shows the change about
#: this long after its last game was stored.
RATE_EVERY_S = 1.0
#: A database that does not answer is said in the log at most this often (the job tries every pass).
WARN_EVERY_MS = 60_000
#: The most races one pass rates (one transaction); the next pass takes the rest at once.
RATE_BATCH = 100


class RatingJob:
    """Runs :meth:`Storage.rate_due` every ``every_s`` until closed."""

    def __init__(self, storage: Storage, clock: Clock, *, every_s: float = RATE_EVERY_S) -> None:
        self.storage = storage
        self.clock = clock
        self.every_s = every_s
        #: races this job has rated (or found to move nobody) since it started
        self.rated = 0
        self._warned_at: int | None = None  # when a failing pass was last logged
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def pass_once(self) -> int:
        """One pass, until nothing is left due now; how many races it took."""
        taken = 0
        while True:
            done = await self.storage.rate_due(utc_datetime(self.clock.now_ms()), RATE_BATCH)
            taken += done
            self.rated += done
            if done < RATE_BATCH:
                return taken

    async def _run(self) -> None:
        while True:
            try:
                await self.pass_once()
            except StorageError as exc:  # the database is down: what is due waits there
                now = self.clock.now_ms()
                if self._warned_at is None or now - self._warned_at >= WARN_EVERY_MS:  # once a minute
                    self._warned_at = now
                    log.warning("the ratings job could not rate: %s (trying again every pass)", exc)
            except Exception:  # a bug: said, and the job goes on
                log.exception("the ratings job failed (trying again)")
            await asyncio.sleep(self.every_s)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
