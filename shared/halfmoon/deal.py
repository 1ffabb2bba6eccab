"""A deal: the 104 cards as laid out at the start — 12 piles of 8 and a reserve of 8."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from halfmoon.cards import Card
from halfmoon.codes import DealCode
from halfmoon.errors import InvalidCardError, InvalidCodeError
from halfmoon.positions import PILE_COUNT, PILE_HEIGHT


@dataclass(frozen=True, slots=True)
class Deal:
    """The starting layout of one game. ``piles[p]`` lists pile p+1 bottom to top."""

    code: DealCode
    piles: tuple[tuple[Card, ...], ...]
    reserve: tuple[Card, ...]

    @classmethod
    def from_code(cls, code: str | DealCode) -> Deal:
        """Recreate the deal a code names (raises :class:`InvalidCodeError` if malformed)."""
        parsed = code if isinstance(code, DealCode) else DealCode.parse(code)
        deck = parsed.shuffled_deck()
        piles = tuple(tuple(deck[p * PILE_HEIGHT : (p + 1) * PILE_HEIGHT]) for p in range(PILE_COUNT))
        reserve = tuple(deck[PILE_COUNT * PILE_HEIGHT :])
        return cls(parsed, piles, reserve)

    def to_json(self) -> dict[str, Any]:
        """``{"code", "piles": [[8 cards, bottom to top] × 12], "reserve": [R1 … R8]}``."""
        return {
            "code": str(self.code),
            "piles": [[card.name for card in pile] for pile in self.piles],
            "reserve": [card.name for card in self.reserve],
        }

    @classmethod
    def from_json(cls, data: Any) -> Deal:
        """Read the deal JSON; the cards must match what the code deals.

        Raises :class:`InvalidCodeError` or :class:`InvalidCardError` on a bad document.
        """
        if not isinstance(data, dict) or "code" not in data:
            raise InvalidCodeError(f"a deal document must be an object with a 'code', not {data!r:.80}")
        deal = cls.from_code(data["code"])
        try:
            piles = [[Card.parse(name) for name in pile] for pile in data["piles"]]
            reserve = [Card.parse(name) for name in data["reserve"]]
        except (KeyError, TypeError) as exc:
            raise InvalidCardError(f"deal document lacks well-formed 'piles' and 'reserve': {exc}") from None
        if [list(p) for p in deal.piles] != piles or list(deal.reserve) != reserve:
            raise InvalidCardError(f"the cards in this document are not the deal of {data['code']!r}")
        return deal

