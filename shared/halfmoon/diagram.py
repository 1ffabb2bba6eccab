"""The board as text, drawn as the seed's diagrams draw it.

The 12 piles form an arc open downwards: piles 1-3 up the left side (1 at the bottom), piles
4-10 along the top from left to right, piles 11-12 down the right side below the corner. The
reserve sits in the middle of the arc in two rows of four (R1-R4 above R5-R8). Under each card
stands its position and its card count, e.g. ``1·8``.

    (row, column) cells on a 9 × 4 grid; the reserve is shifted half a cell to be centred.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from halfmoon.positions import PILE_COUNT, position_name
from halfmoon.view import BoardView

#: Grid cell of each pile (row, column): the arc.
PILE_CELLS: Final = (
    (3, 0), (2, 0), (1, 0),  # piles 1-3: up the left side
    (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (0, 7),  # piles 4-10: along the top
    (1, 8), (2, 8),  # piles 11-12: down the right side, below the corner
)  # fmt: skip
#: Grid cell of each reserve slot: two rows of four in the middle, R1-R4 above R5-R8.
RESERVE_CELLS: Final = tuple((1 + slot // 4, 2 + slot % 4) for slot in range(8))
CELLS: Final = PILE_CELLS + RESERVE_CELLS

CELL_WIDTH: Final = 7
_RESERVE_SHIFT: Final = CELL_WIDTH // 2
_WIDTH: Final = 9 * CELL_WIDTH


def render(
    view: BoardView,
    *,
    lang: str = "en",
    selection: Collection[int] = (),
    dimmed: Collection[int] = (),
    color: bool = False,
) -> str:
    """The board as lines of text (63 columns, 12 lines).

    Selected cards are drawn ``>5♠<``, dimmed ones ``(5♠)``; an empty pile or slot is an empty
    outline ``[   ]``. With ``color``, red suits use ANSI red.
    """
    grid = [[" "] * _WIDTH for _ in range(12)]
    for position, (row, col) in enumerate(CELLS):
        x = col * CELL_WIDTH + (_RESERVE_SHIFT if position >= PILE_COUNT else 0)
        card = view.tops[position]
        if card is None:
            face = "[   ]"
        else:
            text = card.symbol(lang=lang).rjust(3)
            if position in selection:
                face = f">{text}<"
            elif position in dimmed:
                face = f"({text})"
            else:
                face = f"[{text}]"
        label = f"{position_name(position)}·{view.counts[position]}"
        _put(grid[row * 3], x, face)
        _put(grid[row * 3 + 1], x, label.center(5))
        if color and card is not None and card.is_red:  # ANSI codes take no columns
            grid[row * 3][x + 1] = "\x1b[31m" + grid[row * 3][x + 1]
            grid[row * 3][x + 3] += "\x1b[0m"
    return "\n".join("".join(line).rstrip() for line in grid).rstrip("\n")


def _put(line: list[str], x: int, text: str) -> None:
    for i, ch in enumerate(text):
        line[x + i] = ch
