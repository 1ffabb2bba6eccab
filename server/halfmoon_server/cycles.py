"""Reference cycles the standard library leaves behind, broken where they are made.

The server frees what it drops by reference count alone: between two full collections its garbage
collector never runs (``halfmoon_server.app._keep_frozen``), so a cycle waits, frozen, up to
``--gc-collect`` (15 minutes) to be freed. Python 3.11's asyncio makes one for every TCP
connection, WebSockets and REST requests alike: a socket transport keeps a bound method of
itself (``_read_ready_cb``), so the closed transport, its socket and its buffers are freed only
by a collection. CPython 3.12 drops that reference on close (python/cpython#100348, gh-100349);
:func:`release_transport_cycles` backports it, once per process, on the versions without it.
``tests/server/test_gc_cycles.py`` holds a real server to making no cyclic garbage at all.
"""

from __future__ import annotations

import sys
from asyncio import selector_events
from typing import Any

_TRANSPORT: Any = selector_events._SelectorSocketTransport  # type: ignore[attr-defined]  # (private: not in typeshed)


def release_transport_cycles() -> bool:
    """Make a closed socket transport drop its bound ``_read_ready_cb`` (the cycle), once its
    connection is lost and no read can come any more. True if this Python needed it (and now
    has it); idempotent."""
    if sys.version_info >= (3, 12) or getattr(_TRANSPORT, "_halfmoon_releases_cycle", False):
        return sys.version_info < (3, 12)
    lost = _TRANSPORT._call_connection_lost

    def _call_connection_lost(self: Any, exc: BaseException | None) -> None:
        try:
            lost(self, exc)
        finally:
            # the reader was removed before this call was scheduled: _read_ready never runs again
            self._read_ready_cb = None

    _TRANSPORT._call_connection_lost = _call_connection_lost
    _TRANSPORT._halfmoon_releases_cycle = True
    return True
