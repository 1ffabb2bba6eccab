"""The examples in the engine's docstrings run as tests (pytest's --doctest-modules covers tests/ only).

The examples are read from each module's source and run against the module as imported: a module
the compiled build compiled keeps no docstrings that ``doctest`` could find on its functions, but
its examples still hold for it.
"""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path
from types import ModuleType

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


def source_of(module: ModuleType) -> Path:
    """The ``.py`` file a module was built from (beside it, when what was imported is an extension)."""
    assert module.__file__ is not None
    path = Path(module.__file__)
    return path if path.suffix == ".py" else path.with_name(module.__name__.rsplit(".", 1)[-1] + ".py")


def examples_of(name: str) -> list[doctest.DocTest]:
    """The examples of each docstring of a module (the module's, its classes', its functions' and
    methods'), read from its source, each to run in a fresh copy of the module's namespace."""
    module = importlib.import_module(name)
    path = source_of(module)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parser = doctest.DocTestParser()
    tests = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        docstring = ast.get_docstring(node, clean=False)
        if docstring and ">>>" in docstring:
            where = f"{name}.{getattr(node, 'name', '')}".rstrip(".")
            line = node.body[0].lineno - 1
            tests.append(parser.get_doctest(docstring, dict(vars(module)), where, str(path), line))
    return tests


def run(tests: list[doctest.DocTest]) -> doctest.TestResults:
    runner = doctest.DocTestRunner(verbose=False)
    for test in tests:
        runner.run(test)
    return runner.summarize(verbose=False)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = run(examples_of(name))
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {name}"


def test_there_are_examples() -> None:
    attempted = sum(run(examples_of(name)).attempted for name in MODULES)
    assert attempted >= 8


@pytest.mark.interpreted  # (doctest's own finder sees no docstring of a compiled function)
@pytest.mark.parametrize("name", MODULES)
def test_the_source_holds_every_example_doctest_finds_in_the_module(name: str) -> None:
    found = doctest.DocTestFinder().find(importlib.import_module(name))
    read = examples_of(name)
    assert sorted(len(test.examples) for test in read if test.examples) == sorted(
        len(test.examples) for test in found if test.examples
    )
    assert sum(len(test.examples) for test in read) == sum(len(test.examples) for test in found)
