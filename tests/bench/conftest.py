"""Every test here runs a benchmark's quick mode or its model (no timing asserts): marked
``bench``, so the lowest-versions run (.ci/lowest) can leave them to the main run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def bench_script(name: str) -> ModuleType:
    """``bench/NAME.py`` loaded as a module of its own (``bench/`` is not a package)."""
    spec = importlib.util.spec_from_file_location(name, HERE.parent.parent / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.bench)
