"""The Redis append A/B still runs: ``bench/redis_append_ab.py`` on a tiny load, the same tree on
both sides, against a ``redis-server`` of the test's own. Its figures are measured by hand and
written in docs/benchmarks.md, never asserted here."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_service
from tests.server.instances import RedisServer

pytestmark = pytest.mark.redis


def test_the_append_ab_reports_cpu_and_latency_for_each_room_count(tmp_path: Path) -> None:
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    server = asyncio.run(RedisServer(tmp_path / "redis").start())
    try:
        command = [sys.executable, str(ROOT / "bench" / "redis_append_ab.py"), "--before", str(ROOT)]
        command += ["--rooms", "1", "4", "--moves", "40", "--pairs", "1", "--redis", server.url]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        server.kill()
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["rooms 1", "rooms 4"]
    for line in lines:
        assert re.search(r"before \[\d+(\.\d+)?\] µs, after \[\d+(\.\d+)?\] µs, paired median \d", line), line
