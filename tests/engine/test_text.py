"""Player-facing words and the seed's bar: time, score, moves and the deal's code."""

from __future__ import annotations

import pytest

from halfmoon.text import WORDS, format_bar, format_time, word


@pytest.mark.parametrize(
    ("ms", "shown"),
    [(0, "0:00"), (999, "0:00"), (61_000, "1:01"), (3_599_999, "59:59"), (3_600_000, "1:00:00"), (-5, "0:00")],
)
def test_time_format(ms: int, shown: str) -> None:
    assert format_time(ms) == shown


def test_the_bar_holds_time_score_moves_and_code() -> None:
    assert format_bar(time_ms=65_000, score=25, moves=2, code="HM1-N-AAAAAAB") == (
        "Time 1:05  ·  Score 25  ·  Moves 2  ·  Code HM1-N-AAAAAAB"
    )
    italian = format_bar(time_ms=0, score=0, moves=0, code=None, lang="it")
    assert italian == "Tempo 0:00  ·  Punti 0  ·  Mosse 0  ·  Codice —"


def test_both_languages_have_every_word() -> None:
    assert set(WORDS["it"]) == set(WORDS["en"])
    assert word("won", "it", score=520, moves=48, time="3:00").startswith("Vittoria!")
    assert word("nothing_to_undo", "xx") == WORDS["en"]["nothing_to_undo"]
