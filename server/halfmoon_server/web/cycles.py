"""Reference cycles made on the server's everyday paths, broken where they are made.

A reference cycle is freed only by a garbage collection, and the server keeps collections rare
and small (``halfmoon_server.web.app._freeze_gc``: the heap is frozen every ``--gc-freeze``, its young
generations collected just before). Each cycle a connection leaves holds that whole connection —
transport, socket, buffers, request, WebSocket — until then, and makes that collection longer.
So the cycles the standard library and aiohttp make on a connection's common paths are broken
here (``tests/server/system/test_gc_cycles.py`` and ``test_gc_cycles_dropped_and_refused.py`` count what is left):

- :func:`release_transport_cycles`: asyncio's socket transport keeps a bound method of itself
  (``_read_ready_cb``; on Python 3.12 and later ``_write_ready`` too). CPython 3.12 drops them in
  ``close()`` (python/cpython#100348, gh-100349), which a transport ended by ``abort()`` or a reset
  never calls; this drops them once the connection is lost, however it ended, on every version.
- :func:`forget_traceback`: an exception kept after it was handled (aiohttp's WebSocket keeps the
  one its failed close met) holds, through its traceback, the frames that hold it.

(A refusal the race decides when a command is applied reaches its sender without a future in
between for the same reason: ``halfmoon_server.rooms.room.Room.submit``.)
"""

from __future__ import annotations

from asyncio import selector_events
from typing import Any

_TRANSPORT: Any = selector_events._SelectorSocketTransport  # type: ignore[attr-defined]  # (private: not in typeshed)


def release_transport_cycles() -> bool:
    """Make a socket transport drop its bound methods of itself once its connection is lost (no
    read or write can come any more). True the first time (it was installed); idempotent."""
    if getattr(_TRANSPORT, "_halfmoon_releases_cycle", False):
        return False
    lost = _TRANSPORT._call_connection_lost

    def _call_connection_lost(self: Any, exc: BaseException | None) -> None:
        try:
            lost(self, exc)
        finally:
            # the reader and the writer were removed before this call was scheduled
            self._read_ready_cb = None
            self.__dict__.pop("_write_ready", None)  # (3.12+: a bound method kept on the instance)

    _TRANSPORT._call_connection_lost = _call_connection_lost
    _TRANSPORT._halfmoon_releases_cycle = True
    return True


def forget_traceback(exc: BaseException | None) -> None:
    """Drop the tracebacks of ``exc`` and of the exceptions it was raised from or during: the
    exception stays (its type, message, attributes), the frames it held are let go."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = None
        exc = exc.__cause__ or exc.__context__
