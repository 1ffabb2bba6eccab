"""The rules: what is playable, pairs and triples, removal, score, undo, status, illegal moves."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from halfmoon import (
    WINNING_MOVES,
    WINNING_SCORE,
    Card,
    DealCode,
    DuplicatePositionError,
    Game,
    HalfMoonError,
    IllegalMoveError,
    InvalidPositionError,
    Move,
    NotAMatchError,
    NotPlayableError,
    Status,
    UndoError,
)
from halfmoon.cards import JACK, KING, QUEEN, is_pair, is_triple
from halfmoon.codes import CODE_SPACE
from halfmoon.positions import POSITION_NAMES
from tests.conftest import VECTORS
from tests.engine.layouts import table

WON: list[dict[str, Any]] = json.loads((VECTORS / "won_records.json").read_text(encoding="utf-8"))["records"]


def play(game: Game, *moves: str) -> None:
    for move in moves:
        game.push(Move.parse(move))


def names(game: Game) -> dict[str, str]:
    return {POSITION_NAMES[p]: card.name for p, card in game.playable().items()}


# -- the seed's example -------------------------------------------------------------------------


def test_the_seeds_won_game_opening() -> None:
    """5♠ (pile 1) + 6♦ (pile 8); pile 8 uncovers J♣, removed with Q♥ (pile 5) and K♥ (pile 3)."""
    game = table({"1": "5S", "8": "6D", "5": "QH", "3": "KH"}, under={"8": ["JC"]})
    play(game, "1 8")
    assert game.card_at(7) == Card.parse("JC")
    assert (game.score, game.move_count, game.cards_left) == (10, 1, 102)
    play(game, "8 5 3")
    assert (game.score, game.move_count, game.cards_left) == (25, 2, 99)
    assert [game.count_at(p) for p in (0, 2, 4, 7)] == [7, 7, 7, 6]


# -- what is playable ---------------------------------------------------------------------------


def test_playable_cards_are_the_pile_tops_and_the_reserve() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    deal = game.deal
    assert game.playable() == {
        **{p: pile[-1] for p, pile in enumerate(deal.piles)},
        **{12 + slot: card for slot, card in enumerate(deal.reserve)},
    }
    assert [game.count_at(p) for p in range(20)] == [8] * 12 + [1] * 8


def test_a_card_under_a_top_cannot_be_played() -> None:
    # pile 1 shows 3♠ over a 6♣: the 6 cannot pair with the 5♥ in R1 until the 3 leaves
    game = table({"1": "3S", "R1": "5H", "R2": "8D"}, under={"1": ["6C"]})
    assert Move.parse("1 R1") not in list(game.legal_moves())
    with pytest.raises(NotAMatchError, match="3S and 5H are not a pair: 3 \\+ 5 = 8, not 11"):
        play(game, "1 R1")
    play(game, "1 R2")
    play(game, "1 R1")  # now the 6♣ is on top
    assert game.score == 20


# -- pairs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), [("AS", "10H"), ("2D", "9C"), ("3H", "8S"), ("4C", "7D"), ("5S", "6D")])
def test_each_kind_of_pair_is_removed(a: str, b: str) -> None:
    game = table({"5": a, "9": b})
    play(game, "5 9")
    assert game.score == 10 and game.move_count == 1 and game.cards_left == 102


@pytest.mark.parametrize("move", ["4 7", "4 R6", "R3 R6"])
def test_pairs_mix_sources(move: str) -> None:
    """Pile with pile, pile with reserve, reserve with reserve."""
    first, second = move.split()
    game = table({first: "AD", second: "10C"})
    before = {first: game.count_at(Move.parse(move).positions[0])}
    play(game, move)
    assert game.score == 10
    a, b = Move.parse(move).positions
    assert game.count_at(a) == before[first] - 1
    if b >= 12:
        assert game.card_at(b) is None


def test_suits_do_not_matter_for_a_pair() -> None:
    game = table({"1": "5S", "2": "6S"})
    play(game, "2 1")
    assert game.score == 10


def test_two_number_cards_not_summing_to_11_are_refused() -> None:
    """The seed's own: 5♠ and A♥ of the same deal."""
    game = table({"1": "5S", "R1": "AH"})
    with pytest.raises(NotAMatchError) as info:
        play(game, "1 R1")
    assert str(info.value) == "move 1 R1: 5S and AH are not a pair: 5 + 1 = 6, not 11"


@pytest.mark.parametrize(("a", "b"), [("5S", "KH"), ("JC", "QH"), ("KH", "KH"), ("JD", "10S"), ("QS", "AS")])
def test_face_cards_never_pair(a: str, b: str) -> None:
    game = table({"1": a, "R1": b})
    with pytest.raises(NotAMatchError, match="face cards never form a pair; they go in threes"):
        play(game, "1 R1")


# -- triples -------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", list(itertools.permutations(["J", "Q", "K"])))
def test_triple_in_any_order_and_any_positions(order: tuple[str, str, str]) -> None:
    cards = {"J": "JS", "Q": "QD", "K": "KC"}
    where = {"J": "2", "Q": "R5", "K": "11"}
    game = table({where[rank]: cards[rank] for rank in "JQK"})
    play(game, " ".join(where[rank] for rank in order))
    assert (game.score, game.move_count, game.cards_left) == (15, 1, 101)


def test_triple_from_three_reserve_slots_of_mixed_suits() -> None:
    game = table({"R1": "KH", "R2": "JH", "R8": "QC"})
    play(game, "R8 R1 R2")
    assert [game.card_at(p) for p in (12, 13, 19)] == [None, None, None]


@pytest.mark.parametrize(
    ("tops", "move"),
    [
        ({"1": "JS", "2": "JH", "3": "KS"}, "1 2 3"),
        ({"1": "JS", "2": "QH", "3": "10S"}, "1 2 3"),
        ({"1": "KS", "2": "KH", "3": "KD"}, "1 2 3"),
        ({"1": "5S", "2": "6H", "3": "KD"}, "1 2 3"),
    ],
)
def test_three_cards_that_are_not_jack_queen_king_are_refused(tops: dict[str, str], move: str) -> None:
    game = table(tops)
    with pytest.raises(NotAMatchError, match="is not a triple: it needs one J, one Q and one K"):
        play(game, move)


# -- illegal input: clear errors, no change -----------------------------------------------------


def emptied_game() -> Game:
    """R1 and R2 emptied by a pair; pile 1 emptied by eight pairs with pile 2."""
    top_first_1 = ["5S", "2S", "3S", "4S", "AS", "5H", "2H", "3H"]
    top_first_2 = ["6S", "9S", "8S", "7S", "10S", "6H", "9H", "8H"]
    game = table(
        {"1": top_first_1[0], "2": top_first_2[0], "R1": "AD", "R2": "10D"},
        under={"1": top_first_1[1:], "2": top_first_2[1:]},
    )
    play(game, "R1 R2", *["1 2"] * 8)
    return game


def test_removed_cards_leave_and_emptied_places_stay_empty() -> None:
    game = emptied_game()
    assert game.card_at(0) is None and game.count_at(0) == 0
    assert game.card_at(12) is None and game.count_at(12) == 0
    assert game.cards_left == 104 - 18
    assert 0 not in game.playable() and 12 not in game.playable()
    assert all(0 not in m.positions and 12 not in m.positions for m in game.legal_moves())


def test_undo_refills_an_emptied_place() -> None:
    game = emptied_game()
    game.undo()
    assert game.card_at(0) == Card.parse("3H")
    assert game.card_at(1) == Card.parse("8H")


@pytest.mark.parametrize(
    ("move", "error", "message"),
    [
        ("1 3", NotPlayableError, "move 1 3: pile 1 is empty"),
        ("R1 5", NotPlayableError, "move R1 5: reserve slot R1 is empty"),
        ("3 3", DuplicatePositionError, "move 3 3: the same position is named twice"),
        ("R3 R3 4", DuplicatePositionError, "move R3 R3 4: the same position is named twice"),
    ],
)
def test_illegal_moves_name_the_fault_and_change_nothing(move: str, error: type[Exception], message: str) -> None:
    game = emptied_game()
    before = (game.snapshot(), game.cards_left, game.history(), game.status)
    with pytest.raises(error) as info:
        play(game, move)
    assert str(info.value) == message
    assert isinstance(info.value, IllegalMoveError)
    assert (game.snapshot(), game.cards_left, game.history(), game.status) == before


def test_every_refusal_leaves_the_state_alone() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    play(game, "1 R4")
    for a, b in itertools.permutations(range(20), 2):
        move = Move((a, b))
        before = game.snapshot()
        if not game.is_legal(move):
            with pytest.raises(IllegalMoveError):
                game.push(move)
            assert game.snapshot() == before


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("1", IllegalMoveError, "a move names 2 positions (a pair) or 3 (a triple), not 1: ['1']"),
        ("1 2 3 4", IllegalMoveError, "not 4: ['1', '2', '3', '4']"),
        ("", IllegalMoveError, "not 0: []"),
        ("1 13", InvalidPositionError, "no such position: '13'"),
        ("R9 1", InvalidPositionError, "no such position: 'R9'"),
    ],
)
def test_malformed_moves_are_refused(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        Move.parse(text)
    assert message in str(info.value)


def test_a_move_is_a_list_of_names_not_a_string() -> None:
    with pytest.raises(IllegalMoveError, match="not the string '18'"):
        Move.from_names("18")


def test_a_move_of_bad_size_built_directly_is_refused_by_the_game() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    with pytest.raises(IllegalMoveError, match="2 or 3 positions, not 4"):
        game.push(Move((0, 1, 2, 3)))
    with pytest.raises(NotPlayableError, match="no position 20"):
        game.push(Move((0, 20)))
    assert game.snapshot() == Game.from_code("HM1-N-AAAAAAB").snapshot()


def test_errors_are_value_errors_with_stable_codes() -> None:
    assert issubclass(HalfMoonError, ValueError)
    codes = {cls.code for cls in (NotPlayableError, DuplicatePositionError, NotAMatchError, UndoError)}
    assert codes == {"not_playable", "same_position", "not_a_match", "nothing_to_undo"}


# -- moves as text --------------------------------------------------------------------------------


def test_moves_round_trip_with_the_record_format() -> None:
    move = Move.parse("R3, 5 12")
    assert move.positions == (14, 4, 11)
    assert move.names() == ["R3", "5", "12"]
    assert str(move) == "R3 5 12"
    assert Move.from_names(move.names()) == move


# -- score and undo ------------------------------------------------------------------------------


def test_score_counts_ten_a_pair_and_fifteen_a_triple_and_undo_takes_it_back() -> None:
    game = table({"1": "5S", "2": "6D", "3": "JH", "4": "QH", "5": "KH"})
    start = game.snapshot()
    play(game, "1 2")
    after_pair = game.snapshot()
    play(game, "3 4 5")
    assert (game.score, game.move_count, game.cards_left) == (25, 2, 99)
    assert game.history() == [Move.parse("1 2"), Move.parse("3 4 5")]
    assert game.undo() == Move.parse("3 4 5")
    assert game.snapshot() == after_pair
    assert (game.score, game.move_count, game.cards_left) == (10, 1, 102)
    assert game.undo() == Move.parse("1 2")
    assert game.snapshot() == start
    assert (game.score, game.move_count, game.cards_left) == (0, 0, 104)
    assert not game.can_undo


def test_undo_with_nothing_to_undo_is_refused_and_changes_nothing() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    before = game.snapshot()
    with pytest.raises(UndoError, match="nothing to undo: no move has been made"):
        game.undo()
    assert game.snapshot() == before
    assert game.score == 0  # never below zero


def test_undo_puts_cards_back_in_their_exact_places() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    record = WON[1]
    assert record["code"] == "HM1-N-AAAAAAB"
    snapshots = [game.snapshot()]
    for move in record["moves"]:
        game.push(Move.from_names(move))
        snapshots.append(game.snapshot())
    while snapshots:
        assert game.snapshot() == snapshots.pop()
        if game.can_undo:
            game.undo()
    assert game.snapshot() == Game.from_code("HM1-N-AAAAAAB").snapshot()


def test_a_whole_game_can_be_undone_to_the_deal() -> None:
    """Undo reaches back up to 100 moves; a game never holds more than 48, so always to the deal."""
    game = Game.from_code(WON[0]["code"])
    for move in WON[0]["moves"]:
        game.push(Move.from_names(move))
    assert len(game.history()) == WINNING_MOVES
    for _ in range(WINNING_MOVES):
        game.undo()
    assert game.snapshot() == Game.from_code(WON[0]["code"]).snapshot()
    with pytest.raises(UndoError):
        game.undo()


@pytest.mark.parametrize("seed", range(40))
def test_undo_after_any_walk_of_moves_and_undos_restores_each_earlier_position(seed: int) -> None:
    """The undo stack keeps moves only; the cards come back from the starting layout. A random
    walk of legal moves and undos (and a copy taken mid-way) goes back through the very same
    positions it went through, in a game from a code and in one built from what a player sees."""
    rng = random.Random(seed)
    code = f"HM1-N-{''.join(rng.choice('ABCDEFGHJK') for _ in range(7))}"
    full = Game.from_code(code)
    tops = [full.card_at(p) for p in range(len(POSITION_NAMES))]
    tops[rng.randrange(12, 20)] = None  # an emptied reserve slot stays empty in a seen board
    for game in (full, Game.from_visible(code, tops, cards_left=sum(t is not None for t in tops))):
        trail = [game.snapshot()]
        copied: tuple[Game, list[Any]] | None = None
        for _ in range(120):
            moves = list(game.legal_moves())
            if moves and (not game.can_undo or rng.random() < 0.7):
                game.push(rng.choice(moves))
                trail.append(game.snapshot())
            elif game.can_undo:
                game.undo()
                trail.pop()
                assert game.snapshot() == trail[-1]
            if copied is None and rng.random() < 0.1:
                copied = (game.copy(), list(trail))
        while game.can_undo:
            game.undo()
            trail.pop()
            assert game.snapshot() == trail[-1]
        assert len(trail) == 1
        if copied is not None:  # the copy undoes on its own, back to where it was taken from
            other, kept = copied
            while other.can_undo:
                other.undo()
                kept.pop()
                assert other.snapshot() == kept[-1]


# -- status --------------------------------------------------------------------------------------


@pytest.mark.parametrize("record", WON, ids=lambda r: r["code"])
def test_a_won_game_is_48_moves_and_520_points(record: dict[str, Any]) -> None:
    game = Game.from_code(record["code"])
    for move in record["moves"]:
        assert game.status is Status.PLAYING
        game.push(Move.from_names(move))
    assert game.status is Status.WON and game.is_won and not game.is_stalled
    assert (game.move_count, game.score, game.cards_left) == (WINNING_MOVES, WINNING_SCORE, 0)
    assert (WINNING_MOVES, WINNING_SCORE) == (48, 520)
    assert list(game.legal_moves()) == [] and not game.has_legal_move()
    assert game.playable() == {}


def test_stalled_when_no_pair_and_no_triple_is_playable() -> None:
    game = table({"1": "JS", "2": "QS", "3": "5H", "R1": "KD"}, under={"1": ["2S"], "2": ["3S"]})
    assert game.status.value == "playing"
    play(game, "1 2 R1")
    # what remains playable: 5♥ and 2s, 3s, 4s (piles 1 and 2 uncovered 2♠ and 3♠): no pair, no triple
    assert game.status is Status.STALLED and game.is_stalled and not game.is_won
    assert list(game.legal_moves()) == []
    game.undo()  # the seed: the player can undo
    assert game.status.value == "playing"


def test_jack_and_queen_without_a_king_is_a_stall() -> None:
    assert table({"1": "JS", "R2": "QS"}).status is Status.STALLED
    assert table({"1": "JS", "R2": "QS", "R3": "KH"}).status is Status.PLAYING
    assert table({"1": "AS", "R2": "10S"}).status is Status.PLAYING
    assert str(Status.STALLED) == "stalled"


# -- legal moves ---------------------------------------------------------------------------------


def brute_force_moves(game: Game) -> set[tuple[int, ...]]:
    playable = game.playable()
    out: set[tuple[int, ...]] = {
        pair for pair in itertools.combinations(playable, 2) if is_pair(*(playable[p] for p in pair))
    }
    out |= {t for t in itertools.combinations(playable, 3) if is_triple(*(playable[p] for p in t))}
    return out


@pytest.mark.parametrize("record", WON[:3], ids=lambda r: r["code"])
def test_legal_moves_are_exactly_the_pairs_and_triples_on_the_table(record: dict[str, Any]) -> None:
    game = Game.from_code(record["code"])
    for move in record["moves"]:
        listed = [tuple(sorted(m.positions)) for m in game.legal_moves()]
        assert len(listed) == len(set(listed))
        assert set(listed) == brute_force_moves(game)
        assert game.has_legal_move() == bool(listed)
        assert all(game.is_legal(m) for m in game.legal_moves())
        game.push(Move.from_names(move))


def test_legal_moves_list_pairs_then_triples() -> None:
    game = table({"1": "JS", "2": "QS", "3": "KH", "R1": "AS", "R2": "10S"})
    assert [str(m) for m in game.legal_moves()] == ["R1 R2", "1 2 3"]


def test_copy_is_independent() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    play(game, "1 R4")
    twin = game.copy()
    assert twin.snapshot() == game.snapshot() and twin.history() == game.history()
    play(twin, "4 6")
    assert twin.snapshot() != game.snapshot()
    twin.undo()
    twin.undo()
    assert game.move_count == 1 and twin.move_count == 0


def test_repr_says_where_the_game_stands() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    play(game, "1 R4")
    assert repr(game) == "<Game HM1-N-AAAAAAB score=10 moves=1 cards_left=102>"
    assert str(game.code) == "HM1-N-AAAAAAB"



# ``Game.has_legal_move`` was rewritten with a list of flags (e4ddc32). It must answer exactly what
# the definition before it answered, for every position: a pair summing to 11 (A = 1) or a Jack, a
# Queen and a King among the 12 pile tops and the 8 reserve slots. A differential test over many
# positions of real deals (random legal play, undos included, to the end of each game), against the
# definition as it was, and against ``legal_moves()``: a guard for the next rewrite.
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
