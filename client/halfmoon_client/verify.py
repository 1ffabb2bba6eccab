"""``halfmoon verify``: check that a deal is the one its players were promised.

A sealed race starts with ``commitment`` = sha256 of ``halfmoon-seal:SEED``, given before anyone
joins; each racer sends a random contribution before the start, and the deal's code is derived
from the seed and every contribution (``started`` lists them). When the race ends, the seed comes
out: anyone can check that it opens the commitment, that it and the contributions give the code,
and that the code deals the board they were shown. The daily challenge's commitment (sha256 of
``CODE:SALT``) is public a day ahead; its reveal gives the code and the salt.

Give a stored game's id (or its replay link), the server and the commitment *you* were given
(never the server's own word), and ``--contribution`` (yours) and ``--board`` (the opening board
you saw, as the ``started`` message's ``board`` JSON) to check those too; or give the parts
(``--code --seed --contributions --commitment``, or ``--code --salt --commitment``).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halfmoon.codes import DealCode, check_seal
from halfmoon.deal import Deal
from halfmoon.errors import HalfMoonError
from halfmoon.game import Game
from halfmoon.protocol import commitment_of
from halfmoon.view import BoardView
from halfmoon_client.address import DEFAULT_SERVER, normalize_server
from halfmoon_client.errors import ClientError

if TYPE_CHECKING:
    Sub = argparse._SubParsersAction[argparse.ArgumentParser]


def register_verify(sub: Sub) -> None:
    p = sub.add_parser(
        "verify",
        help="check a sealed race's or a daily's deal against its commitment",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("game", nargs="?", help="a stored game's id or replay link (…/replay/ID)")
    p.add_argument("--server", metavar="URL", default=DEFAULT_SERVER, help=f"the server (default {DEFAULT_SERVER})")
    p.add_argument("--commitment", help="the commitment given before the race (64 hex characters)")
    p.add_argument("--code", help="the deal code revealed")
    p.add_argument("--seed", help="a sealed race's revealed seed (64 hex characters)")
    p.add_argument("--contributions", help="a sealed race's contributions, comma-separated (as 'started' lists them)")
    p.add_argument("--contribution", help="your own contribution: it must be among them")
    p.add_argument("--salt", help="the salt revealed (a daily; a sealed race of the previous release)")
    p.add_argument("--board", metavar="FILE", help="the opening board you were shown (the 'started' board, JSON)")
    p.set_defaults(func=run_verify)


def opening_board(code: DealCode | str) -> dict[str, Any]:
    """The board a deal opens with, as ``started`` shows it to a racer (``{"tops", "counts"}``)."""
    return BoardView.of(Game(Deal.from_code(code))).to_json()


def check_reveal(
    commitment: str,
    code: str,
    *,
    seed: str | None = None,
    contributions: Sequence[str] | None = None,
    salt: str | None = None,
    mine: str | None = None,
    board: dict[str, Any] | None = None,
) -> list[str]:
    """What is wrong with a reveal (empty: it holds). A seal: ``seal_commitment(seed)`` is the
    commitment and ``sealed_code(seed, contributions)`` the code; a salt: ``sha256(CODE:SALT)`` is
    the commitment. ``mine``: a contribution that must be among them; ``board``: the opening board
    the player was shown, which the code must deal."""
    problems: list[str] = []
    if seed is not None:
        contributions = list(contributions or ())
        if not check_seal(commitment.strip().lower(), seed, contributions, code):
            problems.append(f"the seed {seed} and contributions {contributions} do not open {commitment} as {code}")
        if mine is not None and mine not in contributions:
            problems.append(f"your contribution {mine} is not among {contributions}")
    elif salt is not None:
        if commitment_of(code, salt) != commitment.strip().lower():
            problems.append(f"sha256({code}:{salt}) = {commitment_of(code, salt)}, not the commitment {commitment}")
    else:
        problems.append("nothing opens the commitment: give the seed (a sealed race) or the salt (a daily)")
    if board is not None:
        try:
            dealt = opening_board(code)
        except HalfMoonError as exc:
            problems.append(f"{code} deals no board: {exc}")
        else:
            if dealt != {"tops": board.get("tops"), "counts": board.get("counts")}:
                problems.append(f"{code} does not deal the opening board you were shown")
    return problems


def fetch_game(server: str, game: str) -> dict[str, object]:
    """``GET /api/games/{game}``. Raises :class:`ClientError` saying what went wrong."""
    game_id = game.rstrip("/").rsplit("/", 1)[-1]
    url = f"{normalize_server(server)}/api/games/{game_id}"
    try:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            body: dict[str, object] = json.loads(answer.read())
            return body
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {exc.code}"
        raise ClientError(f"{url}: {message}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ClientError(f"cannot read {url}: {exc}") from None


def _read_board(path: str) -> dict[str, Any]:
    try:
        board = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ClientError(f"cannot read the board {path}: {exc}") from None
    if isinstance(board, dict) and isinstance(board.get("board"), dict):
        board = board["board"]  # a whole 'started' message
    if not isinstance(board, dict):
        raise ClientError(f"{path} holds no board (a JSON object with 'tops' and 'counts')")
    return board


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def run_verify(args: argparse.Namespace) -> int:
    code, salt, seed, commitment = args.code, args.salt, args.seed, args.commitment
    contributions = None if args.contributions is None else [c for c in args.contributions.split(",") if c]
    try:
        board = None if args.board is None else _read_board(args.board)
        served_deal = None
        if args.game:
            game = fetch_game(args.server, args.game)
            if not game.get("sealed") and game.get("salt") is None:
                print(f"halfmoon verify: game {args.game} was dealt from an open code", file=sys.stderr)
                return 1
            code, served_deal = str(game["code"]), game.get("deal")
            seed, salt = _text(game.get("seed")), _text(game.get("salt"))
            listed = game.get("contributions")
            contributions = [str(c) for c in listed] if isinstance(listed, list) else None
            if not commitment:
                print(
                    f"halfmoon verify: the server says the deal was {code}; give --commitment (the one your race "
                    "started with) to check it: the server's own commitment proves nothing",
                    file=sys.stderr,
                )
                return 2
    except ClientError as exc:
        print(f"halfmoon verify: {exc}", file=sys.stderr)
        return 1
    if not (code and commitment and (seed or salt)):
        print(
            "halfmoon verify: give a game id, or --code, --commitment and --seed (with --contributions) or --salt",
            file=sys.stderr,
        )
        return 2
    problems = check_reveal(
        commitment, code, seed=seed, contributions=contributions, salt=salt, mine=args.contribution, board=board
    )
    if served_deal is not None:
        try:
            if Deal.from_code(code).to_json() != served_deal:
                problems.append(f"the deal the server serves for the replay is not the deal of {code}")
        except HalfMoonError as exc:
            problems.append(f"{code} is not a deal code: {exc}")
    if problems:
        for problem in problems:
            print(f"NOT VERIFIED: {problem}")
        return 1
    print(f"verified: {code} is the deal committed to ({commitment})")
    return 0
