"""Storage in memory: :class:`halfmoon_server.ports.Storage` with nothing kept past the process.

For tests and benchmarks (``--db memory://``), and a reference for what the SQL storage must do:
the same rankings, the same first-come daily attempt and daily code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import date, datetime

from halfmoon.protocol import ranking_key
from halfmoon_server.core.rating import (
    DUE,
    NOT_RATED,
    PROVISIONAL_GAMES,
    RATED,
    Rated,
    RatedGame,
    Seat,
    as_identities,
    complete_races,
    identities,
    race_key,
    rate_race,
    rateable,
)
from halfmoon_server.ports import DailyDay, FinishedGame, PlayerGame, StoredGame


def _rank(game: StoredGame) -> tuple[int, int, int]:
    return ranking_key(game.score, game.time_ms, int(game.finished_at.timestamp() * 1000))


class MemoryStorage:
    """Finished games, daily codes and daily attempts in dictionaries."""

    def __init__(self) -> None:
        self.games: dict[str, StoredGame] = {}
        self.daily_codes: dict[date, str] = {}
        # (day, name key) -> the claim's room, whether it is ranked, its address and its account
        self.daily_attempts: dict[tuple[date, str], tuple[str | None, bool, str | None, str | None]] = {}
        #: the claims a later claim of the day shared a name, an address or an account with
        self.looked_since: set[tuple[date, str]] = set()
        self.ranked_addresses: list[tuple[date, str]] = []  # one per ranked attempt
        # (day, account) -> the room of the account's attempt and whether it is ranked
        self.account_attempts: dict[tuple[date, str], tuple[str | None, bool]] = {}
        #: player key hash -> account, in the order they were linked (the accounts kept beside this
        #: storage write it: :func:`halfmoon_server.adapters.accounts.accounts_for`)
        self.account_players: dict[str, str] = {}
        self.rating_due: set[str] = set()  # the rateable games the ratings job has not taken
        self.ratings: dict[str, Rated] = {}
        self.rating_history: dict[str, RatedGame] = {}  # by game id
        self.rated_races: list[tuple[str, str]] = []  # (room, code), in the order rated

    async def ping(self) -> None:
        return None

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        if game_id not in self.games:
            self.games[game_id] = StoredGame.of(game, game_id)
            if rateable(game):
                self.rating_due.add(game_id)

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
        self,
        day: date,
        name_key: str,
        at: datetime,
        *,
        address: str | None = None,
        per_address: int = 0,
        account: str | None = None,
        room: str | None = None,
        retrying: tuple[str, ...] = (),
    ) -> bool:
        # no await until the claim is recorded: two claims at once take turns
        earlier = self.daily_attempts.get((day, name_key))
        limited = address if per_address > 0 else None  # (with no limit an address is nobody's)
        if (
            earlier is not None
            and earlier[0] in retrying
            and earlier[2:] == (address, account)
            and (day, name_key) not in self.looked_since
        ):
            # the claim whose answer was lost: this one, moved to its new room
            self.daily_attempts[(day, name_key)] = (room, *earlier[1:])
            if account is not None:
                self.account_attempts[(day, account)] = (room, earlier[1])
            self._mark_looked_at(day, name_key, limited, account, but=name_key)
            return earlier[1]
        self._mark_looked_at(day, name_key, limited, account)
        if account is not None and (day, account) in self.account_attempts:
            kept_room, kept_ranked = self.account_attempts[(day, account)]
            if kept_room in retrying:  # its attempt's room was dropped unseen: it is played here now
                self.account_attempts[(day, account)] = (room, kept_ranked)
            return False
        if earlier is not None:
            if account is not None:  # unranked (the name was played today), and the account's attempt
                self.account_attempts[(day, account)] = (room, False)
            return False
        ranked = True
        if address is not None and per_address > 0:
            ranked = sum(1 for d, a in self.ranked_addresses if (d, a) == (day, address)) < per_address
        self.daily_attempts[(day, name_key)] = (room, ranked, address, account)
        if account is not None:
            self.account_attempts[(day, account)] = (room, ranked)
        if ranked and address is not None:
            self.ranked_addresses.append((day, address))
        return ranked

    def _mark_looked_at(
        self, day: date, name_key: str, address: str | None, account: str | None, but: str | None = None
    ) -> None:
        """Whoever makes a claim may see the cards: no other claim of the day sharing its name,
        address or account (``but`` the claim's own) is handed back after a lost answer."""
        for (d, key), (_, _, where, whose) in self.daily_attempts.items():
            if (
                d == day
                and key != but
                and (
                    key == name_key
                    or (address is not None and where == address)
                    or (account is not None and whose == account)
                )
            ):
                self.looked_since.add((d, key))

    async def daily_attempt_room(self, day: date, account: str) -> str | None:
        return self.account_attempts.get((day, account), (None, False))[0]

    async def daily_code(self, day: date) -> str | None:
        return self.daily_codes.get(day)

    async def save_daily_code(self, day: date, code: str, at: datetime) -> str:
        return self.daily_codes.setdefault(day, code)

    async def daily_days(self, before: date, limit: int) -> list[DailyDay]:
        players = Counter(g.daily_date for g in self.games.values() if g.ranked and g.daily_date is not None)
        days = sorted((d for d in self.daily_codes if d < before), reverse=True)[:limit]
        return [DailyDay(d, self.daily_codes[d], players[d]) for d in days]

    # -- ratings (the same steps as SqlStorage's) ---------------------------------------------

    def _race_counts(self) -> dict[tuple[str, str], int]:
        return Counter((g.room, g.code) for g in self.games.values())

    def _identities(self) -> dict[str, str]:
        return identities((player, account, n) for n, (player, account) in enumerate(self.account_players.items()))

    def _rate(self, seats: list[Seat], seq: int, now: datetime, recorded: dict[str, str] | None = None) -> None:
        current = {p: r.skill for p, r in self.ratings.items()}
        for change in rate_race(as_identities(seats, self._identities(), recorded or {}), current):
            self.ratings[change.player] = Rated(change.player, change.nickname, change.after)
            self.rating_history[change.game_id] = RatedGame(
                change.game_id, change.player, seq, change.place, change.before, change.after, now
            )
        self.rating_due.difference_update(s.game_id for s in seats)

    async def rate_due(self, now: datetime, limit: int) -> int:
        pending = [_seat(self.games[g]) for g in self.rating_due]
        races = complete_races(pending, self._race_counts())[:limit]
        for seats in races:
            self.rated_races.append(race_key(seats[0]))
            self._rate(seats, len(self.rated_races), now)
        return len(races)

    async def rebuild_ratings(self, now: datetime) -> int:
        recorded = {game: rated.player for game, rated in self.rating_history.items()}
        self.ratings.clear()
        self.rating_history.clear()
        self.rating_due = {g.id for g in self.games.values() if rateable(g)}
        order, self.rated_races = self.rated_races, []
        counts = self._race_counts()
        for key in order:
            seats = [_seat(self.games[g]) for g in sorted(self.rating_due) if race_key(_seat(self.games[g])) == key]
            if complete_races(seats, counts):
                self.rated_races.append(key)
                self._rate(seats, len(self.rated_races), now, recorded)
        while await self.rate_due(now, 1000):
            pass
        return len(self.rated_races)

    async def rating_board(self, limit: int, *, provisional: bool = False) -> list[Rated]:
        kept = (r for r in self.ratings.values() if provisional or r.skill.games >= PROVISIONAL_GAMES)
        return sorted(kept, key=lambda r: (-(r.skill.mu - 3 * r.skill.sigma), r.player))[:limit]

    async def player_rating(self, player: str, limit: int) -> tuple[Rated | None, list[RatedGame]]:
        player = self._identities().get(player, player)
        mine = sorted((h for h in self.rating_history.values() if h.player == player), key=lambda h: -h.race)
        return self.ratings.get(player), mine[:limit]

    async def game_rating(self, game_id: str) -> tuple[str, RatedGame | None]:
        if game_id in self.rating_history:
            return RATED, self.rating_history[game_id]
        return (DUE if game_id in self.rating_due else NOT_RATED), None

    async def close(self) -> None:
        return None


def _seat(game: StoredGame) -> Seat:
    g = game
    return Seat(g.id, g.room, g.code, g.player, g.nickname, g.score, g.time_ms, g.finished_at, g.seats)
