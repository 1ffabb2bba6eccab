"""``halfmoon serve``: run the server (flags, or the same settings from ``HALFMOON_*``);
``halfmoon ratings rebuild``: rate every stored race again (:meth:`~halfmoon_server.ports.Storage.rebuild_ratings`)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from aiohttp import web

from halfmoon.compiled import compiled
from halfmoon_server.adapters.storage import MEMORY_URL, open_storage
from halfmoon_server.clock import utc_datetime
from halfmoon_server.errors import ServerError, SettingsError
from halfmoon_server.ops import diagnostics
from halfmoon_server.settings import (
    JOURNAL_COMMITS,
    JOURNAL_SYNCS,
    LOG_LEVELS,
    OPTIONS,
    SECRET_VARIABLES,
    Settings,
    read_secret_file,
)
from halfmoon_server.web import keys, logs
from halfmoon_server.web.app import begin_draining, create_app, describe_db, preflight
from halfmoon_server.web.monitoring import metrics_handler

log = logging.getLogger("halfmoon_server")
#: How long the tasks still running once the shutdown is over get to end after their cancellation.
LEFT_TASKS_S = 5.0


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
        "--advertise", metavar="URL",
        help="a cluster: this instance's internal URL, where the others relay the WebSockets of the rooms "
        "it owns (HALFMOON_ADVERTISE, default http://127.0.0.1:PORT)",
    )
    p.add_argument(
        "--journal-sync", choices=JOURNAL_SYNCS,
        help="the embedded journal's durability: normal survives a killed process, full a power cut too "
        "(HALFMOON_JOURNAL_SYNC, default normal)",
    )
    p.add_argument(
        "--journal-commit", choices=JOURNAL_COMMITS,
        help="where the embedded journal commits: auto on the event loop while the disk answers within 50 ms "
        "(journal-sync normal), else on its thread; thread always on its thread "
        "(HALFMOON_JOURNAL_COMMIT, default auto)",
    )
    p.add_argument("--data-dir", type=Path, help="data directory (HALFMOON_DATA_DIR, default ./data)")
    p.add_argument("--secret", help="daily-challenge secret (HALFMOON_SECRET; default: generated once in the data dir)")
    p.add_argument("--static-dir", type=Path, help="browser client files (default: the installed halfmoon_web)")
    p.add_argument("--public-url", help="public base URL for shared links (HALFMOON_PUBLIC_URL)")
    p.add_argument(
        "--rp-id", help="the passkeys' relying party id, a host name (HALFMOON_RP_ID; default: --public-url's host)"
    )
    p.add_argument("--countdown", dest="countdown_s", type=float, help="race countdown in seconds (default 3)")
    p.add_argument(
        "--quick-max-players", dest="quick_max_players", type=int,
        help="players the quick-race queue puts in one race, 2-6 (HALFMOON_QUICK_MAX_PLAYERS, default 6)",
    )
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
    secrets = p.add_argument_group(
        "secrets from files", "each file holds the value alone, so it never shows in ps or the environment"
    )
    secrets.add_argument("--secret-file", type=Path, help="the daily secret (HALFMOON_SECRET_FILE)")
    secrets.add_argument("--db-file", type=Path, help="the database URL, with its password (HALFMOON_DB_FILE)")
    secrets.add_argument("--redis-file", type=Path, help="the Redis URL, with its password (HALFMOON_REDIS_FILE)")
    limits = p.add_argument_group("limits and tuning", "each also from its variable; defaults in docs/server.md")
    p.add_argument(
        "--metrics-host", help="the address of the --metrics-port listener (HALFMOON_METRICS_HOST, default 127.0.0.1)"
    )
    p.add_argument(
        "--metrics-on-app-port", action="store_const", const=True,
        help="also answer /metrics on the application's port (HALFMOON_METRICS_ON_APP_PORT=1; default: only on "
        "--metrics-port)",
    )
    for option in OPTIONS:
        limits.add_argument(option.flag, dest=option.field, type=option.kind, help=f"{option.help} ({option.env})")
    p.add_argument(
        "--log-level", type=str.upper, choices=LOG_LEVELS, help="logging level (HALFMOON_LOG_LEVEL, default INFO)"
    )
    p.add_argument(
        "--log-format", choices=("text", "json"),
        help="text: readable lines; json: one object a line (HALFMOON_LOG_FORMAT, default text)",
    )
    p.set_defaults(func=run_serve)


def _from_files(args: argparse.Namespace) -> dict[str, Any]:
    """The settings whose flags name a file (``--secret-file``, ...). Raises :class:`SettingsError`."""
    values: dict[str, Any] = {}
    for name in SECRET_VARIABLES:
        flag = {"secret": "secret", "db_url": "db", "redis_url": "redis"}[name]
        path = getattr(args, f"{flag}_file")
        if path is None:
            continue
        if getattr(args, name) is not None:
            raise SettingsError(f"both --{flag} and --{flag}-file are given: keep one")
        value = read_secret_file(f"--{flag}-file", path)
        values[name] = value.encode("utf-8") if name == "secret" else value
    return values


def run_serve(args: argparse.Namespace) -> int:
    logs.configure(args.log_level or "INFO", args.log_format or "text")  # until the settings say otherwise
    try:
        flags: dict[str, Any] = {
            "db_url": args.db_url,
            "secret": args.secret.encode("utf-8") if args.secret else None,
            "redis_url": args.redis_url,
            "advertise": args.advertise,
            **_from_files(args),
        }
        settings = Settings.from_env(
            host=args.host,
            port=args.port,
            data_dir=args.data_dir,
            static_dir=args.static_dir,
            public_url=args.public_url,
            rp_id=args.rp_id,
            countdown_s=args.countdown_s,
            quick_max_players=args.quick_max_players,
            daily_requires_winnable=args.daily_requires_winnable,
            solver_workers=args.solver_workers,
            trust_forwarded=args.trust_forwarded,
            metrics_host=args.metrics_host,
            metrics_on_app_port=args.metrics_on_app_port,
            journal_sync=args.journal_sync,
            journal_commit=args.journal_commit,
            log_level=args.log_level,
            log_format=args.log_format,
            **{option.field: getattr(args, option.field) for option in OPTIONS},
            **flags,
        )
    except ServerError as exc:
        print(f"halfmoon serve: {exc}", file=sys.stderr)
        return 2
    logs.configure(settings.log_level, settings.log_format)
    if args.secret:
        log.warning("--secret shows in ps: prefer --secret-file or HALFMOON_SECRET_FILE")
    database = describe_db(settings.database_url())
    if settings.redis_url:
        database += f", live rooms in Redis at {describe_db(settings.redis_url)}"
        if not settings.database_url().startswith("postgresql"):
            log.warning(
                "--redis with a database that is not PostgreSQL: every instance of a cluster must share "
                "one database (--db postgresql+asyncpg://…), or their leaderboards will differ"
            )

    def listening(_banner: str) -> None:  # run_app calls this once the socket is bound
        log.info(
            "Half Moon server listening on http://%s:%d (database: %s; %s build)",
            settings.host, settings.port, database, "compiled" if compiled() else "pure-Python",
        )  # fmt: skip

    try:
        asyncio.run(preflight(settings))
    except ServerError as exc:
        print(f"halfmoon serve: {exc}", file=sys.stderr)
        return 1
    try:
        run_server(create_app(settings), settings.host, settings.port, listening)
    except ServerError as exc:
        print(f"halfmoon serve: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"halfmoon serve: cannot listen on {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return 1
    return 0


async def _serve(app: web.Application, host: str, port: int, listening: Callable[[str], None]) -> bool:
    """Start the app on ``host:port`` with its connection guard on the HTTP server, serve until
    SIGINT or SIGTERM, then clean up (drain, then every resource closed).

    A stop signal only sets an event: one that arrives while the app is still starting (the
    database opening, the solver worker spawning) lets the start-up finish and then stops, so
    nothing half-opened is left to a closed loop."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, diagnostics.log_state, "SIGUSR1")
    runner = web.AppRunner(app, handle_signals=False, access_log_class=logs.AccessLogger)
    metrics: web.AppRunner | None = None
    try:
        await runner.setup()
        assert runner.server is not None
        app[keys.GUARD].install(runner.server)
        if not stop.is_set():
            site = web.TCPSite(runner, host, port)
            await site.start()
            metrics = await _metrics_listener(app)
            listening(f"======== Running on http://{host}:{port} ========")
            await stop.wait()
    finally:
        begin_draining(app)  # at once: the listener and the open connections close after this
        in_time = await _clean_up(runner, app[keys.SETTINGS].shutdown_timeout_s)
        if metrics is not None:
            await metrics.cleanup()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
            loop.remove_signal_handler(sig)
    return in_time


async def _metrics_listener(app: web.Application) -> web.AppRunner | None:
    """``GET /metrics`` of ``app`` on a listener of its own (``--metrics-port`` on
    ``--metrics-host``), apart from the application's port that players (and nginx) reach; None
    when no port is set. Raises :class:`OSError` when it cannot listen."""
    settings = app[keys.SETTINGS]
    if not settings.metrics_port:
        return None
    metrics = web.Application()
    metrics.router.add_get("/metrics", partial(metrics_handler, app=app))
    runner = web.AppRunner(metrics, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, settings.metrics_host, settings.metrics_port).start()
    log.info("metrics: http://%s:%d/metrics", settings.metrics_host, settings.metrics_port)
    return runner


async def _clean_up(runner: web.AppRunner, bound_s: float) -> bool:
    """The app's shutdown (drain, then every resource closed), waited for ``bound_s`` at most:
    past that, what is still running is logged and the shutdown is cut short, so a stuck step
    (a service that never answers) cannot keep the process from exiting. Returns whether it
    finished in time."""
    cleanup = asyncio.ensure_future(runner.cleanup())
    done, _ = await asyncio.wait({cleanup}, timeout=bound_s)
    if done:
        cleanup.result()
        return True
    log.error("shutdown: not finished after %g s (--shutdown-timeout); cutting it short", bound_s)
    diagnostics.log_state("shutdown overran")
    cleanup.cancel()
    await asyncio.wait({cleanup}, timeout=LEFT_TASKS_S)
    return False


def run_server(app: web.Application, host: str, port: int, listening: Callable[[str], None]) -> None:
    """Serve ``app`` until SIGINT/SIGTERM (``aiohttp.web.run_app``'s job, done here so that
    :class:`~halfmoon_server.web.admission.ConnectionGuard` can be installed on the runner's server,
    which ``run_app`` hides). The serving task's cleanup runs in full before any task left is
    cancelled, so the shutdown's drain and the results still being written are not cut short."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    in_time = True
    try:
        in_time = loop.run_until_complete(_serve(app, host, port, listening))
    finally:
        try:
            left = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in left:
                task.cancel()
            if left:  # bounded too: a task that ignores its cancellation is left behind
                loop.run_until_complete(asyncio.wait(left, timeout=LEFT_TASKS_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
    if not in_time:
        # a thread stuck in the shutdown (a journal commit on a stalled disk) would keep the
        # interpreter from exiting (it joins its worker threads): the log is flushed, and out
        logging.shutdown()
        os._exit(1)


#: How long the rebuild may take (s): one transaction over every rated race.
REBUILD_TIMEOUT_S = 3600.0


def register_ratings(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ratings",
        help="the players' ratings: rebuild them from the stored games",
        description="Operators' commands on the ratings (docs/server.md, 'Ratings').",
    )
    actions = p.add_subparsers(dest="action", required=True)
    rebuild = actions.add_parser(
        "rebuild",
        help="rate every stored race again, from the games table",
        description="Rate every stored race again from the games table, in the order the ratings job rated "
        "them (then any race not rated yet, as the job would): the same numbers as the job's. One transaction "
        "(the old ratings are read until it commits); a running server's job skips its passes until then.",
    )
    rebuild.add_argument(
        "--db", dest="db_url", metavar="URL", help="SQLAlchemy async URL (HALFMOON_DB; default SQLite in the data dir)"
    )
    rebuild.add_argument("--db-file", type=Path, help="the database URL, with its password (HALFMOON_DB_FILE)")
    rebuild.add_argument("--data-dir", type=Path, help="data directory (HALFMOON_DATA_DIR, default ./data)")
    rebuild.set_defaults(func=run_ratings_rebuild)


def run_ratings_rebuild(args: argparse.Namespace) -> int:
    """``halfmoon ratings rebuild``: 0 once rebuilt, 1 when the database fails, 2 for bad settings."""
    try:
        db_url = args.db_url
        if args.db_file is not None:
            if db_url is not None:
                raise SettingsError("both --db and --db-file are given: keep one")
            db_url = read_secret_file("--db-file", args.db_file)
        settings = Settings.from_env(db_url=db_url, data_dir=args.data_dir)
    except ServerError as exc:
        print(f"halfmoon ratings: {exc}", file=sys.stderr)
        return 2
    url = settings.database_url()
    if url == MEMORY_URL:
        print("halfmoon ratings: a database in memory keeps nothing to rebuild from", file=sys.stderr)
        return 2

    async def rebuild() -> tuple[int, int]:
        storage = await open_storage(url, timeout_s=REBUILD_TIMEOUT_S)
        try:
            races = await storage.rebuild_ratings(utc_datetime(settings.clock.now_ms()))
            rated = await storage.rating_board(1_000_000, provisional=True)
        finally:
            await storage.close()
        return races, len(rated)

    try:
        races, players = asyncio.run(rebuild())
    except ServerError as exc:
        print(f"halfmoon ratings: {exc}", file=sys.stderr)
        return 1
    print(f"ratings rebuilt from {describe_db(url)}: {races} races rated, {players} players rated")
    return 0
