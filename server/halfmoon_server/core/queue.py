"""The quick-race queue's matcher, sans I/O: who waits, who is matched with whom, and what each
one waiting is told.

Players wait as :class:`Waiting` entries (their identity — the hash of their player key —, their
name, when they came in). :func:`plan` takes every entry, the time and the rules, and says what
is due now: the groups to seat in a race (:class:`Plan.matches`), and for everyone still waiting
how many are in their group, when it starts, and whether they have waited alone long enough to
be offered something else (keep waiting, race a ghost, play solo). It keeps no state between
calls: the same entries at the same time give the same plan, so any instance of a cluster can
run it on the queue it reads from Redis, and the embedded server on the one it holds.

Groups form in the order players came: the one who has waited longest anchors a group, and the
others join it in their order of arrival while it has room. With ratings (``rating_of``: a
player's rating, or None for one who has none), a player joins a group only within the anchor's
**band** around the anchor's rating, which widens the longer the anchor has waited
(:meth:`QueueRules.band`); a player without a rating, or an anchor without one, has no band. A
group starts when it is full, or ``fill_ms`` after it first held two players (the second one's
arrival, or the moment the widening band took them in).

>>> rules = QueueRules(max_players=3, fill_ms=10_000, lone_ms=30_000)
>>> queue = [Waiting("a" * 64, "Ada", 0), Waiting("b" * 64, "Bea", 2_000)]
>>> result = plan(queue, 5_000, rules)
>>> result.matches, result.waiting["a" * 64]
([], Status(count=2, starts_at=12000, offer=False))
>>> [[w.name for w in group] for group in plan(queue, 12_000, rules).matches]
[['Ada', 'Bea']]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: A player's rating, or None (no rating: no band).
RatingOf = Callable[[str], float | None]


@dataclass(frozen=True, slots=True)
class Waiting:
    """One player in the queue: ``player`` the hash of their player key (one entry per hash),
    their ``name``, ``since`` (ms) when they came in, ``offer_from`` (ms) when their lone wait is
    counted from (their arrival, or when they last chose to keep waiting; None: ``since``)."""

    player: str
    name: str
    since: int
    offer_from: int | None = None

    @property
    def lone_from(self) -> int:
        return self.since if self.offer_from is None else self.offer_from


@dataclass(frozen=True, slots=True)
class QueueRules:
    """How groups form (the server's settings)."""

    #: a group starts at once with this many players (2 to 6)
    max_players: int = 6
    #: a group starts this long after it first held two players, if it is not full before
    fill_ms: int = 10_000
    #: a player alone this long is offered to keep waiting, race a ghost or play solo
    lone_ms: int = 30_000
    #: the band's half-width around the anchor's rating at once, and how much it widens a second
    band_start: float = 100.0
    band_per_s: float = 10.0
    #: the widest it gets (None: it widens without end)
    band_max: float | None = None
    min_players: int = field(default=2, init=False)

    def __post_init__(self) -> None:
        if not self.min_players <= self.max_players <= 6:
            raise ValueError(f"a quick race holds 2 to 6 players, not {self.max_players}")
        if self.fill_ms < 0 or self.lone_ms < 0 or self.band_start < 0 or self.band_per_s < 0:
            raise ValueError("the queue's times and band cannot be negative")

    def band(self, waited_ms: int) -> float:
        """The band's half-width for an anchor who has waited ``waited_ms``."""
        width = self.band_start + self.band_per_s * max(0, waited_ms) / 1000
        return width if self.band_max is None else min(width, self.band_max)

    def band_reaches(self, gap: float) -> int | None:
        """After how long (ms) an anchor's band first spans a rating ``gap`` (None: never)."""
        if gap <= self.band_start:
            return 0
        if self.band_per_s == 0 or (self.band_max is not None and gap > self.band_max):
            return None
        return -int(-(gap - self.band_start) * 1000 // self.band_per_s)  # (rounded up)


@dataclass(frozen=True, slots=True)
class Status:
    """What one waiting player is told: ``count`` players in their group (themselves included),
    ``starts_at`` (ms) when the group starts (None: not before a second player comes), ``offer``:
    they have been alone ``lone_ms`` — keep waiting, race a ghost, or play solo."""

    count: int
    starts_at: int | None
    offer: bool


@dataclass(frozen=True, slots=True)
class Plan:
    """:func:`plan`'s answer: the groups to seat now (each in order of arrival), every other
    waiting player's :class:`Status`, and when the plan next changes by itself (None: only when
    the queue does)."""

    matches: list[list[Waiting]]
    waiting: dict[str, Status]
    next_at: int | None


def _no_rating(player: str) -> float | None:
    return None


def plan(entries: Sequence[Waiting], now: int, rules: QueueRules, rating_of: RatingOf = _no_rating) -> Plan:
    """The queue's plan at ``now``: see the module docstring. ``entries`` in any order (one per
    player: a later duplicate of a player is ignored); ``rating_of`` gives each player's rating."""
    seen: set[str] = set()
    queue: list[Waiting] = []
    for entry in sorted(entries, key=lambda e: (e.since, e.player)):
        if entry.player not in seen:
            seen.add(entry.player)
            queue.append(entry)
    ratings = {entry.player: rating_of(entry.player) for entry in queue}
    matches: list[list[Waiting]] = []
    waiting: dict[str, Status] = {}
    wakes: list[int] = []
    left = queue
    while left:
        anchor, others = left[0], left[1:]
        group, joined_at, rest = _group(anchor, others, now, rules, ratings, wakes)
        left = rest
        if len(group) >= rules.max_players:
            matches.append(group)
            continue
        if len(group) >= rules.min_players:
            assert joined_at is not None
            starts_at = joined_at + rules.fill_ms
            if now >= starts_at:
                matches.append(group)
                continue
            wakes.append(starts_at)
            for member in group:
                waiting[member.player] = Status(len(group), starts_at, False)
            continue
        offer_at = anchor.lone_from + rules.lone_ms
        if now < offer_at:
            wakes.append(offer_at)
        waiting[anchor.player] = Status(1, None, now >= offer_at)
    return Plan(matches, waiting, min(wakes, default=None))


def _group(
    anchor: Waiting,
    others: list[Waiting],
    now: int,
    rules: QueueRules,
    ratings: dict[str, float | None],
    wakes: list[int],
) -> tuple[list[Waiting], int | None, list[Waiting]]:
    """The anchor's group at ``now`` (in order of arrival), when it first held two players, and
    the players left out. A player out of the band now adds the moment it would take them in to
    ``wakes``."""
    group = [anchor]
    rest: list[Waiting] = []
    second_at: int | None = None
    anchor_rating = ratings[anchor.player]
    for index, other in enumerate(others):
        if len(group) >= rules.max_players:
            rest.extend(others[index:])  # (full: the others wait for the next group, in order)
            break
        rating = ratings[other.player]
        if anchor_rating is None or rating is None:
            fits_at: int | None = other.since
        else:
            reach = rules.band_reaches(abs(anchor_rating - rating))
            fits_at = None if reach is None else max(other.since, anchor.since + reach)
        if fits_at is None or fits_at > now:
            if fits_at is not None:
                wakes.append(fits_at)
            rest.append(other)
            continue
        group.append(other)
        second_at = fits_at if second_at is None else min(second_at, fits_at)
    return group, second_at, rest
