"""Cards: machine names, ranks, and which cards pair or make a triple."""

from __future__ import annotations

import itertools

import pytest

from halfmoon import Card, InvalidCardError, card_name, parse_card
from halfmoon.cards import DECK, is_pair, is_triple


def test_every_card_name_round_trips() -> None:
    names = [card.name for card in DECK]
    assert len(set(names)) == 52
    for name in names:
        assert card_name(parse_card(name)) == name
        assert str(Card.parse(name)) == name
        assert repr(Card.parse(name)) == f"Card({name!r})"


@pytest.mark.parametrize(
    ("name", "rank", "suit"),
    [("5S", 5, "S"), ("10H", 10, "H"), ("QD", 12, "D"), ("AC", 1, "C"), ("JS", 11, "S"), ("KH", 13, "H")],
)
def test_issue_examples_parse(name: str, rank: int, suit: str) -> None:
    card = parse_card(name)
    assert (card.rank, card.suit) == (rank, suit)


def test_parse_forgives_case_and_blanks() -> None:
    assert parse_card(" qd ") == parse_card("QD")
    assert parse_card("10h") == parse_card("10H")


@pytest.mark.parametrize("bad", ["", "5", "S", "1S", "11H", "0D", "QX", "10", "KK", "T5", "5SS", "J♠", "ten"])
def test_bad_names_are_refused_quoting_the_input(bad: str) -> None:
    with pytest.raises(InvalidCardError) as info:
        parse_card(bad)
    assert repr(bad) in str(info.value)
    assert info.value.code == "bad_card"


def test_non_string_is_refused() -> None:
    with pytest.raises(InvalidCardError, match="not a card: 5"):
        parse_card(5)


def test_card_constructor_checks_rank_and_suit() -> None:
    with pytest.raises(InvalidCardError, match="rank 14"):
        Card(14, "S")
    with pytest.raises(InvalidCardError, match="suit 'X'"):
        Card(3, "X")


def test_symbols_in_english_and_in_the_seeds_italian() -> None:
    assert parse_card("5S").symbol() == "5♠"
    assert parse_card("10H").symbol() == "10♥"
    assert parse_card("QD").symbol() == "Q♦"
    # the seed's letters: V = Fante, D = Donna, R = Re
    assert [parse_card(n).symbol(lang="it") for n in ("JC", "QH", "KH", "AS")] == ["V♣", "D♥", "R♥", "A♠"]


def test_face_cards_are_jack_queen_king() -> None:
    assert [card.name for card in DECK if card.is_face] == [
        f"{rank}{suit}" for suit in "SHDC" for rank in "JQK"
    ]
    assert {card.suit for card in DECK if card.is_red} == {"H", "D"}


def test_exactly_five_kinds_of_pair_and_suits_do_not_matter() -> None:
    kinds = {
        tuple(sorted((a.rank, b.rank)))
        for a, b in itertools.product(DECK, repeat=2)
        if is_pair(a, b)
    }
    assert kinds == {(1, 10), (2, 9), (3, 8), (4, 7), (5, 6)}
    # every suit combination of a kind pairs
    assert all(is_pair(Card(5, s), Card(6, t)) for s in "SHDC" for t in "SHDC")


def test_face_cards_never_pair() -> None:
    faces = [card for card in DECK if card.is_face]
    assert not any(is_pair(a, b) for a in DECK for b in faces)


def test_triple_is_jack_queen_king_in_any_order_and_suits() -> None:
    for j, q, k in itertools.product("SHDC", repeat=3):
        cards = (Card(11, j), Card(12, q), Card(13, k))
        assert all(is_triple(*order) for order in itertools.permutations(cards))
    assert not is_triple(Card(11, "S"), Card(11, "H"), Card(13, "S"))
    assert not is_triple(Card(11, "S"), Card(12, "H"), Card(10, "S"))
