"""The examples in the engine's docstrings run as tests (pytest's --doctest-modules covers tests/ only)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "halfmoon.cards",
    "halfmoon.positions",
    "halfmoon.codes",
    "halfmoon.deal",
    "halfmoon.game",
    "halfmoon.taps",
    "halfmoon.record",
    "halfmoon.view",
    "halfmoon.diagram",
    "halfmoon.text",
    "halfmoon.errors",
    "halfmoon.protocol",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {name}"


def test_there_are_examples() -> None:
    attempted = sum(doctest.testmod(importlib.import_module(name)).attempted for name in MODULES)
    assert attempted >= 8
