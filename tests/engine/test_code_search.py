"""The attack on a secret deal, run: recover a code from the 8 reserve cards every racer sees.

The search below is written for this test from docs/deal-codes.md (not from the engine): for each
candidate number in a window it hashes the canonical text, hashes block 0 of the word stream and
plays the first 8 Fisher-Yates draws, which place R8 … R1. Over a window of 20,000 numbers it
recovers a 7-letter code from its reserve — the whole 26^7 space is 400,000 such windows, minutes
of one core in C (docs/security.md). The same search finds nothing for a sealed race's long code
(26^28 numbers), in windows of the short space or of the long one — except the one window that
holds the code, which only someone who already knows it can pick.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import struct
from pathlib import Path

from halfmoon.codes import (
    CODE_SPACE,
    LONG_CODE_SPACE,
    DealCode,
    new_seal_seed,
    seal_commitment,
    sealed_code,
)
from halfmoon.deal import Deal

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 20_000
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
UNSHUFFLED = [rank + suit for _ in range(2) for suit in "SHDC" for rank in RANKS]
LIMITS = [2**32 - 2**32 % n if n else 0 for n in range(105)]


def canonical(kind: str, number: int, *, long: bool) -> str:
    body = ""
    for _ in range(28 if long else 7):
        number, digit = divmod(number, 26)
        body = LETTERS[digit] + body
    return f"HM1-{kind}-" + "-".join(body[k : k + 7] for k in range(0, len(body), 7))


def reserve_from_words(text: str) -> list[str]:
    """R1 … R8 of a code from the first 8 draws, hashing as many blocks as rejections need."""
    seed = hashlib.sha256(text.encode("ascii")).digest()
    counter = 0
    words: list[int] = []
    deck = list(UNSHUFFLED)
    for i in range(103, 95, -1):
        while True:
            if not words:
                words.extend(struct.unpack(">8I", hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()))
                counter += 1
            word = words.pop(0)
            if word < LIMITS[i + 1]:
                break
        j = word % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck[96:]


def search(kind: str, start: int, count: int, reserve: list[str], *, long: bool) -> list[str]:
    """Every code of ``kind`` numbered ``start`` … ``start + count - 1`` that deals ``reserve``.

    The cheap filter first: the first word of block 0 places R8 (a word is rejected with
    probability below 2^-25; then the full draw decides).
    """
    sha256 = hashlib.sha256
    zero = bytes(4)
    r8 = reserve[7]
    found = []
    for number in range(start, start + count):
        text = canonical(kind, number, long=long)
        first = int.from_bytes(sha256(sha256(text.encode("ascii")).digest() + zero).digest()[:4], "big")
        if first < LIMITS[104] and UNSHUFFLED[first % 104] != r8:
            continue
        if reserve_from_words(text) == reserve:
            found.append(text)
    return found


def test_the_search_recovers_a_seven_letter_code_from_its_reserve() -> None:
    rng = random.Random(2033)
    code = DealCode("N", rng.randrange(CODE_SPACE))  # how a sealed race was dealt before long codes
    reserve = [card.name for card in Deal.from_code(code).reserve]
    assert reserve_from_words(str(code)) == reserve
    start = code.number - rng.randrange(WINDOW)  # the window holds it, somewhere
    assert search("N", start, WINDOW, reserve, long=False) == [str(code)]
    # a seven-letter space is CODE_SPACE / WINDOW windows like this one
    assert CODE_SPACE // WINDOW == 401_590


def test_the_same_search_finds_nothing_for_a_sealed_race_s_long_code() -> None:
    seed = new_seal_seed(b"the server's secret", bytes(range(16)), "room-4:1")
    code = sealed_code(seed, ["a1" * 16, "0b" * 24])
    assert code.long and code.kind == "S"
    reserve = [card.name for card in Deal.from_code(code).reserve]
    assert reserve_from_words(str(code)) == reserve
    rng = random.Random(5)
    short_windows = [0, code.number % CODE_SPACE - WINDOW // 2, rng.randrange(CODE_SPACE - WINDOW)]
    long_windows = [0, code.number % CODE_SPACE, rng.randrange(LONG_CODE_SPACE - WINDOW)]
    for kind in ("S", "N"):
        for start in short_windows:
            assert search(kind, max(0, start), WINDOW, reserve, long=False) == [], (kind, start)
    for start in long_windows:
        assert search("S", start, WINDOW, reserve, long=True) == [], start
    # the search itself works on long codes: from a window it could only pick knowing the code
    assert search("S", code.number - 137, 1_000, reserve, long=True) == [str(code)]
    assert seal_commitment(seed) != seed  # what racers see before the end is the commitment only


def test_the_threat_model_s_figures_are_the_arithmetic_of_the_code_spaces() -> None:
    """docs/security.md's table: bits and the time to search half of each space at 10^12 a second."""
    section = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    section = section.split("## Who can compute a deal: codes and their search cost", 1)[1].split("\n## ", 1)[0]
    assert f"{math.log2(CODE_SPACE):.1f}" == "32.9" and "32.9" in section
    assert f"{math.log2(LONG_CODE_SPACE):.1f}" == "131.6" and "131.6" in section
    half_short_ms = CODE_SPACE / 2 / 1e12 * 1000
    assert f"{half_short_ms:.1f} ms" == "4.0 ms" and "4.0 ms" in section
    years = LONG_CODE_SPACE / 2 / 1e12 / (365.25 * 86400)
    mantissa, exponent = f"{years:.1e}".split("e+")
    assert f"{mantissa} × 10^{int(exponent)} years" in section, (mantissa, exponent)
    # the measured cost is quoted from docs/benchmarks.md, in both places the same
    measured = re.search(r"([0-9.]+) million candidates per core-second", section)
    assert measured is not None
    assert measured.group(0) in (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
