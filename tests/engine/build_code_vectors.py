"""The source of ``tests/vectors/codes.json``: golden vectors for long codes, parsing and sealed deals.

Every value here is computed from ``docs/deal-codes.md`` with ``hashlib``/``hmac`` and the
test-side reimplementation of the shuffle (``tests.engine.test_codes.reference_deck``) — never
from :mod:`halfmoon.codes` — except the error messages, which are the engine's words, reviewed by
hand. ``tests/engine/test_codes.py`` and ``tests/web/codes.test.mjs`` check the Python engine
and the browser module against the file; the Python test also checks that this script still
writes the committed file. Like ``deals.json``, the file is written once: a change in its codes
or deals is a change of every such deal. Fix the code, never the vectors.

Regenerate with ``python -m tests.engine.build_code_vectors`` (from the repository root).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any, Final

from tests.conftest import VECTORS
from tests.engine.test_codes import reference_deck

PATH: Final = VECTORS / "codes.json"

FORMAT: Final = """\
Golden vectors for deal codes (docs/deal-codes.md), shared by the Python engine (halfmoon.codes) \
and the browser (client/halfmoon_web/static/js/codes.js). Numbers are decimal strings (a long \
code's number exceeds 2^53). \
"parse": {"input", "canonical", "kind", "long", "letters" (7 or 28, no hyphens), "number"}: \
DealCode.parse(input) / parseCode(input). \
"invalid": {"input", "error"}: the exact message of the InvalidCodeError the input raises. \
"daily": {"day", "secret" (UTF-8), "attempt", "long", "hmac" (hex), "code"}: \
daily_code(day, secret, attempt=attempt, long=long). \
"seals": {"seed" (64 hex), "commitment" = seal_commitment(seed), "contributions" (in the order \
received), "text" (the ASCII text hashed: halfmoon-deal:SEED:sorted contributions joined by ','), \
"digest" (hex SHA-256 of text), "code" = sealed_code(seed, contributions)}. \
"seal_seeds": {"secret" (UTF-8), "nonce" (hex), "context", "seed" = new_seal_seed(secret, nonce, context)} \
(engine only: browsers check seals, servers make them). \
"bad_contributions": {"input", "error"}: check_contribution(input) raises this message. \
"deals": the deal JSON ({code, piles: 12 x 8 bottom to top, reserve: R1..R8}) of every code above \
and of long codes of each kind."""

LETTERS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def letters(number: int, length: int) -> str:
    """``number`` as ``length`` base-26 letters, A = 0, most significant first (the doc's rule)."""
    out = ""
    for _ in range(length):
        number, digit = divmod(number, 26)
        out = LETTERS[digit] + out
    assert number == 0
    return out


def code_text(kind: str, number: int, *, long: bool) -> str:
    body = letters(number, 28 if long else 7)
    return f"HM1-{kind}-" + "-".join(body[k : k + 7] for k in range(0, len(body), 7))


# -- parse: (input, canonical)
PARSE: Final = [
    "HM1-N-AAAAAAB",
    " \thm1-d-qwertyu\n",
    "HM1-S-AAAAAAA",
    "hm1-s-zzzzzzz",
    "HM1-N-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA",
    "HM1-N-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB",
    "HM1-N-AAAAAAA-AAAAAAA-AAAAAAB-AAAAAAA",
    "HM1-D-ZZZZZZZ-ZZZZZZZ-ZZZZZZZ-ZZZZZZZ",
    "HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB",
    "HM1-S-ABCDEFGHIJKLMNOPQRSTUVWXYZAB",
    "  hm1-s-abcdefg-hijklmn-opqrstu-vwxyzab  ",
    "Hm1-s-AbCdEfGhIjKlMnOpQrStUvWxYzAb",
]

# -- invalid: the engine's messages, read and agreed by hand
EXAMPLE: Final = "for example HM1-N-AAAAAAB"
LONG_EXAMPLE: Final = "for example HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB"
PARTS: Final = (
    "must have three parts separated by '-' ("
    + EXAMPLE
    + "); only a long code's 28 letters may be split, in 4 groups of 7 ("
    + LONG_EXAMPLE
    + ")"
)
INVALID: Final = [
    ("", f"empty deal code ({EXAMPLE})"),
    ("   ", f"empty deal code ({EXAMPLE})"),
    ("HM1NAAAAAAB", f"deal code 'HM1NAAAAAAB' {PARTS}"),
    ("HM1-N-AAAA-AAB", f"deal code 'HM1-N-AAAA-AAB' {PARTS}"),
    ("XX1-N-AAAAAAB", f"deal code 'XX1-N-AAAAAAB' must start with 'HM' and a version number ({EXAMPLE})"),
    ("HM2-N-AAAAAAB", "deal code 'HM2-N-AAAAAAB' has format version 2; this engine reads version 1 (HM1-…)"),
    (
        "HM1-X-AAAAAAB",
        "deal code 'HM1-X-AAAAAAB' has unknown kind 'X' (known: N = ordinary deal, D = daily challenge, "
        "S = sealed race)",
    ),
    ("HM1-NN-AAAAAAB", "deal code 'HM1-NN-AAAAAAB': the kind 'NN' must be one letter (N, D, S)"),
    ("HM1-N-AAAAAB", "deal code 'HM1-N-AAAAAB' ends in 6 letters; it needs exactly 7 or 28 (A-Z)"),
    ("HM1-N-AAAAAAA1", "deal code 'HM1-N-AAAAAAA1': '1' not allowed, the body is 7 or 28 letters A-Z"),
    ("HM1-N-AAAAAAÉ", "deal code 'HM1-N-AAAAAAÉ': 'É' not allowed, the body is 7 or 28 letters A-Z"),
    ("HM1-N-AAAAAAı", "deal code 'HM1-N-AAAAAAı': 'ı' not allowed, the body is 7 or 28 letters A-Z"),
    ("HM1-S-" + "A" * 27, f"deal code 'HM1-S-{'A' * 27}' ends in 27 letters; it needs exactly 7 or 28 (A-Z)"),
    ("HM1-S-" + "A" * 29, f"deal code 'HM1-S-{'A' * 29}' ends in 29 letters; it needs exactly 7 or 28 (A-Z)"),
    ("HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAA", f"deal code 'HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAA' {PARTS}"),
    ("HM1-S-AAAAAAAAAAAAAA-AAAAAAAAAAAAAA", f"deal code 'HM1-S-AAAAAAAAAAAAAA-AAAAAAAAAAAAAA' {PARTS}"),
    ("HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-A", f"deal code 'HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-A' {PARTS}"),
    ("HM1-S-AAAAAAA--AAAAAAA-AAAAAAA-AAAAAAA", f"deal code 'HM1-S-AAAAAAA--AAAAAAA-AAAAAAA-AAAAAAA' {PARTS}"),
    (
        "HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAA1A",
        "deal code 'HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAA1A': '1' not allowed, the body is 7 or 28 letters A-Z",
    ),
    (
        "HM1-S-AAAAAAA AAAAAAA AAAAAAA AAAAAAA",
        "deal code 'HM1-S-AAAAAAA AAAAAAA AAAAAAA AAAAAAA': ' ' not allowed, the body is 7 or 28 letters A-Z",
    ),
]

# -- daily: (day, secret, attempt, long)
DAILY: Final = [
    ("2026-01-01", "halfmoon-test-secret", 0, True),
    ("2026-01-01", "halfmoon-test-secret", 1, True),
    ("2026-12-06", "halfmoon-test-secret", 0, True),
    ("2027-02-28", "another secret", 3, True),
    ("2026-12-06", "halfmoon-test-secret", 0, False),
]

SEED_A: Final = "00" * 32
SEED_B: Final = "5eed" * 16
SEED_C: Final = hashlib.sha256(b"halfmoon golden seal seed").hexdigest()
ALICE: Final = "a1" * 16
BOB: Final = "0b" * 24
CAROL: Final = "c" * 64
# ALICE_LONGER starts with ALICE: a prefix sorts first
ALICE_LONGER: Final = ALICE + "00000000"

# -- seals: (seed, contributions in the order received)
SEALS: Final = [
    (SEED_A, []),
    (SEED_A, [ALICE]),
    (SEED_B, [ALICE]),
    (SEED_B, [BOB, ALICE]),
    (SEED_B, [ALICE, BOB]),
    (SEED_B, [CAROL, ALICE, BOB]),
    (SEED_B, [ALICE, ALICE]),
    (SEED_C, [ALICE_LONGER, CAROL, ALICE]),
    (SEED_C, ["ffffffffffffffffffffffffffffffff", "00000000000000000000000000000000"]),
]

# -- seal seeds: (secret, nonce hex, context)
SEAL_SEEDS: Final = [
    ("server secret", "00" * 16, "lobby-7:1"),
    ("server secret", "000102030405060708090a0b0c0d0e0f", "lobby-7:2"),
    ("another secret", "ff" * 32, "quick:1"),
]

BAD_CONTRIBUTIONS: Final = [
    ("", "contribution '' has 0 hex characters; it needs 32 to 64 (0-9, a-f)"),
    ("a" * 31, f"contribution '{'a' * 31}' has 31 hex characters; it needs 32 to 64 (0-9, a-f)"),
    ("a" * 65, f"contribution '{'a' * 65}' has 65 hex characters; it needs 32 to 64 (0-9, a-f)"),
    ("A" * 32, f"contribution '{'A' * 32}' must be 32 to 64 lowercase hex characters (0-9, a-f only)"),
    ("g" * 32, f"contribution '{'g' * 32}' must be 32 to 64 lowercase hex characters (0-9, a-f only)"),
    (" " + "a" * 32, f"contribution ' {'a' * 32}' must be 32 to 64 lowercase hex characters (0-9, a-f only)"),
]

# -- long codes of each kind dealt (besides those of the dailies and seals)
EXTRA_DEALS: Final = [
    "HM1-N-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA",
    "HM1-N-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB",
    "HM1-N-ZZZZZZZ-ZZZZZZZ-ZZZZZZZ-ZZZZZZZ",
    "HM1-D-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB",
    "HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB",
    "HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB",
    "HM1-S-AAAAAAB",
    "HM1-S-QWERTYU",
]


def parse_vector(text: str) -> dict[str, Any]:
    head, kind, *groups = text.strip().upper().split("-")
    assert head == "HM1"
    body = "".join(groups)
    number = 0
    for letter in body:
        number = number * 26 + LETTERS.index(letter)
    long = len(body) == 28
    canonical = code_text(kind, number, long=long)
    return {"input": text, "canonical": canonical, "kind": kind, "long": long, "letters": body, "number": str(number)}


def build() -> dict[str, Any]:
    daily = []
    for day, secret, attempt, long in DAILY:
        label = "halfmoon-daily-long" if long else "halfmoon-daily"
        digest = hmac.new(secret.encode(), f"{label}:{day}:{attempt}".encode(), hashlib.sha256).digest()
        number = int.from_bytes(digest, "big") % 26 ** (28 if long else 7)
        code = code_text("D", number, long=long)
        entry = {"day": day, "secret": secret, "attempt": attempt, "long": long, "hmac": digest.hex(), "code": code}
        daily.append(entry)
    seals = []
    for seed, contributions in SEALS:
        text = f"halfmoon-deal:{seed}:{','.join(sorted(contributions))}"
        digest = hashlib.sha256(text.encode()).digest()
        seals.append(
            {
                "seed": seed,
                "commitment": hashlib.sha256(f"halfmoon-seal:{seed}".encode()).hexdigest(),
                "contributions": contributions,
                "text": text,
                "digest": digest.hex(),
                "code": code_text("S", int.from_bytes(digest, "big") % 26**28, long=True),
            }
        )
    seal_seeds = [
        {
            "secret": secret,
            "nonce": nonce,
            "context": context,
            "seed": hmac.new(
                secret.encode(), f"halfmoon-seal-seed:{context}:{nonce}".encode(), hashlib.sha256
            ).hexdigest(),
        }
        for secret, nonce, context in SEAL_SEEDS
    ]
    dealt: list[str] = [str(entry["code"]) for entry in daily if entry["long"]]
    dealt += [str(entry["code"]) for entry in seals] + EXTRA_DEALS
    deals = []
    for code in dict.fromkeys(dealt):
        deck = reference_deck(code)
        deals.append({"code": code, "piles": [deck[p * 8 : p * 8 + 8] for p in range(12)], "reserve": deck[96:]})
    return {
        "format": FORMAT,
        "parse": [parse_vector(text) for text in PARSE],
        "invalid": [{"input": text, "error": error} for text, error in INVALID],
        "daily": daily,
        "seals": seals,
        "seal_seeds": seal_seeds,
        "bad_contributions": [{"input": text, "error": error} for text, error in BAD_CONTRIBUTIONS],
        "deals": deals,
    }


def dumps(document: dict[str, Any]) -> str:
    """One vector per line: readable in a diff, and still plain JSON."""
    lines = ["{", f'  "format": {json.dumps(document["format"], ensure_ascii=False)},']
    sections = [key for key in document if key != "format"]
    for s, key in enumerate(sections):
        lines.append(f'  "{key}": [')
        items = document[key]
        for k, item in enumerate(items):
            lines.append("    " + json.dumps(item, ensure_ascii=False) + ("," if k < len(items) - 1 else ""))
        lines.append("  ]" + ("," if s < len(sections) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(dumps(build()), encoding="utf-8")
    print(f"wrote {PATH}")
