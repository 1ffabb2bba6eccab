"""Cards, ranks and suits, and their machine names (``5S``, ``10H``, ``QD``).

A card is a rank and a suit. Half Moon deals two decks, so every card exists twice; two copies
of the same card are equal values (the engine never needs to tell them apart: suits never
matter to the rules, and positions identify cards on the table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from halfmoon.errors import InvalidCardError

ACE: Final = 1
JACK: Final = 11
QUEEN: Final = 12
KING: Final = 13
RANKS: Final = tuple(range(1, 14))

#: Suits in deck order: spades, hearts, diamonds, clubs.
SUITS: Final = ("S", "H", "D", "C")

RANK_NAMES: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
#: The Italian card letters of the seed: Asso, Fante (V), Donna (D), Re (R).
RANK_NAMES_IT: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "V", "D", "R")
SUIT_SYMBOLS: Final = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED_SUITS: Final = frozenset({"H", "D"})

_RANK_BY_NAME: Final = {name: i + 1 for i, name in enumerate(RANK_NAMES)}


#: Every card's machine name, by rank and suit.
_NAMES: Final = {rank: {suit: RANK_NAMES[rank - 1] + suit for suit in SUITS} for rank in RANKS}


@dataclass(frozen=True, slots=True)
class Card:
    """One playing card. Immutable; ``Card.parse("10H")`` and ``str(card)`` round-trip.

    >>> Card.parse("QD")
    Card('QD')
    >>> Card.parse("5S").rank + Card.parse("6D").rank
    11
    """

    rank: int
    suit: str

    def __post_init__(self) -> None:
        if self.rank not in RANKS or self.suit not in SUIT_SYMBOLS:
            raise InvalidCardError(f"no card of rank {self.rank!r} and suit {self.suit!r}")

    @classmethod
    def parse(cls, name: object) -> Card:
        """Parse a machine name such as ``5S``, ``10H`` or ``QD`` (case-insensitive).

        Raises :class:`InvalidCardError` naming the input when it is not a card.
        """
        card = _BY_NAME.get(name) if isinstance(name, str) else None
        if card is not None:
            return card
        if isinstance(name, str):
            text = name.strip().upper()
            rank = _RANK_BY_NAME.get(text[:-1])
            suit = text[-1:]
            if rank is not None and suit in SUIT_SYMBOLS:
                return _BY_NAME[RANK_NAMES[rank - 1] + suit]
        raise InvalidCardError(
            f"not a card: {name!r} (expected a rank A 2-10 J Q K and a suit S H D C, e.g. '10H')"
        )

    @property
    def name(self) -> str:
        """The machine name: ``5S``, ``10H``, ``QD`` (one shared string per card: names are kept
        by the thousand in a server's rooms, and asked for on every move)."""
        return _NAMES[self.rank][self.suit]

    @property
    def is_face(self) -> bool:
        """Jack, Queen or King."""
        return self.rank >= JACK

    @property
    def is_red(self) -> bool:
        return self.suit in RED_SUITS

    def symbol(self, *, lang: str = "en") -> str:
        """The card as players read it: ``5♠``, ``10♥``, ``Q♦`` (``D♦`` in Italian)."""
        ranks = RANK_NAMES_IT if lang == "it" else RANK_NAMES
        return ranks[self.rank - 1] + SUIT_SYMBOLS[self.suit]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Card({self.name!r})"


#: The 52 distinct cards, spades A-K, hearts A-K, diamonds A-K, clubs A-K.
DECK: Final = tuple(Card(rank, suit) for suit in SUITS for rank in RANKS)
_BY_NAME: Final = {card.name: card for card in DECK}


def parse_card(name: object) -> Card:
    """Parse a card's machine name; the inverse of :func:`card_name`."""
    return Card.parse(name)


def card_name(card: Card) -> str:
    """A card's machine name (``5S``, ``10H``, ``QD``)."""
    return card.name


def is_pair(a: Card, b: Card) -> bool:
    """Two number cards (A counts 1) whose ranks sum to 11. Face cards never pair."""
    return not a.is_face and not b.is_face and a.rank + b.rank == 11


def is_triple(a: Card, b: Card, c: Card) -> bool:
    """A Jack, a Queen and a King, in any order and of any suits."""
    return {a.rank, b.rank, c.rank} == {JACK, QUEEN, KING}
