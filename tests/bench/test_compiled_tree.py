"""The compiled copy of the tree (``bench/compiled_tree.py``): its module lists name files of the
tree, the modules it compiles stay within what mypyc compiles, and a compiled module is the one
imported from the copy (the figures it gives are measured by hand, docs/benchmarks.md)."""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest

from halfmoon.cards import Card
from tests.conftest import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compiled_tree", ROOT / "bench" / "compiled_tree.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_modules_compiled_and_those_left_interpreted_are_files_of_the_tree_and_apart() -> None:
    script = _script()
    compiled, left = set(script.MODULES), set(script.LEFT_INTERPRETED)
    assert len(compiled) == len(script.MODULES)
    assert not compiled & left
    for path in compiled | left:
        assert (ROOT / path).is_file(), path


def _async_generators(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncFunctionDef):
            inner = [sub for sub in ast.walk(node) if isinstance(sub, ast.Yield | ast.YieldFrom)]
            if inner:
                found.append(node.name)
    return found


def _new_calls(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__new__"
    ]


@pytest.mark.parametrize("path", _script().MODULES)
def test_a_compiled_module_has_no_async_generator_and_calls_no_dunder_new(path: str) -> None:
    # mypyc compiles neither: an async generator is refused, and a compiled class has no __new__ to call
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    assert _async_generators(tree) == [], f"{path}: async generators (web/lifecycle.py holds the application's)"
    assert _new_calls(tree) == [], f"{path}: __new__ called at lines {_new_calls(tree)}"


def test_the_guard_sees_an_async_generator_and_a_dunder_new_call() -> None:
    source = "async def ctx(app):\n    yield\n\nasync def plain():\n    return 1\n\nx = object.__new__(object)\n"
    tree = ast.parse(source)
    assert _async_generators(tree) == ["ctx"]
    assert _new_calls(tree) == [7]


def _has_compiler() -> bool:
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return headers.is_file() and (shutil.which("cc") is not None or shutil.which("gcc") is not None)


@pytest.mark.slow
@pytest.mark.skipif(not _has_compiler(), reason="needs a C compiler and Python's headers")
def test_a_compiled_module_is_the_one_imported_from_the_copy(tmp_path: Path) -> None:
    script = _script()
    tree = tmp_path / "tree"
    tree.mkdir()
    script.copy_tree(tree, None)
    assert (tree / "shared" / "halfmoon" / "cards.py").is_file() and (tree / "bench" / "load.py").is_file()
    assert not list(tree.rglob("*.so"))
    placed = script.compile_modules(tree, ("shared/halfmoon/cards.py",), 1)
    assert placed and {path.parent for path in placed} == {tree / "shared" / "halfmoon"}
    assert not (tree / "build").exists()
    path = os.pathsep.join(str(tree / part) for part in ("shared", "server", "client"))
    probe = "import halfmoon.cards as c; print(c.__file__); print(c.Card.parse('QS'))"
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    where, card = done.stdout.split()
    assert Path(where) in placed and Path(where).name.startswith("cards.") and where.endswith(".so")
    assert card == str(Card.parse("QS"))
