"""``pytest --fast``, the inner loop (tests/conftest.py): it skips the tests marked ``slow`` and
those that start chromium, says why, and still runs the rest; ``-m "not slow"`` selects the same."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

SLOW = "tests/deploy/test_containers.py"  # marked slow: builds images, starts a compose stack
CHROMIUM = "tests/web/test_compare.py"  # starts chromium (through the ``pages`` fixture)
QUICK = "tests/engine/test_cards.py"


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-rs", *args],
        cwd=ROOT, env={**os.environ, "CI": "false"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_fast_skips_the_slow_tests_and_chromium_and_runs_the_rest() -> None:
    result = _pytest("--fast", SLOW, CHROMIUM, QUICK)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    summary = result.stdout.splitlines()[-1]
    assert " passed" in summary and " skipped" in summary and "failed" not in summary, summary
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert any(SLOW in line and "--fast" in line for line in skipped), skipped
    assert any(CHROMIUM in line and "--fast" in line for line in skipped), skipped
    assert not any(QUICK in line for line in skipped), skipped


def test_not_slow_selects_what_fast_runs() -> None:
    result = _pytest("--collect-only", "-m", "not slow", SLOW, CHROMIUM, QUICK)
    assert result.returncode == 0, result.stdout[-3000:]
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith(QUICK) for line in collected), collected
