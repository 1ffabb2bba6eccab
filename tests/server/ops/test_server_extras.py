"""The install extras the README's quick start names: ``pip install '.[server]'`` installs neither
redis-py nor asyncpg (the ``redis`` and ``postgres`` extras do), so every server command must load
without them — the embedded server never talks to Redis or PostgreSQL."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

# A child process in which ``import redis`` and ``import asyncpg`` fail as they do where the extras
# are not installed (a None in sys.modules makes the import raise ImportError).
_WITHOUT_EXTRAS = """
import sys
for name in ("redis", "asyncpg", "hiredis"):
    sys.modules[name] = None
from halfmoon.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", [["serve", "--help"], ["ratings", "rebuild", "--help"]])
def test_server_commands_load_without_the_redis_and_postgres_extras(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "not available here" not in done.stderr
    assert done.stdout.startswith("usage: halfmoon " + command[0])
