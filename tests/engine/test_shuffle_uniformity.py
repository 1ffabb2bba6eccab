"""The shuffle is uniform as far as a chi-square test can tell, and the test would catch a bad one.

Over a fixed set of 6,000 codes (so the test is deterministic), for each of several cards of the
unshuffled deck we count in which of the 104 dealt positions it lands. A uniform shuffle puts
each card in each position with probability 1/104, so each row of counts follows a multinomial
with 103 degrees of freedom. We also count, for each of the 20 positions that start playable,
how often each rank shows there (12 degrees of freedom).

The threshold is the chi-square quantile at p = 1e-6 (so a correct shuffle fails with
negligible probability, and never, since the codes are fixed). The same statistic computed on
deliberately broken shuffles — Fisher-Yates drawing ``j = byte % (i + 1)`` from 8-bit words
(modulo bias), the naive "swap each card with ``word % 104``" shuffle, and no shuffle at all —
lands above the threshold (about 230, 290 and 618,000 against 186; the engine's is about 130).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from halfmoon.cards import Card
from halfmoon.codes import UNSHUFFLED, DealCode, word_stream

SAMPLES = 6000
CODES = [DealCode("N" if n % 3 else "D", (n * 1_338_557) % 26**7) for n in range(SAMPLES)]
TRACKED = (0, 1, 12, 51, 52, 77, 103)  # indexes into the unshuffled deck
PLAYABLE = [8 * p + 7 for p in range(12)] + list(range(96, 104))  # pile tops and the reserve in deck order


def chi_square_critical(dof: int, p: float = 1e-6) -> float:
    """Upper quantile of the chi-square law (Wilson–Hilferty; within 1 % for dof >= 10)."""
    z = _normal_quantile(1 - p)
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def _normal_quantile(q: float) -> float:
    lo, hi = 0.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < q:
            lo = mid
        else:
            hi = mid
    return lo


def chi_square(counts: Sequence[int], expected: Sequence[float]) -> float:
    return sum((c - e) ** 2 / e for c, e in zip(counts, expected, strict=True))


Shuffle = Callable[[DealCode], list[int]]  # a permutation: dealt position -> unshuffled index


def engine_shuffle(code: DealCode) -> list[int]:
    index = list(range(104))
    for i, j in zip(range(103, 0, -1), code.swaps(), strict=True):
        index[i], index[j] = index[j], index[i]
    return index


def biased_modulo_shuffle(code: DealCode) -> list[int]:
    """Fisher-Yates, but on 8-bit words with ``word % n``: small values come up more often."""
    index = list(range(104))
    words = word_stream(code.seed)
    for i in range(103, 0, -1):
        j = (next(words) & 0xFF) % (i + 1)
        index[i], index[j] = index[j], index[i]
    return index


def naive_shuffle(code: DealCode) -> list[int]:
    """The classic mistake: swap every position with ``word % 104`` (n^n paths, not n!)."""
    index = list(range(104))
    words = word_stream(code.seed)
    for i in range(104):
        j = next(words) % 104
        index[i], index[j] = index[j], index[i]
    return index


def no_shuffle(code: DealCode) -> list[int]:
    return list(range(104))


def worst_position_statistic(shuffle: Shuffle) -> float:
    """The largest chi-square over the tracked cards of where each lands (103 dof)."""
    counts = {card: [0] * 104 for card in TRACKED}
    for code in CODES:
        for position, card in enumerate(shuffle(code)):
            if card in counts:
                counts[card][position] += 1
    expected = [SAMPLES / 104] * 104
    return max(chi_square(row, expected) for row in counts.values())


def worst_rank_statistic(shuffle: Shuffle) -> float:
    """The largest chi-square over the 20 starting playable positions of the rank shown (12 dof)."""
    ranks = [card.rank for card in UNSHUFFLED]
    counts = {position: [0] * 13 for position in PLAYABLE}
    for code in CODES:
        order = shuffle(code)
        for position in PLAYABLE:
            counts[position][ranks[order[position]] - 1] += 1
    expected = [SAMPLES / 13] * 13
    return max(chi_square(row, expected) for row in counts.values())


def test_engine_shuffle_matches_the_index_permutation() -> None:
    code = CODES[5]
    assert [UNSHUFFLED[i] for i in engine_shuffle(code)] == code.shuffled_deck()
    assert isinstance(code.shuffled_deck()[0], Card)


def test_where_each_card_lands_is_uniform() -> None:
    threshold = chi_square_critical(103)
    assert abs(threshold - 186.12) < 1  # the exact quantile (scipy.stats.chi2.isf(1e-6, 103)) is 186.12
    assert worst_position_statistic(engine_shuffle) < threshold


def test_ranks_at_the_playable_positions_are_uniform() -> None:
    assert abs(chi_square_critical(12) - 50.83) < 1  # exact: 50.83
    assert worst_rank_statistic(engine_shuffle) < chi_square_critical(12)


def test_broken_shuffles_fail_the_same_statistics() -> None:
    position_threshold = chi_square_critical(103)
    for broken in (biased_modulo_shuffle, naive_shuffle, no_shuffle):
        assert worst_position_statistic(broken) > position_threshold, broken.__name__
    assert worst_rank_statistic(no_shuffle) > chi_square_critical(12)
