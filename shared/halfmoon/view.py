"""What a player may see of a game: the playable card and the card count of each position.

A :class:`BoardView` never holds a card under a pile's top, so it is what the server sends to
players and spectators (the rest of the deal is hidden information). It is also what the text
diagram and the clients draw from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from halfmoon.cards import Card
from halfmoon.codes import DealCode
from halfmoon.errors import InvalidCardError
from halfmoon.game import Game
from halfmoon.positions import POSITION_COUNT, POSITIONS

#: On the wire, what a spectator gets instead of a top it is not shown yet: a card that not every
#: racer still playing has uncovered (docs/protocol.md, "Who sees what"). Its count is true.
HIDDEN_TOP = "??"


@dataclass(frozen=True, slots=True)
class BoardView:
    tops: tuple[Card | None, ...]  # 20 entries: piles 1-12, then R1-R8
    counts: tuple[int, ...]  # cards at each position (0-8 for piles, 0-1 for slots)

    @classmethod
    def of(cls, game: Game) -> BoardView:
        return cls(
            tuple(game.card_at(p) for p in POSITIONS),
            tuple(game.count_at(p) for p in POSITIONS),
        )

    def as_game(self, code: str | DealCode | None = None) -> Game:
        """The board as a :class:`Game` that knows only these tops (see :meth:`Game.from_visible`):
        its legal moves and checks are exactly what the server accepts now."""
        return Game.from_visible(code, self.tops, cards_left=sum(self.counts))

    def to_json(self) -> dict[str, Any]:
        """``{"tops": ["5S", null, …] × 20, "counts": [8, 0, …] × 20}`` in position order."""
        return {
            "tops": [None if card is None else card.name for card in self.tops],
            "counts": list(self.counts),
        }

    @classmethod
    def from_json(cls, data: Any) -> BoardView:
        try:
            tops = tuple(None if name is None else Card.parse(name) for name in data["tops"])
            counts = tuple(int(n) for n in data["counts"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidCardError(f"not a board view: {exc}") from None
        if len(tops) != POSITION_COUNT or len(counts) != POSITION_COUNT:
            raise InvalidCardError(f"a board view has {POSITION_COUNT} positions")
        return cls(tops, counts)
