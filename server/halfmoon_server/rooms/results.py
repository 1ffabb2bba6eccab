"""Recording finished games: store the result.

:class:`Recorder` is what a room's shell hands a finished game to. A failure is the room's to
retry: the room's log is the result's outbox, and when each game is tried again is the room's
state machine's (:class:`halfmoon_server.core.room_state.ResultOutbox`). No analysis
follows a game: the app never says whether a deal could be won (the seed's rules), so the solver
only chooses the daily deals.

One writer: the games handed over while a write is under way go in the next one, together
(*group commit*, as the room journal does), through the storage's ``save_games`` when it has
one — at a hundred games a second, a few transactions a second instead of a hundred.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from halfmoon_server.ports import FinishedGame, Storage

log = logging.getLogger("halfmoon_server.results")

#: The most games one write carries.
BATCH_MAX = 256


@runtime_checkable
class BatchStorage(Protocol):
    """A storage that stores many finished games in one write (idempotent on each id)."""

    async def save_games(self, games: Sequence[tuple[FinishedGame, str]]) -> None: ...


#: While writes fail, how often the recorder asks the database whether it is back.
PROBE_EVERY_S = 1.0


class Recorder:
    """Stores finished games, batched by one writer.

    While the database fails, the recorder probes it every :data:`PROBE_EVERY_S` and counts each
    return (:attr:`recoveries`): a room that sees the count move tries its waiting games at once
    (``RoomState.results``' backoff is for a database that stays down), so a result reaches the
    leaderboards within about a second of the database's return, whatever the backoff had grown to."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._queue: list[tuple[FinishedGame, str, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._down = False
        #: how many times the database came back after failing
        self.recoveries = 0
        self._probe: asyncio.Task[None] | None = None

    def _failed(self) -> None:
        self._down = True
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self._probe_until_back())

    def _succeeded(self) -> None:
        if self._down:
            self._down = False
            self.recoveries += 1

    async def _probe_until_back(self) -> None:
        while self._down:
            await asyncio.sleep(PROBE_EVERY_S)
            try:
                await self.storage.ping()
            except Exception:  # still down (StorageError), or worse: keep probing quietly
                continue
            self._succeeded()

    async def close(self) -> None:
        """Stop probing (at shutdown)."""
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe

    async def store(self, game: FinishedGame, game_id: str) -> None:
        """Store a finished game under its id; storing it twice stores it once.
        Raises :class:`StorageError` when the database does not take it (the room tries again).
        A caller that stops waiting (a time-out) may still find the game stored."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queue.append((game, game_id, done))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write())
        await done

    async def _write(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[:BATCH_MAX], self._queue[BATCH_MAX:]
            try:
                await self._save([(game, game_id) for game, game_id, _ in batch])
            except Exception as exc:  # StorageError, or a bug: each waiting room retries its game
                self._failed()
                for _, _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
            else:
                self._succeeded()
                for _, _, done in batch:
                    if not done.done():
                        done.set_result(None)

    async def _save(self, games: list[tuple[FinishedGame, str]]) -> None:
        if len(games) > 1 and isinstance(self.storage, BatchStorage):
            await self.storage.save_games(games)
            return
        for game, game_id in games:
            await self.storage.save_game(game, game_id)
