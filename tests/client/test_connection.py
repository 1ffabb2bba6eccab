"""The link's pure parts: the backoff schedule and frame decoding; and the client modules'
doctests (pytest collects doctests under tests/ only)."""

from __future__ import annotations

import doctest
import importlib
import random

import pytest

from halfmoon_client.connection import Backoff, decode
from halfmoon_client.errors import ProtocolError


def test_backoff_doubles_up_to_the_cap_for_a_fixed_number_of_attempts() -> None:
    assert list(Backoff(first=0.5, factor=2, cap=4, jitter=0, attempts=6).delays()) == [0.5, 1, 2, 4, 4, 4]


def test_backoff_jitter_only_shortens_and_stays_within_its_fraction() -> None:
    plain = list(Backoff(jitter=0).delays())
    jittered = list(Backoff(jitter=0.25).delays(random.Random(3)))
    assert len(jittered) == len(plain) == 12
    assert all(0.75 * p <= j <= p for p, j in zip(plain, jittered, strict=True))
    assert jittered != plain


def test_decode_accepts_objects_only() -> None:
    assert decode('{"type": "pong", "v": 1, "now": 5}') == {"type": "pong", "v": 1, "now": 5}
    for raw in ("[1, 2]", "not json", b"\xff"):
        with pytest.raises(ProtocolError, match="the server sent"):
            decode(raw)


@pytest.mark.parametrize(
    "module", ["address", "commands", "connection", "screens", "session", "strategy", "words", "racer"]
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(f"halfmoon_client.{module}"))
    assert result.failed == 0
