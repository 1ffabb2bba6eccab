"""A game's steps as one string, the way a room's snapshot writes them
(:mod:`halfmoon_server.core.snapshots`), and what can be read from that string without parsing it.

Each step's text is ``"u"`` for an undo, else the move's position names, space-separated
(``"1 R4"``); the steps' texts are joined by commas. A long game (20,000 steps) reads back in a
few milliseconds, where a list of lists took ~40 ms — and a room's REST read needs none of it
(its view shows no board): a read copy keeps the text as it is (:class:`UnreadSteps`) and parses
it only when something asks for the steps themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from halfmoon.game import Move
from halfmoon.record import UNDO, Step

SEPARATOR: Final = ","
UNDO_TEXT: Final = "u"
_STEP_TEXT: dict[Move, str] = {}  # moves are shared, immutable objects: each one's text once
_TEXT_STEP: dict[str, Step] = {UNDO_TEXT: UNDO}
#: how many step texts :func:`steps_of` remembers (the canonical moves are fewer; a damaged
#: snapshot adds no more)
_KNOWN_LIMIT: Final = 20_000

__all__ = ["SEPARATOR", "UNDO_TEXT", "UnreadSteps", "standing_text", "steps_of", "steps_text"]


def step_text(step: Step) -> str:
    if step == UNDO:
        return UNDO_TEXT
    assert isinstance(step, Move)
    text = _STEP_TEXT.get(step)
    if text is None:
        text = _STEP_TEXT[step] = " ".join(step.names())
    return text


def steps_text(steps: Iterable[Step]) -> str:
    """The steps as one string."""
    text = _STEP_TEXT
    return SEPARATOR.join(UNDO_TEXT if step == UNDO else (text.get(step) or step_text(step)) for step in steps)


def steps_of(raw: str) -> list[Step]:
    """The steps :func:`steps_text` wrote. Raises ``ValueError`` (or the engine's
    :class:`~halfmoon.errors.IllegalMoveError`) for a text that is not steps."""
    if not isinstance(raw, str):
        raise ValueError("a game's steps are one string")
    if not raw:
        return []
    known = _TEXT_STEP
    steps: list[Step] = []
    append = steps.append
    for text in raw.split(SEPARATOR):
        step = known.get(text)
        if step is None:
            step = Move.from_names(text.split(" "))
            if len(known) < _KNOWN_LIMIT:
                known[text] = step
        append(step)
    return steps


def standing_text(raw: str) -> str:
    """The moves still in effect after the steps :func:`steps_text` wrote as ``raw`` (an undo
    takes the move before it back), written the same way: what a board is played again from.
    Read from the text (string compares only: ~1 ms for 20,000 steps, where comparing the
    parsed steps took ~5)."""
    standing: list[str] = []
    push, pop = standing.append, standing.pop
    for text in raw.split(SEPARATOR) if raw else ():
        if text == UNDO_TEXT:
            pop()
        else:
            push(text)
    return SEPARATOR.join(standing)


@dataclass(frozen=True, slots=True)
class UnreadSteps:
    """Steps kept as their text (:func:`steps_text`), not parsed yet: how many there are and how
    many taps they needed (:func:`halfmoon_server.core.ranking.taps_of`) are counted in the text
    itself (C string counts, no step parsed). Position names hold no ``"u"``, no comma and no
    space: an undo's text is the only ``"u"``, and a move of k positions holds k - 1 spaces."""

    text: str

    def __len__(self) -> int:
        return self.text.count(SEPARATOR) + 1 if self.text else 0

    @property
    def taps(self) -> int:
        moves = len(self) - self.text.count(UNDO_TEXT)
        return self.text.count(" ") + moves

    def parse(self) -> list[Step]:
        return steps_of(self.text)
