"""Deal codes: the format, its errors, the word stream and the shuffle, random and daily codes."""

from __future__ import annotations

import hashlib
import hmac
import random
from datetime import date

import pytest

from halfmoon import DealCode, InvalidCodeError, codes, daily_code, parse_code, random_code
from halfmoon.codes import CODE_SPACE, UNSHUFFLED, word_stream

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]


def reference_deck(code: str, *, bits: int = 32) -> list[str]:
    """The shuffle exactly as docs/deal-codes.md writes it, written again from the text.

    ``bits`` < 32 lowers the rejection limit to ``2**bits - 2**bits % n`` (testing only: it
    makes rejections frequent, where with 32 bits they almost never happen).
    """
    seed = hashlib.sha256(code.encode("ascii")).digest()
    words: list[int] = []
    block = 0

    def next_word() -> int:
        nonlocal block
        if not words:
            digest = hashlib.sha256(seed + block.to_bytes(4, "big")).digest()
            block += 1
            words.extend(int.from_bytes(digest[k : k + 4], "big") for k in range(0, 32, 4))
        return words.pop(0)

    deck = [rank + suit for _ in range(2) for suit in "SHDC" for rank in RANKS]
    for i in range(103, 0, -1):
        n = i + 1
        while True:
            word = next_word()
            if word < 2**bits - 2**bits % n:
                break
        j = word % n
        deck[i], deck[j] = deck[j], deck[i]
    return deck


@pytest.mark.parametrize(
    ("text", "number"),
    [("HM1-N-AAAAAAA", 0), ("HM1-N-AAAAAAB", 1), ("HM1-N-AAAAABA", 26), ("HM1-N-ZZZZZZZ", 26**7 - 1)],
)
def test_letters_are_a_base_26_number(text: str, number: int) -> None:
    code = parse_code(text)
    assert code.number == number
    assert code.kind == "N"
    assert str(code) == text
    assert str(DealCode("N", number)) == text


def test_codes_round_trip_and_are_canonical() -> None:
    rng = random.Random(7)
    for _ in range(200):
        code = DealCode(rng.choice("ND"), rng.randrange(CODE_SPACE))
        assert parse_code(str(code)) == code
        assert eval(repr(code), {"DealCode": DealCode}) == code
    assert str(parse_code("  hm1-n-aaaaaab\n")) == "HM1-N-AAAAAAB"
    assert CODE_SPACE == 8_031_810_176


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("", "empty deal code"),
        ("   ", "empty deal code"),
        ("HM1NAAAAAAB", "three parts separated by '-'"),
        ("HM1-N-AAAA-AAB", "three parts separated by '-'"),
        ("XX1-N-AAAAAAB", "must start with 'HM' and a version number"),
        ("HM-N-AAAAAAB", "must start with 'HM' and a version number"),
        ("HM2-N-AAAAAAB", "format version 2; this engine reads version 1"),
        ("HM01-N-AAAAAAB", "format version 01"),
        ("HM1-X-AAAAAAB", "unknown kind 'X' (known: N = ordinary deal, D = daily challenge)"),
        ("HM1-NN-AAAAAAB", "the kind 'NN' must be one letter"),
        ("HM1-3-AAAAAAB", "the kind '3' must be one letter"),
        ("HM1-N-AAAAAB", "ends in 6 letters; it needs exactly 7"),
        ("HM1-N-AAAAAABB", "ends in 8 letters; it needs exactly 7"),
        ("HM1-N-AAAAAA1", "'1' not allowed"),
        ("HM1-N-AAA AAAB", "' ' not allowed"),
        ("HM1-N-AAAAAAÉ", "'É' not allowed"),
        ("HM1-N-AAAAAAı", "'ı' not allowed"),  # dotless i upper-cases to I: still refused
        ("HM١-N-AAAAAAB", "must start with 'HM'"),  # an Arabic-Indic digit is not a version
    ],
)
def test_malformed_codes_say_what_is_wrong(bad: str, says: str) -> None:
    with pytest.raises(InvalidCodeError) as info:
        parse_code(bad)
    assert says in str(info.value)
    if bad.strip():
        assert repr(bad) in str(info.value)
    assert info.value.code == "bad_code"


def test_a_code_must_be_a_string() -> None:
    with pytest.raises(InvalidCodeError, match="must be a string, not 12"):
        parse_code(12)  # type: ignore[arg-type]


def test_constructor_checks_kind_and_range() -> None:
    with pytest.raises(InvalidCodeError, match="unknown deal kind 'Q'"):
        DealCode("Q", 0)
    with pytest.raises(InvalidCodeError, match="outside"):
        DealCode("N", CODE_SPACE)
    with pytest.raises(InvalidCodeError, match="outside"):
        DealCode("N", -1)


def test_word_stream_is_sha256_in_counter_mode() -> None:
    seed = hashlib.sha256(b"HM1-N-AAAAAAB").digest()
    assert parse_code("HM1-N-AAAAAAB").seed == seed
    stream = word_stream(seed)
    words = [next(stream) for _ in range(24)]
    for k in range(3):
        block = hashlib.sha256(seed + bytes([0, 0, 0, k])).digest()
        assert words[8 * k : 8 * k + 8] == [int.from_bytes(block[i : i + 4], "big") for i in range(0, 32, 4)]


def test_the_shuffle_is_the_documented_algorithm() -> None:
    rng = random.Random(2026)
    codes = ["HM1-N-AAAAAAA", "HM1-N-AAAAAAB", "HM1-N-ZZZZZZZ", "HM1-D-AAAAAAA"]
    codes += [str(DealCode(rng.choice("ND"), rng.randrange(CODE_SPACE))) for _ in range(150)]
    for text in codes:
        assert [card.name for card in parse_code(text).shuffled_deck()] == reference_deck(text), text


def test_rejected_words_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a limit of about 2**31 half the words are rejected: the stream must skip each one."""
    low = tuple(0 if n == 0 else 2**31 - 2**31 % n for n in range(105))
    monkeypatch.setattr(codes, "_LIMITS", low)
    for text in ("HM1-N-AAAAAAB", "HM1-D-ZZZZZZZ", "HM1-N-QWERTYU"):
        deck = [card.name for card in parse_code(text).shuffled_deck()]
        assert deck == reference_deck(text, bits=31)
        assert deck != reference_deck(text)


def test_swaps_are_fisher_yates_draws() -> None:
    code = parse_code("HM1-N-AAAAAAB")
    swaps = code.swaps()
    assert len(swaps) == 103
    assert all(0 <= j <= i for i, j in zip(range(103, 0, -1), swaps, strict=True))
    deck = list(UNSHUFFLED)
    for i, j in zip(range(103, 0, -1), swaps, strict=True):
        deck[i], deck[j] = deck[j], deck[i]
    assert deck == code.shuffled_deck()


def test_the_kind_is_part_of_the_deal() -> None:
    assert parse_code("HM1-N-QWERTYU").shuffled_deck() != parse_code("HM1-D-QWERTYU").shuffled_deck()


def test_a_typed_code_and_its_canonical_form_deal_the_same() -> None:
    assert parse_code("hm1-n-qwertyu ").shuffled_deck() == parse_code("HM1-N-QWERTYU").shuffled_deck()


def test_every_shuffle_is_a_permutation_of_the_two_decks() -> None:
    for n in range(0, 26**7, 26**7 // 97):
        deck = DealCode("N", n).shuffled_deck()
        assert sorted(deck, key=str) == sorted(UNSHUFFLED, key=str)


def test_random_code_draws_from_the_generator_passed_in() -> None:
    a = [random_code(random.Random(5)) for _ in range(3)]
    assert len({str(code) for code in a}) == 1
    rng = random.Random(5)
    codes = [random_code(rng) for _ in range(50)]
    assert len(set(codes)) == 50
    assert all(code.kind == "N" for code in codes)
    assert random_code(random.Random(1), kind="D").kind == "D"
    with pytest.raises(InvalidCodeError):
        random_code(random.Random(1), kind="Z")


def test_daily_code_is_hmac_of_the_day_and_attempt() -> None:
    day = date(2026, 11, 29)
    code = daily_code(day, b"server secret")
    digest = hmac.new(b"server secret", b"halfmoon-daily:2026-11-29:0", hashlib.sha256).digest()
    assert code == DealCode("D", int.from_bytes(digest, "big") % 26**7)
    assert str(code).startswith("HM1-D-")
    assert daily_code(day, b"server secret") == code
    assert daily_code(day, b"other secret") != code
    assert daily_code(date(2026, 11, 30), b"server secret") != code
    assert daily_code(day, b"server secret", attempt=1) != code
