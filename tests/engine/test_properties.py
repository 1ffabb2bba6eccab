"""Property tests over random legal playthroughs with undos (hypothesis).

Along every playthrough: the cards are conserved (table + removed = the deal), the score is
10 per pair and 15 per triple on the stack, undo restores the exact earlier state, the status is
right (won iff no card is left, stalled iff no pair and no triple is playable), and a won game is
always 48 moves and 520 points.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from halfmoon import Card, DealCode, Game, IllegalMoveError, Move, NotPlayableError, Status, Tapper, UndoError
from halfmoon.cards import is_pair, is_triple
from halfmoon.codes import CODE_SPACE
from tests.conftest import VECTORS

WON: list[dict[str, Any]] = json.loads((VECTORS / "won_records.json").read_text(encoding="utf-8"))["records"]
codes = st.builds(DealCode, st.sampled_from("ND"), st.integers(0, CODE_SPACE - 1))


def table_cards(game: Game) -> Counter[Card]:
    return Counter(card for pile in game.piles() for card in pile) + Counter(
        card for card in game.reserve() if card is not None
    )


def any_move_by_brute_force(game: Game) -> bool:
    cards = list(game.playable().values())
    return any(is_pair(a, b) for a, b in itertools.combinations(cards, 2)) or any(
        is_triple(*t) for t in itertools.combinations(cards, 3)
    )


def check_invariants(game: Game, removed: list[tuple[Card, ...]]) -> None:
    deal = Counter(card for pile in game.deal.piles for card in pile) + Counter(game.deal.reserve)
    gone: Counter[Card] = Counter(card for cards in removed for card in cards)
    assert table_cards(game) + gone == deal
    pairs = sum(1 for cards in removed if len(cards) == 2)
    triples = sum(1 for cards in removed if len(cards) == 3)
    assert game.score == 10 * pairs + 15 * triples >= 0
    assert game.move_count == len(removed)
    assert game.cards_left == sum(table_cards(game).values()) == 104 - sum(gone.values())
    assert len(game.history()) == len(removed)
    if game.cards_left == 0:
        assert game.status is Status.WON
        assert (game.move_count, game.score, pairs, triples) == (48, 520, 40, 8)
    elif any_move_by_brute_force(game):
        assert game.status is Status.PLAYING and not game.is_stalled
    else:
        assert game.status is Status.STALLED and game.is_stalled


@settings(max_examples=100, deadline=None)
@given(code=codes, data=st.data())
def test_random_playthroughs_with_undos(code: DealCode, data: st.DataObject) -> None:
    game = Game.from_code(code)
    removed: list[tuple[Card, ...]] = []
    snapshots = [game.snapshot()]
    check_invariants(game, removed)
    for _ in range(data.draw(st.integers(0, 80), label="steps")):
        moves = list(game.legal_moves())
        undo = data.draw(st.booleans(), label="undo") if moves and game.can_undo else not moves
        if undo:
            if not game.can_undo:
                try:
                    game.undo()
                except UndoError:
                    pass
                else:
                    raise AssertionError("undo with an empty history succeeded")
                break
            game.undo()
            removed.pop()
            snapshots.pop()
            assert game.snapshot() == snapshots[-1]
        else:
            move = data.draw(st.sampled_from(moves), label="move")
            cards = tuple(game.card_at(p) for p in move.positions)
            assert None not in cards
            game.push(move)
            removed.append(tuple(c for c in cards if c is not None))
            snapshots.append(game.snapshot())
        check_invariants(game, removed)
    # and all the way back: the deal again
    while game.can_undo:
        game.undo()
    assert game.snapshot() == Game.from_code(code).snapshot()


@settings(max_examples=15, deadline=None)
@given(record=st.sampled_from(WON), data=st.data())
def test_won_records_with_undos_inserted_still_win(record: dict[str, Any], data: st.DataObject) -> None:
    game = Game.from_code(record["code"])
    removed: list[tuple[Card, ...]] = []
    for names in record["moves"]:
        back = data.draw(st.integers(0, min(3, len(removed))), label="undos")
        redo = [game.history()[-k] for k in range(back, 0, -1)]
        for _ in range(back):
            game.undo()
            removed.pop()
            check_invariants(game, removed)
        for move in [*redo, Move.from_names(names)]:
            removed.append(tuple(c for p in move.positions if (c := game.card_at(p)) is not None))
            game.push(move)
            check_invariants(game, removed)
    assert game.status is Status.WON and game.score == 520 and game.move_count == 48


@settings(max_examples=200, deadline=None)
@given(code=codes, data=st.data())
def test_illegal_moves_never_change_the_state(code: DealCode, data: st.DataObject) -> None:
    game = Game.from_code(code)
    for _ in range(data.draw(st.integers(0, 10))):
        moves = list(game.legal_moves())
        if not moves:
            break
        game.push(data.draw(st.sampled_from(moves)))
    size = data.draw(st.sampled_from([2, 3]))
    positions = tuple(data.draw(st.lists(st.integers(0, 19), min_size=size, max_size=size)))
    move = Move(positions)
    before = game.snapshot()
    if not game.is_legal(move):
        with pytest.raises(IllegalMoveError):
            game.push(move)
        assert game.snapshot() == before
    else:
        game.push(move)
        game.undo()
        assert game.snapshot() == before


@settings(max_examples=100, deadline=None)
@given(code=codes, taps=st.lists(st.integers(0, 19), max_size=60), move_errors=st.booleans())
def test_random_taps_keep_the_selection_sound(code: DealCode, taps: list[int], move_errors: bool) -> None:
    """Whatever is tapped: a selection is one number card or up to two face cards of different
    ranks; a removal is a legal move; a refused tap changes nothing; messages only with the setting."""
    tapper = Tapper(Game.from_code(code), move_errors=move_errors)
    game = tapper.game
    for position in taps:
        before = (tapper.selection, game.snapshot())
        legal = {tuple(sorted(m.positions)) for m in game.legal_moves()}
        if game.card_at(position) is None:
            with pytest.raises(NotPlayableError):
                tapper.tap(position)
            assert (tapper.selection, game.snapshot()) == before
            continue
        result = tapper.tap(position)
        if result.move is not None:
            assert tuple(sorted(result.move.positions)) in legal
            assert result.move.positions[-1] == position
            assert game.move_count == before[1][3] + 1
        else:
            assert game.snapshot() == before[1]
        cards = [game.card_at(p) for p in tapper.selection]
        assert None not in cards
        if len(cards) == 1:
            assert cards[0] is not None
        elif cards:
            assert len(cards) == 2 and all(c is not None and c.is_face for c in cards)
            assert len({c.rank for c in cards if c is not None}) == 2
        message = tapper.message(result)
        assert (message is not None) == (move_errors and result.reason is not None)
        assert (result.reason is not None) == (result.event.value == "cancelled")
        assert tapper.matching() <= set(game.playable())
