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
from halfmoon.positions import parse_position
from tests.bench.conftest import bench_script
from tests.conftest import ROOT


def _script() -> ModuleType:
    return bench_script("compiled_tree")


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


def _dataclass_class_variables(tree: ast.Module) -> list[str]:
    """``Class.name`` for each ``ClassVar`` declared in a dataclass's body."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        if not any(isinstance(d, ast.Name) and d.id == "dataclass" for d in decorators):
            continue
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and "ClassVar" in ast.unparse(statement.annotation):
                found.append(f"{node.name}.{ast.unparse(statement.target)}")
    return found


def _thread_attributes(tree: ast.Module) -> list[int]:
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "_thread"]


@pytest.mark.parametrize("path", _script().MODULES)
def test_a_compiled_module_stays_within_what_mypyc_compiles(path: str) -> None:
    # mypyc 2.4 refuses an async generator, a compiled class has no __new__ to call, a dataclass's
    # ClassVar becomes a read-only field (mypyc/mypyc#1122), and an attribute `_thread` is the C
    # struct member `__thread`, a keyword of GCC's
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    assert _async_generators(tree) == [], f"{path}: async generators (web/lifecycle.py holds the application's)"
    assert _new_calls(tree) == [], f"{path}: __new__ called at lines {_new_calls(tree)}"
    assert _dataclass_class_variables(tree) == [], f"{path}: a dataclass's ClassVar (a property does it)"
    assert _thread_attributes(tree) == [], f"{path}: an attribute named _thread at lines {_thread_attributes(tree)}"


def test_the_guard_sees_each_construct_mypyc_does_not_compile() -> None:
    source = (
        "async def ctx(app):\n    yield\n\nasync def plain():\n    return 1\n\nx = object.__new__(object)\n\n"
        "@dataclass(slots=True)\nclass Event:\n    kind: ClassVar[str] = 'e'\n    n: int\n\n"
        "class Plain:\n    limit: ClassVar[int] = 1\n\n"
        "def start(self):\n    self._thread = None\n"
    )
    tree = ast.parse(source)
    assert _async_generators(tree) == ["ctx"]
    assert _new_calls(tree) == [7]
    assert _dataclass_class_variables(tree) == ["Event.kind"]  # a plain class's ClassVar compiles
    assert _thread_attributes(tree) == [18]


def _compiler_missing() -> str | None:
    if importlib.util.find_spec("mypyc") is None or importlib.util.find_spec("setuptools") is None:
        return "needs mypy's mypyc and setuptools"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "needs Python's headers (Python.h)"
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "needs a C compiler"
    return None


def test_each_extension_is_placed_beside_its_source_and_the_groups_library_first_on_the_path(tmp_path: Path) -> None:
    lib = tmp_path / "build" / "lib"
    built = [
        lib / "d88ae182e015b4ab7d28__mypyc.cpython-311-x86_64-linux-gnu.so",
        lib / "halfmoon" / "cards.cpython-311-x86_64-linux-gnu.so",
        lib / "halfmoon_server" / "core" / "limits.cpython-311-x86_64-linux-gnu.so",
    ]
    for path in built:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(path.name.encode())
    for folder in ("shared/halfmoon", "server/halfmoon_server/core"):
        (tmp_path / folder).mkdir(parents=True)
    placed = _script().place_extensions(tmp_path)
    assert sorted(placed) == sorted(
        [
            tmp_path / "shared" / built[0].name,
            tmp_path / "shared" / "halfmoon" / built[1].name,
            tmp_path / "server" / "halfmoon_server" / "core" / built[2].name,
        ]
    )
    assert all(path.read_bytes() == path.name.encode() for path in placed)
    assert not (tmp_path / "build").exists()


@pytest.mark.slow
@pytest.mark.skipif(_compiler_missing() is not None, reason=str(_compiler_missing()))
def test_compiled_modules_are_the_ones_imported_from_the_copy(tmp_path: Path) -> None:
    script = _script()
    tree = tmp_path / "tree"
    tree.mkdir()
    script.copy_tree(tree, None)
    assert (tree / "shared" / "halfmoon" / "cards.py").is_file() and (tree / "bench" / "load.py").is_file()
    assert not list(tree.rglob("*.so"))
    # two engine modules, one group (a server module would have mypy check the whole server first)
    placed = script.compile_modules(tree, ("shared/halfmoon/cards.py", "shared/halfmoon/positions.py"), 2)
    assert not (tree / "build").exists()
    path = os.pathsep.join(str(tree / part) for part in ("shared", "server", "client"))
    # a parser at the trust boundary takes any value and says what is wrong, compiled too: typed
    # ``str``, a compiled function would refuse a 7 with mypyc's bare TypeError before its check
    probe = """
import halfmoon.cards as c, halfmoon.positions as p
from halfmoon.errors import HalfMoonError
print(c.__file__, p.__file__, c.Card.parse('QS'), p.parse_position('R3'))
for parse in (c.Card.parse, p.parse_position):
    try:
        parse(7)
    except HalfMoonError as refused:
        print(type(refused).__name__)
"""
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    cards, positions, card, position, *refusals = done.stdout.split()
    assert Path(cards) in placed and Path(positions) in placed and cards.endswith(".so")
    assert (card, position) == (str(Card.parse("QS")), str(parse_position("R3")))
    assert refusals == ["InvalidCardError", "InvalidPositionError"]


def test_a_copy_whose_compile_fails_is_removed_and_the_failure_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()

    def refused(tree: Path, modules: tuple[str, ...], jobs: int) -> list[Path]:
        assert (tree / "shared" / "halfmoon" / "game.py").is_file()  # the copy was made
        error = "shared/halfmoon/game.py:163: KeyError: \"'Game' has no attribute '__new__'\""
        raise subprocess.CalledProcessError(1, "mypyc", "", error)

    monkeypatch.setattr(script, "compile_modules", refused)
    out = tmp_path / "out"
    assert script.main([str(out), "-j", "1"]) == 1
    assert not out.exists()
    said = capsys.readouterr()
    assert "'Game' has no attribute '__new__'" in said.out and f"{out} removed" in said.err


def test_an_existing_folder_is_refused_and_left_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kept.txt").write_text("mine")
    with pytest.raises(SystemExit) as refused:
        _script().main([str(tmp_path)])
    assert refused.value.code == 2 and "exists" in capsys.readouterr().err
    assert [path.name for path in tmp_path.iterdir()] == ["kept.txt"]
