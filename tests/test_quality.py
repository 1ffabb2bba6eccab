"""The code-quality gates run as tests, so the one test command checks everything:
ruff (lint), mypy (strict types) and node's test runner on the browser client's logic."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

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


def test_node_reads_the_browser_client_as_es_modules_whatever_package_json_is_above(tmp_path: Path) -> None:
    """The client's ``.js`` files are ES modules, and its own package.json says so: Node (the
    tests above) does not guess — a ``"type": "commonjs"`` package.json in a folder above the
    checkout made it read them as CommonJS and fail."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    client = ROOT / "client" / "halfmoon_web"
    assert json.loads((client / "package.json").read_text())["type"] == "module"
    (tmp_path / "package.json").write_text('{"type": "commonjs"}\n')
    copy = tmp_path / "checkout" / "halfmoon_web"
    shutil.copytree(client, copy, ignore=shutil.ignore_patterns("__pycache__", "*.png", "*.webp", "fonts"))
    cards = json.dumps((copy / "static" / "js" / "cards.js").as_uri())
    script = f"import({cards}).then(m => console.log(typeof m.parseCard))"
    result = _run(node, "--input-type=module", "-e", script)
    assert result.stdout.strip() == "function", result.stdout + result.stderr
