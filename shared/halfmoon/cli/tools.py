"""``halfmoon deal``, ``halfmoon replay`` and ``halfmoon new``: the engine's batch tools.

With several inputs (or ``--json``) they print one JSON object per line, so other tools can
check thousands of deals and records in one process.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from collections.abc import Iterator
from typing import Any

from halfmoon.codes import KINDS, DealCode, random_code
from halfmoon.deal import Deal
from halfmoon.diagram import render
from halfmoon.errors import HalfMoonError
from halfmoon.game import Game
from halfmoon.record import GameRecord, replay
from halfmoon.view import BoardView


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, separators=(", ", ": "), ensure_ascii=False) + "\n")


# -- deal --------------------------------------------------------------------------------------


def register_deal(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("deal", help="show the deal a code names", description="Show the deal each code names.")
    p.add_argument("codes", nargs="+", metavar="CODE", help="deal code, e.g. HM1-N-AAAAAAB")
    p.add_argument("--json", action="store_true", help="print the deal JSON (one object per line)")
    p.add_argument("--lang", choices=("en", "it"), default="en", help="card letters for the diagram")
    p.set_defaults(func=run_deal)


def run_deal(args: argparse.Namespace) -> int:
    as_json = args.json or len(args.codes) > 1
    status = 0
    for text in args.codes:
        try:
            deal = Deal.from_code(text)
        except HalfMoonError as exc:
            status = 1
            if as_json:
                _print_json({"code": text, "error": str(exc)})
            else:
                print(f"halfmoon deal: {exc}", file=sys.stderr)
            continue
        if as_json:
            _print_json(deal.to_json())
        else:
            print(f"{deal.code}\n")
            print(render(BoardView.of(Game(deal)), lang=args.lang))
    return status


# -- replay ------------------------------------------------------------------------------------


def register_replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay game records and report the outcome",
        description="Replay game records ({'code', 'moves'} JSON). '-' reads standard input, "
        "which may hold one record or one record per line.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="a record file, or - for standard input")
    p.add_argument("--json", action="store_true", help="one JSON result per line")
    p.set_defaults(func=run_replay)


def _records(files: list[str]) -> Iterator[tuple[str, str | None, str]]:
    """(source name, record text or None, why it could not be read) for each record in the inputs."""
    for name in files:
        if name == "-":
            try:
                text = sys.stdin.read()
            except (OSError, UnicodeDecodeError) as exc:
                yield "<stdin>", None, f"cannot read standard input: {exc}"
                continue
            stripped = text.strip()
            if not stripped:
                yield "<stdin>", None, "standard input is empty: expected a game record or one record per line"
                continue
            try:
                json.loads(stripped)
            except (ValueError, RecursionError):
                # not a single document: JSON lines, one record each
                for n, line in enumerate(stripped.splitlines(), 1):
                    if line.strip():
                        yield f"<stdin>:{n}", line, ""
            else:
                yield "<stdin>", stripped, ""
        else:
            try:
                with open(name, encoding="utf-8") as handle:
                    yield name, handle.read(), ""
            except OSError as exc:
                yield name, None, f"cannot read {name}: {exc.strerror}"
            except UnicodeDecodeError as exc:
                yield name, None, f"cannot read {name}: not UTF-8 text ({exc.reason} at byte {exc.start})"


def run_replay(args: argparse.Namespace) -> int:
    status = 0
    records = list(_records(args.files))
    as_json = args.json or len(records) > 1
    for source, text, problem in records:
        if text is None:
            result: dict[str, Any] = _unreadable(problem)
        else:
            try:
                record = GameRecord.loads(text)
            except HalfMoonError as exc:
                result = _unreadable(f"{source}: {exc}")
            else:
                result = replay(record).to_json()
        if result["error"] is not None:
            status = 1
        if as_json:
            _print_json(result)
        elif result["code"] is None:
            print(f"halfmoon replay: {result['error']['reason']}", file=sys.stderr)
        else:
            line = (
                f"{result['code']}: {result['status']}, score {result['score']}, "
                f"{result['moves']} moves, {result['cards_left']} cards left"
            )
            if result["error"] is not None:
                where = "" if result["error"]["index"] is None else f" at step {result['error']['index']}"
                line += f" — error{where}: {result['error']['reason']}"
            print(line)
    return status


def _unreadable(reason: str) -> dict[str, Any]:
    return {
        "code": None,
        "score": 0,
        "moves": 0,
        "status": None,
        "cards_left": None,
        "error": {"index": None, "reason": reason},
    }


# -- new ---------------------------------------------------------------------------------------


def register_new(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("new", help="print a fresh random deal code", description="Print a fresh random deal code.")
    p.add_argument("--count", type=_count, default=1, help="how many codes, 1-100000 (one per line)")
    p.add_argument("--kind", choices=sorted(KINDS), default="N", help=argparse.SUPPRESS)
    p.set_defaults(func=run_new)


def _count(text: str) -> int:
    """``--count``: a whole number from 1 to 100,000 (argparse turns the error into a usage message)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= count <= 100_000:
        raise argparse.ArgumentTypeError(f"must be from 1 to 100000, not {count}")
    return count


def run_new(args: argparse.Namespace) -> int:
    rng = secrets.SystemRandom()
    for _ in range(args.count):
        code: DealCode = random_code(rng, kind=args.kind)
        print(code)
    return 0
