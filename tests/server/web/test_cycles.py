"""halfmoon_server.cycles: a closed socket transport is freed by its reference count alone."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from typing import ClassVar

import pytest

from halfmoon_server.web.cycles import release_transport_cycles
from tests.conftest import ROOT


class _Keep(asyncio.Protocol):
    """A server protocol that remembers its transport weakly, and closes on the peer's close."""

    transports: ClassVar[list[weakref.ref[asyncio.BaseTransport]]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transports.append(weakref.ref(transport))

    def connection_lost(self, exc: Exception | None) -> None:
        pass


async def closed_transports_left(connections: int) -> int:
    """Open and close ``connections`` TCP connections to a loopback server (each side closing once),
    with the collector off; how many of the server's transports are still alive afterwards."""
    _Keep.transports = []
    server = await asyncio.get_running_loop().create_server(_Keep, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    gc.disable()
    try:
        for n in range(connections):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"x")
            await writer.drain()
            if n % 2:  # the server closes this one; the client the other
                await asyncio.sleep(0.01)
                transport = _Keep.transports[-1]()
                assert transport is not None
                transport.close()
                del transport
            writer.close()
            await writer.wait_closed()
            del reader, writer
        await asyncio.sleep(0.05)  # every connection_lost has run
        return sum(ref() is not None for ref in _Keep.transports)
    finally:
        gc.enable()
        server.close()
        await server.wait_closed()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="CPython 3.12 breaks this cycle itself")
async def test_python_311s_closed_transports_are_cyclic_garbage_without_the_backport() -> None:
    """The cycle is asyncio's (what the backport is for); shown in a fresh interpreter, where
    nothing has applied :func:`release_transport_cycles` yet."""
    script = "import asyncio, tests.server.web.test_cycles as t\nprint(asyncio.run(t.closed_transports_left(6)))\n"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    assert int(out) == 6  # every one of them waits for a collection


async def test_with_the_backport_a_closed_transport_is_freed_at_once() -> None:
    release_transport_cycles()
    release_transport_cycles()  # idempotent
    assert await closed_transports_left(6) == 0
