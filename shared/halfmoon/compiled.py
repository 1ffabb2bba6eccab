"""Whether this install runs compiled: the build made with ``HALFMOON_COMPILE=1`` (setup.py,
docs/server.md "The compiled build"), whose engine, room core and frame path are C extensions
beside their Python. The same code either way; the compiled build spends less CPU on a move.

>>> compiled() in (True, False)
True
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from types import ModuleType


def is_extension(module: ModuleType) -> bool:
    """Whether ``module`` was imported from a C extension (not from its ``.py``)."""
    return (getattr(module, "__file__", None) or "").endswith(tuple(EXTENSION_SUFFIXES))


def compiled() -> bool:
    """Whether the engine runs compiled (its rules, :mod:`halfmoon.game`, is an extension): the
    compiled build compiles all of its modules or none."""
    from halfmoon import game

    return is_extension(game)
