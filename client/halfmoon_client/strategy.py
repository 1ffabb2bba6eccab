"""How a bot chooses a move — from the board it can see, and nothing more.

The server sends a player only the top card and the card count of each position. A bot builds
a local mirror of that: a :class:`halfmoon.Game` whose piles hold just their visible top card
(:func:`mirror`), so that :meth:`halfmoon.Game.legal_moves` — which only ever looks at the
playable cards — lists exactly the moves the server will accept. The bot never deals the code
to look under a pile.

Strategies are pure functions of the visible board and a random source:

- ``random``: any legal move, uniformly;
- ``greedy``: the move that uncovers the most: pile cards before reserve cards (a reserve card
  stays playable, a pile top hides the next card), taller piles first, a random pick among ties.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Final

from halfmoon.cards import Card
from halfmoon.codes import DealCode
from halfmoon.errors import HalfMoonError, NotAMatchError
from halfmoon.game import Game, Move
from halfmoon.positions import PILE_COUNT, parse_position
from halfmoon.taps import MOVE_ERROR_MESSAGES
from halfmoon.view import BoardView

Strategy = Callable[[BoardView, list[Move], random.Random], Move]


def mirror(view: BoardView, code: DealCode | None = None) -> Game:
    """A game holding only what ``view`` shows (:meth:`halfmoon.BoardView.as_game`): each pile is
    its top card alone. Its legal moves, checks and playable cards are those of the real game in
    that position; its history is not (nothing under a top is known)."""
    return view.as_game(code)


def legal_moves(view: BoardView, code: DealCode | None = None) -> list[Move]:
    """Every move the server would accept on this board (pairs, then triples)."""
    return list(mirror(view, code).legal_moves())


def choose_random(view: BoardView, moves: list[Move], rng: random.Random) -> Move:
    """Any legal move. Raises :class:`IndexError` when there is none."""
    return rng.choice(moves)


def choose_greedy(view: BoardView, moves: list[Move], rng: random.Random) -> Move:
    """The move that removes the most pile cards from the tallest piles.

    Raises :class:`IndexError` when there is none.
    """

    def value(move: Move) -> tuple[int, int]:
        piles = [p for p in move.positions if p < PILE_COUNT]
        return len(piles), sum(view.counts[p] for p in piles)

    if not moves:
        raise IndexError("no legal move to choose from")
    best = max(value(move) for move in moves)
    return rng.choice([move for move in moves if value(move) == best])


STRATEGIES: Final[dict[str, Strategy]] = {"random": choose_random, "greedy": choose_greedy}


def explain(
    view: BoardView, code: DealCode | None, positions: list[str] | tuple[str, ...]
) -> tuple[str, str | None] | None:
    """Why the server would refuse this move on this board, or None if it is legal.

    Returns ``(engine message, seed reason)`` where the seed reason is ``"sum"`` or
    ``"triple"`` (the keys of :data:`halfmoon.taps.MOVE_ERROR_MESSAGES`) for cards that do not
    match — «La somma deve essere uguale a 11» when the move begins with a number card, «Servono
    un Fante, una Donna e un Re» when it begins with a face card — and None for other faults
    (an empty pile, the same position twice).
    """
    game = mirror(view, code)
    try:
        move = Move.from_names(positions)
        game.check(move)
    except NotAMatchError as exc:
        first: Card | None = game.card_at(parse_position(positions[0]))
        return str(exc), ("triple" if first is not None and first.is_face else "sum")
    except HalfMoonError as exc:
        return str(exc), None
    return None


__all__ = [
    "MOVE_ERROR_MESSAGES",
    "STRATEGIES",
    "Strategy",
    "choose_greedy",
    "choose_random",
    "explain",
    "legal_moves",
    "mirror",
]
