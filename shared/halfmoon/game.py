"""The rules: one game's state, its legal moves, ``push`` and ``undo``, score and status.

A :class:`Game` is the only mutable object of the engine, in the manner of python-chess's
``Board``: ``push(move)`` applies a move after checking it, ``undo()`` takes the last one back,
``legal_moves()`` lists what the rules allow now. Nothing here reads a clock or a random source.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Final, NoReturn

from halfmoon.cards import JACK, KING, QUEEN, Card
from halfmoon.codes import DealCode
from halfmoon.deal import Deal
from halfmoon.errors import (
    DuplicatePositionError,
    IllegalMoveError,
    InvalidPositionError,
    NotAMatchError,
    NotPlayableError,
    UndoError,
)
from halfmoon.positions import (
    PILE_COUNT,
    POSITION_COUNT,
    POSITION_NAMES,
    parse_position,
    position_name,
)

PAIR_POINTS: Final = 10
TRIPLE_POINTS: Final = 15
UNDO_LIMIT: Final = 100
CARD_COUNT: Final = 104
#: A won game always takes 40 pairs and 8 triples: 48 moves and 520 points.
WINNING_MOVES: Final = 48
WINNING_SCORE: Final = 40 * PAIR_POINTS + 8 * TRIPLE_POINTS


#: The name a visible-only game carries when the deal's code is not known (it names, deals nothing).
_UNNAMED_DEAL = "HM1-N-AAAAAAA"


class Status(enum.StrEnum):
    """Where a game stands. The values are the wire and JSON names."""

    PLAYING = "playing"
    WON = "won"
    STALLED = "stalled"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Move:
    """Two positions (a pair) or three (a triple), as position indexes 0-19.

    >>> move = Move.parse("R3 5 12")
    >>> move.positions, move.names(), str(move)
    ((14, 4, 11), ['R3', '5', '12'], 'R3 5 12')

    ``Move.from_names(["1", "8"])`` and ``move.names()`` round-trip with the record format.
    Whether the cards there actually match is checked by :meth:`Game.push`.
    """

    positions: tuple[int, ...]

    @classmethod
    def from_names(cls, names: Iterable[str]) -> Move:
        """Raises :class:`InvalidPositionError` for a bad name, :class:`IllegalMoveError` for a bad size."""
        if isinstance(names, str):
            raise IllegalMoveError(f"a move is a list of position names, not the string {names!r}")
        key = tuple(names)
        try:
            known = _KNOWN_MOVES.get(key)
        except TypeError:  # unhashable items: parse_position below names the bad one
            known = None
        if known is not None:
            return known
        positions = tuple(parse_position(name) for name in key)
        if len(positions) not in (2, 3):
            raise IllegalMoveError(
                f"a move names 2 positions (a pair) or 3 (a triple), not {len(positions)}: {list(key)!r}"
            )
        move = cls(positions)
        if all(name in _CANONICAL_NAMES for name in key):  # at most 20**3 + 20**2 entries
            _KNOWN_MOVES[key] = move
        return move

    @classmethod
    def parse(cls, text: str) -> Move:
        """Parse the seed's labels as typed: ``"1 8"``, ``"R3 5 12"`` (commas allowed)."""
        return cls.from_names(text.replace(",", " ").split())

    def names(self) -> list[str]:
        return [position_name(p) for p in self.positions]

    def __str__(self) -> str:
        return " ".join(self.names())


#: Moves already parsed from canonical names (moves are immutable, so they can be shared).
_KNOWN_MOVES: dict[tuple[str, ...], Move] = {}
_CANONICAL_NAMES: Final = frozenset(POSITION_NAMES)
_TRIPLE_RANKS: Final = frozenset({JACK, QUEEN, KING})


class Game:
    """One game of Half Moon on one deal.

    >>> game = Game.from_code("HM1-N-AAAAAAB")
    >>> game.score, game.move_count, game.cards_left, game.status
    (0, 0, 104, <Status.PLAYING: 'playing'>)
    """

    __slots__ = (
        "_history", "_piles", "_reserve", "_start_piles", "_start_reserve", "cards_left", "deal", "move_count", "score",
    )  # fmt: skip

    def __init__(self, deal: Deal) -> None:
        self.deal = deal
        self._piles: list[list[Card]] = [list(pile) for pile in deal.piles]
        self._reserve: list[Card | None] = list(deal.reserve)
        # Where undo finds the cards a move removed: cards leave a pile from its top and an
        # emptied slot stays empty, so the card under pile p's ``n`` cards is always the
        # starting layout's ``n``-th, and a slot's card its starting card. The undo stack keeps
        # the moves alone (shared objects), not the cards: a server keeps thousands of games.
        self._start_piles: tuple[tuple[Card, ...], ...] = deal.piles
        self._start_reserve: tuple[Card | None, ...] = deal.reserve
        self._history: list[Move] = []  # the last UNDO_LIMIT moves (a list: 8 bytes a move)
        self.score = 0
        self.move_count = 0
        self.cards_left = CARD_COUNT

    @classmethod
    def from_code(cls, code: str | DealCode) -> Game:
        return cls(Deal.from_code(code))

    @property
    def code(self) -> DealCode:
        return self.deal.code

    @classmethod
    def from_visible(cls, code: str | DealCode | None, tops: Sequence[Card | None], *, cards_left: int) -> Game:
        """A game holding only what a player sees: each pile is its top card alone, each reserve
        slot its card (``tops`` in position order, 20 entries, None where empty).

        Its playable cards, legal moves and move checks are those of the real game in that
        position; what lies under a top is unknown, so it is not a game to play on past one move.
        Bots and clients use it to reason about the board the server sent them, never more; the
        code only names the deal (None: not known yet, as in a sealed race).
        """
        if len(tops) != POSITION_COUNT:
            raise InvalidPositionError(f"a visible board has {POSITION_COUNT} positions, not {len(tops)}")
        piles = tuple(() if top is None else (top,) for top in tops[:PILE_COUNT])
        reserve = tuple(tops[PILE_COUNT:])
        parsed = code if isinstance(code, DealCode) else DealCode.parse(code or _UNNAMED_DEAL)
        # (built through __init__ and corrected, not with __new__: a class compiled by mypyc has no
        # __new__ to call, bench/compiled_tree.py)
        game = cls(Deal(parsed, piles, tuple(card for card in reserve if card is not None)))
        game._reserve = list(reserve)
        game._start_reserve = reserve
        game.cards_left = cards_left
        return game

    def copy(self) -> Game:
        """An independent game in the same state, with the same undo history."""
        other = Game(self.deal)
        other._piles = [list(pile) for pile in self._piles]
        other._reserve = list(self._reserve)
        other._start_piles = self._start_piles
        other._start_reserve = self._start_reserve
        other._history = list(self._history)
        other.score = self.score
        other.move_count = self.move_count
        other.cards_left = self.cards_left
        return other

    # -- what is on the table -------------------------------------------------------------

    def card_at(self, position: int) -> Card | None:
        """The playable card at a position: a pile's top or a reserve slot's card (or None)."""
        if position < PILE_COUNT:
            pile = self._piles[position]
            return pile[-1] if pile else None
        return self._reserve[position - PILE_COUNT]

    def count_at(self, position: int) -> int:
        """How many cards a position holds (0-8 for a pile, 0-1 for a reserve slot)."""
        if position < PILE_COUNT:
            return len(self._piles[position])
        return 0 if self._reserve[position - PILE_COUNT] is None else 1

    def playable(self) -> dict[int, Card]:
        """Every playable card by position: the 12 pile tops and the reserve's cards."""
        out = {p: pile[-1] for p, pile in enumerate(self._piles) if pile}
        for slot, card in enumerate(self._reserve):
            if card is not None:
                out[PILE_COUNT + slot] = card
        return out

    def piles(self) -> tuple[tuple[Card, ...], ...]:
        """The whole piles, bottom to top. Hidden information: never send this to a player."""
        return tuple(tuple(pile) for pile in self._piles)

    def reserve(self) -> tuple[Card | None, ...]:
        return tuple(self._reserve)

    def snapshot(self) -> tuple[tuple[tuple[Card, ...], ...], tuple[Card | None, ...], int, int]:
        """A hashable picture of the whole state (for tests and comparisons)."""
        return (self.piles(), self.reserve(), self.score, self.move_count)

    # -- the rules --------------------------------------------------------------------------

    def check(self, move: Move) -> tuple[Card, ...]:
        """The cards a legal move removes; raises :class:`IllegalMoveError` (a subclass) if not legal.

        The legal case takes the short road; anything else goes to :meth:`_refuse`, which finds
        the fault in a fixed order (bad index, size, same position twice, empty, no match).
        """
        positions = move.positions
        piles = self._piles
        reserve = self._reserve
        cards = []
        for p in positions:
            if p.__class__ is not int or not 0 <= p < POSITION_COUNT:
                self._refuse(move)
            if p < PILE_COUNT:
                pile = piles[p]
                if not pile:
                    self._refuse(move)
                cards.append(pile[-1])
            else:
                card = reserve[p - PILE_COUNT]
                if card is None:
                    self._refuse(move)
                cards.append(card)
        if len(cards) == 2:
            if positions[0] != positions[1] and cards[0].rank + cards[1].rank == 11:
                return tuple(cards)
        elif len(cards) == 3:
            a, b, c = positions
            if a != b and a != c and b != c and {card.rank for card in cards} == _TRIPLE_RANKS:
                return tuple(cards)
        self._refuse(move)

    def _refuse(self, move: Move) -> NoReturn:
        """Raise the error that names what is wrong with an illegal move."""
        positions = move.positions
        for p in positions:
            if not (type(p) is int and 0 <= p < POSITION_COUNT):
                raise NotPlayableError(f"move {positions!r}: no position {p!r} (position indexes are 0-19)")
        if len(positions) not in (2, 3):
            raise IllegalMoveError(f"a move names 2 or 3 positions, not {len(positions)}: {move}")
        if len(set(positions)) != len(positions):
            raise DuplicatePositionError(f"move {move!s}: the same position is named twice")
        cards = []
        for p in positions:
            card = self.card_at(p)
            if card is None:
                where = "pile" if p < PILE_COUNT else "reserve slot"
                raise NotPlayableError(f"move {move!s}: {where} {position_name(p)} is empty")
            cards.append(card)
        if len(cards) == 2:
            a, b = cards
            # two ranks 1-13 sum to 11 only if both are number cards
            if a.is_face or b.is_face:
                why = "face cards never form a pair; they go in threes (J, Q, K)"
            else:
                why = f"{a.rank} + {b.rank} = {a.rank + b.rank}, not 11"
            raise NotAMatchError(f"move {move!s}: {a} and {b} are not a pair: {why}")
        names = ", ".join(card.name for card in cards)
        raise NotAMatchError(f"move {move!s}: {names} is not a triple: it needs one J, one Q and one K")

    def is_legal(self, move: Move) -> bool:
        try:
            self.check(move)
        except IllegalMoveError:
            return False
        return True

    def push(self, move: Move) -> None:
        """Apply a move: remove its cards, add 10 (pair) or 15 (triple) points.

        Raises :class:`IllegalMoveError` (or a subclass naming the fault) and changes nothing
        when the move is not legal.
        """
        cards = self.check(move)
        piles = self._piles
        for p in move.positions:
            if p < PILE_COUNT:
                piles[p].pop()
            else:
                self._reserve[p - PILE_COUNT] = None
        history = self._history
        history.append(move)
        if len(history) > UNDO_LIMIT:  # (never in a real game: 104 cards make at most 52 moves)
            del history[0]
        self.score += PAIR_POINTS if len(cards) == 2 else TRIPLE_POINTS
        self.move_count += 1
        self.cards_left -= len(cards)

    def undo(self) -> Move:
        """Take back the last move (up to the last 100): cards return, score and count go down.

        Raises :class:`UndoError` when there is nothing to undo.
        """
        if not self._history:
            if self.move_count:
                raise UndoError(f"undo reaches back at most {UNDO_LIMIT} moves")
            raise UndoError("nothing to undo: no move has been made")
        move = self._history.pop()
        piles = self._piles
        for p in move.positions:
            if p < PILE_COUNT:
                pile = piles[p]
                pile.append(self._start_piles[p][len(pile)])
            else:
                self._reserve[p - PILE_COUNT] = self._start_reserve[p - PILE_COUNT]
        count = len(move.positions)
        self.score = max(0, self.score - (PAIR_POINTS if count == 2 else TRIPLE_POINTS))
        self.move_count -= 1
        self.cards_left += count
        return move

    @property
    def can_undo(self) -> bool:
        return bool(self._history)

    def forget_undos(self) -> None:
        """Drop what :meth:`undo` could take back: a game that is over keeps its position, not
        its undo stack (a server keeps finished games by the thousand)."""
        self._history.clear()

    def history(self) -> list[Move]:
        """The moves that undo can still take back, oldest first."""
        return list(self._history)

    def legal_moves(self) -> Iterator[Move]:
        """Every legal move now: pairs, then triples, in position order."""
        by_rank: dict[int, list[int]] = {}
        for p, card in self.playable().items():
            by_rank.setdefault(card.rank, []).append(p)
        for rank in range(1, 6):
            for a, b in product(by_rank.get(rank, ()), by_rank.get(11 - rank, ())):
                yield Move((a, b) if a < b else (b, a))
        for triple in product(by_rank.get(JACK, ()), by_rank.get(QUEEN, ()), by_rank.get(KING, ())):
            yield Move(tuple(sorted(triple)))

    def has_legal_move(self) -> bool:
        # asked after every move (a game's status): ranks seen as flags, no sets or generators
        seen = [False] * 14
        for pile in self._piles:
            if pile:
                seen[pile[-1].rank] = True
        for card in self._reserve:
            if card is not None:
                seen[card.rank] = True
        return (
            (seen[JACK] and seen[QUEEN] and seen[KING])
            or (seen[1] and seen[10])
            or (seen[2] and seen[9])
            or (seen[3] and seen[8])
            or (seen[4] and seen[7])
            or (seen[5] and seen[6])
        )

    @property
    def is_won(self) -> bool:
        return self.cards_left == 0

    @property
    def is_stalled(self) -> bool:
        return self.cards_left > 0 and not self.has_legal_move()

    @property
    def status(self) -> Status:
        if self.cards_left == 0:
            return Status.WON
        return Status.PLAYING if self.has_legal_move() else Status.STALLED

    def __repr__(self) -> str:
        return f"<Game {self.code} score={self.score} moves={self.move_count} cards_left={self.cards_left}>"

