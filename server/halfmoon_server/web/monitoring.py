"""The application's monitoring: ``GET /metrics`` and the probes that feed
:class:`~halfmoon_server.web.metrics.Metrics` from the running app — the event loop's lag, every
garbage collection's pause, and (at each scrape) its connections, rooms and recording backlog."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import AsyncIterator

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from halfmoon_server.web import keys
from halfmoon_server.web.metrics import LAG_PROBE_S


async def metrics_handler(request: web.Request, app: web.Application | None = None) -> web.Response:
    """``GET /metrics``: the Prometheus text format, of ``app`` (a listener of its own, apart from
    the application's port) or of the request's own application — there only with
    ``metrics_on_app_port`` (else 404, as for any path the server does not serve)."""
    if app is None:
        app = request.app
        if not app[keys.SETTINGS].metrics_on_app_port:
            raise web.HTTPNotFound()
    body = app[keys.METRICS].render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def lag_probe_ctx(app: web.Application) -> AsyncIterator[None]:
    """A ``cleanup_ctx``: measure how late the event loop wakes a timer, every ``LAG_PROBE_S``."""
    metrics = app[keys.METRICS]
    metrics.watch(
        lambda: app.get(keys.CONNECTIONS, ()),
        lambda: lobby.rooms.values() if (lobby := app.get(keys.LOBBY)) is not None else (),
        lambda: len(tasks) if (tasks := app.get(keys.TASKS)) is not None else 0,
    )

    async def probe() -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(LAG_PROBE_S)
            lag = max(0.0, loop.time() - start - LAG_PROBE_S)
            metrics.loop_lag.set(lag)
            metrics.loop_lag_hist.observe(lag)

    task = asyncio.get_running_loop().create_task(probe())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def gc_probe_ctx(app: web.Application) -> AsyncIterator[None]:
    """A ``cleanup_ctx``: time every garbage collection (``gc.callbacks``) into
    ``halfmoon_gc_pause_seconds``. A collection stops everything: the server freezes its heap
    (``--gc-freeze``) so that none should take long; this shows whether that holds."""
    metrics = app[keys.METRICS]
    by_generation = [metrics.gc_pauses.labels(str(generation)) for generation in range(3)]
    collected = [metrics.gc_collected.labels(str(generation)) for generation in range(3)]
    clock = time.perf_counter
    started = [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = clock()
        else:
            generation = min(info["generation"], 2)
            by_generation[generation].observe(clock() - started[0])
            if info["collected"]:
                collected[generation].inc(info["collected"])

    gc.callbacks.append(timed)
    yield
    gc.callbacks.remove(timed)
