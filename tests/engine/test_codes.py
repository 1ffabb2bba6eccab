"""Deal codes: the format, its errors, the word stream and the shuffle, random and daily codes."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import re
from datetime import date
from typing import Any

import pytest

from halfmoon import DealCode, InvalidCodeError, daily_code, parse_code, random_code
from halfmoon.codes import (
    CODE_SPACE,
    CONTRIBUTION_RE,
    LETTERS,
    LONG_BODY_LENGTH,
    LONG_CODE_SPACE,
    SEED_HEX_RE,
    UNSHUFFLED,
    check_contribution,
    check_seal,
    fisher_yates_draws,
    new_seal_seed,
    seal_commitment,
    sealed_code,
    word_stream,
)
from halfmoon.deal import Deal
from tests.conftest import VECTORS

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
        ("HM1-X-AAAAAAB", "unknown kind 'X' (known: N = ordinary deal, D = daily challenge, S = sealed race)"),
        ("HM1-NN-AAAAAAB", "the kind 'NN' must be one letter"),
        ("HM1-3-AAAAAAB", "the kind '3' must be one letter"),
        ("HM1-N-AAAAAB", "ends in 6 letters; it needs exactly 7 or 28"),
        ("HM1-N-AAAAAABB", "ends in 8 letters; it needs exactly 7 or 28"),
        ("HM1-S-" + "A" * 27, "ends in 27 letters; it needs exactly 7 or 28 (A-Z)"),
        ("HM1-S-" + "A" * 29, "ends in 29 letters; it needs exactly 7 or 28 (A-Z)"),
        ("HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAA", "only a long code's 28 letters may be split, in 4 groups of 7"),
        ("HM1-S-AAAAAAAAAAAAAA-AAAAAAAAAAAAAA", "only a long code's 28 letters may be split"),
        ("HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA", "must have three parts separated by '-'"),
        ("HM1-S-AAAAAAA--AAAAAAA-AAAAAAA-AAAAAAA", "three parts separated by '-'"),
        ("HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAA1", "'1' not allowed, the body is 7 or 28 letters A-Z"),
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
        parse_code(12)


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


def test_rejected_words_are_skipped() -> None:
    """With a limit of about 2**31 half the words are rejected: the stream must skip each one."""
    low = tuple(0 if n == 0 else 2**31 - 2**31 % n for n in range(105))
    for text in ("HM1-N-AAAAAAB", "HM1-D-ZZZZZZZ", "HM1-N-QWERTYU"):
        code = parse_code(text)
        assert code.swaps() == fisher_yates_draws(code.seed), "a code's draws are the stream's at the real limits"
        deck = list(UNSHUFFLED)
        for i, j in zip(range(103, 0, -1), fisher_yates_draws(code.seed, low), strict=True):
            deck[i], deck[j] = deck[j], deck[i]
        assert [card.name for card in deck] == reference_deck(text, bits=31)
        assert [card.name for card in deck] != reference_deck(text)


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


# -- Long codes: 28 letters, four groups of seven


LONG_TEXT = "HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB"


def test_a_long_code_is_28_letters_in_four_groups_of_seven() -> None:
    code = parse_code(LONG_TEXT)
    assert code.kind == "S"
    assert code.long is True
    assert code.letters == "ABCDEFGHIJKLMNOPQRSTUVWXYZAB"
    assert code.body == "ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB"
    assert code.number == int("".join("0123456789abcdefghijklmnop"[LETTERS.index(c)] for c in code.letters), 26)
    assert str(code) == LONG_TEXT
    assert LONG_BODY_LENGTH == 28
    assert LONG_CODE_SPACE == 26**28


@pytest.mark.parametrize(
    "typed",
    [
        "HM1-S-ABCDEFGHIJKLMNOPQRSTUVWXYZAB",
        "hm1-s-abcdefg-hijklmn-opqrstu-vwxyzab",
        "  Hm1-S-abcdefghijklmnopqrstuvwxyzab\t\n",
    ],
)
def test_a_long_code_parses_with_or_without_its_inner_hyphens_in_any_case(typed: str) -> None:
    code = parse_code(typed)
    assert str(code) == LONG_TEXT
    assert code.seed == hashlib.sha256(LONG_TEXT.encode("ascii")).digest()
    assert code.shuffled_deck() == parse_code(LONG_TEXT).shuffled_deck()


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0, "HM1-N-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA"),
        (1, "HM1-N-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB"),
        (26**7, "HM1-N-AAAAAAA-AAAAAAA-AAAAAAB-AAAAAAA"),
        (26**28 - 1, "HM1-N-ZZZZZZZ-ZZZZZZZ-ZZZZZZZ-ZZZZZZZ"),
    ],
)
def test_long_letters_are_a_base_26_number(number: int, text: str) -> None:
    assert str(DealCode("N", number, long=True)) == text
    assert parse_code(text) == DealCode("N", number, long=True)


def test_long_codes_round_trip_and_differ_from_short_ones() -> None:
    rng = random.Random(11)
    for _ in range(200):
        code = DealCode(rng.choice("NDS"), rng.randrange(LONG_CODE_SPACE), long=True)
        assert parse_code(str(code)) == code
        assert eval(repr(code), {"DealCode": DealCode}) == code
    short, long = DealCode("N", 1), DealCode("N", 1, long=True)
    assert short != long
    assert short.shuffled_deck() != long.shuffled_deck()
    assert str(DealCode("S", 5)) == "HM1-S-AAAAAAF"  # any kind may be short


def test_the_constructor_checks_the_long_range() -> None:
    DealCode("S", LONG_CODE_SPACE - 1, long=True)
    with pytest.raises(InvalidCodeError, match="outside 0…8031810175 \\(a short code\\)"):
        DealCode("S", CODE_SPACE)
    with pytest.raises(InvalidCodeError, match="\\(a long code\\)"):
        DealCode("S", LONG_CODE_SPACE, long=True)
    # (the compiled build refuses it first, with a TypeError from the field's declared type)
    with pytest.raises((InvalidCodeError, TypeError), match=r"long flag must be True or False|bool object expected"):
        DealCode("S", 0, long=1)  # type: ignore[arg-type]


def test_long_shuffles_are_the_documented_algorithm() -> None:
    rng = random.Random(28)
    texts = [LONG_TEXT] + [
        str(DealCode(rng.choice("NDS"), rng.randrange(LONG_CODE_SPACE), long=True)) for _ in range(40)
    ]
    for text in texts:
        assert [card.name for card in parse_code(text).shuffled_deck()] == reference_deck(text), text


def test_random_long_codes_draw_from_the_generator_passed_in() -> None:
    rng = random.Random(3)
    drawn = [random_code(rng, kind="S", long=True) for _ in range(50)]
    assert all(code.long and code.kind == "S" for code in drawn)
    assert len(set(drawn)) == 50
    assert random_code(random.Random(3), kind="S", long=True) == drawn[0]
    # the numbers use the whole long space, not only its low 7 letters
    assert max(code.number for code in drawn) > 26**27


def test_a_long_daily_code_hashes_a_text_of_its_own_and_shares_no_letters_with_the_short_one() -> None:
    day = date(2026, 11, 29)
    digest = hmac.new(b"server secret", b"halfmoon-daily-long:2026-11-29:2", hashlib.sha256).digest()
    code = daily_code(day, b"server secret", attempt=2, long=True)
    assert code == DealCode("D", int.from_bytes(digest, "big") % 26**28, long=True)
    assert str(code).startswith("HM1-D-") and len(str(code)) == len(LONG_TEXT)
    short = daily_code(day, b"server secret", attempt=2)
    assert not code.letters.endswith(short.letters)
    assert daily_code(day, b"other secret", attempt=2, long=True) != code


# -- Sealed races: commitment, contributions, the sealed code

SEED = "5eed" * 16
ALICE = "a1" * 16
BOB = "b0b" * 20 + "0b0b"


def test_a_contribution_is_32_to_64_lowercase_hex_characters() -> None:
    for good in ("0" * 32, "f" * 64, ALICE, BOB):
        assert check_contribution(good) == good
    assert CONTRIBUTION_RE.fullmatch("a" * 48)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("", "has 0 hex characters; it needs 32 to 64"),
        ("a" * 31, "has 31 hex characters; it needs 32 to 64"),
        ("a" * 65, "has 65 hex characters; it needs 32 to 64"),
        ("A" * 32, "must be 32 to 64 lowercase hex characters"),
        ("g" * 32, "must be 32 to 64 lowercase hex characters"),
        (" " + "a" * 32, "must be 32 to 64 lowercase hex characters"),
        ("a" * 31 + "é", "must be 32 to 64 lowercase hex characters"),
        (None, "must be a string of 32 to 64 lowercase hex characters, not None"),
    ],
)
def test_a_malformed_contribution_says_what_is_wrong(bad: str, says: str) -> None:
    with pytest.raises(InvalidCodeError, match=re.escape(says)):
        check_contribution(bad)


def test_the_commitment_is_sha256_of_the_seal_text() -> None:
    assert seal_commitment(SEED) == hashlib.sha256(("halfmoon-seal:" + SEED).encode()).hexdigest()
    assert seal_commitment(SEED) != seal_commitment("0" * 64)
    for bad in ("5eed" * 15, "5EED" * 16, SEED + "00", 42):
        with pytest.raises(InvalidCodeError, match="seal's seed must be 64 lowercase hex characters"):
            seal_commitment(bad)


def test_the_sealed_code_hashes_the_seed_and_the_sorted_contributions() -> None:
    text = f"halfmoon-deal:{SEED}:{ALICE},{BOB}"
    number = int.from_bytes(hashlib.sha256(text.encode()).digest(), "big") % 26**28
    assert sealed_code(SEED, [BOB, ALICE]) == DealCode("S", number, long=True)
    assert sealed_code(SEED, (c for c in [ALICE, BOB])) == DealCode("S", number, long=True)
    alone = int.from_bytes(hashlib.sha256(f"halfmoon-deal:{SEED}:".encode()).digest(), "big") % 26**28
    assert sealed_code(SEED, []) == DealCode("S", alone, long=True)
    # duplicates are kept: two racers who sent the same text give another deal than one
    assert sealed_code(SEED, [ALICE, ALICE]) != sealed_code(SEED, [ALICE])
    # every part changes the deal
    assert sealed_code(SEED, [ALICE]) != sealed_code(SEED, [BOB])
    assert sealed_code(SEED, [ALICE]) != sealed_code("0" * 64, [ALICE])


def test_the_sealed_code_refuses_malformed_parts() -> None:
    with pytest.raises(InvalidCodeError, match="contribution 'xyz'"):
        sealed_code(SEED, [ALICE, "xyz"])
    with pytest.raises(InvalidCodeError, match="not the string"):
        sealed_code(SEED, ALICE)
    with pytest.raises(InvalidCodeError, match="seal's seed"):
        sealed_code("seed", [ALICE])


def test_check_seal_accepts_only_the_revealed_parts_that_were_committed() -> None:
    code = sealed_code(SEED, [ALICE, BOB])
    commitment = seal_commitment(SEED)
    assert check_seal(commitment, SEED, [BOB, ALICE], code)
    assert check_seal(commitment, SEED, [BOB, ALICE], str(code).lower())
    assert not check_seal(commitment, SEED, [ALICE], code)  # a contribution left out
    assert not check_seal(seal_commitment("0" * 64), SEED, [ALICE, BOB], code)  # another commitment
    assert not check_seal(commitment, SEED, [ALICE, BOB], DealCode("S", code.number ^ 1, long=True))
    assert not check_seal(commitment, "0" * 64, [ALICE, BOB], code)
    assert not check_seal(commitment, SEED, [ALICE, "nope"], code)  # malformed: False, never an error
    assert not check_seal(commitment, SEED, [ALICE, BOB], "HM1-S-NOPE")
    assert not check_seal(None, SEED, [ALICE, BOB], code)
    assert not check_seal(commitment, SEED, ALICE + BOB, code)  # a string, not a list of them
    assert not check_seal(commitment, SEED, 7, code)
    assert not check_seal("é" * 64, SEED, [ALICE, BOB], code)  # hmac compares no non-ASCII text


def test_a_seal_seed_is_the_hmac_of_the_context_and_nonce() -> None:
    nonce = bytes(range(16))
    seed = new_seal_seed(b"server secret", nonce, "room-3:2")
    message = b"halfmoon-seal-seed:room-3:2:" + nonce.hex().encode()
    assert seed == hmac.new(b"server secret", message, hashlib.sha256).hexdigest()
    assert SEED_HEX_RE.fullmatch(seed)
    assert new_seal_seed(b"server secret", nonce, "room-3:3") != seed
    assert new_seal_seed(b"server secret", bytes(range(1, 17)), "room-3:2") != seed
    assert new_seal_seed(b"other secret", nonce, "room-3:2") != seed
    with pytest.raises(ValueError, match="at least 16 random bytes"):
        new_seal_seed(b"server secret", bytes(15), "room-3:2")
    with pytest.raises(ValueError, match="secret as non-empty bytes"):
        new_seal_seed(b"", nonce, "room-3:2")


# -- The golden vectors shared with the browser (tests/vectors/codes.json)

GOLDEN: dict[str, Any] = json.loads((VECTORS / "codes.json").read_text(encoding="utf-8"))


def test_the_golden_parse_vectors_pass() -> None:
    assert len(GOLDEN["parse"]) >= 10
    for vector in GOLDEN["parse"]:
        code = parse_code(vector["input"])
        assert str(code) == vector["canonical"], vector
        assert (code.kind, code.long, code.letters, code.number) == (
            vector["kind"],
            vector["long"],
            vector["letters"],
            int(vector["number"]),
        ), vector


def test_the_golden_invalid_codes_raise_their_exact_message() -> None:
    assert len(GOLDEN["invalid"]) >= 15
    for vector in GOLDEN["invalid"]:
        with pytest.raises(InvalidCodeError) as info:
            parse_code(vector["input"])
        assert str(info.value) == vector["error"]


def test_the_golden_daily_codes_pass() -> None:
    assert any(vector["long"] for vector in GOLDEN["daily"])
    for vector in GOLDEN["daily"]:
        day, secret = date.fromisoformat(vector["day"]), vector["secret"].encode()
        code = daily_code(day, secret, attempt=vector["attempt"], long=vector["long"])
        assert str(code) == vector["code"], vector


def test_the_golden_seals_pass() -> None:
    assert len(GOLDEN["seals"]) >= 5
    for vector in GOLDEN["seals"]:
        assert seal_commitment(vector["seed"]) == vector["commitment"]
        code = sealed_code(vector["seed"], vector["contributions"])
        assert str(code) == vector["code"], vector
        assert check_seal(vector["commitment"], vector["seed"], vector["contributions"], vector["code"])
    for vector in GOLDEN["seal_seeds"]:
        seed = new_seal_seed(vector["secret"].encode(), bytes.fromhex(vector["nonce"]), vector["context"])
        assert seed == vector["seed"]
    for vector in GOLDEN["bad_contributions"]:
        with pytest.raises(InvalidCodeError) as info:
            check_contribution(vector["input"])
        assert str(info.value) == vector["error"]


def test_the_golden_long_deals_pass() -> None:
    dealt = {deal["code"] for deal in GOLDEN["deals"]}
    assert {vector["code"] for vector in GOLDEN["seals"]} <= dealt
    assert {vector["code"] for vector in GOLDEN["daily"] if vector["long"]} <= dealt
    assert {parse_code(code).kind for code in dealt if parse_code(code).long} == {"N", "D", "S"}
    for deal in GOLDEN["deals"]:
        assert Deal.from_code(deal["code"]).to_json() == deal, deal["code"]


def test_the_vector_builder_still_writes_the_committed_file() -> None:
    from tests.engine import build_code_vectors  # here: the builder imports this module's reference_deck

    assert build_code_vectors.dumps(build_code_vectors.build()) == (VECTORS / "codes.json").read_text(encoding="utf-8")
