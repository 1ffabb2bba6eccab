"""Shared test set-up: where the outside services are, the skip-or-fail rule, and the inner loop.

Tests that need PostgreSQL, Redis, nginx or chromium skip with a clear reason when the service
is missing — except under ``CI=true``, where a missing service is a failure.

``pytest --fast`` skips the tests marked ``slow`` (real ``halfmoon serve`` processes and clusters,
containers, soaks, fuzzing at length) and every test that starts chromium: a developer's inner
loop of a few minutes. The whole suite, the default, stays what CI and a change's end run.

The suite runs in one pytest-xdist worker per core, up to four (``-n auto --dist loadfile`` in
pyproject.toml): half of a serial run's time was spent waiting on child processes, browsers and
sockets. A test file stays on one worker, so its module fixtures start once and never beside
themselves. ``-n 0`` runs everything in one process (for ``--pdb`` or a print);
``PYTEST_XDIST_AUTO_NUM_WORKERS=N`` asks for N workers.

Against the compiled build (``HALFMOON_COMPILE=1``; ``.ci/run`` runs the engine's, the core's, the
rooms' and the web layer's tests against it too) the tests marked ``interpreted`` are skipped: they
replace a method of a class that build compiles, which compiled code never looks up.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from halfmoon.compiled import compiled

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors"
IN_CI = os.environ.get("CI", "").lower() == "true"
COMPILED_SKIP = "replaces a method of a class the compiled build compiles: runs against the pure-Python build"

POSTGRES_URL = os.environ.get("HALFMOON_TEST_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
CHROMIUM = os.environ.get("HALFMOON_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def require_service(name: str, available: bool, how: str) -> None:
    """Skip the calling test when a service is missing; fail instead under CI=true."""
    if available:
        return
    message = f"{name} is not available ({how})"
    if IN_CI:
        pytest.fail(f"CI=true and {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    require_service("PostgreSQL", _port_open("127.0.0.1", 5432), "nothing listens on 127.0.0.1:5432")
    return POSTGRES_URL


@pytest.fixture(scope="session")
def chromium_path() -> str:
    require_service("chromium", Path(CHROMIUM).exists(), f"{CHROMIUM} is missing; apt-get install chromium")
    return CHROMIUM


@pytest.fixture(scope="session")
def nginx_path() -> str:
    path = shutil.which("nginx") or "/usr/sbin/nginx"
    require_service("nginx", Path(path).exists(), "no nginx binary; apt-get install nginx")
    return path


#: More workers than this buys little: every worker starts servers, browsers and clusters of its own,
#: and they share one PostgreSQL (100 connections by default).
MOST_WORKERS = 4


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: ignored where xdist is not loaded
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core this process may use, up to :data:`MOST_WORKERS` (an
    explicit ``PYTEST_XDIST_AUTO_NUM_WORKERS`` wins, as it does in xdist's own rule)."""
    asked = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if asked.isdigit():
        return int(asked)
    return max(1, min(MOST_WORKERS, len(os.sched_getaffinity(0))))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="skip the slow tests (marked slow, or starting chromium): the inner loop; the default runs all",
    )


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects: ``-m "not slow"`` is --fast too
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that starts chromium is slow (a browser, a shared server, pages); under ``--fast``
    every slow test is skipped, with the reason shown."""
    skip = pytest.mark.skip(reason="slow: skipped by --fast")
    skip_compiled = pytest.mark.skip(reason=COMPILED_SKIP)
    running_compiled = compiled()
    for item in items:
        if "chromium_path" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        if config.getoption("--fast") and item.get_closest_marker("slow") is not None:
            item.add_marker(skip)
        if running_compiled and item.get_closest_marker("interpreted") is not None:
            item.add_marker(skip_compiled)
