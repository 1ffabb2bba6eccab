"""The tap state machine: the seed's tap rules, the move-error messages, placement help, and the
shared tap vectors (tests/vectors/taps.json) that the browser client is tested against too."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from halfmoon import (
    MOVE_ERROR_MESSAGES,
    Game,
    InvalidPositionError,
    Move,
    NotPlayableError,
    TapEvent,
    Tapper,
    matching_positions,
    parse_position,
    position_name,
    tap,
)
from halfmoon.errors import HalfMoonError
from tests.conftest import VECTORS
from tests.engine import build_tap_vectors
from tests.engine.layouts import table

DOCUMENT: dict[str, Any] = json.loads(build_tap_vectors.PATH.read_text(encoding="utf-8"))


def tapper(tops: dict[str, str], *, move_errors: bool = False, under: dict[str, list[str]] | None = None) -> Tapper:
    return Tapper(table(tops, under or {}), move_errors=move_errors)


def sel(t: Tapper) -> list[str]:
    return [position_name(p) for p in t.selection]


# -- the seed's rules, one by one ----------------------------------------------------------------


def test_first_tap_selects_and_tapping_it_again_deselects() -> None:
    t = tapper({"1": "5S"})
    assert t.tap("1").event is TapEvent.SELECTED and sel(t) == ["1"]
    result = t.tap("1")
    assert result.event is TapEvent.DESELECTED and sel(t) == [] and result.move is None
    assert t.game.move_count == 0


def test_a_second_card_summing_to_11_removes_the_pair() -> None:
    t = tapper({"1": "5S", "R3": "6D"})
    t.tap("1")
    result = t.tap("R3")
    assert result.event is TapEvent.REMOVED and result.move == Move.parse("1 R3")
    assert sel(t) == [] and t.game.score == 10 and t.game.card_at(parse_position("R3")) is None


@pytest.mark.parametrize(("first", "second"), [("5S", "AH"), ("5S", "5H"), ("10C", "10D"), ("2S", "3H")])
def test_two_numbers_not_summing_to_11_cancel(first: str, second: str) -> None:
    t = tapper({"1": first, "2": second})
    t.tap("1")
    result = t.tap("2")
    assert result.event is TapEvent.CANCELLED and result.selection == () and sel(t) == []
    assert result.reason == "sum" and t.game.move_count == 0
    assert t.message(result) is None  # «Errori di mossa» is off at first


def test_with_move_errors_on_a_cancelled_sum_is_explained_in_italian_and_english() -> None:
    t = tapper({"1": "5S", "R1": "AH"}, move_errors=True)
    t.tap("1")
    result = t.tap("R1")
    assert t.message(result) == "La somma deve essere uguale a 11"
    assert t.message(result, "it") == "La somma deve essere uguale a 11"
    assert t.message(result, "en") == "The sum must equal 11"


def test_number_then_face_cancels_with_the_sum_message() -> None:
    """The seed's 5♠ and K♥: the selection began with a number card, so the sum is what failed."""
    t = tapper({"1": "5S", "3": "KH"}, move_errors=True)
    t.tap("1")
    result = t.tap("3")
    assert result.event is TapEvent.CANCELLED and sel(t) == []
    assert t.message(result) == MOVE_ERROR_MESSAGES["sum"]["it"]


def test_face_then_number_cancels_with_the_triple_message() -> None:
    t = tapper({"1": "5S", "3": "KH"}, move_errors=True)
    t.tap("3")
    result = t.tap("1")
    assert result.event is TapEvent.CANCELLED and sel(t) == []
    assert t.message(result) == "Servono un Fante, una Donna e un Re"
    assert t.message(result, "en") == "A Jack, a Queen and a King are needed"


def test_two_faces_then_a_number_cancel_the_whole_selection() -> None:
    t = tapper({"1": "JS", "2": "QS", "3": "KS", "4": "9H"}, move_errors=True)
    t.tap("1")
    t.tap("2")
    result = t.tap("4")
    assert result.event is TapEvent.CANCELLED and sel(t) == [] and result.reason == "triple"


@pytest.mark.parametrize("order", list(itertools.permutations(["1", "2", "3"])))
def test_a_triple_is_removed_on_the_third_tap_in_any_order(order: tuple[str, str, str]) -> None:
    t = tapper({"1": "JS", "2": "QH", "3": "KD"})
    assert t.tap(order[0]).event is TapEvent.SELECTED
    second = t.tap(order[1])
    assert second.event is TapEvent.SELECTED and sel(t) == list(order[:2])
    assert t.game.move_count == 0  # nothing removed before the third tap
    third = t.tap(order[2])
    assert third.event is TapEvent.REMOVED and third.move == Move.from_names(order)
    assert t.game.score == 15 and sel(t) == []


def test_the_engine_never_picks_the_third_card() -> None:
    t = tapper({"1": "JS", "2": "QH", "3": "KD"})
    t.tap("1")
    t.tap("2")
    assert sel(t) == ["1", "2"] and t.game.move_count == 0
    assert t.matching() == {2}  # placement help points at the K, but only a tap removes it


def test_two_face_cards_of_the_same_rank_replace() -> None:
    """The seed's two K♥: they do not add up, the second becomes the selected card."""
    t = tapper({"1": "KH", "2": "KH", "3": "JS", "4": "JD", "5": "QC"}, move_errors=True)
    t.tap("1")
    result = t.tap("2")
    assert result.event is TapEvent.REPLACED and sel(t) == ["2"] and t.message(result) is None
    t.tap("3")
    assert sel(t) == ["2", "3"]
    assert t.tap("4").event is TapEvent.REPLACED and sel(t) == ["2", "4"]
    assert t.tap("5").move == Move.parse("2 4 5")


def test_deselecting_one_of_two_faces_keeps_the_other() -> None:
    t = tapper({"1": "JS", "2": "QH"})
    t.tap("1")
    t.tap("2")
    assert t.tap("1").event is TapEvent.DESELECTED and sel(t) == ["2"]


def test_tapping_an_empty_position_is_refused_and_keeps_the_selection() -> None:
    t = tapper({"1": "5S", "R1": "6D", "2": "3S"})
    t.tap("1")
    t.tap("R1")  # R1 is now empty
    t.tap("2")
    before = (t.selection, t.game.snapshot())
    with pytest.raises(NotPlayableError, match="position R1 has no playable card"):
        t.tap("R1")
    assert (t.selection, t.game.snapshot()) == before


@pytest.mark.parametrize("bad", [20, -1, 99])
def test_a_position_index_out_of_range_is_refused(bad: int) -> None:
    t = tapper({"1": "5S"})
    t.tap("1")
    with pytest.raises(InvalidPositionError, match=f"no such position: {bad}"):
        t.tap(bad)
    assert sel(t) == ["1"]


def test_a_bad_position_name_is_refused() -> None:
    t = tapper({})
    with pytest.raises(InvalidPositionError, match="'R9'"):
        t.tap("R9")
    assert t.selection == ()


def test_tap_function_is_pure() -> None:
    game = table({"1": "5S", "2": "6S"})
    before = game.snapshot()
    result = tap(game, (0,), 1)
    assert result.event is TapEvent.REMOVED and result.move == Move((0, 1))
    assert game.snapshot() == before
    assert result.message("en") is None


def test_undo_and_clear_drop_the_selection() -> None:
    t = tapper({"1": "5S", "2": "6S", "3": "7S"})
    t.tap("1")
    t.tap("2")
    t.tap("3")
    assert t.undo() == Move.parse("1 2") and sel(t) == [] and t.game.move_count == 0
    t.tap("3")
    t.clear()
    assert sel(t) == []
    with pytest.raises(HalfMoonError):
        t.undo()


def test_placement_help() -> None:
    game = table({"1": "5S", "2": "6S", "R1": "6H", "3": "JS", "4": "QH", "5": "KD", "R2": "KS", "6": "QD"})
    assert matching_positions(game, ()) == frozenset(game.playable())
    assert matching_positions(game, (0,)) == {1, 12}
    assert matching_positions(game, (2,)) == {3, 4, 5, 13}  # J on pile 3: either Q (4, 6), either K (5, R2)
    assert matching_positions(game, (2, 3)) == {4, 13}  # J + Q: the Kings
    # a 4 (neutral filler) has no 7 on the table: nothing can complete it
    four = next(p for p, card in game.playable().items() if card.rank == 4)
    assert matching_positions(game, (four,)) == frozenset()


# -- the shared vectors --------------------------------------------------------------------------


def test_the_vector_file_is_what_the_hand_written_source_builds() -> None:
    assert build_tap_vectors.dumps(build_tap_vectors.build()) == build_tap_vectors.PATH.read_text(encoding="utf-8")


def test_the_vectors_cover_every_case() -> None:
    events = {step["event"] for vector in DOCUMENT["vectors"] for step in vector["steps"]}
    assert events == {"selected", "deselected", "replaced", "cancelled", "removed", "error"}
    messages = {json.dumps(step["message"]) for vector in DOCUMENT["vectors"] for step in vector["steps"]}
    assert messages == {"null", json.dumps(MOVE_ERROR_MESSAGES["sum"]), json.dumps(MOVE_ERROR_MESSAGES["triple"])}
    triples = {tuple(step["removed"]) for v in DOCUMENT["vectors"] for step in v["steps"] if step["removed"]}
    assert set(itertools.permutations(["12", "5", "8"])) <= triples
    assert {step["card"] for v in DOCUMENT["vectors"] for step in v["steps"] if step["event"] == "error"} == {None}


@pytest.mark.parametrize("vector", DOCUMENT["vectors"], ids=lambda v: v["name"][:60])
def test_tap_vector(vector: dict[str, Any]) -> None:
    game = Game.from_code(vector["code"])
    for move in vector["setup"]:
        game.push(Move.from_names(move))
    t = Tapper(game, move_errors=vector["move_errors"])
    for i, step in enumerate(vector["steps"]):
        where = f"step {i} (tap {step['tap']})"
        card = game.card_at(parse_position(step["tap"]))
        assert (None if card is None else card.name) == step["card"], where
        if step["event"] == "error":
            before = (t.selection, game.snapshot())
            with pytest.raises(HalfMoonError) as info:
                t.tap(step["tap"])
            assert info.value.code == step["error"], where
            assert (t.selection, game.snapshot()) == before, where
        else:
            result = t.tap(step["tap"])
            assert result.event.value == step["event"], where
            assert step["error"] is None
            removed = None if result.move is None else result.move.names()
            assert removed == step["removed"], where
            message = t.message(result)
            expected = step["message"]
            assert message == (None if expected is None else expected["it"]), where
            assert t.message(result, "en") == (None if expected is None else expected["en"]), where
        assert sel(t) == step["selection"], where
        assert sorted(t.matching()) == [parse_position(name) for name in step["matching"]], where


def test_a_whole_won_game_by_taps() -> None:
    """Tapping each move of a won record, card by card, wins the game: 48 removals, 520 points."""
    records = json.loads((VECTORS / "won_records.json").read_text(encoding="utf-8"))["records"]
    for record in records:
        t = Tapper(Game.from_code(record["code"]), move_errors=True)
        for names in record["moves"]:
            results = [t.tap(name) for name in names]
            assert [r.event for r in results[:-1]] == [TapEvent.SELECTED] * (len(names) - 1)
            assert results[-1].event is TapEvent.REMOVED and results[-1].move == Move.from_names(names)
        assert t.game.is_won and t.game.score == 520 and t.game.move_count == 48
        assert t.matching() == frozenset()
