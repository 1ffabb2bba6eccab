"""Recording finished games: store the result.

:class:`Recorder` is what a room's shell hands a finished game to. A storage failure is logged
and the game goes on unrecorded (``game: null`` in ``game_over``); this is where a durable
result outbox plugs in. No analysis follows a game: the app never says whether a deal could
be won (the seed's rules), so the solver only chooses the daily deals.
"""

from __future__ import annotations

import logging

from halfmoon_server.errors import StorageError
from halfmoon_server.ports import FinishedGame, Storage

log = logging.getLogger("halfmoon_server.results")


class Recorder:
    """Stores finished games."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    async def record(self, game: FinishedGame, game_id: str) -> str | None:
        """The game's id, or None when the game could not be stored. Recording a game twice
        stores it once."""
        try:
            await self.storage.save_game(game, game_id)
        except StorageError:
            log.exception("could not store the game of %s in room %s", game.nickname, game.room)
            return None
        return game_id
