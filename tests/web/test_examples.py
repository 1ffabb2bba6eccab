"""The Examples page's game (``static/js/examples.js``) is a real won game holding the seed's
examples, checked by the engine: the first two moves as the seed tells them, 5♠ beside A♥ and
two K♥ on the opening table, then a win in 48 moves and 520 points."""

from __future__ import annotations

from halfmoon.cards import Card
from halfmoon.codes import DealCode
from halfmoon.deal import Deal
from halfmoon.game import Game, Move, Status
from halfmoon.positions import POSITION_NAMES
from halfmoon_web import STATIC_DIR
from tests.web.build_example_game import build, read, source

EXAMPLES_JS = STATIC_DIR / "js" / "examples.js"


def example_game() -> tuple[Game, list[Move]]:
    example = read(EXAMPLES_JS.read_text(encoding="utf-8"))
    piles = tuple(tuple(Card.parse(c) for c in pile.split()) for pile in example["piles"])  # type: ignore[union-attr]
    reserve = tuple(Card.parse(c) for c in str(example["reserve"]).split())
    assert [len(p) for p in piles] == [8] * 12 and len(reserve) == 8
    deal = Deal(DealCode.parse("HM1-N-AAAAAAA"), piles, reserve)  # no code deals it: the cards are given
    moves = [Move.from_names(step.split()) for step in example["moves"]]  # type: ignore[union-attr]
    return Game(deal), moves


def test_the_file_is_what_the_builder_makes() -> None:
    assert EXAMPLES_JS.read_text(encoding="utf-8") == source(build())


def test_the_example_game_holds_the_seeds_examples_and_wins() -> None:
    game, moves = example_game()
    table = {POSITION_NAMES[p]: card.name for p, card in game.playable().items()}
    assert (table["1"], table["8"], table["5"], table["3"]) == ("5S", "6D", "QH", "KH")
    assert "AH" in table.values(), "5♠ and A♥ of the same deal: both on the table"
    assert list(table.values()).count("KH") == 2, "two K♥ on the table"
    assert moves[0].names() == ["1", "8"]
    game.push(moves[0])
    assert game.card_at(7) == Card.parse("JC")  # pile 8 uncovers J♣
    assert moves[1].names() == ["8", "5", "3"]
    for move in moves[1:]:
        game.push(move)
    assert (game.status, game.score, game.move_count, game.cards_left) == (Status.WON, 520, 48, 0)
