"""``halfmoon verify``: check that a sealed race's deal is the one its racers were promised.

A sealed race starts with ``commitment`` = sha256 of ``CODE:SALT``; the code and the salt come
out when the race ends. Give them with the commitment your race started with (``--code --salt
--commitment``), or a stored game's id (or its replay link), the server and that commitment: the
command fetches the code and salt ``GET /api/games/{id}`` reveals and checks them against the
commitment *you* were given — never against the server's own word.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from halfmoon.protocol import commitment_of
from halfmoon_client.address import DEFAULT_SERVER, normalize_server
from halfmoon_client.errors import ClientError

if TYPE_CHECKING:
    Sub = argparse._SubParsersAction[argparse.ArgumentParser]


def register_verify(sub: Sub) -> None:
    p = sub.add_parser(
        "verify",
        help="check a sealed race's deal against its commitment",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("game", nargs="?", help="a stored game's id or replay link (…/replay/ID)")
    p.add_argument("--server", metavar="URL", default=DEFAULT_SERVER, help=f"the server (default {DEFAULT_SERVER})")
    p.add_argument("--code", help="the deal code the game revealed")
    p.add_argument("--salt", help="the salt the game revealed")
    p.add_argument("--commitment", help="the commitment the race started with (64 hex characters)")
    p.set_defaults(func=run_verify)


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


def run_verify(args: argparse.Namespace) -> int:
    code, salt, commitment = args.code, args.salt, args.commitment
    try:
        if args.game:
            game = fetch_game(args.server, args.game)
            if not game.get("sealed"):
                print(f"halfmoon verify: game {args.game} is not from a sealed race (open code)", file=sys.stderr)
                return 1
            code, salt = str(game["code"]), str(game["salt"])
            if not commitment:
                print(
                    f"halfmoon verify: the server says the deal was {code} with salt {salt}; give --commitment "
                    "(the one your race started with) to check it: the server's own commitment proves nothing",
                    file=sys.stderr,
                )
                return 2
    except ClientError as exc:
        print(f"halfmoon verify: {exc}", file=sys.stderr)
        return 1
    if not (code and salt and commitment):
        print("halfmoon verify: give a game id, or --code, --salt and --commitment", file=sys.stderr)
        return 2
    computed = commitment_of(code, salt)
    if computed != commitment.strip().lower():
        print(f"NOT VERIFIED: sha256({code}:{salt}) = {computed}, not the commitment {commitment}")
        return 1
    print(f"verified: {code} is the deal committed to ({commitment})")
    return 0
