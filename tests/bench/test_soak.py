"""The soak run (bench/soak.py) in its short form: a few bots race and play solo against a real
server whose PostgreSQL goes down (reset, then blackhole) while storms of reconnections hit the
bots — and no bot sees an error, no result is lost, the server logs no traceback. The figures
(memory, games per second) are the long run's, by hand, in docs/benchmarks.md; nothing here
checks a time."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_a_short_soak_with_outages_and_storms_loses_nothing(postgres_url: str, tmp_path: Path) -> None:
    out, svg = tmp_path / "soak.json", tmp_path / "soak.svg"
    command = [sys.executable, str(ROOT / "bench" / "soak.py"), "--quick", "--no-pin", "--pg", postgres_url]
    done = subprocess.run(
        [*command, "--out", str(out), "--svg", str(svg)], capture_output=True, text=True, timeout=240, check=False
    )
    assert out.exists(), done.stdout[-2000:] + done.stderr[-4000:]
    result = json.loads(out.read_text())
    assert (result["errors"], result["errors_by_kind"]) == (0, {}), result["error_examples"]
    assert result["lost"] == 0, result["check"]
    assert result["check"]["differ"] == 0, result["check"]["differ_examples"]
    assert result["server"]["log"]["tracebacks"] == 0, result["server"]["log"]
    assert result["server"]["exit_code"] == 0
    assert done.returncode == 0, done.stdout[-2000:]
    # the run did what it says: games of both kinds ended and were found in the database, both
    # outages happened (and the server's writes failed during them), and every bot a storm dropped came back
    assert result["games"]["races"] > 0 and result["games"]["solo"] > 0
    assert result["check"]["games_seen"] == result["check"]["games_in_db"] > 0
    assert [outage["mode"] for outage in result["outages"]] == ["reset", "blackhole"]
    # (a quick run may see no game end where its write is bound to fail: soak.write_fails_in)
    if result["check"]["games_ended_in_outages"] > 0:
        assert (result["check"]["db_write_errors"] or 0) > 0, result["check"]
    dropped = sum(storm["dropped"] for storm in result["storms"])
    assert dropped > 0
    assert sum(storm["resumed"] + storm["ended_offline"] for storm in result["storms"]) == dropped
    assert len(result["samples"]) > 5
    assert svg.read_text().startswith("<svg") and "DB reset" in svg.read_text()


def _soak() -> ModuleType:
    """bench/soak.py (it imports its sibling ``tcp_proxy``, so ``bench/`` is on the path meanwhile)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module("soak")
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_a_games_write_counts_as_bound_to_fail_only_where_the_outage_outlasts_it() -> None:
    """A reset refuses a write at once; a blackhole only fails one that runs out of the database's
    time before it lifts (a quick run's 3 s blackhole fails none: a write still waiting is taken by
    a fresh connection once it lifts). The soak expects write errors only from such games."""
    soak = _soak()
    timeout = soak.DEFAULT_TIMEOUT_S
    reset, blackhole = ({"mode": mode, "start_s": 10.0, "end_s": 13.0} for mode in ("reset", "blackhole"))
    assert [soak.write_fails_in(reset, at) for at in (9.9, 10.0, 11.9, 12.1)] == [False, True, True, False]
    assert not any(soak.write_fails_in(blackhole, at) for at in (10.0, 11.0, 11.9))
    long_blackhole = {"mode": "blackhole", "start_s": 10.0, "end_s": 35.0}
    assert soak.write_fails_in(long_blackhole, 34.0 - timeout) and not soak.write_fails_in(
        long_blackhole, 34.1 - timeout
    )


def test_a_quick_run_draws_its_chart_beside_its_result_never_over_the_docs_chart(tmp_path: Path) -> None:
    soak = _soak()
    out = tmp_path / "soak-1.json"
    assert soak.chart_path(None, True, out) == tmp_path / "soak-1.svg"
    assert soak.chart_path(None, False, out) == ROOT / "docs" / "soak.svg"  # a full run's: the docs'
    assert soak.chart_path(tmp_path / "c.svg", True, out) == tmp_path / "c.svg"
