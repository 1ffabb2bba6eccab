"""Deal codes (``HM1-N-AAAAAAB``, ``HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB``) and the shuffle.

A code is ``HM`` + a format version (``1``), a kind letter and a body of letters A-Z, joined by
hyphens. The body is *short* — seven letters, 26**7 ≈ 2**33 deals per kind, for codes people type
and share — or *long* — 28 letters written in four groups of seven, 26**28 ≈ 2**131.6 deals per
kind, for deals that must stay secret until the end (nobody can search that space from the cards
they see). Every well-formed code names exactly one ordering of the 104 cards, on any platform,
forever: the shuffle below uses only SHA-256 and integer arithmetic, and is written down in
``docs/deal-codes.md`` precisely enough to reimplement in another language.

Kinds: ``N`` — an ordinary deal (random or typed by a player); ``D`` — a daily-challenge deal,
derived from the date and the server's secret by :func:`daily_code`; ``S`` — a sealed race's
deal, committed before anyone joins and mixed with every racer's contribution by
:func:`sealed_code` (see :func:`seal_commitment`). The kind and the length are part of the code,
so ``HM1-N-QWERTYU`` and ``HM1-D-QWERTYU`` are different deals.

Nothing here reads a clock or a global random generator: callers pass randomness in.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from itertools import count
from typing import Final, Protocol

from halfmoon.cards import RANKS, SUITS, Card
from halfmoon.errors import InvalidCodeError

FORMAT_VERSION: Final = 1
KINDS: Final = {"N": "ordinary deal", "D": "daily challenge", "S": "sealed race"}
LETTERS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
BODY_LENGTH: Final = 7
CODE_SPACE: Final = 26**BODY_LENGTH  # 8,031,810,176 deals per kind (short codes)
LONG_BODY_LENGTH: Final = 28
LONG_CODE_SPACE: Final = 26**LONG_BODY_LENGTH  # ≈ 4.2e39 ≈ 2**131.6 deals per kind (long codes)
#: A long body is written as this many groups of BODY_LENGTH letters, joined by hyphens.
LONG_GROUPS: Final = LONG_BODY_LENGTH // BODY_LENGTH

_CODE_RE: Final = re.compile(r"HM([0-9]+)-([A-Z])-([A-Z]+(?:-[A-Z]+)*)")

#: A racer's contribution to a sealed deal: 32 to 64 lowercase hex characters (128 to 256 bits).
CONTRIBUTION_RE: Final = re.compile(r"[0-9a-f]{32,64}")
#: A sealed race's seed as text: 64 lowercase hex characters (32 bytes).
SEED_HEX_RE: Final = re.compile(r"[0-9a-f]{64}")
SEAL_PREFIX: Final = "halfmoon-seal:"
SEALED_DEAL_PREFIX: Final = "halfmoon-deal:"
SEAL_SEED_PREFIX: Final = "halfmoon-seal-seed:"
#: The fewest random bytes :func:`new_seal_seed` accepts as its nonce.
MIN_NONCE_BYTES: Final = 16

#: The two decks in their order before shuffling: copy 1 then copy 2, each
#: spades A-K, hearts A-K, diamonds A-K, clubs A-K.
UNSHUFFLED: Final = tuple(Card(rank, suit) for _copy in range(2) for suit in SUITS for rank in RANKS)
DECK_SIZE: Final = len(UNSHUFFLED)
_EIGHT_WORDS: Final = struct.Struct(">8I")
#: For each n, the largest multiple of n not above 2**32: words at or above it are rejected.
_LIMITS: Final = tuple((1 << 32) - (1 << 32) % n if n else 0 for n in range(DECK_SIZE + 1))


class RandomSource(Protocol):
    """What :func:`random_code` needs: ``random.Random``, ``secrets.SystemRandom``, …"""

    def randrange(self, stop: int, /) -> int: ...


@dataclass(frozen=True, slots=True)
class DealCode:
    """A parsed, canonical deal code. ``DealCode.parse(text)`` and ``str(code)`` round-trip.

    >>> code = DealCode.parse("hm1-n-aaaaaab")
    >>> code, code.kind, code.number, code.long
    (DealCode.parse('HM1-N-AAAAAAB'), 'N', 1, False)
    >>> [card.name for card in code.shuffled_deck()[-3:]]  # R6, R7, R8
    ['AH', '8D', '9D']

    A long code: 28 letters, written in four groups of seven (the hyphens inside are optional
    when parsing).

    >>> code = DealCode.parse(" hm1-s-aaaaaaaaaaaaaaaaaaaaaaaaaaab ")
    >>> code, code.number, code.long
    (DealCode.parse('HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB'), 1, True)
    >>> code == DealCode("S", 1, long=True), code == DealCode("S", 1)
    (True, False)
    """

    kind: str
    #: The body's letters read as a base-26 number (A = 0): 0 … 26**7 - 1, or 0 … 26**28 - 1 if long.
    number: int
    long: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidCodeError(f"unknown deal kind {self.kind!r} (known: {', '.join(KINDS)})")
        if not isinstance(self.long, bool):
            raise InvalidCodeError(f"a deal code's long flag must be True or False, not {self.long!r}")
        space = LONG_CODE_SPACE if self.long else CODE_SPACE
        if not isinstance(self.number, int) or isinstance(self.number, bool) or not 0 <= self.number < space:
            size = "long" if self.long else "short"
            raise InvalidCodeError(f"deal number {self.number!r} is outside 0…{space - 1} (a {size} code)")

    @classmethod
    def parse(cls, text: object) -> DealCode:
        """Parse ``HM1-N-AAAAAAB`` or a long ``HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB``.

        Case and surrounding blanks are forgiven; a long body may be written with or without its
        three inner hyphens (but if it has any, it is four groups of seven letters). Raises
        :class:`InvalidCodeError` saying exactly what is wrong.
        """
        if not isinstance(text, str):
            raise InvalidCodeError(f"a deal code must be a string, not {text!r}")
        canonical = text.strip().upper()
        match = _CODE_RE.fullmatch(canonical) if text.isascii() else None
        if match is None:
            raise InvalidCodeError(_diagnose(text))
        version, kind, body = match.groups()
        if version != str(FORMAT_VERSION):
            raise InvalidCodeError(
                f"deal code {text!r} has format version {version}; this engine reads version {FORMAT_VERSION} (HM1-…)"
            )
        if kind not in KINDS:
            raise InvalidCodeError(
                f"deal code {text!r} has unknown kind {kind!r} (known: "
                + ", ".join(f"{k} = {v}" for k, v in KINDS.items())
                + ")"
            )
        if "-" in body:
            groups = body.split("-")
            if len(groups) != LONG_GROUPS or any(len(group) != BODY_LENGTH for group in groups):
                raise InvalidCodeError(_wrong_parts(text))
            body = "".join(groups)
        if len(body) not in (BODY_LENGTH, LONG_BODY_LENGTH):
            raise InvalidCodeError(
                f"deal code {text!r} ends in {len(body)} letters; it needs exactly {BODY_LENGTH} "
                f"or {LONG_BODY_LENGTH} (A-Z)"
            )
        number = 0
        for letter in body:
            number = number * 26 + LETTERS.index(letter)
        return cls(kind, number, long=len(body) == LONG_BODY_LENGTH)

    @property
    def letters(self) -> str:
        """The body's letters without hyphens: 7, or 28 for a long code."""
        out = []
        n = self.number
        for _ in range(LONG_BODY_LENGTH if self.long else BODY_LENGTH):
            n, r = divmod(n, 26)
            out.append(LETTERS[r])
        return "".join(reversed(out))

    @property
    def body(self) -> str:
        """The body as written in the canonical code: a long one in four groups of seven."""
        letters = self.letters
        return "-".join(letters[k : k + BODY_LENGTH] for k in range(0, len(letters), BODY_LENGTH))

    def __str__(self) -> str:
        return f"HM{FORMAT_VERSION}-{self.kind}-{self.body}"

    def __repr__(self) -> str:
        return f"DealCode.parse({str(self)!r})"

    @property
    def seed(self) -> bytes:
        """SHA-256 of the canonical code's ASCII text (hyphens included): the seed of the word stream."""
        return hashlib.sha256(str(self).encode("ascii")).digest()

    def swaps(self) -> list[int]:
        """The Fisher-Yates draws: for i = 103, 102, …, 1 in turn, the j (0 ≤ j ≤ i) swapped with i
        (:func:`fisher_yates_draws` of :attr:`seed`)."""
        return fisher_yates_draws(self.seed)

    def shuffled_deck(self) -> list[Card]:
        """The 104 cards in dealt order (see the module docs and ``docs/deal-codes.md``)."""
        deck = list(UNSHUFFLED)
        for i, j in zip(range(DECK_SIZE - 1, 0, -1), self.swaps(), strict=True):
            deck[i], deck[j] = deck[j], deck[i]
        return deck


def fisher_yates_draws(seed: bytes, limits: tuple[int, ...] = _LIMITS) -> list[int]:
    """The Fisher-Yates draws of the word stream of ``seed``: for i = 103, 102, …, 1 in turn, the
    j (0 ≤ j ≤ i) swapped with i.

    Each j is the first word of :func:`word_stream` (continuing where the previous draw stopped)
    below ``limits[i + 1]`` — by default ``2**32 - 2**32 % (i + 1)``, the largest multiple of
    ``i + 1`` a word can reach, so that no j is likelier than another — reduced modulo ``i + 1``.
    (A lower limit rejects more words; the tests pass one to show every rejected word is skipped.)
    """
    # The words of word_stream(seed), computed 13 blocks (104 words) at a time: 103 draws
    # almost never reject a word, so one batch nearly always suffices.
    sha256 = hashlib.sha256
    unpack = _EIGHT_WORDS.unpack
    words: list[int] = []
    block = 0
    k = 0
    out = []
    for i in range(DECK_SIZE - 1, 0, -1):
        limit = limits[i + 1]
        while True:
            if k == len(words):
                for _ in range(13):
                    words.extend(unpack(sha256(seed + block.to_bytes(4, "big")).digest()))
                    block += 1
            word = words[k]
            k += 1
            if word < limit:  # rejection sampling: no modulo bias
                break
        out.append(word % (i + 1))
    return out


_EXAMPLE: Final = "for example HM1-N-AAAAAAB"
_LONG_EXAMPLE: Final = "for example HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB"
_BODY_RULE: Final = f"the body is {BODY_LENGTH} or {LONG_BODY_LENGTH} letters A-Z"


def word_stream(seed: bytes) -> Iterator[int]:
    """Unsigned 32-bit words from SHA-256 in counter mode, without end.

    Block k (k = 0, 1, 2, …) is ``SHA-256(seed ‖ k as 4 bytes big-endian)``; each block gives
    eight words, its bytes 0-3, 4-7, …, 28-31 read big-endian, in that order.
    """
    sha256 = hashlib.sha256
    for counter in count():
        yield from _EIGHT_WORDS.unpack(sha256(seed + counter.to_bytes(4, "big")).digest())


def _diagnose(text: str) -> str:
    """Say what is wrong with a code that does not match the overall pattern."""
    canonical = text.strip().upper()
    parts = canonical.split("-")
    example = _EXAMPLE
    if not canonical:
        return f"empty deal code ({example})"
    if len(parts) not in (3, 3 + LONG_GROUPS - 1):
        return _wrong_parts(text)
    head, kind, body = parts[0], parts[1], "".join(parts[2:])
    if not re.fullmatch(r"HM[0-9]+", head):
        return f"deal code {text!r} must start with 'HM' and a version number ({example})"
    if not re.fullmatch(r"[A-Z]", kind):
        return f"deal code {text!r}: the kind {kind!r} must be one letter ({', '.join(KINDS)})"
    bad = sorted({ch for ch in text.strip() if not ch.isascii() or ch.upper() not in LETTERS + "-0123456789"})
    if bad:
        return f"deal code {text!r}: {''.join(bad)!r} not allowed, {_BODY_RULE}"
    bad = sorted({ch for ch in body if ch not in LETTERS})
    if bad:
        return f"deal code {text!r}: {''.join(bad)!r} not allowed, {_BODY_RULE}"
    return f"deal code {text!r} is malformed ({example})"


def _wrong_parts(text: str) -> str:
    return (
        f"deal code {text!r} must have three parts separated by '-' ({_EXAMPLE}); only a long code's "
        f"{LONG_BODY_LENGTH} letters may be split, in {LONG_GROUPS} groups of {BODY_LENGTH} ({_LONG_EXAMPLE})"
    )


def parse_code(text: object) -> DealCode:
    """Parse a deal code; the inverse of ``str(code)``."""
    return DealCode.parse(text)


def random_code(rng: RandomSource, *, kind: str = "N", long: bool = False) -> DealCode:
    """A uniformly random code of the given kind and length, drawn from the generator passed in.

    >>> import random
    >>> random_code(random.Random(1))
    DealCode.parse('HM1-N-PUBNLKN')
    >>> random_code(random.Random(1), kind="S", long=True).long
    True
    """
    return DealCode(kind, rng.randrange(LONG_CODE_SPACE if long else CODE_SPACE), long=long)


def daily_code(day: date, secret: bytes, *, attempt: int = 0, long: bool = False) -> DealCode:
    """The ``attempt``-th candidate daily-challenge code for a UTC day.

    ``HMAC-SHA256(secret, "halfmoon-daily:YYYY-MM-DD:attempt")`` read as a big-endian integer,
    modulo 26**7 — or, with ``long=True``, ``HMAC-SHA256(secret, "halfmoon-daily-long:YYYY-MM-DD:attempt")``
    modulo 26**28 for a long code (a text of its own: a long daily shares no letters with a short one).
    Without the secret the code cannot be known in advance; a short daily's 26**7 codes can be
    searched from its opening cards, a long one's cannot (``docs/security.md``). The server walks
    ``attempt = 0, 1, 2, …`` when it wants the first candidate with some property (a deal the
    solver proves winnable).

    >>> daily_code(date(2026, 1, 1), b"halfmoon-test-secret")
    DealCode.parse('HM1-D-ZPHASSJ')
    >>> str(daily_code(date(2026, 1, 1), b"halfmoon-test-secret", long=True))
    'HM1-D-RAJWVQF-PSJSHQG-RFOMJEO-QRKYPXG'
    """
    label = "halfmoon-daily-long" if long else "halfmoon-daily"
    message = f"{label}:{day.isoformat()}:{attempt}".encode("ascii")
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    space = LONG_CODE_SPACE if long else CODE_SPACE
    return DealCode("D", int.from_bytes(digest, "big") % space, long=long)


# -- Sealed races: commit to a secret seed, mix in every racer's contribution, reveal at the end.


def check_contribution(text: object) -> str:
    """Return a racer's contribution unchanged if it is 32 to 64 lowercase hex characters.

    >>> check_contribution("00112233445566778899aabbccddeeff")
    '00112233445566778899aabbccddeeff'
    >>> check_contribution("00112233")
    Traceback (most recent call last):
    ...
    halfmoon.errors.InvalidCodeError: contribution '00112233' has 8 hex characters; it needs 32 to 64 (0-9, a-f)
    """
    if not isinstance(text, str):
        raise InvalidCodeError(
            f"a contribution must be a string of 32 to 64 lowercase hex characters, not {_quote(text)}"
        )
    if CONTRIBUTION_RE.fullmatch(text) is None:
        raise InvalidCodeError(
            f"contribution {_quote(text)} has {len(text)} hex characters; it needs 32 to 64 (0-9, a-f)"
            if re.fullmatch(r"[0-9a-f]*", text)
            else f"contribution {_quote(text)} must be 32 to 64 lowercase hex characters (0-9, a-f only)"
        )
    return text


def check_seed_hex(seed_hex: object) -> str:
    """Return a sealed race's seed unchanged if it is 64 lowercase hex characters (32 bytes)."""
    if not isinstance(seed_hex, str) or SEED_HEX_RE.fullmatch(seed_hex) is None:
        raise InvalidCodeError(f"a seal's seed must be 64 lowercase hex characters (32 bytes), not {_quote(seed_hex)}")
    return seed_hex


def seal_commitment(seed_hex: object) -> str:
    """The commitment published before anyone joins: SHA-256 of ``"halfmoon-seal:" + seed_hex``.

    Returned as 64 lowercase hex characters. Revealing ``seed_hex`` at the end lets anyone check it.

    >>> seal_commitment("00" * 32)
    '93aeaba3a8676601451dcde6acc1515908cd37df6f08b8b895680092c5acfadc'
    """
    seed = check_seed_hex(seed_hex)
    return hashlib.sha256((SEAL_PREFIX + seed).encode("ascii")).hexdigest()


def sealed_code(seed_hex: object, contributions: object) -> DealCode:
    """A sealed race's deal: the server's committed seed mixed with every racer's contribution.

    ``SHA-256("halfmoon-deal:" + seed_hex + ":" + ",".join(sorted(contributions)))`` read as a
    big-endian integer, modulo 26**28: a long code of kind ``S``. Sorting makes the order in
    which contributions arrived irrelevant; duplicates are kept. With no contribution the text
    ends in ``":"``.

    >>> sealed_code("00" * 32, ["ff" * 16, "11" * 16]) == sealed_code("00" * 32, ["11" * 16, "ff" * 16])
    True
    >>> sealed_code("00" * 32, [])
    DealCode.parse('HM1-S-RHWEHLN-XBCLOTT-VMMNEEH-YFXXUMM')
    """
    seed = check_seed_hex(seed_hex)
    if isinstance(contributions, str):
        raise InvalidCodeError(f"contributions must be a list of strings, not the string {_quote(contributions)}")
    if not isinstance(contributions, Iterable):
        raise InvalidCodeError(f"contributions must be a list of strings, not {_quote(contributions)}")
    joined = ",".join(sorted(check_contribution(text) for text in contributions))
    digest = hashlib.sha256(f"{SEALED_DEAL_PREFIX}{seed}:{joined}".encode("ascii")).digest()
    return DealCode("S", int.from_bytes(digest, "big") % LONG_CODE_SPACE, long=True)


def check_seal(commitment: object, seed_hex: object, contributions: object, code: object) -> bool:
    """Whether a revealed seal holds: the seed matches the commitment and gives this code.

    Never raises on malformed parts: anything malformed is simply not a valid seal.

    >>> seed = "ab" * 32
    >>> code = sealed_code(seed, ["cd" * 16])
    >>> check_seal(seal_commitment(seed), seed, ["cd" * 16], code)
    True
    >>> check_seal(seal_commitment(seed), seed, ["cd" * 16, "ef" * 16], code)
    False
    """
    if not isinstance(commitment, str):
        return False
    try:
        expected = code if isinstance(code, DealCode) else DealCode.parse(code)
        return (
            hmac.compare_digest(seal_commitment(seed_hex), commitment)
            and sealed_code(seed_hex, contributions) == expected
        )
    except (InvalidCodeError, TypeError):
        return False


def new_seal_seed(secret: bytes, nonce: bytes, context: str) -> str:
    """A sealed race's seed: ``HMAC-SHA256(secret, "halfmoon-seal-seed:" + context + ":" + nonce.hex())``.

    The server passes its secret, at least 16 fresh random bytes and a context such as
    ``"room:round"``; the result is 64 lowercase hex characters for :func:`seal_commitment` and
    :func:`sealed_code`. The engine reads no randomness itself.

    >>> new_seal_seed(b"server secret", bytes(16), "lobby-7:1")
    '1313ee7343d5cddacd866c85289584fabdccd91e8c9aa2aec1d52918aca0c89b'
    """
    if not isinstance(secret, bytes) or not secret:
        raise ValueError("new_seal_seed needs the server's secret as non-empty bytes")
    if not isinstance(nonce, bytes) or len(nonce) < MIN_NONCE_BYTES:
        raise ValueError(f"new_seal_seed needs a nonce of at least {MIN_NONCE_BYTES} random bytes")
    message = f"{SEAL_SEED_PREFIX}{context}:{nonce.hex()}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _quote(value: object) -> str:
    """``repr`` of a value, cut short if it is long (error messages quote what they were given)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"
