"""What players may see: the playable card and the card count of each position, never more."""

from __future__ import annotations

import json
import random

import pytest

from halfmoon import BoardView, Game, InvalidCardError, InvalidPositionError, Move


def test_the_view_shows_tops_and_counts_only() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    view = BoardView.of(game)
    assert [card.name if card else None for card in view.tops[:3]] == ["10H", "3S", "8C"]
    assert view.counts == (8,) * 12 + (1,) * 8
    hidden = {card.name for pile in game.deal.piles for card in pile[:-1]}
    shown = json.dumps(view.to_json())
    # the card under pile 1's top (4S) is nowhere in what is sent, unless it also shows elsewhere
    assert "4S" in hidden and "4S" not in shown


def test_the_view_follows_the_game() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    game.push(Move.parse("1 R4"))
    data = BoardView.of(game).to_json()
    assert data["tops"][0] == "4S" and data["counts"][0] == 7
    assert data["tops"][15] is None and data["counts"][15] == 0  # R4 emptied


def test_view_json_round_trips() -> None:
    game = Game.from_code("HM1-N-ZZZZZZZ")
    game.push(next(iter(game.legal_moves())))
    view = BoardView.of(game)
    data = view.to_json()
    assert list(data) == ["tops", "counts"] and len(data["tops"]) == len(data["counts"]) == 20
    assert BoardView.from_json(json.loads(json.dumps(data))) == view


@pytest.mark.parametrize(
    "document",
    [
        {},
        [],
        {"tops": ["5S"] * 20},
        {"tops": ["5X"] * 20, "counts": [1] * 20},
        {"tops": ["5S"] * 19, "counts": [1] * 20},
        {"tops": ["5S"] * 20, "counts": ["many"] * 20},
    ],
)
def test_malformed_view_json_is_refused(document: object) -> None:
    with pytest.raises(InvalidCardError):
        BoardView.from_json(document)


def test_a_game_from_the_visible_board_has_the_real_legal_moves_and_nothing_more() -> None:
    game = Game.from_code("HM1-N-QWERTYU")
    rng = random.Random(7)
    while True:
        visible = BoardView.of(game).as_game(game.code)
        assert list(visible.legal_moves()) == list(game.legal_moves())
        assert visible.playable() == game.playable()
        assert visible.cards_left == game.cards_left
        assert all(len(pile) <= 1 for pile in visible.piles()), "nothing under a top is known"
        moves = list(game.legal_moves())
        if not moves:
            break
        game.push(rng.choice(moves))


def test_a_visible_board_must_have_twenty_positions() -> None:
    with pytest.raises(InvalidPositionError, match="20 positions, not 3"):
        Game.from_visible("HM1-N-AAAAAAB", [None, None, None], cards_left=0)
