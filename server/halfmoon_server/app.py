"""The application factory: ``create_app(settings)`` wires storage (migrated at start-up), the
solver's executor, the daily challenge, the room registry and its ticker, the WebSocket
endpoint, the REST API and the static client. Resources open and close in ``cleanup_ctx``;
sockets are closed ``on_shutdown``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
from collections.abc import AsyncIterator
from concurrent.futures import Executor, ProcessPoolExecutor

from aiohttp import web
from sqlalchemy.engine import make_url

from halfmoon_server import keys, rest, static
from halfmoon_server.daily import DailyService, warm_up
from halfmoon_server.rooms import RoomRegistry
from halfmoon_server.settings import Settings, load_secret
from halfmoon_server.storage import SqlStorage, make_engine, migrate
from halfmoon_server.ws import websocket_handler

log = logging.getLogger("halfmoon_server")


def describe_db(url: str) -> str:
    """The database URL without its password, for logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparsable database URL>"


async def _storage_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    url = settings.database_url()
    engine = make_engine(url)
    storage = SqlStorage(engine)
    await migrate(engine)
    log.info("database: %s (schema migrated to the newest revision)", describe_db(url))
    app[keys.STORAGE] = storage
    yield
    await storage.close()


async def _executor_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    executor: Executor | None = None
    if settings.solver_workers > 0:
        executor = ProcessPoolExecutor(
            max_workers=settings.solver_workers, mp_context=multiprocessing.get_context("spawn")
        )
    if executor is not None:
        # start the worker now (importing the engine and the solver), not on a player's game_over
        warm = asyncio.get_running_loop().run_in_executor(executor, warm_up)
        warm.add_done_callback(lambda f: f.cancelled() or f.exception())
    app[keys.EXECUTOR] = executor
    app[keys.DAILY] = DailyService(
        storage=app[keys.STORAGE],
        clock=settings.clock,
        secret=load_secret(settings),
        executor=executor,
        requires_winnable=settings.daily_requires_winnable,
        node_budget=settings.solver_node_budget,
        analysis_time_budget_ms=settings.analysis_time_budget_ms,
    )
    yield
    if executor is not None:
        executor.shutdown(wait=False, cancel_futures=True)


async def _rooms_ctx(app: web.Application) -> AsyncIterator[None]:
    registry = RoomRegistry(app[keys.SETTINGS], app[keys.STORAGE], app[keys.DAILY])
    app[keys.REGISTRY] = registry
    ticker = asyncio.get_running_loop().create_task(registry.run_ticker())
    yield
    ticker.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ticker
    try:
        async with asyncio.timeout(10):
            await registry.settle()
    except TimeoutError:
        log.warning("shutdown: some games could not be stored in time")


async def _close_sockets(app: web.Application) -> None:
    registry = app.get(keys.REGISTRY)
    if registry is None:
        return
    await asyncio.gather(
        *(conn.flush_and_close(1001, "server shutting down") for conn in list(registry.connections)),
        return_exceptions=True,
    )


async def _freeze_gc(app: web.Application) -> None:
    gc.collect()
    gc.freeze()


def create_app(settings: Settings | None = None) -> web.Application:
    """The whole server as an aiohttp application (nothing opens until it starts)."""
    settings = settings or Settings.from_env()
    app = web.Application(middlewares=[rest.api_errors], client_max_size=64 * 1024)
    app[keys.SETTINGS] = settings
    app.cleanup_ctx.append(_storage_ctx)
    app.cleanup_ctx.append(_executor_ctx)
    app.cleanup_ctx.append(_rooms_ctx)
    app.on_startup.append(_freeze_gc)
    app.on_shutdown.append(_close_sockets)
    app.router.add_get("/ws", websocket_handler)
    rest.add_routes(app)
    static.add_routes(app)
    return app
