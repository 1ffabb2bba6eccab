"""What the racer types, parsed: a pure function from one input line to a :class:`Command`.

>>> parse_command("R3 5 12")
Command(kind='move', positions=('R3', '5', '12'), text='R3 5 12')
>>> parse_command(" U ").kind
'undo'
>>> parse_command("1 x").kind
'invalid'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from halfmoon.errors import HalfMoonError
from halfmoon.game import Move

#: Single-word commands and their aliases.
WORDS: Final = {
    "u": "undo",
    "undo": "undo",
    "g": "give_up",
    "give up": "give_up",
    "giveup": "give_up",
    "s": "start",
    "start": "start",
    "r": "rematch",
    "rematch": "rematch",
    "a": "accept",
    "accept": "accept",
    "e": "errors",
    "errors": "errors",
    "q": "quit",
    "quit": "quit",
    "exit": "quit",
    "h": "help",
    "help": "help",
    "?": "help",
    "": "redraw",
}


@dataclass(frozen=True, slots=True)
class Command:
    """``kind``: move, undo, give_up, start, rematch, accept, errors, quit, help, redraw or invalid.

    A move carries its position names, canonical (``r3`` → ``R3``); an invalid line carries
    the reason in ``text``.
    """

    kind: str
    positions: tuple[str, ...] = ()
    text: str = ""


def parse_command(line: str) -> Command:
    """Parse one typed line. Never raises: bad input becomes ``Command("invalid", text=why)``."""
    text = " ".join(line.strip().split())
    kind = WORDS.get(text.lower())
    if kind is not None:
        return Command(kind, text=text)
    try:
        move = Move.parse(text)
    except HalfMoonError as exc:
        return Command("invalid", text=str(exc))
    return Command("move", tuple(move.names()), text)
