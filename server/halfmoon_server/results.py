"""Recording finished games: store the result, then run the post-game analysis.

:class:`Recorder` is what a room's shell hands a finished game to. A storage failure is logged
and the game goes on unrecorded (``game: null`` in ``game_over``); this is where a durable
result outbox plugs in.
"""

from __future__ import annotations

import logging
from typing import Any

from halfmoon_server.analysis import Analyst
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import FinishedGame, Storage

log = logging.getLogger("halfmoon_server.results")


class Recorder:
    """Stores finished games and has them analysed."""

    def __init__(self, storage: Storage, analyst: Analyst) -> None:
        self.storage = storage
        self.analyst = analyst

    async def record(self, game: FinishedGame, game_id: str) -> tuple[str | None, dict[str, Any] | None]:
        """``(game id, analysis)``: the id is None when the game could not be stored, the
        analysis None when it is off, too slow or failed. Recording a game twice stores it once."""
        stored: str | None = None
        try:
            await self.storage.save_game(game, game_id)
            stored = game_id
        except StorageError:
            log.exception("could not store the game of %s in room %s", game.nickname, game.room)
        return stored, await self.analyst.analyse(game.record)
