"""Recording finished games: store the result.

:class:`Recorder` is what a room's shell hands a finished game to. A failure is the room's to
retry: the room's log is the result's outbox (``halfmoon_server.room.Room.store``). No analysis
follows a game: the app never says whether a deal could be won (the seed's rules), so the solver
only chooses the daily deals.
"""

from __future__ import annotations

import logging

from halfmoon_server.ports import FinishedGame, Storage

log = logging.getLogger("halfmoon_server.results")


class Recorder:
    """Stores finished games."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    async def store(self, game: FinishedGame, game_id: str) -> None:
        """Store a finished game under its id; storing it twice stores it once.
        Raises :class:`StorageError` when the database does not take it (the room tries again)."""
        await self.storage.save_game(game, game_id)
