"""Ratings: one number per identity (a player key's hash), moved by the rated races it placed in.

What is rated, decided here and nowhere else (docs/security.md, "Ratings"):

- a **rateable game** (:func:`rateable`): a game of a mode whose rules rate
  (:attr:`~halfmoon_server.core.modes.ModeRules.rated`), of a **sealed** race (the server drew
  the deal: an open race's host could know it), **ranked** (not a bot, not under the tap floor,
  not casual) and **identified** (stored with a player key's hash);
- a **seat that carries weight** (:func:`carries_weight`): a rateable game that removed at least
  one card (its score is above 0). A seat that removed no card is left out of the update — it
  neither gains nor loses, and lifts nobody (a second identity sitting idle beside its owner);
- a **rated race**: the rateable games of one race (one room's one deal) once *every* seat of the
  race is stored (:attr:`~halfmoon_server.core.records.FinishedGame.seats` games), with at least
  two identities that carry weight. One identity seated twice counts once, at its worse place.

The update is Weng–Lin's Bayesian rating (``openskill``'s Plackett–Luce model, free-for-all:
each seat a team of one) over the race's placings by :func:`halfmoon.protocol.ranking_key` —
the race's own ranking (score, then time, then who finished first); equal keys share a place.
Everyone starts at μ = 25, σ = 25/3. The number shown is :func:`shown`: ``1000 + 40 × (μ − 3σ)``
rounded (1000 at the start: the ordinal μ − 3σ is 0), provisional until :data:`PROVISIONAL_GAMES`
rated races.

Races are rated one at a time, in one order that a rebuild repeats (:func:`race_order`: the
race's newest game's end, then its room and code), so the same stored games give the same numbers.

**An account is one identity** (:func:`identities`): every player key linked to an account is
rated as the account's *canonical key* — the key linked to it first (the device that made it),
whose hash names the account's rating everywhere (``GET /api/players/{key}/rating`` answers it for
any of the account's keys). Two keys of one account in one race are one identity seated twice:
counted once, at its worse place (a second device is never a second try at a race); they never
rate each other. A seat is read as the identity it had when its race was rated
(:func:`as_identities`): a key linked later keeps the ratings it won before as its own, and its
later races go to the account — so a rebuild, which reads the
identities the history recorded, gives the same numbers as the job did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from openskill.models import PlackettLuce

from halfmoon.protocol import ranking_key
from halfmoon_server.core.modes import rules_for
from halfmoon_server.core.records import FinishedGame

#: A rating is provisional (not on the ratings leaderboard, marked as such) until this many races.
PROVISIONAL_GAMES = 5
#: The shown number: ``SHOWN_BASE + SHOWN_SCALE × ordinal`` (ordinal: μ − 3σ).
SHOWN_BASE = 1000
SHOWN_SCALE = 40

_MODEL = PlackettLuce()
#: Where everyone starts (the model's defaults: μ = 25, σ = 25/3).
START_MU: float = _MODEL.mu
START_SIGMA: float = _MODEL.sigma


@dataclass(frozen=True, slots=True)
class Skill:
    """An identity's rating: the model's μ and σ, and how many rated races moved it."""

    mu: float = START_MU
    sigma: float = START_SIGMA
    games: int = 0

    @property
    def shown(self) -> int:
        """The one number shown (:func:`shown`)."""
        return shown(self.mu, self.sigma)

    @property
    def provisional(self) -> bool:
        return self.games < PROVISIONAL_GAMES


def shown(mu: float, sigma: float) -> int:
    """The number a rating is shown as: ``1000 + 40 × (μ − 3σ)``, rounded.

    >>> shown(START_MU, START_SIGMA)
    1000
    """
    return round(SHOWN_BASE + SHOWN_SCALE * (mu - 3 * sigma))


@dataclass(frozen=True, slots=True)
class Seat:
    """One stored game of a race, as the rating reads it (no record)."""

    game_id: str
    room: str
    code: str
    player: str | None
    nickname: str
    score: int
    time_ms: int
    finished_at: datetime
    #: how many seats (games) the race has; None: a game stored before ratings (never rated)
    seats: int | None


@dataclass(frozen=True, slots=True)
class Change:
    """One identity's rating before and after one rated race (its game in it)."""

    player: str
    game_id: str
    nickname: str
    place: int
    before: Skill
    after: Skill


def rateable(game: FinishedGame) -> bool:
    """Whether a stored game takes part in ratings: its mode rates, its race was sealed, it is
    ranked, it carries a player key's hash and its race's seat count (see the module's rules).
    A mode this release does not know is not rated."""
    try:
        rated = rules_for(game.mode).rated
    except ValueError:
        return False
    return bool(rated) and game.sealed and game.ranked and game.player is not None and game.seats is not None


@dataclass(frozen=True, slots=True)
class Rated:
    """An identity's rating as the ratings leaderboard lists it."""

    player: str
    nickname: str
    skill: Skill


@dataclass(frozen=True, slots=True)
class RatedGame:
    """One identity's rating change by one rated race: its game, the race's number in the
    rating order, its place among the seats that carried weight, and when it was rated."""

    game_id: str
    player: str
    race: int
    place: int
    before: Skill
    after: Skill
    rated_at: datetime

    @property
    def change(self) -> int:
        """The shown number's change."""
        return self.after.shown - self.before.shown


#: What :meth:`halfmoon_server.ports.Storage.game_rating` says of a game: rated (its change),
#: due (the job has not come to it: its race may still have seats playing), or not rated.
RATED = "rated"
DUE = "due"
NOT_RATED = "not_rated"


def carries_weight(seat: Seat) -> bool:
    """A seat that removed no card (score 0) carries no weight: it is left out of the update."""
    return seat.score > 0 and seat.player is not None


def race_key(seat: Seat) -> tuple[str, str]:
    """Which race a game belongs to: its room and its deal (a rematch is a new deal)."""
    return (seat.room, seat.code)


def race_order(seats: Sequence[Seat]) -> tuple[datetime, str, str]:
    """Where a complete race stands in the rating order: its newest game's end, then its room
    and code (so two races that ended at the same instant keep one order)."""
    room, code = race_key(seats[0])
    return (max(s.finished_at for s in seats), room, code)


def complete_races(pending: Iterable[Seat], stored: dict[tuple[str, str], int]) -> list[list[Seat]]:
    """The races among ``pending`` (rateable games not rated yet) whose every seat is stored
    (``stored``: how many games each race has in the database), in :func:`race_order`."""
    races: dict[tuple[str, str], list[Seat]] = {}
    for seat in pending:
        races.setdefault(race_key(seat), []).append(seat)
    done = [
        sorted(seats, key=lambda s: s.game_id)
        for key, seats in races.items()
        if seats[0].seats is not None and stored.get(key, 0) >= seats[0].seats
    ]
    return sorted(done, key=race_order)


def identities(links: Iterable[tuple[str, str, int]]) -> dict[str, str]:
    """Which identity each linked player key is rated as: ``links`` are ``(player key hash,
    account, linked at)``; every key of an account maps to the account's canonical key, the one
    linked first (the lowest hash among keys linked at one instant). A key linked to no account is
    its own identity (absent here).

    >>> identities([("k2", "acct", 20), ("k1", "acct", 10), ("k3", "other", 5)])
    {'k2': 'k1', 'k1': 'k1', 'k3': 'k3'}
    """
    links = list(links)
    first: dict[str, tuple[int, str]] = {}
    for player, account, at in links:
        held = first.get(account)
        if held is None or (at, player) < held:
            first[account] = (at, player)
    return {player: first[account][1] for player, account, _ in links}


def as_identities(seats: Sequence[Seat], identity: Mapping[str, str], recorded: Mapping[str, str]) -> list[Seat]:
    """A race's seats with each player key replaced by the identity it is rated as: the one its
    game was rated under before (``recorded``, game id → identity: a rebuild repeats it), else the
    one its key is now (``identity``: :func:`identities`), else the key itself."""
    out = []
    for seat in seats:
        if seat.player is None:
            out.append(seat)
            continue
        who = recorded.get(seat.game_id) or identity.get(seat.player, seat.player)
        out.append(seat if who == seat.player else replace(seat, player=who))
    return out


def rate_race(seats: Sequence[Seat], current: dict[str, Skill]) -> list[Change]:
    """The rating changes one complete race makes (``seats``: its rateable games; ``current``:
    the ratings of its identities so far, a missing one at the start). Empty when fewer than
    two identities carry weight: such a race moves nobody."""
    counted: dict[str, Seat] = {}
    for seat in seats:
        if not carries_weight(seat):
            continue
        assert seat.player is not None
        held = counted.get(seat.player)
        # one identity seated twice (an account's two devices): its worse place, so that a second
        # seat is never a second try at the race
        if held is None or _key(seat) > _key(held):
            counted[seat.player] = seat
    if len(counted) < 2:
        return []
    placed = sorted(counted.values(), key=lambda s: (_key(s), s.game_id))
    places: list[int] = []
    for i, seat in enumerate(placed):  # equal keys share a place
        places.append(places[-1] if i and _key(seat) == _key(placed[i - 1]) else i + 1)
    befores = [current.get(str(s.player), Skill()) for s in placed]
    teams = [[_MODEL.rating(mu=b.mu, sigma=b.sigma)] for b in befores]
    rated = _MODEL.rate(teams, ranks=[float(p) for p in places])
    return [
        Change(
            str(seat.player),
            seat.game_id,
            seat.nickname,
            place,
            before,
            Skill(float(team[0].mu), float(team[0].sigma), before.games + 1),
        )
        for seat, place, before, team in zip(placed, places, befores, rated, strict=True)
    ]


def _key(seat: Seat) -> tuple[int, int, int]:
    return ranking_key(seat.score, seat.time_ms, round(seat.finished_at.timestamp() * 1000))
