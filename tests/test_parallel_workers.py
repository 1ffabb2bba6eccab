"""The suite's workers (tests/conftest.py, pyproject.toml's ``-n auto --dist loadfile``): one
pytest-xdist worker per core this process may use, up to four; an explicit
``PYTEST_XDIST_AUTO_NUM_WORKERS`` wins; ``-n 0`` runs everything in one process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import conftest
from tests.conftest import ROOT

QUICK = "tests/engine/test_cards.py"


@pytest.mark.parametrize(("cores", "workers"), [(1, 1), (2, 2), (4, 4), (64, conftest.MOST_WORKERS)])
def test_one_worker_per_core_up_to_the_most(monkeypatch: pytest.MonkeyPatch, cores: int, workers: int) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert conftest.pytest_xdist_auto_num_workers(pytest.Config.__new__(pytest.Config)) == workers


def test_the_environment_variable_names_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "7")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert conftest.pytest_xdist_auto_num_workers(pytest.Config.__new__(pytest.Config)) == 7


def _pytest(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_AUTO_NUM_WORKERS"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, QUICK],
        cwd=ROOT, env={**env, "CI": "false"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return result.stdout


def test_the_default_command_runs_on_workers_and_n_0_in_one_process() -> None:
    workers = max(1, min(conftest.MOST_WORKERS, len(os.sched_getaffinity(0))))
    assert f"created: {workers}/{workers} worker" in _pytest()
    assert "created:" not in _pytest("-n", "0")
