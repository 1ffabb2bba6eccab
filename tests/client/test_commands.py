"""Typed lines → commands: a pure function, never an exception."""

from __future__ import annotations

import pytest

from halfmoon_client.commands import Command, parse_command


@pytest.mark.parametrize(
    ("line", "positions"),
    [("1 8", ("1", "8")), ("R3 5 12", ("R3", "5", "12")), (" r3,5 , 12 ", ("R3", "5", "12")), ("10 1", ("10", "1"))],
)
def test_moves_in_the_seeds_labels(line: str, positions: tuple[str, ...]) -> None:
    command = parse_command(line)
    assert command.kind == "move" and command.positions == positions


@pytest.mark.parametrize(
    ("line", "kind"),
    [("u", "undo"), ("U", "undo"), ("g", "give_up"), ("s", "start"), ("e", "errors"), ("q", "quit"), ("?", "help"),
     ("", "redraw")],
)  # fmt: skip
def test_words(line: str, kind: str) -> None:
    assert parse_command(line).kind == kind


@pytest.mark.parametrize(
    ("line", "why"),
    [("1", "2 positions"), ("1 2 3 4", "not 4"), ("13 2", "'13'"), ("R9 1", "'R9'"), ("hello", "'hello'")],
)
def test_bad_lines_say_why(line: str, why: str) -> None:
    command = parse_command(line)
    assert command == Command("invalid", (), command.text) and why in command.text
