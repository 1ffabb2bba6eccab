"""Which cards may be removed: every pair and triple of ranks, under every choice of suits, and
attempted moves on real deals (tests/vectors/removals.json, built by hand from the seed), run
through every place the engine holds the rule: ``is_pair``/``is_triple``, ``Game.check`` and
``push``, ``legal_moves``, ``has_legal_move``, placement help and the tap machine."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from halfmoon import Game, Move, TapEvent, Tapper, matching_positions, parse_position
from halfmoon.cards import SUITS, Card, is_pair, is_triple
from halfmoon.errors import HalfMoonError
from halfmoon.positions import POSITION_COUNT
from tests.engine import build_removal_vectors

DOCUMENT: dict[str, Any] = json.loads(build_removal_vectors.PATH.read_text(encoding="utf-8"))
PAIRS: dict[tuple[str, ...], bool] = {tuple(case["ranks"]): case["pair"] for case in DOCUMENT["pairs"]}
TRIPLES: dict[tuple[str, ...], bool] = {tuple(case["ranks"]): case["triple"] for case in DOCUMENT["triples"]}
RANK_ORDER = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")

#: Where the cards of a case lie on the table: piles, slots, both; turned by case (the seed:
#: «Si possono combinare carte di provenienza diversa»).
PAIR_PLACES: tuple[tuple[int, ...], ...] = ((0, 12), (3, 7), (13, 19))
TRIPLE_PLACES: tuple[tuple[int, ...], ...] = ((11, 15, 4), (12, 14, 16), (1, 2, 18))


def pair_of(a: Card, b: Card) -> bool:
    return PAIRS[tuple(sorted((a.name[:-1], b.name[:-1]), key=RANK_ORDER.index))]


def triple_of(a: Card, b: Card, c: Card) -> bool:
    return TRIPLES[tuple(sorted((a.name[:-1], b.name[:-1], c.name[:-1]), key=RANK_ORDER.index))]


def suitings(ranks: list[str]) -> Iterator[tuple[Card, ...]]:
    """Every choice of suits a two-deck game can show for these ranks (no card three times)."""
    for suits in itertools.product(SUITS, repeat=len(ranks)):
        cards = tuple(Card.parse(rank + suit) for rank, suit in zip(ranks, suits, strict=True))
        if max(Counter(cards).values()) <= 2:
            yield cards


def board(cards: tuple[Card, ...], places: tuple[int, ...]) -> Game:
    """A visible board holding these cards at these positions and nothing else."""
    tops: list[Card | None] = [None] * POSITION_COUNT
    for card, p in zip(cards, places, strict=True):
        tops[p] = card
    return Game.from_visible(None, tops, cards_left=len(cards))


def expected_removals(cards: tuple[Card, ...], places: tuple[int, ...]) -> list[Move]:
    """What tapping these cards in this order removes, by the vector tables: two taps remove a
    pair; three taps remove a triple on the third, unless the first two already were a pair."""
    if pair_of(cards[0], cards[1]):
        return [Move(places[:2])]
    if len(cards) == 3 and triple_of(*cards):
        return [Move(places)]
    return []


def tapped(game: Game, places: tuple[int, ...]) -> list[Move]:
    tapper = Tapper(game)
    removed = []
    for p in places:
        result = tapper.tap(p)
        assert (result.event is TapEvent.REMOVED) == (result.move is not None)
        if result.move is not None:
            removed.append(result.move)
    return removed


def refusal(game: Game, move: Move) -> str | None:
    """None when the engine accepts the move, else its error code."""
    try:
        game.check(move)
    except HalfMoonError as exc:
        return exc.code
    return None


# -- the file ------------------------------------------------------------------------------------


def test_the_vector_file_is_what_the_hand_written_source_builds() -> None:
    assert build_removal_vectors.dumps(build_removal_vectors.build()) == build_removal_vectors.PATH.read_text(
        encoding="utf-8"
    )


def test_the_vectors_hold_every_rank_pair_and_triple_and_the_seed_kinds() -> None:
    assert len(PAIRS) == 91 and len(TRIPLES) == 455
    kinds = {("A", "10"), ("2", "9"), ("3", "8"), ("4", "7"), ("5", "6")}
    assert {ranks for ranks, ok in PAIRS.items() if ok} == kinds
    assert [ranks for ranks, ok in TRIPLES.items() if ok] == [("J", "Q", "K")]
    sums = {case["sum"] for case in DOCUMENT["pairs"]}
    assert sums == {*range(2, 21), None}
    errors = {a["error"] for group in DOCUMENT["moves"] for a in group["attempts"]}
    assert errors == {None, "not_a_match", "same_position", "not_playable", "illegal_move", "bad_position"}


# -- every rank pair and triple, every suit --------------------------------------------------


@pytest.mark.parametrize("case", DOCUMENT["pairs"], ids=lambda c: "+".join(c["ranks"]))
def test_pair_vector(case: dict[str, Any]) -> None:
    verdict = case["pair"]
    for n, cards in enumerate(suitings(case["ranks"])):
        a, b = cards
        where = f"{a} + {b}"
        assert is_pair(a, b) is verdict and is_pair(b, a) is verdict, where
        places = PAIR_PLACES[n % 3]
        game = board(cards, places)
        for order in (places, places[::-1]):
            assert refusal(game, Move(order)) == (None if verdict else "not_a_match"), where
            assert game.is_legal(Move(order)) is verdict, where
        assert list(game.legal_moves()) == ([Move(tuple(sorted(places)))] if verdict else []), where
        assert game.has_legal_move() is verdict, where
        assert matching_positions(game, places[:1]) == ({places[1]} if verdict else set()), where
        assert tapped(game.copy(), places) == expected_removals(cards, places), where
        assert tapped(game.copy(), places[::-1]) == expected_removals(cards[::-1], places[::-1]), where


@pytest.mark.parametrize("case", DOCUMENT["triples"], ids=lambda c: "+".join(c["ranks"]))
def test_triple_vector(case: dict[str, Any]) -> None:
    verdict = case["triple"]
    for n, cards in enumerate(suitings(case["ranks"])):
        where = " ".join(map(str, cards))
        assert all(is_triple(*order) is verdict for order in itertools.permutations(cards)), where
        places = TRIPLE_PLACES[n % 3]
        game = board(cards, places)
        pairs = [
            Move(tuple(sorted(places[i] for i in ij)))
            for ij in itertools.combinations(range(3), 2)
            if pair_of(*(cards[i] for i in ij))
        ]
        triple = Move(tuple(sorted(places)))
        expected = pairs + ([triple] if verdict else [])
        assert sorted(game.legal_moves(), key=str) == sorted(expected, key=str), where
        assert game.has_legal_move() is (verdict or bool(pairs)), where
        assert matching_positions(game, places[:2]) == ({places[2]} if verdict else set()), where
        for order in itertools.permutations(range(3)):
            at = tuple(places[i] for i in order)
            assert refusal(game, Move(at)) == (None if verdict else "not_a_match"), where
            shown = tuple(cards[i] for i in order)
            assert tapped(game.copy(), at) == expected_removals(shown, at), where


# -- attempted moves on real deals -----------------------------------------------------------


ATTEMPTS = [(group, attempt) for group in DOCUMENT["moves"] for attempt in group["attempts"]]


@pytest.mark.parametrize(
    ("group", "attempt"), ATTEMPTS, ids=[f"{g['code']}+{len(g['setup'])}:{' '.join(a['move'])}" for g, a in ATTEMPTS]
)
def test_move_vector(group: dict[str, Any], attempt: dict[str, Any]) -> None:
    game = Game.from_code(group["code"])
    for names in group["setup"]:
        game.push(Move.from_names(names))
    names, legal, error = attempt["move"], attempt["legal"], attempt["error"]
    shown = []
    for name in names:
        try:
            card = game.card_at(parse_position(name))
        except HalfMoonError:
            card = None
        shown.append(None if card is None else card.name)
    assert shown == attempt["cards"]
    before = game.snapshot()
    try:
        move = Move.from_names(names)
    except HalfMoonError as exc:
        assert (legal, error) == (False, exc.code)
        assert error in ("bad_position", "illegal_move")
        return
    assert refusal(game, move) == error
    assert game.is_legal(move) is legal
    distinct = len(set(move.positions)) == len(move.positions)
    assert (Move(tuple(sorted(move.positions))) in set(game.legal_moves())) is (legal and distinct)
    if distinct and error != "not_playable":
        cards = tuple(Card.parse(name) for name in attempt["cards"])
        assert tapped(game.copy(), move.positions) == expected_removals(cards, move.positions)
    elif error == "not_playable":
        empty = next(p for p, card in zip(move.positions, attempt["cards"], strict=True) if card is None)
        with pytest.raises(HalfMoonError) as tap_error:
            Tapper(game).tap(empty)
        assert tap_error.value.code == "not_playable"
    if not legal:
        with pytest.raises(HalfMoonError) as info:
            game.push(move)
        assert info.value.code == error
        assert game.snapshot() == before
        return
    score, count, left = game.score, game.move_count, game.cards_left
    game.push(move)
    assert game.score == score + (10 if len(names) == 2 else 15)
    assert (game.move_count, game.cards_left) == (count + 1, left - len(names))
    game.undo()
    assert game.snapshot() == before
