"""``halfmoon solve``, the operators' command that comes with the server: it prints what it
promises, and refuses bad input clearly. (That a player's install has no such command:
tests/test_packaging.py.)"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from halfmoon import GameRecord, Status, replay
from halfmoon.codes import DealCode
from halfmoon.game import WINNING_MOVES
from halfmoon_server.solver.cli import register_solve
from tests.server.solver.test_solver import EASY_CODES, HARD_CODE, winning_line


def main(argv: Sequence[str]) -> int:
    """``halfmoon solve …`` as the ``halfmoon`` command runs it (through the registration its entry
    point names), without depending on which project this interpreter has installed."""
    parser = argparse.ArgumentParser(prog="halfmoon")
    register_solve(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


def test_cli_several_codes_print_one_json_object_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["solve", EASY_CODES[0], HARD_CODE.lower(), "--nodes", "2000"])
    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    first, second = (json.loads(line) for line in lines)
    assert set(first) == {"code", "result", "moves", "nodes", "ms"}
    assert first["result"] == "winnable"
    assert replay(GameRecord.from_json(first)).game.status is Status.WON
    assert second["code"] == HARD_CODE
    assert (second["result"], second["moves"]) == ("unknown", None)
    assert second["nodes"] <= 2000


def test_cli_budget_ms_bounds_each_deal_by_the_wall_clock(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["solve", HARD_CODE, EASY_CODES[0], "--budget-ms", "40", "--json"])
    hard, easy = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert status == 0
    assert (hard["result"], hard["moves"]) == ("unknown", None)
    assert 40 <= hard["ms"] < 2_000  # the clock is read every 64 nodes: a few ms over at most
    assert easy["result"] == "winnable"  # each deal gets its own budget
    with pytest.raises(SystemExit) as exit_info:
        main(["solve", EASY_CODES[0], "--budget-ms", "-5"])
    assert exit_info.value.code == 2
    assert "--budget-ms" in capsys.readouterr().err


def test_cli_a_bad_code_gets_an_error_line_and_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["solve", "HM1-N-AAAAAA", EASY_CODES[0], "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert status == 1
    assert lines[0]["code"] == "HM1-N-AAAAAA" and "7" in lines[0]["error"]
    assert lines[1]["result"] == "winnable"


def test_cli_one_code_reads_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", EASY_CODES[0]]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{EASY_CODES[0]}: winnable")
    assert f"{WINNING_MOVES:3d}. " in out
    assert main(["solve", "nonsense"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "halfmoon solve:" in captured.err and "'nonsense'" in captured.err
    assert "Traceback" not in captured.err


def test_cli_solves_from_a_record_part_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = EASY_CODES[1]
    line = winning_line(code)[:10]
    path = tmp_path / "game.json"
    path.write_text(GameRecord(DealCode.parse(code), list(line)).dumps())
    assert main(["solve", "--record", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["from_move"] == 10
    assert result["moves"][:10] == [move.names() for move in line]
    assert replay(GameRecord.from_json(result)).game.status is Status.WON


def test_cli_bad_inputs_are_refused_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve"]) == 2
    assert "give at least one deal code" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"code": "HM1-N-AAAAAAB", "moves": [["1", "2"]]}')
    assert main(["solve", "--record", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.json" in err and "not a pair" in err
    assert main(["solve", "--record", str(tmp_path / "missing.json")]) == 1
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["solve", EASY_CODES[0], "--nodes", "0"])
    assert exit_info.value.code == 2
    assert "--nodes" in capsys.readouterr().err
