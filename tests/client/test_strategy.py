"""Bots choose from the board they can see: the mirror's legal moves are the real ones."""

from __future__ import annotations

import random

import pytest

from halfmoon.cards import Card
from halfmoon.codes import DealCode
from halfmoon.game import Game, Move
from halfmoon.view import BoardView
from halfmoon_client.strategy import choose_greedy, choose_random, explain, legal_moves, mirror

CODES = ["HM1-N-AAAAAAB", "HM1-N-QWERTYU", "HM1-N-ZZZZZZZ", "HM1-N-HALFMON"]


@pytest.mark.parametrize("code", CODES)
def test_the_mirror_of_the_visible_board_has_exactly_the_real_legal_moves(code: str) -> None:
    game = Game.from_code(code)
    rng = random.Random(code)
    parsed = DealCode.parse(code)
    while True:
        view = BoardView.of(game)
        assert legal_moves(view, parsed) == list(game.legal_moves())
        copy = mirror(view, parsed)
        assert copy.playable() == game.playable() and copy.cards_left == game.cards_left
        moves = list(game.legal_moves())
        if not moves:
            break
        game.push(rng.choice(moves))


def test_the_mirror_knows_nothing_under_a_top() -> None:
    game = Game.from_code(CODES[0])
    copy = mirror(BoardView.of(game), game.code)
    assert all(len(pile) <= 1 for pile in copy.piles())


def view_with(cards: dict[int, str], count: int = 8) -> BoardView:
    tops: list[Card | None] = [None] * 20
    counts = [0] * 20
    for p, name in cards.items():
        tops[p] = Card.parse(name)
        counts[p] = count if p < 12 else 1
    return BoardView(tuple(tops), tuple(counts))


def test_greedy_uncovers_pile_cards_before_using_the_reserve() -> None:
    # 5S on pile 1 pairs with 6D on pile 2 or with 6H in R1: greedy takes the two pile cards.
    view = view_with({0: "5S", 1: "6D", 12: "6H"})
    moves = legal_moves(view, DealCode.parse(CODES[0]))
    assert set(moves) == {Move((0, 1)), Move((0, 12))}
    assert {choose_greedy(view, moves, random.Random(seed)) for seed in range(20)} == {Move((0, 1))}
    assert {choose_random(view, moves, random.Random(seed)) for seed in range(40)} == set(moves)


def test_greedy_prefers_the_taller_piles() -> None:
    tops: list[Card | None] = [Card.parse("5S"), Card.parse("6D"), Card.parse("6H")] + [None] * 17
    view = BoardView(tuple(tops), (8, 2, 7) + (0,) * 17)
    moves = legal_moves(view, DealCode.parse(CODES[0]))
    assert choose_greedy(view, moves, random.Random(1)) == Move((0, 2))


def test_no_legal_move_means_nothing_to_choose() -> None:
    view = view_with({0: "5S", 1: "5D", 12: "KH"})
    assert legal_moves(view, DealCode.parse(CODES[0])) == []
    with pytest.raises(IndexError):
        choose_greedy(view, [], random.Random(0))


@pytest.mark.parametrize(
    ("positions", "seed_reason", "words"),
    [
        (("1", "2"), "sum", "5 + 5 = 10"),  # two number cards
        (("1", "R1"), "sum", "face cards never form a pair"),  # begins with a number card
        (("R1", "1"), "triple", "face cards never form a pair"),  # begins with a face card
        (("R1", "R2", "1"), "triple", "needs one J, one Q and one K"),
        (("1", "5"), None, "pile 5 is empty"),
        (("1", "1"), None, "named twice"),
    ],
)
def test_explain_gives_the_engines_reason_and_the_seeds(
    positions: tuple[str, ...], seed_reason: str | None, words: str
) -> None:
    view = view_with({0: "5S", 1: "5D", 12: "KH", 13: "QH"})
    fault = explain(view, DealCode.parse(CODES[0]), positions)
    assert fault is not None
    assert fault[1] == seed_reason and words in fault[0]


def test_explain_passes_a_legal_move() -> None:
    view = view_with({0: "5S", 1: "6D"})
    assert explain(view, DealCode.parse(CODES[0]), ("1", "2")) is None
