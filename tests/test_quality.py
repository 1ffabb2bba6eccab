"""The code-quality gates run as tests, so the one test command checks everything:
ruff (lint), mypy (strict types) and node's test runner on the browser client's logic."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", "shared", "server", "client", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_browser_logic_passes_node_tests() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "web").glob("*.test.mjs"))
    if not tests:
        pytest.skip("no node tests yet")
    result = _run(node, "--test", *tests)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
