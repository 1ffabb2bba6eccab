"""What the application runs for as long as it lives (aiohttp's ``cleanup_ctx``): the guard of
the open-file limit (:class:`~halfmoon_server.web.connection.OpenFiles`) and the look after the
connections (:func:`~halfmoon_server.web.ws.look_after_connections`).

Async generators, kept apart from the modules on a frame's path (``connection``, ``ws``): mypyc
compiles no async generator, and ``bench/compiled_tree.py`` compiles those modules.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from halfmoon_server.web import keys
from halfmoon_server.web.connection import OPEN_FILES
from halfmoon_server.web.ws import look_after_connections


async def open_files_ctx(app: web.Application) -> AsyncIterator[None]:
    """Install :data:`OPEN_FILES` on the loop for the application's life (``cleanup_ctx``)."""
    loop = asyncio.get_running_loop()
    guard = OPEN_FILES
    guard.refill()
    installed = loop.get_exception_handler() != guard.handle  # not by another application already
    if installed:
        guard.previous = loop.get_exception_handler()
        loop.set_exception_handler(guard.handle)
    watcher = loop.create_task(guard.watch())
    yield
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    if installed and loop.get_exception_handler() == guard.handle:
        loop.set_exception_handler(guard.previous)


async def connections_ctx(app: web.Application) -> AsyncIterator[None]:
    """Run :func:`look_after_connections` for the application's life (``cleanup_ctx``)."""
    task = asyncio.get_running_loop().create_task(look_after_connections(app, app[keys.SETTINGS]))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
