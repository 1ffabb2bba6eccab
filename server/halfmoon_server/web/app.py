"""The application factory: ``create_app(settings)`` wires the ports — storage (chosen by URL,
migrated at start-up), the room log (a local journal, or Redis for a cluster) and the clock —
with the solver's executor, the daily challenge, the recorder of finished games, the live list
(in memory, or in Redis for a cluster), the lobby and its ticker, the WebSocket
endpoint, the REST API and the static client. Resources open and close in ``cleanup_ctx``;
sockets are closed ``on_shutdown``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator
from concurrent.futures import Executor

from aiohttp import web
from sqlalchemy.engine import make_url

from halfmoon_server.adapters.accounts import accounts_for
from halfmoon_server.adapters.journal import JournalLog, MemoryLog
from halfmoon_server.adapters.live_list import MemoryLiveList
from halfmoon_server.adapters.storage import MEMORY_URL, open_storage
from halfmoon_server.core.commands import LOG_VERSION
from halfmoon_server.core.limits import AddressCount, CreatorLimits
from halfmoon_server.errors import LogUnavailable, StorageError
from halfmoon_server.ports import LiveList, RoomLog
from halfmoon_server.rooms.daily import DailyService
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.rooms.quick import QuickQueue
from halfmoon_server.rooms.ratings import RatingJob
from halfmoon_server.rooms.results import Recorder
from halfmoon_server.rooms.room import BackgroundTasks, RoomServices
from halfmoon_server.settings import Settings, load_secret
from halfmoon_server.solver.pool import SolverPool, warm_up
from halfmoon_server.web import accounts, keys, rest, static
from halfmoon_server.web.admission import ConnectionGuard, started_middleware, tcp_limit
from halfmoon_server.web.connection import WEBSOCKET_PATH, Connection, Flusher
from halfmoon_server.web.cycles import release_transport_cycles
from halfmoon_server.web.lifecycle import connections_ctx, open_files_ctx
from halfmoon_server.web.logs import Throttle
from halfmoon_server.web.metrics import CountedExecutor, Metrics, TimedStorage
from halfmoon_server.web.monitoring import gc_probe_ctx, lag_probe_ctx, metrics_handler
from halfmoon_server.web.relay import relays_ctx
from halfmoon_server.web.ws import websocket_handler

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
    try:
        storage = await open_storage(url, timeout_s=settings.db_timeout_s, synchronous=settings.journal_sync)
    except StorageError as exc:  # said at start-up, with the URL (no password): the operator's first clue
        raise StorageError(f"the database {describe_db(url)} cannot be used: {exc}") from exc
    if url == MEMORY_URL:
        log.info("database: in memory (nothing is kept when the server stops)")
    else:
        log.info("database: %s (schema migrated to the newest revision)", describe_db(url))
    app[keys.STORAGE] = TimedStorage(storage, app[keys.METRICS])
    app[keys.ACCOUNTS] = accounts_for(storage)  # in the same database (tables of 0009)
    yield
    await storage.close()


async def _executor_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    metrics = app[keys.METRICS]
    solver: SolverPool | None = None
    executor: Executor | None = None
    if settings.solver_workers > 0:
        solver = SolverPool(settings.solver_workers, on_restart=metrics.solver_restarts.inc)
        executor = CountedExecutor(solver, metrics)  # the jobs go through here, counted
        # start the worker now (importing the engine and the solver), not on the first daily
        warm = asyncio.get_running_loop().run_in_executor(executor, warm_up)
        warm.add_done_callback(lambda f: f.cancelled() or f.exception())
    app[keys.EXECUTOR] = solver  # the pool itself, for /readyz's check()
    daily = DailyService(
        storage=app[keys.STORAGE],
        clock=settings.clock,
        secret=load_secret(settings),
        executor=executor,
        requires_winnable=settings.daily_requires_winnable,
        node_budget=settings.solver_node_budget,
        time_limit_s=settings.daily_time_limit_s,
    )
    app[keys.DAILY] = daily
    app[keys.RECORDER] = Recorder(app[keys.STORAGE])
    ratings = app[keys.RATINGS] = RatingJob(app[keys.STORAGE], settings.clock)
    ratings.start()  # off the path that stores a game: its own task
    ahead = asyncio.get_running_loop().create_task(daily.run_ahead())  # today's and tomorrow's deals
    yield
    ahead.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ahead
    if solver is not None:
        await solver.close()
    await app[keys.RECORDER].close()
    await ratings.close()


async def preflight(settings: Settings) -> None:
    """Check, before listening, that the database answers (and is migrated) and that Redis
    answers. Raises :class:`StorageError` or :class:`~halfmoon_server.errors.LogUnavailable`
    naming what failed (passwords hidden)."""
    url = settings.database_url()
    try:
        storage = await open_storage(url, timeout_s=settings.db_timeout_s, synchronous=settings.journal_sync)
    except StorageError as exc:
        raise StorageError(f"the database {describe_db(url)} cannot be used: {exc}") from exc
    await storage.close()
    if settings.redis_url:
        from redis.asyncio import Redis
        from redis.exceptions import RedisError

        timeout = settings.redis_timeout_s
        redis = Redis.from_url(settings.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            await redis.ping()
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis at {describe_db(settings.redis_url)} does not answer: {exc}") from exc
        finally:
            await redis.aclose()
            await redis.connection_pool.disconnect()


async def open_room_log(settings: Settings) -> RoomLog:
    """The room log the settings name: Redis for a cluster (``--redis``), else a SQLite journal in
    the data directory (the embedded default), or memory when the database is ``memory://``."""
    if settings.redis_url:
        from halfmoon_server.adapters.redis_log import RedisLog

        redis_log = RedisLog(
            settings.redis_url,
            timeout_s=settings.redis_timeout_s,
            replicas=settings.redis_replicas,
            wait_ms=settings.redis_wait_ms,
            lease_ms=settings.owner_lease_ms,
            advertise=settings.advertised_url,
            reads=LOG_VERSION,
        )
        await redis_log.open()
        return redis_log
    if settings.database_url() == MEMORY_URL:
        return MemoryLog()
    journal = JournalLog(
        settings.data_dir / "journal.db", synchronous=settings.journal_sync, commit=settings.journal_commit
    )
    await journal.open()
    return journal


async def open_live_list(settings: Settings) -> LiveList:
    """The live list the settings name: in Redis for a cluster (``--redis``: it spans the
    instances), else in this process's memory."""
    ttl_ms = int(settings.live_ttl_s * 1000)
    if settings.redis_url:
        from halfmoon_server.adapters.live_list import RedisLiveList

        live = RedisLiveList(settings.redis_url, ttl_ms=ttl_ms, timeout_s=settings.redis_timeout_s)
        await live.open()
        return live
    return MemoryLiveList(settings.clock, ttl_ms)


async def _rooms_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    room_log = await open_room_log(settings)
    try:
        live = await open_live_list(settings)
    except BaseException:
        await room_log.close()
        raise
    tasks = BackgroundTasks()
    services = RoomServices(
        settings.clock,
        room_log,
        app[keys.RECORDER],
        tasks,
        settings.event_log,
        snapshot_every=settings.snapshot_every,
        max_entries=settings.max_room_entries,
    )
    lobby = Lobby(settings, room_log, services, app[keys.STORAGE], app[keys.DAILY], live)
    app[keys.TASKS] = tasks
    app[keys.LOBBY] = lobby
    restored = await lobby.restore()
    if restored:
        log.info("rooms: %d rebuilt from the room log; their players resume with their tokens", restored)
    shared = None
    if settings.redis_url:  # a cluster: the quick-race queue in Redis too, through the room log's client
        from halfmoon_server.adapters.redis_log import RedisLog
        from halfmoon_server.adapters.redis_queue import RedisQueue

        if isinstance(room_log, RedisLog):
            shared = RedisQueue(room_log.redis)
    quick = app[keys.QUICK] = QuickQueue(lobby, settings, shared=shared, ratings=app[keys.STORAGE])
    ticker = asyncio.get_running_loop().create_task(lobby.run_ticker())
    matcher = asyncio.get_running_loop().create_task(quick.run())
    yield
    for task in (matcher, ticker):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    for room in list(lobby.rooms.values()):
        room.close_timer()
    try:
        async with asyncio.timeout(10):
            await tasks.settle()
    except TimeoutError:
        log.warning("shutdown: some games could not be recorded in time (they are in the room log)")
    await live.close()
    await room_log.close()


#: The close code that tells clients to connect again (RFC 6455 "service restart"): their games
#: are in the room log, and they carry on after the restart or on another instance.
CLOSE_RESTART = 1012


def begin_draining(app: web.Application) -> None:
    """From the stop signal on: no new rooms, no new WebSocket (a reconnection included: it
    would be closed again in a moment; it goes to another instance, or waits for this one's
    restart), and ``/readyz`` says ``draining``."""
    lobby = app.get(keys.LOBBY)
    if lobby is not None:
        lobby.draining = True


async def _drain(app: web.Application) -> None:
    """SIGTERM: draining (:func:`begin_draining`), every client told to reconnect (``CLOSE_RESTART``)."""
    begin_draining(app)
    connections: set[Connection] = app[keys.CONNECTIONS]
    await asyncio.gather(
        *(conn.flush_and_close(CLOSE_RESTART, "server restarting: connect again") for conn in list(connections)),
        return_exceptions=True,
    )


async def _freeze_gc(app: web.Application) -> AsyncIterator[None]:
    """Keep the garbage collector off the long-lived heap: once everything is open, and then
    every ``gc_freeze_s``, what survived is frozen (``gc.freeze()``, O(1)): out of every later
    collection's sight, freed as usual when its reference count drops. Without it the oldest
    generation's collections walk every room, frame and connection — at 10,000 players 0.4-1 s
    stalls every few seconds. Every ``gc_collect_s`` the heap is unfrozen and collected whole,
    once, for the reference cycles that became garbage after they were frozen. The young
    generation's threshold is ``gc_young`` (50,000; Python's 700 is crossed by the moves in flight
    alone, and each young collection walks them all); the young generations are collected just
    before each freeze instead, so that the cycles made since the last one are freed, not frozen."""
    settings = app[keys.SETTINGS]
    release_transport_cycles()  # (a cycle a closed connection leaves holds all of it until a collection)
    _YOUNG_THRESHOLDS.append(settings.gc_young)  # (Settings.gc_young says why)
    if len(_YOUNG_THRESHOLDS) == 1:
        _PROCESS_THRESHOLDS[:] = gc.get_threshold()
    thresholds = _PROCESS_THRESHOLDS
    gc.set_threshold(settings.gc_young, thresholds[1], thresholds[2])
    gc.collect()
    gc.freeze()
    task = None
    if settings.gc_freeze_s > 0:
        keep = _keep_frozen(settings.gc_freeze_s, settings.gc_collect_s, settings.gc_freeze_light_s)
        task = asyncio.get_running_loop().create_task(keep)
    yield
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # the thresholds are the process's: an application still running keeps its own, and the
    # last one to close gives back what the process had
    _YOUNG_THRESHOLDS.remove(settings.gc_young)
    if _YOUNG_THRESHOLDS:
        gc.set_threshold(_YOUNG_THRESHOLDS[-1], thresholds[1], thresholds[2])
    else:
        gc.set_threshold(*thresholds)


#: The young thresholds of the applications running in this process, oldest first, and the
#: thresholds the process had before the first of them started.
_YOUNG_THRESHOLDS: list[int] = []
_PROCESS_THRESHOLDS: list[int] = []


#: A process that used less than this share of a core (its CPU time, all threads, over the wall
#: time) since the last freeze (smoothed) freezes
#: every ``--gc-freeze-light`` (Settings.gc_freeze_light_s says why); at or above it, every
#: ``--gc-freeze``. At 10,000 players a human's pace used 0.62-0.71 of the core, 5,000 moves/s
#: 0.98-0.99 (saturated).
LIGHT_LOAD_SHARE = 0.9


def freeze_interval(load: float, every_s: float, light_every_s: float) -> float:
    """The time to the next freeze for a process whose smoothed share of a core is ``load``."""
    if light_every_s <= 0 or light_every_s >= every_s or load >= LIGHT_LOAD_SHARE:
        return every_s
    return light_every_s


async def _keep_frozen(every_s: float, collect_every_s: float, light_every_s: float = 0.0) -> None:
    loop = asyncio.get_running_loop()
    next_collect = loop.time() + collect_every_s
    load: float | None = None  # the process's share of a core, smoothed; unknown until the first freeze
    cpu, wall = time.process_time(), loop.time()
    while True:
        await asyncio.sleep(every_s if load is None else freeze_interval(load, every_s, light_every_s))
        cpu_now, wall_now = time.process_time(), loop.time()
        share = (cpu_now - cpu) / max(wall_now - wall, 1e-3)
        cpu, wall = cpu_now, wall_now
        load = share if load is None else (load + share) / 2
        if collect_every_s > 0 and loop.time() >= next_collect:
            next_collect = loop.time() + collect_every_s
            gc.unfreeze()
            started = loop.time()
            found = gc.collect()
            log.info("gc: full collection, %d unreachable objects, %.0f ms", found, 1000 * (loop.time() - started))
        else:
            # freezing resets the young count: with a high --gc-young a young collection may never
            # come by itself, and every cycle made since the last freeze would be frozen with the rest
            # (aiohttp leaves some: a refused request's exception, a 405, an unparsable request)
            gc.collect(1)
        gc.freeze()


def create_app(settings: Settings | None = None) -> web.Application:
    """The whole server as an aiohttp application (nothing opens until it starts)."""
    settings = settings or Settings.from_env()
    cap = 0 if settings.trust_forwarded else tcp_limit(settings.max_connections_per_address)
    guard = ConnectionGuard(head_timeout_s=settings.head_timeout_s, limit=cap)
    app = web.Application(
        middlewares=[started_middleware(guard), rest.security_headers, rest.api_errors], client_max_size=64 * 1024
    )
    app[keys.SETTINGS] = settings
    app[keys.GUARD] = guard
    connections: set[Connection] = set()
    app[keys.CONNECTIONS] = connections
    app[keys.FLUSHER] = Flusher()
    app[keys.METRICS] = Metrics()
    app[keys.ADDRESSES] = AddressCount(settings.max_connections_per_address)
    app[keys.ACCOUNT_LIMITS] = CreatorLimits(settings.account_burst, settings.account_per_min / 60.0)
    app[keys.THROTTLE] = Throttle(logging.getLogger("halfmoon_server.rest"))
    app.cleanup_ctx.append(open_files_ctx)
    app.cleanup_ctx.append(lag_probe_ctx)
    app.cleanup_ctx.append(gc_probe_ctx)
    app.cleanup_ctx.append(_storage_ctx)
    app.cleanup_ctx.append(_executor_ctx)
    app.cleanup_ctx.append(_rooms_ctx)
    app.cleanup_ctx.append(connections_ctx)
    app.cleanup_ctx.append(relays_ctx)
    app.cleanup_ctx.append(_freeze_gc)  # last: freezes what the others opened
    app.on_shutdown.append(_drain)
    app.router.add_get(WEBSOCKET_PATH, websocket_handler)
    app.router.add_get("/metrics", metrics_handler)
    rest.add_routes(app)
    accounts.add_routes(app)
    static.add_routes(app)
    return app
