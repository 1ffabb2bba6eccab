"""Hand-built tables for rule tests: a full 104-card layout with chosen playable cards.

``table({"1": "5S", "8": "6D", "R2": "KH"})`` deals a game whose pile 1 shows 5♠, pile 8 shows
6♦ and reserve slot R2 holds K♥. Every other playable card is a 2, 3 or 4 (no two of them form
a pair, and none is a face card), so the only moves are the ones a test puts there on purpose.
``under`` names the cards just below a pile's top (nearest first), to test what a removal
uncovers. The layout is always a true two-deck permutation: 104 cards, each one twice.

The deal's code is a placeholder (``HM1-N-AAAAAAA``): these tables are not what a code deals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from halfmoon.cards import Card
from halfmoon.codes import UNSHUFFLED, DealCode
from halfmoon.deal import Deal
from halfmoon.game import Game
from halfmoon.positions import PILE_COUNT, PILE_HEIGHT, RESERVE_SIZE, parse_position

NEUTRAL_RANKS = (2, 3, 4)


def table(tops: Mapping[str, str] = {}, under: Mapping[str, Sequence[str]] = {}) -> Game:
    """A fresh game on a hand-built layout (see the module docstring)."""
    pool = list(UNSHUFFLED)

    def take(card: Card) -> Card:
        pool.remove(card)  # ValueError if a test asks for a third copy
        return card

    chosen = {parse_position(name): take(Card.parse(card)) for name, card in tops.items()}
    below = {parse_position(name): [take(Card.parse(c)) for c in cards] for name, cards in under.items()}
    neutral = [card for card in pool if card.rank in NEUTRAL_RANKS]
    for position in range(PILE_COUNT + RESERVE_SIZE):
        if position not in chosen:
            chosen[position] = take(neutral.pop())
    fillers = [card for card in pool if card.rank not in NEUTRAL_RANKS] + [
        card for card in pool if card.rank in NEUTRAL_RANKS
    ]
    piles = []
    for p in range(PILE_COUNT):
        near = below.get(p, [])
        depth = PILE_HEIGHT - 1 - len(near)
        bottom = [fillers.pop() for _ in range(depth)]
        piles.append((*bottom, *reversed(near), chosen[p]))
    reserve = tuple(chosen[PILE_COUNT + slot] for slot in range(RESERVE_SIZE))
    assert not fillers
    return Game(Deal(DealCode("N", 0), tuple(piles), reserve))
