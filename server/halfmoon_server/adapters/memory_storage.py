"""Storage in memory: :class:`halfmoon_server.ports.Storage` with nothing kept past the process.

For tests and benchmarks (``--db memory://``), and a reference for what the SQL storage must do:
the same rankings, the same first-come daily attempt and daily code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import date, datetime

from halfmoon.protocol import ranking_key
from halfmoon_server.ports import DailyDay, FinishedGame, PlayerGame, StoredGame


def _rank(game: StoredGame) -> tuple[int, int, int]:
    return ranking_key(game.score, game.time_ms, int(game.finished_at.timestamp() * 1000))


class MemoryStorage:
    """Finished games, daily codes and daily attempts in dictionaries."""

    def __init__(self) -> None:
        self.games: dict[str, StoredGame] = {}
        self.daily_codes: dict[date, str] = {}
        self.daily_attempts: set[tuple[date, str]] = set()
        self.ranked_addresses: list[tuple[date, str]] = []  # one per ranked attempt

    async def ping(self) -> None:
        return None

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        if game_id not in self.games:
            self.games[game_id] = StoredGame.of(game, game_id)

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
        return await self.games_of_players([player], limit)

    async def games_of_players(self, players: list[str], limit: int) -> list[PlayerGame]:
        wanted = set(players)
        mine = (g for g in self.games.values() if g.player in wanted)
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
