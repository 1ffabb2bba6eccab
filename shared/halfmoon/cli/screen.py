"""Screens drawn on a terminal: in place on an ANSI terminal, or one after another on a pipe.

Shared by ``halfmoon play`` and the terminal client (``halfmoon join``, ``watch``): both draw a
whole screen as a string and let a :class:`Screen` decide how it reaches the terminal.
"""

from __future__ import annotations

from typing import Final, Protocol, TextIO, runtime_checkable

#: ANSI: cursor home, then clear the screen.
CLEAR: Final = "\x1b[H\x1b[2J"


@runtime_checkable
class Screen(Protocol):
    def draw(self, text: str, *, full: bool = False) -> None: ...


class AnsiScreen:
    """Draws screens in place on an ANSI terminal.

    A full redraw is cursor home, clear, the screen and the prompt. Between full redraws only
    the lines that changed are rewritten, with the cursor saved and restored around them, so
    that what the player is typing at the prompt stays where it is (the clock ticks every second).
    """

    def __init__(self, out: TextIO, *, prompt: str = "> ") -> None:
        self.out = out
        self.prompt = prompt
        self.last: list[str] = []

    def draw(self, text: str, *, full: bool = False) -> None:
        lines = text.split("\n")
        if full or len(lines) != len(self.last):
            self.out.write(CLEAR + text + "\n" + self.prompt)
        else:
            changed = [
                f"\x1b[{row};1H\x1b[2K{line}"
                for row, (line, old) in enumerate(zip(lines, self.last, strict=True), 1)
                if line != old
            ]
            if not changed:
                return
            self.out.write("\x1b7" + "".join(changed) + "\x1b8")
        self.out.flush()
        self.last = lines


class PlainScreen:
    """Screens one after another, for output that is not a terminal (a pipe, a file, a test):
    each full redraw is written whole; in-place updates (the clock's tick) are left out."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def draw(self, text: str, *, full: bool = False) -> None:
        if full:
            self.out.write(text + "\n")
            self.out.flush()


__all__ = ["CLEAR", "AnsiScreen", "PlainScreen", "Screen"]
