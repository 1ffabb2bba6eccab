"""Storage in memory: :class:`halfmoon_server.ports.Storage` with nothing kept past the process.

For tests and benchmarks (``--db memory://``), and a reference for what the SQL storage must do:
the same rankings, the same first-come daily attempt and daily code.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import date, datetime

from halfmoon.protocol import ranking_key
from halfmoon_server.core import ratings
from halfmoon_server.core.ratings import RacedGame, Rating, RatingChange
from halfmoon_server.ports import DailyDay, FinishedGame, PlayerGame, StoredGame

log = logging.getLogger("halfmoon_server.storage")


def _raced(game: StoredGame) -> RacedGame:
    return RacedGame(
        game.id, game.room, game.code, game.mode, game.nickname, game.score, game.time_ms,
        ratings.ms_of(game.finished_at), game.ranked, game.player, game.racers,
    )


def _rank(game: StoredGame) -> tuple[int, int, int]:
    return ranking_key(game.score, game.time_ms, int(game.finished_at.timestamp() * 1000))


class MemoryStorage:
    """Finished games, daily codes, daily attempts and ratings in dictionaries."""

    def __init__(self) -> None:
        self.games: dict[str, StoredGame] = {}
        self.daily_codes: dict[date, str] = {}
        self.daily_attempts: set[tuple[date, str]] = set()
        self.ranked_addresses: list[tuple[date, str]] = []  # one per ranked attempt
        self.ratings: dict[str, Rating] = {}
        self.rating_changes: dict[tuple[str, str], RatingChange] = {}  # by race and player

    async def ping(self) -> None:
        return None

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        if game_id not in self.games:
            self.games[game_id] = StoredGame.of(game, game_id)
        if game.mode == "race" and game.racers is not None and game.racers >= 2:
            try:
                self._rate(game.room, game.code)
            except (ValueError, ArithmeticError) as exc:  # (as SqlStorage: the game stays stored)
                log.error("rating the race of room %s failed (%s); the games are stored, the ratings need "
                          "'halfmoon ratings rebuild'", game.room, type(exc).__name__)

    def _rate(self, room: str, code: str) -> None:
        """Rate the race of ``room`` and ``code`` if its games are all stored and it is not rated
        yet (as :func:`halfmoon_server.adapters.storage.rate_races` does)."""
        race = ratings.race_of([_raced(g) for g in self.games.values() if g.room == room and g.code == code])
        if race is None or any(r == race.race for r, _ in self.rating_changes):
            return
        later = [c for c in self.rating_changes.values() if c.key > race.key]
        players = {p.player for p in (*race.placings, *race.excluded)} | {c.player for c in later}
        held = {p: self.ratings[p] for p in players if p in self.ratings}
        new, changes = ratings.insert(held, later, race)
        for change in later:
            del self.rating_changes[(change.race, change.player)]
        for change in changes:
            self.rating_changes[(change.race, change.player)] = change
        for player, rating in new.items():
            if rating.games > 0:
                self.ratings[player] = rating
            else:
                self.ratings.pop(player, None)

    async def rating_leaderboard(self, limit: int) -> list[tuple[str, Rating]]:
        board = sorted(self.ratings.items(), key=lambda item: (-(item[1].mu - 3 * item[1].sigma), item[0]))
        return board[:limit]

    async def rating_of(self, player: str, limit: int) -> tuple[Rating | None, list[RatingChange]]:
        mine = sorted((c for c in self.rating_changes.values() if c.player == player), key=lambda c: c.key)
        return self.ratings.get(player), mine[::-1][:limit]

    async def rebuild_ratings(self) -> tuple[int, int]:
        rated, changes = ratings.rebuild(_raced(g) for g in self.games.values() if g.mode == "race")
        self.ratings = rated
        self.rating_changes = {(c.race, c.player): c for c in changes}
        return len(rated), len(changes)

    async def get_game(self, game_id: str) -> StoredGame | None:
        return self.games.get(game_id)

    def _ranking(self, keep: Callable[[StoredGame], bool], limit: int) -> list[StoredGame]:
        return sorted((g for g in self.games.values() if keep(g)), key=_rank)[:limit]

    async def leaderboard_for_code(self, code: str, limit: int) -> list[StoredGame]:
        return self._ranking(lambda g: g.code == code, limit)

    async def daily_leaderboard(self, day: date, limit: int) -> list[StoredGame]:
        return self._ranking(lambda g: g.daily_date == day and g.ranked, limit)

    async def daily_players(self, day: date) -> int:
        return sum(1 for g in self.games.values() if g.daily_date == day and g.ranked)

    async def games_of_room(self, room: str, limit: int) -> list[StoredGame]:
        return self._ranking(lambda g: g.room == room, limit)

    async def games_of_player(self, player: str, limit: int) -> list[PlayerGame]:
        mine = (g for g in self.games.values() if g.player == player)
        games = sorted(mine, key=lambda g: g.finished_at, reverse=True)
        return [PlayerGame.listed(g) for g in games[:limit]]

    async def claim_daily_attempt(
        self, day: date, name_key: str, at: datetime, *, address: str | None = None, per_address: int = 0
    ) -> bool:
        if (day, name_key) in self.daily_attempts:
            return False
        ranked = True
        if address is not None and per_address > 0:
            ranked = sum(1 for d, a in self.ranked_addresses if (d, a) == (day, address)) < per_address
        self.daily_attempts.add((day, name_key))
        if ranked and address is not None:
            self.ranked_addresses.append((day, address))
        return ranked

    async def daily_code(self, day: date) -> str | None:
        return self.daily_codes.get(day)

    async def save_daily_code(self, day: date, code: str, at: datetime) -> str:
        return self.daily_codes.setdefault(day, code)

    async def daily_days(self, before: date, limit: int) -> list[DailyDay]:
        players = Counter(g.daily_date for g in self.games.values() if g.ranked and g.daily_date is not None)
        days = sorted((d for d in self.daily_codes if d < before), reverse=True)[:limit]
        return [DailyDay(d, self.daily_codes[d], players[d]) for d in days]

    async def close(self) -> None:
        return None
