"""The server package's imports run one way, through the layers docs/server.md draws:

    vocabulary (errors, clock) < core < ports, settings < adapters, solver < rooms < web < ops < the package

Every import counts — at the top, inside a function, or only for the type checker
(``if TYPE_CHECKING:``): a type-only import is still a dependency a reader must follow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "server" / "halfmoon_server"

#: each part's place; a module may import from its own part and from lower ones only
LAYERS: dict[str, int] = {
    "errors": 0,
    "clock": 0,
    "core": 1,
    "ports": 3,
    "settings": 3,
    "adapters": 4,
    "solver": 4,
    "rooms": 5,
    "web": 6,
    "ops": 7,
    "__init__": 8,
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        if "migrations" in path.parts:  # Alembic's scripts: run by the migrator, never imported
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``path`` imports, wherever the import statement is."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("halfmoon_server"):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                out.add(name if name in modules else node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name.startswith("halfmoon_server"))
    return {name for name in out if name in modules}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def test_every_module_belongs_to_a_layer(graph: dict[str, set[str]]) -> None:
    assert {_part(module) for module in graph} <= set(LAYERS), sorted({_part(m) for m in graph} - set(LAYERS))


def test_no_module_imports_from_a_layer_above_its_own(graph: dict[str, set[str]]) -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if LAYERS[_part(target)] > LAYERS[_part(module)]
    ]
    assert not upward


def test_parts_of_one_layer_do_not_import_each_other(graph: dict[str, set[str]]) -> None:
    sideways = [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if _part(target) != _part(module) and LAYERS[_part(target)] == LAYERS[_part(module)]
    ]
    assert not sideways


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    circles: list[list[str]] = []
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        if module in path:
            circles.append([*path[path.index(module) :], module])
            return
        if module in done:
            return
        for target in sorted(graph[module]):
            walk(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        walk(module, [])
    assert not circles


def test_the_core_does_no_io(graph: dict[str, set[str]]) -> None:
    """The core (the race, the room's state machine, the policies) imports no asyncio, no aiohttp,
    no database or Redis client, and reads no clock: commands in with the time, events out."""
    forbidden = {"asyncio", "aiohttp", "sqlalchemy", "redis", "socket", "sqlite3", "time", "threading"}
    found = []
    for path in (PACKAGE / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{path.name}: {name}" for name in names if name.split(".")[0] in forbidden]
    assert not found
