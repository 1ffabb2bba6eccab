"""Review 15b: pins of the server's own heartbeat (``look_after_connections``) — behaviours that
work now and are easy to break: any read of a client's bytes counts as heard (a client in the
middle of a large frame is not dropped while its bytes arrive), a silent spectator that answers
pings stays, and a client that stops mid-frame is dropped."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import aiohttp

from halfmoon_server.web import keys
from tests.server.web.test_slow_clients import serve


async def _raw_ws(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


async def test_a_client_trickling_a_large_frame_is_heard_and_one_that_stops_mid_frame_is_dropped(
    tmp_path: Path,
) -> None:
    async with serve(tmp_path, ping_after_s=0.4, join_timeout_s=60) as served:
        _reader, writer = await _raw_ws(served.port)
        size = 3000  # a 16-bit length frame, sent a few bytes at a time
        writer.write(bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big") + b"\x00\x00\x00\x00")
        loop = asyncio.get_running_loop()
        until = loop.time() + 1.6  # four ping periods: never silent for 0.4 s
        while loop.time() < until:
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.1)
        assert len(served.app[keys.CONNECTIONS]) == 1, "a client whose bytes keep arriving is heard"
        # it stops mid-frame: it cannot answer the ping (a pong cannot cut a frame) and goes
        async with asyncio.timeout(5):
            while served.app[keys.CONNECTIONS]:
                await asyncio.sleep(0.05)
        writer.close()


async def test_a_silent_spectator_that_answers_pings_stays(tmp_path: Path) -> None:
    async with serve(tmp_path, ping_after_s=0.3, join_timeout_s=60) as served, aiohttp.ClientSession() as http:
        async with http.post(served.base + "/api/rooms", json={}) as response:
            room = (await response.json())["room"]
        player = await http.ws_connect(served.ws)
        await player.send_json({"type": "join", "v": 1, "room": room, "name": "Ada"})
        assert (await player.receive_json(timeout=5))["type"] == "welcome"
        watcher = await http.ws_connect(served.ws)  # aiohttp's client answers pings while it reads
        await watcher.send_json({"type": "watch", "v": 1, "room": room})
        assert (await watcher.receive_json(timeout=5))["type"] == "welcome"
        seen: list[str] = []

        async def read(ws: aiohttp.ClientWebSocketResponse) -> None:
            async for message in ws:
                if message.type is aiohttp.WSMsgType.TEXT:
                    seen.append(message.json()["type"])

        readers = [asyncio.create_task(read(ws)) for ws in (player, watcher)]
        await asyncio.sleep(1.5)  # five pings' worth of silence from both
        assert not watcher.closed and not player.closed
        assert len(served.app[keys.CONNECTIONS]) == 2
        await player.close()
        await watcher.close()
        await asyncio.gather(*readers)
