"""Which results are ranked: the one decision (halfmoon_server.core.ranking), case by case."""

from __future__ import annotations

import doctest

import pytest

from halfmoon.game import Move
from halfmoon.protocol import Mode, Unranked
from halfmoon.record import UNDO
from halfmoon_server.core import ranking
from halfmoon_server.core.ranking import DEFAULT_TAP_FLOOR_MS, taps_of, unranked_reason


def test_the_module_examples_run() -> None:
    assert doctest.testmod(ranking).failed == 0


@pytest.mark.parametrize(
    ("mode", "sealed", "daily_first", "bot", "expected"),
    [
        (Mode.RACE, True, True, False, None),  # a sealed race: nobody knew the cards
        (Mode.DAILY, False, True, False, None),  # the day's first attempt
        (Mode.RACE, False, True, False, Unranked.CASUAL),  # an open race: the host chose the code
        (Mode.SOLO, False, True, False, Unranked.CASUAL),  # a solo game: its bar shows the code
        (Mode.DAILY, False, False, False, Unranked.DAILY_RETRY),
        (Mode.RACE, True, True, True, Unranked.BOT),  # a bot, even in a sealed race
        (Mode.RACE, False, True, True, Unranked.BOT),  # a bot says so first
    ],
)
def test_only_sealed_races_and_the_dailys_first_attempt_by_a_person_are_ranked(
    mode: Mode, sealed: bool, daily_first: bool, bot: bool, expected: Unranked | None
) -> None:
    got = unranked_reason(
        mode, sealed=sealed, daily_first=daily_first, bot=bot, taps=104, time_ms=600_000, tap_floor_ms=90
    )
    assert got is expected


def test_a_finish_faster_than_the_tap_floor_is_too_fast_and_at_the_floor_is_not() -> None:
    def reason(time_ms: int | None, floor: int = 90) -> Unranked | None:
        return unranked_reason(
            Mode.RACE, sealed=True, daily_first=True, bot=False, taps=104, time_ms=time_ms, tap_floor_ms=floor
        )

    assert reason(104 * 90 - 1) is Unranked.TOO_FAST
    assert reason(104 * 90) is None
    assert reason(None) is None  # not over yet: the pace is judged at the end
    assert reason(0, floor=0) is None  # the rule turned off


def test_the_taps_are_two_a_pair_three_a_triple_undone_moves_included_undos_not() -> None:
    pair, triple = Move.from_names(["1", "2"]), Move.from_names(["3", "4", "5"])
    assert taps_of([pair, triple, UNDO, triple, pair]) == 2 + 3 + 3 + 2
    assert taps_of([]) == 0


def test_the_default_floor_is_below_the_published_human_figures() -> None:
    # docs/security.md: 1/6.95 s for an aimed touch at 1 bit, two fingers at most 50 % faster
    assert DEFAULT_TAP_FLOOR_MS <= 1000 / 6.95 / 1.5


def test_join_carries_bot_only_when_true_and_refuses_a_bot_that_is_not_a_boolean() -> None:
    import json

    from halfmoon.errors import BadMessageError
    from halfmoon.protocol import Join, parse_message

    assert "bot" not in Join("K7WQ2M", "Ada").to_json()  # a person's join is unchanged
    declared = Join("K7WQ2M", "bot-1", bot=True)
    assert declared.to_json()["bot"] is True
    assert parse_message(json.dumps(declared.to_json())) == declared
    for bad in ("yes", 1, []):
        with pytest.raises(BadMessageError) as caught:
            parse_message(json.dumps({"type": "join", "v": 1, "room": "K7WQ2M", "name": "x", "bot": bad, "id": 3}))
        assert caught.value.code == "bad_message" and caught.value.msg_id == 3 and "bot" in caught.value.message
