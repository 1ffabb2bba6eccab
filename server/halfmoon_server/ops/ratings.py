"""``halfmoon ratings rebuild``: make every rating again from the games table alone.

An operator's command (the root ``pyproject.toml`` registers it; the terminal client's install has
none of it). The server keeps the ratings race by race as the games are stored
(:mod:`halfmoon_server.core.ratings`); a rebuild folds every stored race again, in the same order,
and writes the same numbers — after a restore from a backup of the games alone, say, or to check
the kept ones (docs/server.md, "Ratings"). It runs in one transaction, holding the lock the
server's rating takes: a running server's races wait for it and are rated after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from halfmoon_server.adapters.storage import MEMORY_URL, open_storage
from halfmoon_server.errors import StorageError

#: how long the rebuild may take (s): it reads every race's games
DEFAULT_TIMEOUT_S = 600.0


def register_ratings(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ratings",
        help="(operators) rebuild the players' ratings from the stored games",
        description="An operator's tool that comes with the server. 'rebuild' makes every rating again from the "
        "games table alone (the numbers the server kept race by race).",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    rebuild = actions.add_parser("rebuild", help="make every rating again from the games table")
    rebuild.add_argument(
        "--db", dest="db_url", metavar="URL", default=os.environ.get("HALFMOON_DB"),
        help="the server's SQLAlchemy async URL (HALFMOON_DB)",
    )
    rebuild.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
        help=f"seconds the rebuild may take (default {DEFAULT_TIMEOUT_S:g})",
    )
    rebuild.set_defaults(func=run_ratings)


async def _rebuild(url: str, timeout_s: float) -> tuple[int, int]:
    storage = await open_storage(url, timeout_s=timeout_s)
    try:
        return await storage.rebuild_ratings()
    finally:
        await storage.close()


def run_ratings(args: argparse.Namespace) -> int:
    url = args.db_url
    if not url:
        print("halfmoon ratings rebuild: give the database: --db URL (or HALFMOON_DB)", file=sys.stderr)
        return 2
    if url == MEMORY_URL:
        print("halfmoon ratings rebuild: memory:// keeps nothing to rebuild from", file=sys.stderr)
        return 2
    if not args.timeout > 0:
        print(f"halfmoon ratings rebuild: --timeout must be positive, not {args.timeout}", file=sys.stderr)
        return 2
    try:
        players, changes = asyncio.run(_rebuild(url, args.timeout))
    except StorageError as exc:
        print(f"halfmoon ratings rebuild: {exc}", file=sys.stderr)
        return 1
    print(f"rebuilt the ratings: {players} players rated, {changes} rating changes")
    return 0
