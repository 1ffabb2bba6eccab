"""``halfmoon serve``: run the server (flags, or the same settings from ``HALFMOON_*``)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from aiohttp import web

from halfmoon_server.app import create_app, describe_db
from halfmoon_server.errors import ServerError
from halfmoon_server.settings import Settings

log = logging.getLogger("halfmoon_server")


def register_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the race server (WebSocket /ws, REST /api, the browser client)",
        description="Run the Half Moon server. Every flag also reads an environment variable "
        "(HALFMOON_HOST, HALFMOON_PORT, HALFMOON_DB, HALFMOON_DATA_DIR, HALFMOON_SECRET, ...); flags win.",
    )
    p.add_argument("--host", help="address to listen on (HALFMOON_HOST, default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (HALFMOON_PORT, default 8080)")
    p.add_argument(
        "--db", dest="db_url", metavar="URL", help="SQLAlchemy async URL (HALFMOON_DB; default SQLite in the data dir)"
    )
    p.add_argument(
        "--redis", dest="redis_url", metavar="URL",
        help="join a cluster: live rooms in Redis, e.g. redis://127.0.0.1:6379/0 (HALFMOON_REDIS; "
        "default: one process, live rooms in a journal in the data dir)",
    )
    p.add_argument(
        "--journal-sync", choices=("normal", "full"),
        help="the embedded journal's durability: normal survives a killed process, full a power cut too "
        "(HALFMOON_JOURNAL_SYNC, default normal)",
    )
    p.add_argument("--data-dir", type=Path, help="data directory (HALFMOON_DATA_DIR, default ./data)")
    p.add_argument("--secret", help="daily-challenge secret (HALFMOON_SECRET; default: generated once in the data dir)")
    p.add_argument("--static-dir", type=Path, help="browser client files (default: the installed halfmoon_web)")
    p.add_argument("--public-url", help="public base URL for shared links (HALFMOON_PUBLIC_URL)")
    p.add_argument("--countdown", dest="countdown_s", type=float, help="race countdown in seconds (default 3)")
    p.add_argument(
        "--no-winnable-daily", dest="daily_requires_winnable", action="store_const", const=False,
        help="do not require the solver to prove the daily deal winnable",
    )
    p.add_argument(
        "--solver-workers", type=int, help="solver worker processes choosing the daily deal (0: a server thread)"
    )
    p.add_argument(
        "--trust-forwarded", action="store_const", const=True,
        help="behind a proxy: client addresses from X-Forwarded-For (HALFMOON_TRUST_FORWARDED=1)",
    )
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings.from_env(
            host=args.host,
            port=args.port,
            db_url=args.db_url,
            data_dir=args.data_dir,
            secret=args.secret.encode("utf-8") if args.secret else None,
            static_dir=args.static_dir,
            public_url=args.public_url,
            countdown_s=args.countdown_s,
            daily_requires_winnable=args.daily_requires_winnable,
            solver_workers=args.solver_workers,
            trust_forwarded=args.trust_forwarded,
            redis_url=args.redis_url,
            journal_sync=args.journal_sync,
        )
    except ServerError as exc:
        print(f"halfmoon serve: {exc}", file=sys.stderr)
        return 2
    database = describe_db(settings.database_url())
    if settings.redis_url:
        database += f", live rooms in Redis at {describe_db(settings.redis_url)}"
        if not settings.database_url().startswith("postgresql"):
            log.warning(
                "--redis with a database that is not PostgreSQL: every instance of a cluster must share "
                "one database (--db postgresql+asyncpg://…), or their leaderboards will differ"
            )

    def listening(_banner: str) -> None:  # run_app calls this once the socket is bound
        log.info("Half Moon server listening on http://%s:%d (database: %s)", settings.host, settings.port, database)

    try:
        web.run_app(create_app(settings), host=settings.host, port=settings.port, print=listening)
    except ServerError as exc:
        print(f"halfmoon serve: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"halfmoon serve: cannot listen on {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return 1
    return 0
