"""halfmoon_server.cycles: a closed socket transport is freed by its reference count alone."""

from __future__ import annotations

import asyncio
import gc
import glob
import os
import shutil
import subprocess
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


#: Run by another interpreter: how many server transports ended by ``abort()`` are still alive,
#: with the collector off, once :func:`~halfmoon_server.web.cycles.release_transport_cycles` is on.
_ABORTED_TRANSPORTS = """
import asyncio, gc, weakref
from halfmoon_server.web.cycles import release_transport_cycles

class Keep(asyncio.Protocol):
    refs = []
    def connection_made(self, transport):
        self.refs.append(weakref.ref(transport))

async def main():
    release_transport_cycles()
    server = await asyncio.get_running_loop().create_server(Keep, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    gc.disable()
    for _ in range(6):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"x")
        await writer.drain()
        await asyncio.sleep(0.01)
        transport = Keep.refs[-1]()
        transport.abort()  # what Connection.drop, the connection guard and a reset do
        del transport
        await asyncio.sleep(0.01)
        writer.close()
        try:
            await writer.wait_closed()
        except ConnectionError:
            pass
        del reader, writer
    await asyncio.sleep(0.05)
    print(sum(ref() is not None for ref in Keep.refs))
    gc.enable()
    server.close()

asyncio.run(main())
"""


def _later_pythons() -> list[str]:
    """Interpreters of Python 3.12 and later found on this machine (PATH, pyenv)."""
    found = {shutil.which(f"python3.{minor}") for minor in range(12, 16)}
    found |= set(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    usable = []
    for path in sorted(p for p in found if p):
        try:  # (a pyenv shim on PATH may name a version that is not installed)
            check = subprocess.run([path, "-c", "import sys; assert sys.version_info >= (3, 12)"], timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if check.returncode == 0:
            usable.append(path)
    return usable


@pytest.mark.skipif(not _later_pythons(), reason="no Python 3.12 or later on this machine")
def test_an_aborted_transport_is_freed_by_its_reference_count_on_python_312_and_later() -> None:
    """pyproject says Python 3.11 to 3.13. CPython 3.12 breaks the transport's cycle in
    ``close()`` only, and :func:`~halfmoon_server.web.cycles.release_transport_cycles` does nothing
    there; a transport ended by ``abort()`` (``Connection.drop``: a slow client, a heartbeat
    unanswered; the connection guard's refusals) or by a reset (``_force_close``) never calls
    ``close()``. On every supported Python such a transport must be freed by its reference count,
    as it is on 3.11 with the backport (which hooks ``_call_connection_lost``, reached both ways)."""
    alive = {}
    for python in _later_pythons():
        out = subprocess.run(
            [python, "-c", _ABORTED_TRANSPORTS],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "server")},  # cycles.py imports no third party
        )
        assert out.returncode == 0, out.stderr
        alive[python] = int(out.stdout)
    assert all(n == 0 for n in alive.values()), f"aborted transports left to the collector, of 6: {alive}"
