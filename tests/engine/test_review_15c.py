"""Review 15c: ``Game.has_legal_move`` was rewritten with a list of flags (e4ddc32). It must
answer exactly what the definition before it answered, for every position: a pair summing to
11 (A = 1) or a Jack, a Queen and a King among the 12 pile tops and the 8 reserve slots.

A differential test over many positions of real deals (random legal play, undos included, to
the end of each game), against the definition as it was, and against ``legal_moves()``. It
passes: a guard for the next rewrite, not a finding."""

from __future__ import annotations

import random

from halfmoon import DealCode, Game
from halfmoon.cards import JACK, KING, QUEEN
from halfmoon.codes import CODE_SPACE


def old_has_legal_move(game: Game) -> bool:
    """The definition before e4ddc32, word for word."""
    ranks = {pile[-1].rank for pile in game.piles() if pile}
    ranks.update(card.rank for card in game.reserve() if card is not None)
    if {JACK, QUEEN, KING} <= ranks:
        return True
    return any(rank in ranks and 11 - rank in ranks for rank in range(1, 6))


def test_has_legal_move_is_the_old_definition_on_every_position_of_random_real_games() -> None:
    rng = random.Random(1515)
    positions = stalled = 0
    for _ in range(1_000):
        game = Game.from_code(DealCode(rng.choice("ND"), rng.randrange(CODE_SPACE)))
        while True:
            expected = old_has_legal_move(game)
            assert game.has_legal_move() is expected, (game, game.piles(), game.reserve())
            assert expected == any(True for _ in game.legal_moves())
            positions += 1
            if not expected:
                stalled += game.cards_left > 0
                break
            if game.can_undo and rng.random() < 0.1:
                game.undo()
                continue
            game.push(rng.choice(list(game.legal_moves())))
    assert positions > 20_000 and stalled > 500  # both answers were met, many times


def test_has_legal_move_is_the_old_definition_on_visible_only_games() -> None:
    """Games rebuilt from what a player sees (``Game.from_visible``: one card a pile) too."""
    rng = random.Random(15)
    for _ in range(200):
        game = Game.from_code(DealCode("N", rng.randrange(CODE_SPACE)))
        for _ in range(rng.randrange(30)):
            moves = list(game.legal_moves())
            if not moves:
                break
            game.push(rng.choice(moves))
        tops = [pile[-1] if pile else None for pile in game.piles()] + list(game.reserve())
        visible = Game.from_visible(str(game.code), tops, cards_left=game.cards_left)
        assert visible.has_legal_move() is old_has_legal_move(visible) is game.has_legal_move()
