"""Deal codes (``HM1-N-AAAAAAB``) and the shuffle that turns a code into a deal.

A code is ``HM`` + a format version (``1``), a kind letter and seven letters A-Z, joined by
hyphens. Every well-formed code names exactly one ordering of the 104 cards, on any platform,
forever: the shuffle below uses only SHA-256 and integer arithmetic, and is written down in
``docs/deal-codes.md`` precisely enough to reimplement in another language.

Kinds: ``N`` — an ordinary deal (random or typed by a player); ``D`` — a daily-challenge deal,
derived from the date and the server's secret by :func:`daily_code`. The kind is part of the
code, so ``HM1-N-QWERTYU`` and ``HM1-D-QWERTYU`` are different deals.

Nothing here reads a clock or a global random generator: callers pass randomness in.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from itertools import count
from typing import Final, Protocol

from halfmoon.cards import RANKS, SUITS, Card
from halfmoon.errors import InvalidCodeError

FORMAT_VERSION: Final = 1
KINDS: Final = {"N": "ordinary deal", "D": "daily challenge"}
LETTERS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
BODY_LENGTH: Final = 7
CODE_SPACE: Final = 26**BODY_LENGTH  # 8,031,810,176 deals per kind

_CODE_RE: Final = re.compile(r"HM([0-9]+)-([A-Z])-([A-Z]+)")

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
    >>> code, code.kind, code.number
    (DealCode.parse('HM1-N-AAAAAAB'), 'N', 1)
    >>> [card.name for card in code.shuffled_deck()[-3:]]  # R6, R7, R8
    ['AH', '8D', '9D']
    """

    kind: str
    number: int  # 0 … 26**7 - 1, the seven letters read as a base-26 number (A = 0)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidCodeError(f"unknown deal kind {self.kind!r} (known: {', '.join(KINDS)})")
        if not 0 <= self.number < CODE_SPACE:
            raise InvalidCodeError(f"deal number {self.number!r} is outside 0…{CODE_SPACE - 1}")

    @classmethod
    def parse(cls, text: str) -> DealCode:
        """Parse ``HM1-N-AAAAAAB`` (case and surrounding blanks are forgiven).

        Raises :class:`InvalidCodeError` saying exactly what is wrong.
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
        if len(body) != BODY_LENGTH:
            raise InvalidCodeError(
                f"deal code {text!r} ends in {len(body)} letters; it needs exactly {BODY_LENGTH} (A-Z)"
            )
        number = 0
        for letter in body:
            number = number * 26 + LETTERS.index(letter)
        return cls(kind, number)

    @property
    def letters(self) -> str:
        out = []
        n = self.number
        for _ in range(BODY_LENGTH):
            n, r = divmod(n, 26)
            out.append(LETTERS[r])
        return "".join(reversed(out))

    def __str__(self) -> str:
        return f"HM{FORMAT_VERSION}-{self.kind}-{self.letters}"

    def __repr__(self) -> str:
        return f"DealCode.parse({str(self)!r})"

    @property
    def seed(self) -> bytes:
        """SHA-256 of the canonical code's ASCII text: the seed of the word stream."""
        return hashlib.sha256(str(self).encode("ascii")).digest()

    def swaps(self) -> list[int]:
        """The Fisher-Yates draws: for i = 103, 102, …, 1 in turn, the j (0 ≤ j ≤ i) swapped with i.

        Each j is the first word of :func:`word_stream` (continuing where the previous draw
        stopped) below ``2**32 - 2**32 % (i + 1)``, reduced modulo ``i + 1``.
        """
        # The words of word_stream(seed), computed 13 blocks (104 words) at a time: 103 draws
        # almost never reject a word, so one batch nearly always suffices.
        seed = self.seed
        sha256 = hashlib.sha256
        unpack = _EIGHT_WORDS.unpack
        words: list[int] = []
        block = 0
        k = 0
        out = []
        for i in range(DECK_SIZE - 1, 0, -1):
            limit = _LIMITS[i + 1]
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

    def shuffled_deck(self) -> list[Card]:
        """The 104 cards in dealt order (see the module docs and ``docs/deal-codes.md``)."""
        deck = list(UNSHUFFLED)
        for i, j in zip(range(DECK_SIZE - 1, 0, -1), self.swaps(), strict=True):
            deck[i], deck[j] = deck[j], deck[i]
        return deck


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
    example = "for example HM1-N-AAAAAAB"
    if not canonical:
        return f"empty deal code ({example})"
    if len(parts) != 3:
        return f"deal code {text!r} must have three parts separated by '-' ({example})"
    head, kind, body = parts
    if not re.fullmatch(r"HM[0-9]+", head):
        return f"deal code {text!r} must start with 'HM' and a version number ({example})"
    if not re.fullmatch(r"[A-Z]", kind):
        return f"deal code {text!r}: the kind {kind!r} must be one letter ({', '.join(KINDS)})"
    bad = sorted({ch for ch in text.strip() if not ch.isascii() or ch.upper() not in LETTERS + "-0123456789"})
    if bad:
        return f"deal code {text!r}: {''.join(bad)!r} not allowed, the last part is {BODY_LENGTH} letters A-Z"
    bad = sorted({ch for ch in body if ch not in LETTERS})
    if bad:
        return f"deal code {text!r}: {''.join(bad)!r} not allowed, the last part is {BODY_LENGTH} letters A-Z"
    return f"deal code {text!r} is malformed ({example})"


def parse_code(text: str) -> DealCode:
    """Parse a deal code; the inverse of ``str(code)``."""
    return DealCode.parse(text)


def random_code(rng: RandomSource, *, kind: str = "N") -> DealCode:
    """A uniformly random code of the given kind, drawn from the generator passed in."""
    return DealCode(kind, rng.randrange(CODE_SPACE))


def daily_code(day: date, secret: bytes, *, attempt: int = 0) -> DealCode:
    """The ``attempt``-th candidate daily-challenge code for a UTC day.

    ``HMAC-SHA256(secret, "halfmoon-daily:YYYY-MM-DD:attempt")`` read as a big-endian integer,
    modulo 26**7. Without the secret the code cannot be known in advance. The server walks
    ``attempt = 0, 1, 2, …`` when it wants the first candidate with some property (a deal the
    solver proves winnable).
    """
    message = f"halfmoon-daily:{day.isoformat()}:{attempt}".encode("ascii")
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    return DealCode("D", int.from_bytes(digest, "big") % CODE_SPACE)
