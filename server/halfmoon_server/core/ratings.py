"""Ratings: a player's skill from their ranked multiplayer races, as a function of the stored games
(docs/server.md, "Ratings").

A rating belongs to an identity — the hash of a player key (:attr:`FinishedGame.player`) — and is
openskill's Weng–Lin Plackett–Luce model (free-for-all placements): a mean ``mu`` and an
uncertainty ``sigma``, shown as one number, :meth:`Rating.shown` (the ordinal ``mu - 3 sigma``,
scaled: ``1000 + 40 (mu - 3 sigma)``; a newcomer shows 1000), *provisional* until
:data:`DEFAULT_PROVISIONAL_GAMES` rated races.

**Which races count** (:func:`race_of`): a race of mode ``race`` with two racers or more whose
games are all stored; of its games, those that are ranked (:mod:`halfmoon_server.core.ranking`)
and carry a player key hash. Their places are the race's ranks
(:func:`halfmoon.protocol.ranking_key`: score, then time, then who finished first; games equal on
all three tie). An identity seated twice in one race (two seats of one key) is **not rated** for
that race: it gets a history entry saying ``two_seats`` (visible on its rating), and the others
are rated among themselves as if those seats were not there. Two *different* keys of one person
cannot be told apart: what stays visible is each rated race's game, whose room lists the field.

**The order** is the races' end (the last game's ``finished_at``), then the race's id (the
smallest game id of its games): :func:`rebuild` folds every race in that order, and
:func:`insert` puts a race that completes late (its games stored after a later race's) in its
place, replaying the later races — so the ratings kept race by race always equal a rebuild.

Pure: no I/O, no clock. Storage (:mod:`halfmoon_server.adapters.storage`) calls it when a
race's last game is stored, and ``halfmoon ratings rebuild`` over the whole games table.

>>> a = RacedGame("g1", "ROOM1", "C", "race", "ann", 104, 60_000, 1_000, True, "a" * 64, 2)
>>> b = RacedGame("g2", "ROOM1", "C", "race", "bob", 90, 70_000, 2_000, True, "b" * 64, 2)
>>> ratings, changes = rebuild([a, b])
>>> ratings["a" * 64].shown(), ratings["b" * 64].shown(), [c.place for c in changes]
(1138, 927, [1, 2])
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from openskill.models import PlackettLuce

from halfmoon.protocol import Mode, ranking_key

__all__ = [
    "DEFAULT_PROVISIONAL_GAMES",
    "TWO_SEATS",
    "RacedGame",
    "RatedRace",
    "Rating",
    "RatingChange",
    "insert",
    "ms_of",
    "race_of",
    "races_in",
    "rate",
    "rebuild",
]

#: the model: openskill's defaults (mu 25, sigma 25/3, beta 25/6, tau 25/300)
MODEL = PlackettLuce()
#: the shown number: ``SHOWN_BASE + SHOWN_SCALE * (mu - 3 sigma)`` (openskill's ``ordinal``)
SHOWN_SCALE = 40.0
SHOWN_BASE = 1000.0
#: a rating is provisional until this many rated races (``--rating-provisional``)
DEFAULT_PROVISIONAL_GAMES = 10
#: why an identity in a race was not rated: it held two seats or more of it
TWO_SEATS = "two_seats"


@dataclass(frozen=True, slots=True)
class Rating:
    """An identity's rating: openskill's ``mu`` and ``sigma``, how many races rated it, and the
    name it last raced under."""

    mu: float = MODEL.mu
    sigma: float = MODEL.sigma
    games: int = 0
    name: str = ""

    def shown(self) -> int:
        """The one number shown: openskill's ordinal ``mu - 3 sigma``, scaled (a newcomer: 1000)."""
        return round(MODEL.rating(self.mu, self.sigma).ordinal(alpha=SHOWN_SCALE, target=SHOWN_BASE))

    def provisional(self, after: int = DEFAULT_PROVISIONAL_GAMES) -> bool:
        """Fewer than ``after`` rated races: the number is not settled yet."""
        return self.games < after


def ms_of(at: datetime) -> int:
    """A stored game's ``finished_at`` as epoch ms (SQLite gives it back without its zone: UTC)."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return round(at.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class RacedGame:
    """What rating needs of a stored game (no record)."""

    id: str
    room: str
    code: str
    mode: str
    nickname: str
    score: int
    time_ms: int
    finished_at_ms: int
    ranked: bool
    player: str | None
    #: how many racers its race had (None: stored before ratings: never rated)
    racers: int | None


@dataclass(frozen=True, slots=True)
class Placing:
    """An identity in a race: its game, the name it raced under, and its place in the race."""

    player: str
    game: str
    name: str
    place: int


@dataclass(frozen=True, slots=True)
class RatedRace:
    """A race as rating sees it: who is rated (``placings``, best first) and who is not
    (``excluded``: identities that held two seats)."""

    race: str
    ended_at_ms: int
    placings: tuple[Placing, ...]
    excluded: tuple[Placing, ...] = ()

    @property
    def key(self) -> tuple[int, str]:
        """Its place in the ratings' order: its end, then its id."""
        return (self.ended_at_ms, self.race)


@dataclass(frozen=True, slots=True)
class RatingChange:
    """One identity's rating before and after one race (``reason``: why it was not rated; then
    ``after`` is ``before``). ``field``: how many identities the race rated; ``name``: the name it
    raced under, which ``after`` carries too (``before`` carries none: what a name was before is
    not the race's to say)."""

    race: str
    ended_at_ms: int
    player: str
    game: str
    name: str
    place: int
    field: int
    before: Rating
    after: Rating
    reason: str | None = None

    @property
    def key(self) -> tuple[int, str]:
        return (self.ended_at_ms, self.race)


def race_of(games: Sequence[RacedGame]) -> RatedRace | None:
    """The rated race that ``games`` (every stored game of one race: one room, one deal) make, or
    None: not a multiplayer race, not all of its games stored yet, or nobody in it to rate or flag."""
    if not games:
        return None
    first = games[0]
    if first.mode != Mode.RACE or first.racers is None or first.racers < 2 or len(games) < first.racers:
        return None
    keys = {g.id: ranking_key(g.score, g.time_ms, g.finished_at_ms) for g in games}
    ordered = sorted(games, key=lambda g: (keys[g.id], g.id))

    def place(game: RacedGame) -> int:  # 1 + how many did strictly better (equal keys tie)
        return 1 + sum(1 for other in games if keys[other.id] < keys[game.id])

    seats = Counter(g.player for g in games if g.player is not None)
    twice = {player for player, n in seats.items() if n > 1}
    placings: list[Placing] = []
    excluded: dict[str, Placing] = {}
    for g in ordered:
        if g.player is None:
            continue
        if g.player in twice:
            excluded.setdefault(g.player, Placing(g.player, g.id, g.nickname, place(g)))  # their best seat
        elif g.ranked:
            placings.append(Placing(g.player, g.id, g.nickname, place(g)))
    if len(placings) < 2:
        placings = []  # one identity alone is not rated
    if not placings and not excluded:
        return None
    return RatedRace(
        race=min(g.id for g in games),
        ended_at_ms=max(g.finished_at_ms for g in games),
        placings=tuple(placings),
        excluded=tuple(excluded.values()),
    )


def races_in(games: Iterable[RacedGame]) -> list[RatedRace]:
    """The rated races that stored games make, in the ratings' order."""
    by_race: dict[tuple[str, str], list[RacedGame]] = defaultdict(list)
    for g in games:
        by_race[(g.room, g.code)].append(g)
    races = [race for race in map(race_of, by_race.values()) if race is not None]
    return sorted(races, key=lambda race: race.key)


def rate(ratings: Mapping[str, Rating], race: RatedRace) -> list[RatingChange]:
    """The changes ``race`` makes to ``ratings`` (an identity not in them starts at :class:`Rating`'s
    defaults): the rated field by openskill's ``rate`` on their places, the excluded unchanged."""
    changes: list[RatingChange] = []
    field = len(race.placings)
    if field:
        before = [ratings.get(p.player, Rating()) for p in race.placings]
        teams = [[MODEL.rating(mu=r.mu, sigma=r.sigma)] for r in before]
        rated = MODEL.rate(teams, ranks=[float(p.place) for p in race.placings])
        for p, old, [new] in zip(race.placings, before, rated, strict=True):
            after = Rating(new.mu, new.sigma, old.games + 1, p.name)
            change = RatingChange(
                race.race, race.ended_at_ms, p.player, p.game, p.name, p.place, field, replace(old, name=""), after
            )
            changes.append(change)
    for p in race.excluded:
        held = ratings.get(p.player, Rating())
        change = RatingChange(
            race.race, race.ended_at_ms, p.player, p.game, p.name, p.place, field,
            replace(held, name=""), replace(held, name=p.name), TWO_SEATS,
        )
        changes.append(change)
    return changes


def _fold(ratings: dict[str, Rating], races: Iterable[RatedRace]) -> list[RatingChange]:
    changes: list[RatingChange] = []
    for race in races:
        made = rate(ratings, race)
        for change in made:
            if change.reason is None:
                ratings[change.player] = change.after
        changes += made
    return changes


def rebuild(games: Iterable[RacedGame]) -> tuple[dict[str, Rating], list[RatingChange]]:
    """Every identity's rating and every change, from the stored games alone (in the ratings' order)."""
    ratings: dict[str, Rating] = {}
    changes = _fold(ratings, races_in(games))
    return ratings, changes


def _race_of_changes(changes: Sequence[RatingChange]) -> RatedRace:
    """A race as its stored changes tell it (to replay it)."""
    first = changes[0]
    placings = sorted(
        (Placing(c.player, c.game, c.name, c.place) for c in changes if c.reason is None),
        key=lambda p: (p.place, p.game),
    )
    excluded = tuple(Placing(c.player, c.game, c.name, c.place) for c in changes if c.reason is not None)
    return RatedRace(first.race, first.ended_at_ms, tuple(placings), excluded)


def insert(
    current: Mapping[str, Rating], later: Sequence[RatingChange], race: RatedRace
) -> tuple[dict[str, Rating], list[RatingChange]]:
    """Rate ``race`` in its place: ``later`` are the stored changes of the races after it in the
    ratings' order (usually none), ``current`` the ratings of everyone in ``race`` and ``later``
    (an identity missing has none yet). The later races' changes are undone and made again after
    ``race``'s. Returns the ratings of everyone touched (``games`` 0: none, as before any race),
    and the changes that replace ``later``, in the ratings' order."""
    ratings = dict(current)
    by_race: dict[str, list[RatingChange]] = defaultdict(list)
    for change in sorted(later, key=lambda c: c.key):
        by_race[change.race].append(change)
        if change.player not in {c.player for c in later if c.key < change.key}:
            # back to before the first later race it was in (its name: of its last rated race,
            # which the replay sets again if a later race rated it)
            ratings[change.player] = replace(change.before, name=ratings.get(change.player, Rating()).name)
    replay = [race, *(_race_of_changes(changes) for changes in by_race.values())]
    touched = {p.player for r in replay for p in (*r.placings, *r.excluded)}
    changes = _fold(ratings, sorted(replay, key=lambda r: r.key))
    return {player: ratings.get(player, Rating()) for player in touched}, changes
