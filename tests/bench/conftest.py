"""Every test here runs a benchmark's quick mode or its model (no timing asserts): marked
``bench``, so the lowest-versions run (.ci/lowest) can leave them to the main run."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.bench)
