"""Deals: the layout a code deals, its JSON, and the golden vectors that pin every deal forever."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date
from typing import Any

import pytest

from halfmoon import Deal, DealCode, InvalidCardError, InvalidCodeError, daily_code, parse_code
from halfmoon.codes import UNSHUFFLED, word_stream
from tests.conftest import VECTORS

GOLDEN: dict[str, Any] = json.loads((VECTORS / "deals.json").read_text(encoding="utf-8"))


def test_golden_file_covers_the_named_codes() -> None:
    codes = {deal["code"] for deal in GOLDEN["deals"]}
    assert {"HM1-N-AAAAAAA", "HM1-N-AAAAAAB", "HM1-N-ZZZZZZZ"} <= codes
    assert any(code.startswith("HM1-D-") for code in codes)
    assert len(codes) >= 20


@pytest.mark.parametrize("expected", GOLDEN["deals"], ids=lambda deal: deal["code"])
def test_engine_reproduces_golden_deal(expected: dict[str, Any]) -> None:
    assert Deal.from_code(expected["code"]).to_json() == expected


@pytest.mark.parametrize("expected", GOLDEN["streams"], ids=lambda stream: stream["code"])
def test_engine_reproduces_golden_word_stream_and_swaps(expected: dict[str, Any]) -> None:
    code = parse_code(expected["code"])
    assert code.seed.hex() == expected["seed_sha256_hex"]
    stream = word_stream(code.seed)
    assert [next(stream) for _ in expected["first_words"]] == expected["first_words"]
    assert code.swaps() == expected["swaps"]


@pytest.mark.parametrize("expected", GOLDEN["daily"], ids=lambda d: f"{d['day']}-{d['attempt']}")
def test_engine_reproduces_golden_daily_codes(expected: dict[str, Any]) -> None:
    day = date.fromisoformat(expected["day"])
    code = daily_code(day, expected["secret_utf8"].encode("utf-8"), attempt=expected["attempt"])
    assert str(code) == expected["code"]


def test_a_deal_is_twelve_piles_of_eight_and_a_reserve_of_eight() -> None:
    for number in (0, 1, 12345, 26**7 - 1):
        deal = Deal.from_code(DealCode("N", number))
        assert len(deal.piles) == 12
        assert all(len(pile) == 8 for pile in deal.piles)
        assert len(deal.reserve) == 8
        cards = Counter(card for pile in deal.piles for card in pile) + Counter(deal.reserve)
        assert sum(cards.values()) == 104
        assert set(cards.values()) == {2}  # each of the 52 cards exactly twice
        assert set(cards) == set(UNSHUFFLED)


def test_deal_order_is_piles_bottom_to_top_then_reserve() -> None:
    code = parse_code("HM1-N-ELEVENS")
    deck = code.shuffled_deck()
    deal = Deal.from_code(code)
    assert [card for pile in deal.piles for card in pile] == deck[:96]
    assert list(deal.piles[0]) == deck[0:8]  # pile 1, bottom first: its top is deck[7]
    assert list(deal.reserve) == deck[96:]  # R1 … R8


def test_same_code_same_deal_and_different_codes_differ() -> None:
    assert Deal.from_code("HM1-N-AAAAAAB") == Deal.from_code("hm1-n-aaaaaab")
    assert Deal.from_code("HM1-N-AAAAAAB") != Deal.from_code("HM1-N-AAAAAAC")


def test_deal_json_shape() -> None:
    data = Deal.from_code("HM1-N-AAAAAAB").to_json()
    assert list(data) == ["code", "piles", "reserve"]
    assert data["code"] == "HM1-N-AAAAAAB"
    assert all(isinstance(name, str) for pile in data["piles"] for name in pile)
    json.dumps(data)


def test_deal_json_round_trips() -> None:
    for expected in GOLDEN["deals"][:5]:
        assert Deal.from_json(expected).to_json() == expected


def test_from_code_refuses_a_malformed_code() -> None:
    with pytest.raises(InvalidCodeError, match="'HM1-N-AAAAA' ends in 5 letters"):
        Deal.from_code("HM1-N-AAAAA")


def test_deal_json_with_other_cards_is_refused() -> None:
    data = Deal.from_code("HM1-N-AAAAAAB").to_json()
    data["piles"][0][7], data["piles"][1][7] = data["piles"][1][7], data["piles"][0][7]
    with pytest.raises(InvalidCardError, match="not the deal of 'HM1-N-AAAAAAB'"):
        Deal.from_json(data)


@pytest.mark.parametrize(
    ("document", "error", "says"),
    [
        ([], InvalidCodeError, "must be an object with a 'code'"),
        ({"piles": []}, InvalidCodeError, "must be an object with a 'code'"),
        ({"code": "HM1-N-AAAAAAB"}, InvalidCardError, "lacks well-formed 'piles' and 'reserve'"),
        ({"code": "HM1-N-AAAAAAB", "piles": 3, "reserve": []}, InvalidCardError, "lacks well-formed"),
        ({"code": "HM1-N-AAAAAAB", "piles": [["ZZ"]], "reserve": []}, InvalidCardError, "not a card: 'ZZ'"),
        ({"code": "HM9-N-AAAAAAB", "piles": [], "reserve": []}, InvalidCodeError, "format version 9"),
    ],
)
def test_malformed_deal_json_is_refused(document: object, error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        Deal.from_json(document)
