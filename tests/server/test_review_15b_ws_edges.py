"""Review 15b: the /ws bypass of the middlewares and the one task that looks after connections.

- A non-GET request to /ws is refused by aiohttp's router (405) before any handler runs; the
  middlewares now hand /ws "straight on", so that answer no longer gets the security headers
  every other answer (errors included) carries.
- ``look_after_connections`` has no guard around a connection's look: one exception ends the
  task, and with it every heartbeat and every roomless close, for the life of the process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from halfmoon_server.web import ws as ws_module
from halfmoon_server.web.ws import CLOSE_NO_ROOM
from tests.server.web.test_slow_clients import serve


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
async def test_a_non_get_request_to_ws_still_carries_the_security_headers(tmp_path: Path, method: str) -> None:
    async with serve(tmp_path) as served, aiohttp.ClientSession() as http:
        async with http.request(method, served.base + "/ws") as response:
            assert response.status == 405
            assert response.headers.get("X-Frame-Options") == "DENY", dict(response.headers)
        # the same refusal on any other path has them (the invariant the middleware promises)
        async with http.request(method, served.base + "/metrics") as response:
            assert response.status == 405
            assert response.headers.get("X-Frame-Options") == "DENY"


async def test_one_failing_look_does_not_stop_the_roomless_closes_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug hit once while looking at one connection (here: ``in_room`` raising once) must not
    end every later look: a roomless socket opened afterwards is still closed with 4002."""
    real = ws_module.in_room
    failures = [RuntimeError("a bug hit once in a look")]

    def flaky_in_room(app: object, conn: object) -> bool:
        if failures:
            raise failures.pop()
        return real(app, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(ws_module, "in_room", flaky_in_room)
    async with serve(tmp_path, join_timeout_s=0.2) as served, aiohttp.ClientSession() as http:
        first = await http.ws_connect(served.ws)
        async with asyncio.timeout(5):
            while failures:  # the first look met the bug
                await asyncio.sleep(0.01)
        second = await http.ws_connect(served.ws)  # joins nothing
        try:
            message = await second.receive(timeout=3)
            assert message.type is aiohttp.WSMsgType.CLOSE and message.data == CLOSE_NO_ROOM
        finally:
            await first.close()
            await second.close()
