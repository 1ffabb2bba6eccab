"""``halfmoon solve``: whether deals (or a game part-way through) can be won, with a winning line.

An operator's command: it comes with the server's install (the root ``pyproject.toml`` registers
it), never with the terminal client's (``client/pyproject.toml``), and nothing a player runs or
sees answers this question (docs/solver.md).

With several codes (or ``--json``) it prints one JSON object per line:
``{"code", "result", "moves", "nodes", "ms"}``, where ``moves`` is the winning record's move
list (position-name lists, replayable with ``halfmoon replay``) or null. With ``--record FILE``
it solves from the position the record's final line of play reaches, and ``moves`` is that line
followed by the solver's continuation (``from_move`` says where the solver took over).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from halfmoon.cli import positive_int
from halfmoon.codes import DealCode
from halfmoon.errors import HalfMoonError
from halfmoon.game import Game, Move
from halfmoon.record import GameRecord
from halfmoon_server.solver.search import DEFAULT_NODE_BUDGET, SolveResult, Verdict, final_line, solve


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of milliseconds, not {text!r}")
    return value


def register_solve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "solve",
        help="(operators) say whether deals can be won, with a winning line",
        description="An operator's tool that comes with the server, never shown to players. Solve deals: "
        "'winnable' with a full winning record, 'unwinnable' (proved), or 'unknown' when the budget runs out. "
        "Several codes give one JSON object per line.",
    )
    p.add_argument("codes", nargs="*", metavar="CODE", help="deal code, e.g. HM1-N-AAAAAAB")
    p.add_argument(
        "--record",
        metavar="FILE",
        help="solve from the position a game record ({'code', 'moves'} JSON) reaches; - reads standard input",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--budget-ms", type=_positive_float, default=None, metavar="N", help="time budget per deal")
    p.add_argument(
        "--nodes",
        type=positive_int,
        default=DEFAULT_NODE_BUDGET,
        metavar="N",
        help=f"node budget per deal (default {DEFAULT_NODE_BUDGET:,})",
    )
    p.set_defaults(func=run_solve)


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, separators=(", ", ": "), ensure_ascii=False) + "\n")


def _solve(game: Game, args: argparse.Namespace) -> SolveResult:
    return solve(game, node_budget=args.nodes, time_budget_ms=args.budget_ms, clock=time.perf_counter)


def _result_json(code: str, prefix: list[Move], result: SolveResult) -> dict[str, Any]:
    moves = None if result.moves is None else [move.names() for move in [*prefix, *result.moves]]
    return {
        "code": code,
        "result": result.verdict.value,
        "moves": moves,
        "nodes": result.nodes,
        "ms": round(result.ms, 3),
    }


def _describe(obj: dict[str, Any]) -> str:
    effort = f"{obj['nodes']:,} nodes, {obj['ms']:.1f} ms"
    if obj["result"] == Verdict.WINNABLE:
        lines = [f"{obj['code']}: winnable — {effort}. A winning record:"]
        lines += [f"{i:3d}. {' '.join(move)}" for i, move in enumerate(obj["moves"], 1)]
        return "\n".join(lines)
    if obj["result"] == Verdict.UNWINNABLE:
        return f"{obj['code']}: unwinnable (proved) — {effort}"
    return f"{obj['code']}: unknown — the budget ran out after {effort} (try a larger --nodes or --budget-ms)"


def _read_record(name: str) -> GameRecord:
    """Raises HalfMoonError subclasses for bad content, OSError for an unreadable file."""
    if name == "-":
        return GameRecord.loads(sys.stdin.read())
    with open(name, encoding="utf-8") as handle:
        return GameRecord.loads(handle.read())


def run_solve(args: argparse.Namespace) -> int:
    if not args.codes and args.record is None:
        print("halfmoon solve: give at least one deal code, or --record FILE", file=sys.stderr)
        return 2
    as_json = args.json or len(args.codes) + (args.record is not None) > 1
    status = 0
    outputs: list[dict[str, Any]] = []

    def fail(source: str, reason: str) -> None:
        nonlocal status
        status = 1
        if as_json:
            _print_json({"code": source, "error": reason})
        else:
            print(f"halfmoon solve: {reason}", file=sys.stderr)

    def emit(obj: dict[str, Any]) -> None:
        if as_json:
            _print_json(obj)
        else:
            outputs.append(obj)
            print(_describe(obj))

    for text in args.codes:
        try:
            code = DealCode.parse(text)
        except HalfMoonError as exc:
            fail(text, str(exc))
            continue
        emit(_result_json(str(code), [], _solve(Game.from_code(code), args)))
    if args.record is not None:
        try:
            record = _read_record(args.record)
            line = final_line(record)
        except OSError as exc:
            fail(args.record, f"cannot read {args.record}: {exc.strerror}")
        except HalfMoonError as exc:
            fail(args.record, f"{args.record}: {exc}")
        else:
            game = Game.from_code(record.code)
            for move in line:
                game.push(move)
            obj = _result_json(str(record.code), line, _solve(game, args))
            obj["from_move"] = len(line)
            emit(obj)
    return status
