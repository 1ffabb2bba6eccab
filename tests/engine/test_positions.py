"""Position names: piles "1"…"12" and reserve slots "R1"…"R8"."""

from __future__ import annotations

import pytest

from halfmoon import InvalidPositionError, parse_position, position_name
from halfmoon.positions import POSITION_NAMES, is_reserve


def test_twenty_positions_round_trip() -> None:
    expected = (*[str(n) for n in range(1, 13)], *[f"R{n}" for n in range(1, 9)])
    assert expected == POSITION_NAMES
    for index, name in enumerate(POSITION_NAMES):
        assert parse_position(name) == index
        assert position_name(index) == name
    assert parse_position("1") == 0
    assert parse_position("12") == 11
    assert parse_position("R1") == 12
    assert parse_position("R8") == 19


def test_reserve_slots_are_told_apart() -> None:
    assert [is_reserve(i) for i in range(20)] == [False] * 12 + [True] * 8


def test_lower_case_and_blanks_are_forgiven() -> None:
    assert parse_position("r3") == parse_position("R3")
    assert parse_position(" 7 ") == 6


@pytest.mark.parametrize("bad", ["0", "13", "R0", "R9", "", " ", "01", "1.0", "P1", "R", "-1", "R1R2", "١"])
def test_unknown_positions_are_refused_quoting_the_input(bad: str) -> None:
    with pytest.raises(InvalidPositionError) as info:
        parse_position(bad)
    assert repr(bad) in str(info.value)
    assert "'1'…'12'" in str(info.value) and "'R1'…'R8'" in str(info.value)
    assert info.value.code == "bad_position"


def test_non_string_is_refused() -> None:
    with pytest.raises(InvalidPositionError, match="no such position: 3"):
        parse_position(3)
