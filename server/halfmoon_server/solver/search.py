"""The solver: whether a position can still be won, and a winning line when it can.

An operator's tool that comes with the server, never with a player's install: the app shows no
solver and no hint and never says whether a deal can be won (the seed's rules). The server uses
it behind the scenes only, to deal winnable daily challenges (:mod:`halfmoon_server.rooms.daily`, in
the :mod:`~halfmoon_server.solver.pool` worker); ``halfmoon solve`` (:mod:`halfmoon_server.solver.cli`)
and ``analyse`` are for operators and tests. It is pure like the engine it drives: no I/O, no
global state, no clock of its own (callers pass one in when they want a time budget), and it
imports nothing of the server's.

How it works (``docs/solver.md`` gives the proofs):

* Suits never matter, only ranks, and the deal is fixed, so a position is the 12 pile heights
  plus which reserve slots still hold a card. The table's key: the heights of the piles of two
  cards or more, and how many *free* cards (reserve cards, piles' last cards: they cover
  nothing and stay playable) of each rank are left, since free cards of a rank are
  interchangeable. The solver spends the lowest-numbered reserve slot of a rank first.
* Two searches share the budget, taking turns restart by restart: one on the position, one on
  its reversal (every pile upside down). A line wins the position exactly when the same moves
  in the opposite order win the reversal, and a deal hard one way is usually easy the other
  (a knot at the bottom of the piles is at the top of the reversal).
* Each is a depth-first search with a transposition table of positions proved lost, restarted
  with a slightly shaken move order (a generator seeded by the attempt number: deterministic)
  and a growing node limit; the table carries over, since its entries are proofs.
* Safe moves, played without branching: a whole class (A+10, 2+9, 3+8, 4+7, 5+6 or J+Q+K)
  whose remaining cards are all playable; a card whose partners' remaining copies are all
  *free* (in the reserve or alone at the bottom of a pile, so they block nothing and stay
  playable). Free cards of one rank are interchangeable, so a move is offered with one of them.
* Beam searches after the second to fourth restarts (widths 30, 100, 300): level by level, the
  positions with the least sum of squared pile heights go on. They prove nothing; they find the
  wins the depth-first order is slow to find.
* Dead-end test by relaxation: the cards of one class, with every other card deleted, must
  still be removable on their own (deleting cards only ever helps); in long searches, the
  cards of every two classes too. The relaxed problems are small and their answers cached.
* Dead-end test by reachability, at the root: every card must be reachable, i.e. come to the
  top while a card of each rank it needs could come to the top elsewhere (counts ignored).
* Reduced positions, between restarts: the position with only two (then three, then four)
  classes' cards left, solved like a deal within a small budget; one proved lost proves the
  position lost.
* Moves ordered to dig the tallest piles first and to spare the reserve.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from itertools import combinations, product
from typing import Final

from halfmoon.codes import DealCode, daily_code
from halfmoon.errors import HalfMoonError
from halfmoon.game import Game, Move
from halfmoon.positions import PILE_COUNT
from halfmoon.record import UNDO, GameRecord, replay

__all__ = [
    "DEFAULT_NODE_BUDGET",
    "Analysis",
    "NoWinnableDealError",
    "SolveResult",
    "Verdict",
    "analyse",
    "first_winnable_daily",
    "solve",
]

class NoWinnableDealError(HalfMoonError):
    """No candidate daily code was proved winnable within the attempts allowed
    (:func:`first_winnable_daily`)."""

    code = "no_winnable_deal"


#: The default node budget: enough for almost every deal (see docs/solver.md).
DEFAULT_NODE_BUDGET: Final = 2_000_000

#: Pair classes 0-4 (A+10, 2+9, 3+8, 4+7, 5+6) and the triple class 5 (J+Q+K), by rank.
_CLASS_OF_RANK: Final = (-1, 0, 1, 2, 3, 4, 4, 3, 2, 1, 0, 5, 5, 5)
_CLASS_RANKS: Final[tuple[tuple[int, ...], ...]] = ((1, 10), (2, 9), (3, 8), (4, 7), (5, 6), (11, 12, 13))
_FACE_CLASS: Final = 5
_CLASS_COUNT: Final = 6
_RESERVE_SHIFT: Final = 4 * PILE_COUNT  # key bits: 4 per pile height, then 4 per rank
_PILE_BIT: Final = tuple(1 << (4 * p) for p in range(PILE_COUNT))
#: a free card of each rank (in the reserve, or alone in its pile) adds this to the key
_FREE_BIT: Final = (0, *(1 << (_RESERVE_SHIFT + 4 * (rank - 1)) for rank in range(1, 14)))
#: a reserve card of each rank adds this to a class key (the same bit as in the position key)
_RESERVE_BIT: Final = _FREE_BIT
_TIME_CHECK_EVERY: Final = 64
_FIRST_RESTART_NODES: Final = 1000
_RELAXATION_CAP: Final = 300
_PAIR_RELAXATION_CAP: Final = 300
_PAIRS_AFTER_NODES: Final = 20_000
_RESTART_GROWTH: Final = 1.5
_RESTART_NOISE: Final = 3.0
_NO_LIMIT: Final = 1 << 62


#: the beam searches' widths (they run after restarts _FIRST_BEAM_AFTER, +1, +2), and their shake
_BEAM_WIDTHS: Final = (30, 100, 300)
_BEAM_NOISE: Final = 5.0
_FIRST_BEAM_AFTER: Final = 1  # the restart after which the first beam runs

#: (the restart after which it runs, the number of classes): the tests on reduced positions
_SUBSET_TESTS: Final = ((0, 2), (2, 3), (4, 4))
#: the node budget of one reduced position's solve
_SUBSET_NODES: Final = 5_000


class Verdict(enum.StrEnum):
    """What the solver concluded (a ``str``, so it compares equal to its wire and JSON name)."""

    WINNABLE = "winnable"
    UNWINNABLE = "unwinnable"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class SolveResult:
    """A verdict, a winning line from the position solved (when winnable), and the effort.

    ``nodes`` counts positions the search expanded; ``ms`` is the time measured with the
    caller's clock (0.0 when no clock was given).
    """

    verdict: Verdict
    moves: list[Move] | None
    nodes: int
    ms: float


@dataclass(frozen=True)
class Analysis:
    """A finished (or abandoned) game looked at afterwards.

    ``winnable``: the verdict for the deal from its start. ``last_winnable_move``: for the final
    line of play (undos cancelled out), the largest k such that a win was still possible after
    its first k moves — 48 for a won game; None when the deal was never winnable or the budget
    ran out before the answer was known.
    """

    winnable: Verdict
    last_winnable_move: int | None
    nodes: int = 0
    ms: float = 0.0


class _GiveUp(Exception):
    """Raised inside a relaxed problem that takes too long to be worth its answer."""


class _OutOfBudget(Exception):
    """Raised inside the search when the node or time budget is spent."""


class _ClassProblem:
    """Some classes' cards alone (every other card deleted): can they all be removed?

    A relaxation of the real game: a card is playable when every card above it has gone, and
    deleting the other classes' cards only removes obstacles, so cards that cannot be cleared
    on their own cannot be cleared in the game either. Keys count the group's cards: 4 bits
    per pile, then 4 bits per rank (at ``_RESERVE_SHIFT + 4 * (rank - 1)``) for the reserve.
    """

    __slots__ = (
        "cap",
        "class_ranks",
        "class_sizes",
        "left",
        "memo",
        "pile_class_counts",
        "rank_class",
        "ranks",
        "tick",
        "tops",
    )

    def __init__(
        self, classes: tuple[int, ...], piles: list[list[int]], tick: Callable[[], None], cap: int = _RELAXATION_CAP
    ) -> None:
        self.tick = tick  # counts a node against the solve's budget (may raise _OutOfBudget)
        self.cap = cap  # the nodes a query may take before it gives up
        self.class_ranks = [_CLASS_RANKS[c] for c in classes]
        self.class_sizes = [len(ranks) for ranks in self.class_ranks]
        self.ranks = [r for c in classes for r in _CLASS_RANKS[c]]
        self.rank_class = {r: i for i, ranks in enumerate(self.class_ranks) for r in ranks}
        # piles[p] lists the group's cards in pile p, bottom to top; for each count n of them
        # left: the top card's rank, and how many cards of each class the n cards hold
        self.tops: list[list[int]] = [[0, *pile] for pile in piles]
        self.pile_class_counts: list[list[tuple[int, ...]]] = [
            [
                tuple(sum(1 for rank in pile[:n] if rank in ranks) for ranks in self.class_ranks)
                for n in range(len(pile) + 1)
            ]
            for pile in piles
        ]
        self.memo: dict[int, bool] = {}
        self.left = 0

    def check(self, key: int) -> bool:
        """False only when the group's cards provably cannot all be removed.

        A query that takes more than ``_RELAXATION_CAP`` nodes gives up and answers True:
        that only weakens the pruning, never its soundness.
        """
        known = self.memo.get(key)
        if known is not None:
            return known
        self.left = self.cap
        try:
            return self.solvable(key)
        except _GiveUp:
            self.memo[key] = True
            return True

    def solvable(self, key: int) -> bool:
        known = self.memo.get(key)
        if known is not None:
            return known
        result = self._search(key)
        self.memo[key] = result
        return result

    def _search(self, key: int) -> bool:
        if key == 0:
            return True
        self.tick()
        self.left -= 1
        if self.left < 0:
            raise _GiveUp
        sources: dict[int, list[int]] = {r: [] for r in self.ranks}
        width = len(self.class_ranks)
        totals = [0] * width
        tallest = [0] * width
        tops = self.tops
        pile_class_counts = self.pile_class_counts
        for p in range(PILE_COUNT):
            n = (key >> (4 * p)) & 15
            if n:
                sources[tops[p][n]].append(p)
                counts = pile_class_counts[p][n]
                for i in range(width):
                    k = counts[i]
                    totals[i] += k
                    if k > tallest[i]:
                        tallest[i] = k
        for r in self.ranks:
            in_reserve = (key >> (_RESERVE_SHIFT + 4 * (r - 1))) & 15
            if in_reserve:
                totals[self.rank_class[r]] += in_reserve
                sources[r].append(-r)  # one reserve source per rank: they are interchangeable
        # Hall's condition, class by class: a group takes at most one card from a pile.
        for i in range(width):
            if tallest[i] * self.class_sizes[i] > totals[i]:
                return False
        children = []
        for class_ranks in self.class_ranks:
            for combo in product(*(sources[r] for r in class_ranks)):
                child = key
                score = 0
                for q in combo:
                    if q >= 0:
                        child -= _PILE_BIT[q]
                        score += (key >> (4 * q)) & 15
                    else:
                        child -= 1 << (_RESERVE_SHIFT + 4 * (-q - 1))
                children.append((score, child))
        children.sort(reverse=True)  # dig the tallest piles first, spare the reserve
        return any(self.solvable(child) for _, child in children)


class _Budget:
    """The node and time budget one solve shares between its searches (forward and reversed)."""

    __slots__ = ("clock", "deadline", "node_budget", "timed_out", "used")

    def __init__(self, node_budget: int, deadline: float | None, clock: Callable[[], float] | None) -> None:
        self.node_budget = node_budget
        self.deadline = deadline
        self.clock = clock
        self.used = 0  # nodes of every search and relaxed problem of this solve
        self.timed_out = False

    def spend(self) -> None:
        """Count one node; raises :class:`_OutOfBudget` instead when the budget is spent."""
        if self.used >= self.node_budget:
            raise _OutOfBudget
        self.used += 1
        if self.used % _TIME_CHECK_EVERY == 0 and self.clock is not None and self.deadline is not None:
            self._check_clock(self.clock, self.deadline)

    def _check_clock(self, clock: Callable[[], float], deadline: float) -> None:
        if clock() > deadline:
            self.timed_out = True
            raise _OutOfBudget

    @property
    def spent(self) -> bool:
        return self.timed_out or self.used >= self.node_budget


def _pile_delta(p: int, pile: list[int], height: int) -> int:
    """What removing the top of pile ``p`` at ``height`` takes off a search's key."""
    if height >= 3:
        return _PILE_BIT[p]
    if height == 2:  # the pile's last card becomes free
        return 2 * _PILE_BIT[p] - _FREE_BIT[pile[0]]
    return _FREE_BIT[pile[0]]


class _Search:
    """The state of one search: the fixed layout, the current heights, the tables.

    ``piles`` lists each pile's ranks from the bottom up; ``reserve`` the reserve slots' ranks
    (None for an empty slot). A solve runs two of these: one on the position, one on the
    position with every pile turned upside down (see :func:`_reversed_layout`).
    """

    def __init__(self, piles: list[list[int]], reserve: list[int | None], budget: _Budget) -> None:
        self.cols: list[list[int]] = [list(pile) for pile in piles]
        self.h: list[int] = [len(pile) for pile in self.cols]
        self.res_rank: list[int] = [0 if rank is None else rank for rank in reserve]
        # occupied slots of each rank, lowest first; the next one used is slots[len - count]
        self.res_slots: list[list[int]] = [[] for _ in range(14)]
        for slot, rank in enumerate(reserve):
            if rank is not None:
                self.res_slots[rank].append(slot)
        self.res_cnt: list[int] = [len(slots) for slots in self.res_slots]
        self.reserve_ranks: list[int] = [rank for rank in range(1, 14) if self.res_slots[rank]]
        # The key: the height of each pile of two cards or more, and how many free cards of
        # each rank there are (reserve cards and piles' last cards: interchangeable).
        self.key = sum(h << (4 * p) for p, h in enumerate(self.h) if h >= 2)
        self.key += sum(_FREE_BIT[pile[0]] for pile, h in zip(self.cols, self.h, strict=True) if h == 1)
        self.key += sum(_FREE_BIT[rank] for rank in reserve if rank is not None)
        # remaining cards per class, and the relaxed per-class keys
        self.left: list[int] = [0] * _CLASS_COUNT
        class_piles: list[list[list[int]]] = [[[] for _ in range(PILE_COUNT)] for _ in range(_CLASS_COUNT)]
        self.ckey: list[int] = [0] * _CLASS_COUNT
        for p, pile in enumerate(self.cols):
            for rank in pile:
                c = _CLASS_OF_RANK[rank]
                class_piles[c][p].append(rank)
                self.left[c] += 1
                self.ckey[c] += _PILE_BIT[p]
        for rank in range(1, 14):
            c = _CLASS_OF_RANK[rank]
            self.left[c] += self.res_cnt[rank]
            self.ckey[c] += self.res_cnt[rank] << (_RESERVE_SHIFT + 4 * (rank - 1))
        self.cards_left = sum(self.left)
        self.problems = [_ClassProblem((c,), class_piles[c], self._sub_tick) for c in range(_CLASS_COUNT)]
        # the two-class problems, built when first needed (most solves never need them)
        self.pair_problems: dict[tuple[int, int], _ClassProblem] = {}

        # what removing a pile's top takes off the key, by the pile's height (a pile's last
        # card is counted as a free card of its rank), and what a reserve card takes off
        self.pile_deltas: list[list[int]] = [
            [0, *(_pile_delta(p, pile, height) for height in range(1, len(pile) + 1))]
            for p, pile in enumerate(self.cols)
        ]
        self.reserve_deltas: list[int] = [_FREE_BIT[rank] for rank in self.res_rank]

        self.dead: set[int] = set()
        self.path: list[tuple[int, ...]] = []
        self.trail: list[int] = []  # the key before each move of the path
        self.budget = budget
        self.nodes = 0  # this search's own nodes (the restarts' limits count these)
        self.stop_at = 0
        self.use_pairs = False
        self.noise = 0.0
        self.rng = random.Random(0)

    # -- applying moves --------------------------------------------------------------------

    def _deltas(self) -> list[int]:
        """What removing the card at each position (0-19) now takes off the key."""
        heights = self.h
        return [deltas[heights[p]] for p, deltas in enumerate(self.pile_deltas)] + self.reserve_deltas

    def _child_key(self, move: tuple[int, ...]) -> int:
        """The key after ``move`` (the positions of a move are distinct, so their deltas add up)."""
        h = self.h
        child = self.key
        for q in move:
            child -= self.pile_deltas[q][h[q]] if q < PILE_COUNT else self.reserve_deltas[q - PILE_COUNT]
        return child

    def _advance(self, move: tuple[int, ...], child: int) -> int:
        """Remove the move's cards (``child``: the key after it); returns the move's class."""
        h = self.h
        ckey = self.ckey
        c = -1
        for q in move:
            if q < PILE_COUNT:
                height = h[q] - 1
                h[q] = height
                c = _CLASS_OF_RANK[self.cols[q][height]]
                ckey[c] -= _PILE_BIT[q]
            else:
                rank = self.res_rank[q - PILE_COUNT]
                self.res_cnt[rank] -= 1
                c = _CLASS_OF_RANK[rank]
                ckey[c] -= _RESERVE_BIT[rank]
        self.left[c] -= len(move)
        self.cards_left -= len(move)
        self.key = child
        return c

    def _apply(self, move: tuple[int, ...], child: int) -> int:
        """Play ``move`` on the search's line; returns the move's class."""
        self.path.append(move)
        self.trail.append(self.key)
        return self._advance(move, child)

    def _undo(self) -> None:
        move = self.path.pop()
        h = self.h
        ckey = self.ckey
        c = -1
        for q in move:
            if q < PILE_COUNT:
                c = _CLASS_OF_RANK[self.cols[q][h[q]]]
                h[q] += 1
                ckey[c] += _PILE_BIT[q]
            else:
                rank = self.res_rank[q - PILE_COUNT]
                self.res_cnt[rank] += 1
                c = _CLASS_OF_RANK[rank]
                ckey[c] += _RESERVE_BIT[rank]
        self.left[c] += len(move)
        self.cards_left += len(move)
        self.key = self.trail.pop()

    def _reserve_pos(self, rank: int) -> int:
        """The canonical reserve position (12-19) of the next card of ``rank``."""
        slots = self.res_slots[rank]
        return PILE_COUNT + slots[len(slots) - self.res_cnt[rank]]

    # -- the search ------------------------------------------------------------------------

    def _sub_tick(self) -> None:
        """A node of a relaxed problem: it counts against the budget, not against a restart."""
        self.budget.spend()

    def _tick(self) -> None:
        self.nodes += 1
        if self.nodes >= self.stop_at:
            raise _OutOfBudget
        self.budget.spend()

    def _build_pair_problems(self) -> None:
        for c1 in range(_CLASS_COUNT):
            for c2 in range(c1 + 1, _CLASS_COUNT):
                merged = [[rank for rank in pile if _CLASS_OF_RANK[rank] in (c1, c2)] for pile in self.cols]
                problem = _ClassProblem((c1, c2), merged, self._sub_tick, _PAIR_RELAXATION_CAP)
                self.pair_problems[c1, c2] = problem
                self.pair_problems[c2, c1] = problem

    def _relaxed_ok(self, c: int) -> bool:
        ckey = self.ckey
        if not self.problems[c].check(ckey[c]):
            return False
        if not self.use_pairs:
            return True
        pairs = self.pair_problems
        if not pairs:
            self._build_pair_problems()
        own = ckey[c]
        return all(other == c or pairs[c, other].check(own + ckey[other]) for other in range(_CLASS_COUNT))

    def _all_reachable(self) -> bool:
        """False only when some card can provably never be removed (see docs/solver.md).

        The least set R of cards closed under: a card joins R when every card above it is in
        R and, for each rank it needs (its pair partner's; a face card's two other ranks),
        some card of that rank in the reserve or in another pile has every card above it in R.
        Counting is ignored (a partner may serve several cards), so only what is impossible
        is cut. In each pile R is a run of top cards; ``top[p]`` counts them.
        """
        h = self.h
        cols = self.cols
        top = [0] * PILE_COUNT
        # exposable cards by rank: the reserve's, each pile's R run and the card under it
        exposable = self.res_cnt[:]
        for p in range(PILE_COUNT):
            if h[p]:
                exposable[cols[p][h[p] - 1]] += 1
        remaining = sum(1 for p in range(PILE_COUNT) if h[p])
        grown = True
        while grown and remaining:
            grown = False
            for p in range(PILE_COUNT):
                hp = h[p]
                while top[p] < hp:
                    col = cols[p]
                    i = hp - 1 - top[p]
                    rank = col[i]
                    # pile p's own exposable cards (its run and rank at i) cannot partner it
                    own = [0] * 14
                    for j in range(i, hp):
                        own[col[j]] += 1
                    if rank <= 10:
                        ok = exposable[11 - rank] - own[11 - rank] > 0
                    else:
                        ok = all(exposable[f] - own[f] > 0 for f in (11, 12, 13) if f != rank)
                    if not ok:
                        break
                    top[p] += 1
                    grown = True
                    if i > 0:
                        exposable[col[i - 1]] += 1
            remaining = sum(1 for p in range(PILE_COUNT) if top[p] < h[p])
        return remaining == 0

    def root_ok(self) -> bool:
        """False when the tests at the root prove the position lost (no search needed)."""
        if not all(self._relaxed_ok(c) for c in range(_CLASS_COUNT)):
            return False
        # the reachability test is too slow for every node (a third of the speed), but at the
        # root it settles some deals at once
        return self._all_reachable()

    def attempt(self, number: int) -> bool | None:
        """Restart ``number`` (0, 1, 2, …): True when it found a win (the line is then
        ``self.path``), False when it proved the position lost, None when its node limit ran out.

        Restarts are short searches, the first in heuristic order, the next ones with the order
        shaken by a seeded generator, each longer than the last. The table of lost positions
        carries over: a position enters it only once proved lost. The first restarts are each
        followed by a beam search. Raises :class:`_OutOfBudget` when the solve's budget is spent.
        """
        self.stop_at = self.nodes + int(_FIRST_RESTART_NODES * _RESTART_GROWTH**number)
        self.noise = 0.0 if number == 0 else _RESTART_NOISE
        # the two-class relaxations cost more than they save on easy deals: only in long searches
        self.use_pairs = self.nodes >= _PAIRS_AFTER_NODES
        self.rng.seed(number)
        try:
            return self._dfs()
        except _OutOfBudget:
            while self.path:
                self._undo()
            if self.budget.spent:
                raise
        beam = number - _FIRST_BEAM_AFTER
        if 0 <= beam < len(_BEAM_WIDTHS):
            # a beam search, wider each time, finds the wins the restarts are slow to find
            self.noise = 0.0 if beam == 0 else _BEAM_NOISE
            self.stop_at = _NO_LIMIT
            if self._beam(_BEAM_WIDTHS[beam]):
                return True
        return None

    # -- the beam phase ---------------------------------------------------------------------

    def _load(self, state: _State) -> None:
        key, h, res_cnt, left, ckey, cards_left = state
        self.key = key
        self.h[:] = h
        self.res_cnt[:] = res_cnt
        self.left[:] = left
        self.ckey[:] = ckey
        self.cards_left = cards_left

    def _state(self) -> _State:
        return (self.key, tuple(self.h), tuple(self.res_cnt), tuple(self.left), tuple(self.ckey), self.cards_left)

    def _tops(self) -> tuple[list[list[int]], list[int], list[list[int]]]:
        """The playable pile tops by rank, the free cards by rank, and the sources by rank.

        A rank's sources are the playable positions worth telling apart. Free cards of a rank
        (reserve cards, and a pile's last card) block nothing and stay playable until used, so
        which one a move spends makes no difference: one is offered, the canonical reserve slot
        if any, else the first lone pile card. Pile sources come in pile order, then the reserve.
        """
        h = self.h
        cols = self.cols
        res_cnt = self.res_cnt
        tops: list[list[int]] = [[] for _ in range(14)]
        sources: list[list[int]] = [[] for _ in range(14)]
        free = res_cnt[:]
        for p, hp in enumerate(h):
            if hp:
                rank = cols[p][hp - 1]
                tops[rank].append(p)
                if hp > 1:
                    sources[rank].append(p)
                else:
                    if not free[rank]:  # the first free card of its rank, and no reserve card
                        sources[rank].append(p)
                    free[rank] += 1
        for rank in self.reserve_ranks:
            if res_cnt[rank]:
                sources[rank].append(self._reserve_pos(rank))
        return tops, free, sources

    def _beam(self, width: int) -> bool:
        """A beam search for a win (no proofs): True when it found one, the line in ``path``.

        Level by level, every position of the beam is expanded (after its safe moves), and
        the ``width`` children with the least sum of squared pile heights go on, those
        already proved lost or failing the relaxation test left out. Children are scored
        without being played: only those kept are played (and tested).
        """
        root = self._state()
        beam: list[tuple[_State, _Link]] = [(root, None)]
        dead = self.dead
        won: list[tuple[int, ...]] = []
        rnd = self.rng.random
        noise = self.noise
        try:
            while beam:
                bases: list[tuple[_State, _Link]] = []
                children: dict[int, tuple[float, int, tuple[int, ...]]] = {}
                for state, link in beam:
                    self._load(state)
                    self._tick()
                    ok = True
                    while True:
                        if self.cards_left == 0:
                            won = _unlink(link)
                            return True
                        tops, free, sources = self._tops()
                        safe = self._safe_move(tops, free, sources)
                        if safe is None:
                            break
                        c = self._advance(safe, self._child_key(safe))
                        link = (link, safe)
                        if not self._relaxed_ok(c):
                            ok = False
                            break
                    if not ok:
                        continue
                    index = len(bases)
                    bases.append((self._state(), link))
                    h = self.h
                    value = float(sum(hp * hp for hp in h))
                    key = self.key
                    delta = self._deltas()
                    for heights, move in self._moves(sources, ordered=False):
                        # each pile card takes 2h - 1 off the sum of squared heights
                        child = key
                        score = value - 2 * heights
                        for q in move:
                            child -= delta[q]
                            if q < PILE_COUNT:
                                score += 1
                        if child in dead:
                            continue
                        if noise:
                            score += noise * rnd()
                        known = children.get(child)
                        if known is None or score < known[0]:
                            children[child] = (score, index, move)
                beam = []
                for _, index, move in sorted(children.values()):
                    state, link = bases[index]
                    self._load(state)
                    if self._relaxed_ok(self._advance(move, self._child_key(move))):
                        beam.append((self._state(), (link, move)))
                        if len(beam) == width:
                            break
        finally:
            self._load(root)
            self.path = won  # the line found, or nothing (the position is back at the root)
        return False

    def _dfs(self) -> bool:
        if self.cards_left == 0:
            return True
        key = self.key
        if key in self.dead:
            return False
        self._tick()
        tops, free, sources = self._tops()
        # safe moves first: no branching
        safe = self._safe_move(tops, free, sources)
        if safe is not None:
            ok = self._relaxed_ok(self._apply(safe, self._child_key(safe))) and self._dfs()
            if ok:
                return True
            self._undo()
            self.dead.add(key)
            return False
        moves = self._moves(sources)
        dead = self.dead
        delta = self._deltas()
        for _, move in moves:
            child = key
            for q in move:
                child -= delta[q]
            if child in dead:  # known lost: no need to play it
                continue
            if self._relaxed_ok(self._apply(move, child)) and self._dfs():
                return True
            self._undo()
        self.dead.add(key)
        return False

    def _free_source(self, tops: list[list[int]], rank: int) -> int:
        if self.res_cnt[rank]:
            return self._reserve_pos(rank)
        for p in tops[rank]:
            if self.h[p] == 1:
                return p
        raise AssertionError("no free card of this rank")  # pragma: no cover

    def _best_source(self, sources: list[int]) -> int:
        """The source to spend first: the tallest pile, a reserve card last."""
        h = self.h
        return max(sources, key=lambda q: h[q] if q < PILE_COUNT else -1)

    def _safe_move(
        self, tops: list[list[int]], free: list[int], sources: list[list[int]]
    ) -> tuple[int, ...] | None:
        """A move that keeps a won position won, if one is known (see docs/solver.md)."""
        left = self.left
        res_cnt = self.res_cnt
        for c in range(5):
            if not left[c]:
                continue
            r, s = _CLASS_RANKS[c]
            n = left[c] // 2
            playable_r = len(tops[r]) + res_cnt[r]
            playable_s = len(tops[s]) + res_cnt[s]
            if not playable_r or not playable_s:
                continue
            if playable_r == n and playable_s == n:
                # the whole class is playable: any pairing clears it
                return (sources[r][0], sources[s][0])
            if free[s] == n:
                return (self._best_source(sources[r]), self._free_source(tops, s))
            if free[r] == n:
                return (self._free_source(tops, r), self._best_source(sources[s]))
        if left[_FACE_CLASS]:
            n = left[_FACE_CLASS] // 3
            ranks = _CLASS_RANKS[_FACE_CLASS]
            playable = [len(tops[r]) + res_cnt[r] for r in ranks]
            if min(playable) == 0:
                return None
            if playable == [n, n, n]:
                return tuple(sources[r][0] for r in ranks)
            all_free = [free[r] == n for r in ranks]
            if sum(all_free) >= 2:
                return self._face_safe(tops, sources, ranks, all_free)
        return None

    def _face_safe(
        self, tops: list[list[int]], sources: list[list[int]], ranks: tuple[int, ...], free: list[bool]
    ) -> tuple[int, ...]:
        # two ranks entirely free: spend a free card of each with the best card of the third
        chosen: list[int] = []
        odd = free.index(False) if not all(free) else 0
        for i, r in enumerate(ranks):
            if i == odd:
                chosen.append(self._best_source(sources[r]))
            else:
                chosen.append(self._free_source(tops, r))
        return tuple(chosen)

    def _moves(self, sources: list[list[int]], ordered: bool = True) -> list[tuple[float, tuple[int, ...]]]:
        """Every move (one free card per rank), best first: the sum of the heights of the piles
        its cards come from, a reserve card counting 0 (in no order unless ``ordered``)."""
        left = self.left
        # a source's score: its pile's height (positions 12-19, the reserve, score 0)
        score = [*self.h, 0, 0, 0, 0, 0, 0, 0, 0]
        out: list[tuple[float, tuple[int, ...]]] = []
        for c in range(5):
            if not left[c]:
                continue
            r, s = _CLASS_RANKS[c]
            ss = sources[s]
            if not ss:
                continue
            for a in sources[r]:
                sa = score[a]
                for b in ss:
                    out.append((sa + score[b], (a, b)))
        if left[_FACE_CLASS]:
            qs = sources[12]
            ks = sources[13]
            if qs and ks:
                for a in sources[11]:
                    for b in qs:
                        sab = score[a] + score[b]
                        for d in ks:
                            out.append((sab + score[d], (a, b, d)))
        if not ordered:
            return out
        if self.noise:
            rnd = self.rng.random
            noise = self.noise
            out = [(value + noise * rnd(), move) for value, move in out]
        out.sort(key=_first, reverse=True)
        return out


def _first(item: tuple[float, tuple[int, ...]]) -> float:
    return item[0]


#: a position: its key, pile heights, reserve counts by rank, cards left by class, class keys,
#: cards left
_State = tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], int]

#: a position as the solver sees it: the piles' ranks (bottom up), the reserve slots' ranks
_Layout = tuple[list[list[int]], list[int | None]]

#: a winning line under construction: (the line before, its last move), None at the start
_Link = tuple[object, tuple[int, ...]] | None


def _unlink(link: _Link) -> list[tuple[int, ...]]:
    moves: list[tuple[int, ...]] = []
    while link is not None:
        parent, move = link
        moves.append(move)
        link = parent  # type: ignore[assignment]
    moves.reverse()
    return moves


def _to_moves(path: list[tuple[int, ...]]) -> list[Move]:
    return [Move(tuple(sorted(move))) for move in path]


def _reversed_layout(piles: list[list[int]]) -> list[list[int]]:
    """The piles turned upside down: the reversed position of the same cards.

    A line of play wins a position exactly when the same moves in the opposite order win the
    reversed position (see docs/solver.md), so a solve may search either one.
    """
    return [pile[::-1] for pile in piles]


def _forward_line(reversed_line: list[tuple[int, ...]], reserve: list[int | None]) -> list[tuple[int, ...]]:
    """A winning line of the reversed position, turned into one of the position itself.

    The moves are played in the opposite order, on the same piles and reserve slots; reserve
    cards of one rank are interchangeable, so each rank's slots are renamed to be spent lowest
    first, as the forward search spends them.
    """
    slots: dict[int, list[int]] = {}
    for slot, rank in enumerate(reserve):
        if rank is not None:
            slots.setdefault(rank, []).append(slot)
    line = []
    for move in reversed(reversed_line):
        renamed = []
        for q in move:
            if q >= PILE_COUNT:
                rank = reserve[q - PILE_COUNT]
                assert rank is not None, "a winning line spends only reserve slots that hold a card"
                q = PILE_COUNT + slots[rank].pop(0)
            renamed.append(q)
        line.append(tuple(renamed))
    return line


def _reduced(piles: list[list[int]], reserve: list[int | None], classes: tuple[int, ...]) -> _Layout:
    """The position with every card outside ``classes`` deleted."""
    ranks = {rank for c in classes for rank in _CLASS_RANKS[c]}
    kept_piles = [[rank for rank in pile if rank in ranks] for pile in piles]
    return kept_piles, [rank if rank in ranks else None for rank in reserve]


def _subsets_lost(piles: list[list[int]], reserve: list[int | None], size: int, budget: _Budget) -> bool:
    """True when, for some ``size`` classes, the position reduced to their cards is proved lost.

    Deleting whole classes only removes obstacles (a relaxation, see docs/solver.md), so a
    reduced position that cannot be cleared proves the position lost. Each reduced position is
    solved like any other (both directions, restarts), within ``_SUBSET_NODES`` nodes.
    """
    for classes in combinations(range(_CLASS_COUNT), size):
        present = [c for c in classes if any(_CLASS_OF_RANK[rank] == c for pile in piles for rank in pile)]
        if len(present) < size:
            continue  # a class with no card left in the piles is no obstacle to anything
        reduced_piles, reduced_reserve = _reduced(piles, reserve, classes)
        sub = _Budget(min(_SUBSET_NODES, budget.node_budget - budget.used), budget.deadline, budget.clock)
        try:
            won: bool | None = _race(reduced_piles, reduced_reserve, sub, subsets=False)[2]
        except _OutOfBudget:
            won = None
        budget.used += sub.used
        if won is False:
            return True  # a proof, even if it took the last of the budget
        if sub.timed_out:
            budget.timed_out = True
        if budget.spent:
            raise _OutOfBudget
    return False


def _race(
    piles: list[list[int]], reserve: list[int | None], budget: _Budget, *, subsets: bool = True
) -> tuple[list[_Search], int, bool]:
    """Search the position and its reversal, restart by restart, until one of them decides.

    Returns the two searches, the index of the one that decided, and whether it won. Between
    restarts (when ``subsets``), the position reduced to two, then three, then four classes is
    tested. Raises :class:`_OutOfBudget` when the budget is spent first.
    """
    searches = [_Search(piles, reserve, budget), _Search(_reversed_layout(piles), reserve, budget)]
    for index, search in enumerate(searches):
        if not search.root_ok():
            return searches, index, False
    tests = dict(_SUBSET_TESTS) if subsets else {}
    number = 0
    while True:
        for index, search in enumerate(searches):
            outcome = search.attempt(number)
            if outcome is not None:
                return searches, index, outcome
        size = tests.get(number)
        if size is not None and _subsets_lost(piles, reserve, size, budget):
            return searches, 0, False
        number += 1


def solve(
    game: Game,
    *,
    node_budget: int = DEFAULT_NODE_BUDGET,
    time_budget_ms: float | None = None,
    clock: Callable[[], float] | None = None,
) -> SolveResult:
    """Solve from the game's current position, without modifying ``game``.

    Returns a :class:`SolveResult`: ``winnable`` with a winning line (which the engine's
    ``Game.push`` accepts move by move up to ``won``), ``unwinnable`` (proved), or ``unknown``
    when ``node_budget`` nodes or ``time_budget_ms`` milliseconds (measured with ``clock``,
    a function returning seconds such as ``time.perf_counter``) ran out. Without a clock the
    time budget is ignored and ``ms`` is 0.0. Raises nothing for a legal game.

    Two searches share the budget, restart by restart: one on the position, one on the
    reversed position (every pile upside down), which is won exactly when the position is.
    """
    start = clock() if clock is not None else 0.0
    deadline = start + time_budget_ms / 1000.0 if time_budget_ms is not None and clock is not None else None

    def elapsed_ms() -> float:
        return (clock() - start) * 1000.0 if clock is not None else 0.0

    if game.is_won:
        return SolveResult(Verdict.WINNABLE, [], 0, elapsed_ms())
    piles = [[card.rank for card in pile] for pile in game.piles()]
    reserve = [None if card is None else card.rank for card in game.reserve()]
    budget = _Budget(node_budget, deadline, clock)
    try:
        searches, index, won = _race(piles, reserve, budget)
    except _OutOfBudget:
        return SolveResult(Verdict.UNKNOWN, None, budget.used, elapsed_ms())
    if not won:
        return SolveResult(Verdict.UNWINNABLE, None, budget.used, elapsed_ms())
    path = searches[index].path
    line = path if index == 0 else _forward_line(path, reserve)
    return SolveResult(Verdict.WINNABLE, _to_moves(line), budget.used, elapsed_ms())


def final_line(record: GameRecord) -> list[Move]:
    """The moves of a record's final line of play: each undo cancels the move before it.

    Raises :class:`InvalidRecordError` (or the engine error naming the fault) when the record
    does not replay: an illegal move, or an undo with nothing to undo.
    """
    result = replay(record)
    if result.error is not None:
        raise result.error
    line: list[Move] = []
    for step in record.moves:
        if step == UNDO:
            line.pop()
        else:
            line.append(step)
    return line


def analyse(
    record: GameRecord,
    *,
    node_budget: int = DEFAULT_NODE_BUDGET,
    clock: Callable[[], float] | None = None,
    time_budget_ms: float | None = None,
) -> Analysis:
    """Was the deal winnable from its start, and after which move of the final line was it lost?

    The budgets bound the whole analysis (several solves). Raises the engine's error naming
    the fault (:class:`InvalidRecordError`, :class:`IllegalMoveError`, :class:`UndoError`) when
    the record does not replay.
    """
    line = final_line(record)
    start = clock() if clock is not None else 0.0
    deadline_ms = time_budget_ms
    nodes_used = 0

    def run(k: int) -> Verdict:
        nonlocal nodes_used
        game = Game.from_code(record.code)
        for move in line[:k]:
            game.push(move)
        remaining_ms = None
        if deadline_ms is not None and clock is not None:
            remaining_ms = max(0.0, deadline_ms - (clock() - start) * 1000.0)
        result = solve(game, node_budget=max(0, node_budget - nodes_used), time_budget_ms=remaining_ms, clock=clock)
        nodes_used += result.nodes
        return result.verdict

    def finish(winnable: Verdict, last: int | None) -> Analysis:
        ms = (clock() - start) * 1000.0 if clock is not None else 0.0
        return Analysis(winnable, last, nodes_used, ms)

    end = Game.from_code(record.code)
    for move in line:
        end.push(move)
    if end.is_won:
        return finish(Verdict.WINNABLE, len(line))
    verdict = run(0)
    if verdict is not Verdict.WINNABLE:
        return finish(verdict, None)
    lo, hi = 0, len(line)  # winnable after lo moves; after hi moves: to be found
    if hi and run(hi) is Verdict.WINNABLE:
        return finish(verdict, hi)
    # invariant: winnable after lo moves, not winnable after hi moves
    while hi - lo > 1:
        mid = (lo + hi) // 2
        outcome = run(mid)
        if outcome is Verdict.WINNABLE:
            lo = mid
        elif outcome is Verdict.UNWINNABLE:
            hi = mid
        else:
            return finish(verdict, None)
    return finish(verdict, lo)


def first_winnable_daily(
    day: date,
    secret: bytes,
    *,
    node_budget: int = DEFAULT_NODE_BUDGET,
    max_attempts: int = 50,
    long: bool = True,
) -> DealCode:
    """The first of ``daily_code(day, secret, attempt=0, 1, 2, …, long=long)`` the solver proves
    winnable (a new day's daily is a long code: docs/security.md).

    Deterministic: the same day and secret always give the same code. Raises
    :class:`NoWinnableDealError` when none of the first ``max_attempts`` candidates is proved
    winnable within ``node_budget`` nodes each.
    """
    for attempt in range(max_attempts):
        code = daily_code(day, secret, attempt=attempt, long=long)
        if solve(Game.from_code(code), node_budget=node_budget).verdict is Verdict.WINNABLE:
            return code
    raise NoWinnableDealError(
        f"no daily code for {day.isoformat()} was proved winnable in {max_attempts} attempts "
        f"of {node_budget} nodes each"
    )
