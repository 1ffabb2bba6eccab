"""Table positions and their names: piles ``"1"``…``"12"`` and reserve slots ``"R1"``…``"R8"``.

Inside the engine a position is a small integer: 0-11 are the piles 1-12, 12-19 the reserve
slots R1-R8. ``parse_position`` and ``position_name`` convert between the two.
"""

from __future__ import annotations

from typing import Final

from halfmoon.errors import InvalidPositionError

PILE_COUNT: Final = 12
PILE_HEIGHT: Final = 8
RESERVE_SIZE: Final = 8
POSITION_COUNT: Final = PILE_COUNT + RESERVE_SIZE

PILES: Final = tuple(range(PILE_COUNT))
RESERVE: Final = tuple(range(PILE_COUNT, POSITION_COUNT))
POSITIONS: Final = PILES + RESERVE

POSITION_NAMES: Final = tuple(str(i + 1) for i in PILES) + tuple(f"R{i + 1}" for i in range(RESERVE_SIZE))
_BY_NAME: Final = {name: i for i, name in enumerate(POSITION_NAMES)}


def parse_position(name: object) -> int:
    """``"1"``…``"12"`` → 0…11, ``"R1"``…``"R8"`` → 12…19 (``r3`` is accepted as ``R3``).

    >>> parse_position("1"), parse_position("R3"), position_name(14)
    (0, 14, 'R3')

    Raises :class:`InvalidPositionError` naming the input otherwise.
    """
    if isinstance(name, str):
        index = _BY_NAME.get(name)
        if index is None:
            index = _BY_NAME.get(name.strip().upper())
        if index is not None:
            return index
    raise InvalidPositionError(
        f"no such position: {name!r} (piles are '1'…'12', reserve slots 'R1'…'R8')"
    )


def position_name(index: int) -> str:
    """The inverse of :func:`parse_position`: 0 → ``"1"``, 12 → ``"R1"``."""
    return POSITION_NAMES[index]


def is_reserve(index: int) -> bool:
    return index >= PILE_COUNT
