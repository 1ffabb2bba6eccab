"""The load benchmark still runs: ``bench/load.py --quick`` drives a real server (and the echo
and game-like ceilings) for a few seconds with whole games on the real protocol, and draws its chart. Figures
are measured by hand and written in docs/benchmarks.md, never asserted here."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_the_quick_load_run_plays_whole_games_and_draws_its_chart(tmp_path: Path) -> None:
    out, svg = tmp_path / "load.json", tmp_path / "load.svg"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALFMOON_")}
    command = [sys.executable, str(ROOT / "bench" / "load.py"), "--quick", "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    by_loop = {r["config"]["loop"]: r for r in results}
    assert set(by_loop) == {"echo", "gamelike", "closed", "open"}
    assert by_loop["echo"]["msgs_per_s_median"] > 0
    gamelike = by_loop["gamelike"]  # the game-like ceiling: the same client plays whole races on it
    assert gamelike["errors"] == {} and gamelike["ack_ms"]["n"] > 0 and gamelike["games"] > 0
    for loop in ("closed", "open"):
        run = by_loop[loop]
        assert run["errors"] == {}, run["errors"]  # every move of the winning lines was accepted
        assert run["ack_ms"]["n"] > 0 and run["moves_per_s_mean"] > 0
        assert run["games"] > 0 and run["failed_stores"] == 0  # whole games, each game_over with its id
        assert run["spectators"] == 1 and run["rss_series"]
    assert by_loop["closed"]["races"] > 0  # races ended and the tables went on to new rooms
    subprocess.run([sys.executable, str(ROOT / "bench" / "load.py"), "--chart", str(out), str(svg)], check=True)
    root = ElementTree.parse(svg).getroot()
    assert root.tag.endswith("svg") and len(list(root.iter("{http://www.w3.org/2000/svg}circle"))) >= 2


def _load_module() -> Any:
    """bench/load.py as a module (its in-process measures)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import load
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return load


def test_the_garbage_collection_measure_builds_its_heap_of_rooms() -> None:
    load = _load_module()
    measured = load.gc_pause(rooms=2, moves=3)
    assert (measured["rooms"], measured["players"], measured["moves_each"]) == (2, 8, 3)
    assert measured["tracked_objects"] > 0 and measured["full_collection_ms"] >= 0


def test_the_room_footprint_measure_plays_races_to_the_end() -> None:
    load = _load_module()
    finished = load.room_footprint(rooms=2, moves=48)
    assert (finished["rooms"], finished["phases"]) == (2, ["finished"])
    assert finished["kib_per_room"] > 0
    assert load.room_footprint(rooms=2, moves=5)["phases"] == ["running"]


def test_the_side_by_side_summary_sets_half_moon_against_each_server() -> None:
    load = _load_module()

    def run(name: str, loop: str, rate: float | None, **figures: Any) -> dict[str, Any]:
        return {"config": {"name": name, "loop": loop, "rate": rate}, "players": 1000, **figures}

    saturated = load.side_by_side(
        [
            run("echo-1k", "echo", None, msgs_per_s_median=20_000, server_cpu_us_per_msg=25.0),
            run("node-gamelike-1k", "node-gamelike", None, moves_per_s_median=10_000, server_cpu_us_per_move=50.0),
            run("closed-1k", "closed", None, moves_per_s_median=4_000, server_cpu_us_per_move=100.0),
            run("closed-1k", "closed", None, moves_per_s_median=6_000, server_cpu_us_per_move=120.0),
        ]
    )
    assert saturated["rounds"] == 2 and saturated["medians"]["closed-1k"]["moves_per_s_median"] == 5_000
    assert saturated["halfmoon/"] == {
        "echo-1k": {"moves_per_s": 0.25, "server_cpu_per_move": 4.4},
        "node-gamelike-1k": {"moves_per_s": 0.5, "server_cpu_per_move": 2.2},
    }
    paced = load.side_by_side(
        [  # due 180 moves/s: the peer kept up on a tenth of its core, Half Moon fell behind on a half
            run("colyseus-1k-human", "colyseus", 180, moves_per_s_mean=179, server_cpu_share=0.1),
            run("open-1k-human", "open", 180, moves_per_s_mean=150, server_cpu_share=0.5),
        ]
    )
    assert paced["medians"]["colyseus-1k-human"] == {
        "players_per_core": 10_000,
        "kept_up": True,
        "failed_stores": 0,
    }
    assert (paced["medians"]["open-1k-human"]["players_per_core"], paced["medians"]["open-1k-human"]["kept_up"]) == (
        2_000,
        False,
    )
    assert paced["halfmoon/"] == {"colyseus-1k-human": {"players_per_core": 0.2}}


def test_a_peer_run_that_failed_is_reported_and_left_out_of_the_medians() -> None:
    load = _load_module()
    runs = [
        {
            "config": {"name": "colyseus-10k-bots", "loop": "colyseus", "rate": 8802},
            "failed": "seat reservation expired.",
        },
        {
            "config": {"name": "open-10k-bots", "loop": "open", "rate": 8802},
            "players": 10_000,
            "moves_per_s_mean": 8802,
            "server_cpu_share": 0.8,
        },
    ]
    summary = load.side_by_side(runs)
    assert summary["medians"]["colyseus-10k-bots"] == {"failed_runs": ["seat reservation expired."]}
    assert summary["medians"]["open-10k-bots"]["players_per_core"] == 12_500
    assert summary["halfmoon/"] == {"colyseus-10k-bots": {}}


def test_a_failed_peer_is_said_by_its_last_error_line_not_its_stack() -> None:
    load = _load_module()
    stderr = (
        "Error: seat reservation expired.\n    at WebSocketServer.onConnection (x.mjs:79:15)\n"
        "colyseus-load.mjs: a table failed: ServerError: seat reservation expired.\n"
        "    at EventEmitter.onError (y.mjs:1)\n"
    )
    assert load._last_error(stderr) == "colyseus-load.mjs: a table failed: ServerError: seat reservation expired."
    assert load._last_error("") == "(nothing on stderr)"


def test_the_servers_failed_database_writes_in_the_window_are_counted() -> None:
    """``game_over`` goes out before the database write: a run's failed stores are read off the
    server's ``halfmoon_db_write_errors`` (every operation), what the window added."""
    load = _load_module()
    before = {"halfmoon_db_write_errors_total{op=save_games}": 2.0}
    after = {
        "halfmoon_db_write_errors_total{op=save_games}": 5.0,
        "halfmoon_db_write_errors_total{op=save_game}": 1.0,
    }
    assert load.pause_counts(before, after)["db_write_errors"] == 4
    assert load.pause_counts(after, after)["db_write_errors"] == 0


def test_an_open_loops_tables_sit_down_over_one_race_when_the_warmup_holds_it() -> None:
    """The tables' first races are spread over a race's length (their games then end spread
    out, not all in one instant), but only where every table has started before the window
    opens; with ``lockstep`` every table sits down at once (the shape of the runs before). The
    arrival times are drawn by ``seed`` alone: the moves' own phases do not change with it."""
    load = _load_module()
    assert load.first_race_spread(4.8, 10.0) == 4.8 and load.first_race_spread(48 * 0.1, 4.8) > 0
    assert load.first_race_spread(96.0, 8.0) == 0.0  # a race longer than the warm-up: all at once

    class Seated(Exception):
        """The table went on to open its first room: where this test stops it."""

    class Session:
        def post(self, *args: object, **kwargs: object) -> None:
            raise Seated

    def first_waits(lockstep: bool, seed: int = 0) -> list[float]:
        client = load.Client("http://127.0.0.1:1", {"code": [["A"]] * 48}, 100.0, 4, lockstep=lockstep, seed=seed)
        client.session = Session()
        assert client.sit_down_over(5.0) == (0.0 if lockstep else pytest.approx(1.92))  # 48 moves × 0.04 s
        waits: list[float] = []

        async def sleep(delay: float) -> None:
            waits.append(delay)

        async def sit_down() -> None:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(load.asyncio, "sleep", sleep)
                for table in range(8):
                    with pytest.raises(Seated):
                        await client.table(table, [], None)

        asyncio.run(sit_down())
        return waits

    assert first_waits(lockstep=True) == []
    spread = first_waits(lockstep=False)
    assert len(spread) == 8 and all(0 <= wait < 1.92 for wait in spread) and len(set(spread)) == 8
    assert first_waits(lockstep=False, seed=1) != spread and first_waits(lockstep=False) == spread
