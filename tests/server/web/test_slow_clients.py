"""Slow and idle clients hold nothing for long, and a client that goes away is no server error.

Request bodies are read within ``body_timeout_s`` (a stalled or trickling body is answered 408
and the connection closed); a client that closes mid-body is one info line and a 400, never a
500 or a traceback, and creates nothing; a body aiohttp cannot decode is a 400. A WebSocket that
stays outside every room for ``join_timeout_s`` is closed with 4002. The per-address cap lets N
WebSockets in, closes the next with 1013, lets one in again once one closes, and counts the
forwarded address behind a trusted proxy (and only then).

The body tests talk raw HTTP over ``asyncio.open_connection`` to a server run as ``halfmoon
serve`` runs it (``handler_cancellation`` off, aiohttp's default) and, for the drop, also as the
test server runs it (on: the client going away cancels the handler).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from halfmoon_server import create_app
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from halfmoon_server.web import ws as ws_module
from halfmoon_server.web.ws import CLOSE_NO_ROOM, CLOSE_TRY_LATER
from tests.server.instances import Instance
from tests.server.support import make_settings

HEAD = b"POST /api/rooms HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


class Served:
    """A running app on 127.0.0.1 and the aiohttp runner around it."""

    def __init__(self, runner: web.AppRunner, port: int) -> None:
        self.runner = runner
        self.port = port
        self.app = runner.app
        self.base = f"http://127.0.0.1:{port}"
        self.ws = f"ws://127.0.0.1:{port}/ws"

    async def settled(self) -> None:
        """Wait (at most 5 s) until the server holds no HTTP connection: every handler is done."""
        server = self.runner.server
        assert server is not None
        async with asyncio.timeout(5):
            while server.connections:
                await asyncio.sleep(0.01)


@asynccontextmanager
async def serve(tmp_path: Path, *, handler_cancellation: bool = False, **changes: Any) -> AsyncIterator[Served]:
    """The whole server on a free port, with ``web.run_app``'s defaults (``handler_cancellation``
    off, as ``halfmoon serve`` runs) unless told otherwise."""
    settings = make_settings(tmp_path / "data", ManualClock(1_795_900_000_000), **changes)
    runner = web.AppRunner(create_app(settings), handler_cancellation=handler_cancellation)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield Served(runner, runner.addresses[0][1])
    finally:
        await runner.cleanup()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], dict[str, Any]]:
    """One HTTP response off a raw socket: status, headers (lower-case names) and its JSON body."""
    async with asyncio.timeout(5):
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines if ":" in line)}
        body = await reader.readexactly(int(headers["content-length"]))
    return int(status_line.split()[1]), headers, json.loads(body)


def trouble(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Records a client's behaviour must never cause: warnings, errors, tracebacks."""
    return [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


@pytest.mark.parametrize("handler_cancellation", [False, True], ids=["run_app", "cancelling"])
async def test_a_client_that_closes_mid_body_is_a_quiet_400_and_creates_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, handler_cancellation: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve(tmp_path, handler_cancellation=handler_cancellation) as served:
        for _ in range(5):
            _, writer = await asyncio.open_connection("127.0.0.1", served.port)
            writer.write(HEAD + b"Content-Length: 100\r\n\r\n" + b'{"code": "HM1-N-')  # 16 of 100 bytes
            await writer.drain()
            await asyncio.sleep(0.05)  # the handler is reading the body by now
            writer.close()
            await served.settled()
        assert served.app[keys.LOBBY].rooms == {}, "nothing was created"
        assert trouble(caplog) == []
        access = [r.getMessage() for r in caplog.records if r.name == "aiohttp.access"]
        assert not any('" 500 ' in line for line in access), access
        if not handler_cancellation:  # the handler ran to its end: a 400 in the access log, and one line
            assert len([line for line in access if "POST /api/rooms" in line and '" 400 ' in line]) == 5, access
            said = [r for r in caplog.records if r.name == "halfmoon_server.rest"]
            assert [r.levelname for r in said] == ["INFO"] * 5
            assert all("closed the connection before sending its body" in r.getMessage() for r in said)
        async with aiohttp.ClientSession() as http:  # and the server serves the next client as ever
            answer = await http.post(f"{served.base}/api/rooms", json={})
            assert answer.status == 201


@pytest.mark.parametrize("trickle", [False, True], ids=["stalled", "trickling"])
async def test_a_body_that_does_not_arrive_in_time_is_answered_408_and_the_connection_closed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, trickle: bool
) -> None:
    async with serve(tmp_path, body_timeout_s=0.3) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(HEAD + b"Content-Length: 100\r\n\r\n" + b"{")
        await writer.drain()

        async def dribble() -> None:  # a byte every 50 ms: it would take 5 s, the timeout is 0.3 s
            for _ in range(98):
                await asyncio.sleep(0.05)
                writer.write(b" ")

        dribbling = asyncio.create_task(dribble()) if trickle else None
        status, headers, body = await read_response(reader)
        if dribbling is not None:
            dribbling.cancel()
        assert status == 408
        assert body["error"]["code"] == "timeout" and "0.3 s" in body["error"]["message"]
        assert headers["connection"].lower() == "close"
        async with asyncio.timeout(5):  # at once: aiohttp's lingering (10 s) would read on first
            assert await reader.read() == b"", "the server closed the connection after its answer"
        writer.close()
        await served.settled()
        assert served.app[keys.LOBBY].rooms == {}
        assert trouble(caplog) == []


async def test_a_complete_body_sent_in_pieces_within_the_time_is_read_whole(tmp_path: Path) -> None:
    async with serve(tmp_path, body_timeout_s=5) as served:
        body = b'{"code": "HM1-N-AAAAAAB"}'
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(HEAD + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        for k in range(0, len(body), 5):
            writer.write(body[k : k + 5])
            await writer.drain()
            await asyncio.sleep(0.01)
        status, _, answer = await read_response(reader)
        writer.close()
        assert status == 201 and answer["code"] == "HM1-N-AAAAAAB"


@pytest.mark.parametrize(
    ("framing", "payload", "status"),
    [
        # a body that does not inflate: aiohttp's payload fails, the handler says so
        (b"Content-Encoding: gzip\r\nContent-Length: 14\r\n", b"this is no gz!", b"400"),
        # a chunk size that is no number, once the handler reads: aiohttp never fails the payload,
        # so without the timeout the handler would wait for ever
        (b"Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n", b"408"),
    ],
    ids=["bad-gzip", "broken-chunk"],
)
async def test_a_body_that_cannot_be_decoded_is_refused_and_nothing_is_logged_as_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, framing: bytes, payload: bytes, status: bytes
) -> None:
    async with serve(tmp_path, body_timeout_s=0.3) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(HEAD + framing + b"\r\n")
        await writer.drain()
        await asyncio.sleep(0.05)  # the handler is reading the body by now
        writer.write(payload)
        async with asyncio.timeout(5):
            raw = await reader.read()  # the whole answer, then the server's close
        writer.close()
        assert raw.startswith(b"HTTP/1.1 " + status + b" "), raw[:200]
        assert b'"code":"' + (b"bad_body" if status == b"400" else b"timeout") + b'"' in raw
        await served.settled()
        assert served.app[keys.LOBBY].rooms == {}
        assert trouble(caplog) == []


async def test_a_websocket_that_joins_no_room_is_closed_with_4002(tmp_path: Path) -> None:
    async with serve(tmp_path, join_timeout_s=0.3) as served, aiohttp.ClientSession() as http:
        idle = await http.ws_connect(served.ws)
        player = await http.ws_connect(served.ws)
        await player.send_json({"type": "solo", "v": 1, "name": "Ada"})
        assert (await player.receive_json(timeout=5))["type"] == "welcome"
        message = await idle.receive(timeout=5)
        assert message.type is aiohttp.WSMsgType.CLOSE
        assert (message.data, message.extra) == (CLOSE_NO_ROOM, "no room joined within 0.3 s")
        await asyncio.sleep(0.7)  # two more looks of the player's watchdog: it is in a room, it stays
        await player.send_json({"type": "ping", "v": 1})
        assert (await player.receive_json(timeout=5))["type"] == "pong"
        async with asyncio.timeout(5):
            while len(served.app[keys.CONNECTIONS]) != 1:  # the idle one is gone, and so is its count
                await asyncio.sleep(0.01)
        assert served.app[keys.ADDRESSES].counts == {"127.0.0.1": 1}
        await player.close()


async def test_a_websocket_that_left_its_room_is_closed_too(tmp_path: Path) -> None:
    async with serve(tmp_path, join_timeout_s=0.3) as served, aiohttp.ClientSession() as http:
        ws = await http.ws_connect(served.ws)
        await ws.send_json({"type": "solo", "v": 1, "name": "Ada"})
        assert (await ws.receive_json(timeout=5))["type"] == "welcome"
        await asyncio.sleep(0.4)  # past the first look, while in the room
        await ws.send_json({"type": "leave", "v": 1})
        while True:
            message = await ws.receive(timeout=5)
            if message.type is not aiohttp.WSMsgType.TEXT:
                break
        assert message.type is aiohttp.WSMsgType.CLOSE and message.data == CLOSE_NO_ROOM


async def test_n_connections_per_address_then_1013_then_one_again_once_one_closes(tmp_path: Path) -> None:
    async with serve(tmp_path, max_connections_per_address=3) as served, aiohttp.ClientSession() as http:
        held = [await http.ws_connect(served.ws) for _ in range(3)]
        for ws in held:
            await ws.send_json({"type": "ping", "v": 1})
            assert (await ws.receive_json(timeout=5))["type"] == "pong", "each of the N is served"
        refused = await http.ws_connect(served.ws)
        message = await refused.receive(timeout=5)
        assert message.type is aiohttp.WSMsgType.CLOSE
        assert (message.data, message.extra) == (CLOSE_TRY_LATER, "too many connections from this address")
        assert served.app[keys.ADDRESSES].counts == {"127.0.0.1": 3}, "the refused one counts for nothing"
        await held.pop().close()
        async with asyncio.timeout(5):
            while served.app[keys.ADDRESSES].counts != {"127.0.0.1": 2}:
                await asyncio.sleep(0.01)
        again = await http.ws_connect(served.ws)
        await again.send_json({"type": "ping", "v": 1})
        assert (await again.receive_json(timeout=5))["type"] == "pong", "a place came free"
        for ws in [*held, again]:
            await ws.close()


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-proxy", "untrusted"])
async def test_behind_a_trusted_proxy_the_forwarded_address_is_what_counts(tmp_path: Path, trusted: bool) -> None:
    async with (
        serve(tmp_path, max_connections_per_address=2, trust_forwarded=trusted) as served,
        aiohttp.ClientSession() as http,
    ):

        async def connect(forwarded: str) -> tuple[aiohttp.ClientWebSocketResponse, int | None]:
            """A WebSocket as the proxy opens it, and its close code if it was refused."""
            ws = await http.ws_connect(served.ws, headers={"X-Forwarded-For": f"198.51.100.1, {forwarded}"})
            await ws.send_json({"type": "ping", "v": 1})
            message = await ws.receive(timeout=5)
            return ws, (message.data if message.type is aiohttp.WSMsgType.CLOSE else None)

        opened = [await connect("203.0.113.7") for _ in range(2)]
        assert [code for _, code in opened] == [None, None]
        same, same_code = await connect("203.0.113.7")
        other, other_code = await connect("203.0.113.8")
        if trusted:  # every connection comes from the proxy's socket; the forwarded address is the client
            assert (same_code, other_code) == (CLOSE_TRY_LATER, None)
            assert served.app[keys.ADDRESSES].counts == {"203.0.113.7": 2, "203.0.113.8": 1}
        else:  # a header anyone can send changes nothing: all of them come from 127.0.0.1
            assert (same_code, other_code) == (CLOSE_TRY_LATER, CLOSE_TRY_LATER)
            assert served.app[keys.ADDRESSES].counts == {"127.0.0.1": 2}
        for ws in [*(ws for ws, _ in opened), same, other]:
            await ws.close()


def _await_chain(task: asyncio.Task[Any]) -> list[str]:
    """The names of the coroutines a task is suspended in, outermost first."""
    names: list[str] = []
    awaited: Any = task.get_coro()
    while awaited is not None and hasattr(awaited, "cr_code"):
        names.append(awaited.cr_code.co_name)
        awaited = awaited.cr_await
    return names


@pytest.mark.interpreted  # (reads the handler's Python frames, which compiled code has none of)
async def test_a_websocket_handler_runs_under_no_middleware_coroutine_and_refusals_keep_their_headers(
    tmp_path: Path,
) -> None:
    """Every coroutine in a WebSocket handler's call chain lives as long as the socket and is
    resumed on every message it sends: the middlewares hand ``/ws`` straight on. A refused
    handshake still carries the security headers, and REST answers still get them too."""
    async with serve(tmp_path) as served, aiohttp.ClientSession() as http:
        ws = await http.ws_connect(served.ws)
        await ws.send_json({"type": "ping", "v": 1})
        assert (await ws.receive_json(timeout=5))["type"] == "pong"
        chains = [_await_chain(t) for t in asyncio.all_tasks()]
        handler = [chain for chain in chains if "websocket_handler" in chain]
        assert len(handler) == 1, chains
        assert not {"started", "security_headers", "api_errors", "_with_security_headers", "_with_api_errors"} & set(
            handler[0]
        ), handler[0]
        assert not [chain for chain in chains if "close_when_roomless" in chain], "no watchdog task per connection"
        await ws.close()

        for headers, status in (({"Origin": "http://evil.example"}, 403), ({}, 400)):
            if status == 403:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(served.ws, headers=headers)
                assert refused.value.status == 403
                assert refused.value.headers is not None
                assert refused.value.headers["X-Frame-Options"] == "DENY"
            else:  # a plain GET of /ws: no upgrade asked for
                async with http.get(served.base + "/ws") as response:
                    assert response.status == 400
                    assert response.headers["X-Frame-Options"] == "DENY"
        async with http.get(served.base + "/api/daily") as response:
            assert response.headers["X-Frame-Options"] == "DENY"


async def test_a_silent_websocket_is_pinged_and_one_that_never_answers_is_dropped(tmp_path: Path) -> None:
    """A client silent for ``ping_after_s`` gets a ping; one that answers (aiohttp's client
    answers pings by itself while it reads) stays, one that sends nothing more is dropped within
    half that again (and a look's period) — a peer gone without a close holds no socket for long."""
    async with serve(tmp_path, ping_after_s=0.4, join_timeout_s=60) as served, aiohttp.ClientSession() as http:
        answering = await http.ws_connect(served.ws)  # autoping: its pongs are sent for it
        silent = await http.ws_connect(served.ws, autoping=False)
        for ws in (answering, silent):
            await ws.send_json({"type": "solo", "v": 1, "name": "Ada"})
            assert (await ws.receive_json(timeout=5))["type"] == "welcome"
        heard: list[Any] = []

        async def read() -> None:
            async for message in answering:
                heard.append(json.loads(message.data)["type"] if message.type is aiohttp.WSMsgType.TEXT else message)

        reader = asyncio.create_task(read())
        started = asyncio.get_running_loop().time()
        ping = await silent.receive(timeout=5)
        assert ping.type is aiohttp.WSMsgType.PING
        assert asyncio.get_running_loop().time() - started >= 0.3, "not before it has been silent for a while"
        closed = await silent.receive(timeout=5)  # no pong: dropped
        assert closed.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR, aiohttp.WSMsgType.CLOSE)
        assert asyncio.get_running_loop().time() - started < 2.0
        await asyncio.sleep(1.2)  # three pings' worth: the answering one stays
        await answering.send_json({"type": "ping", "v": 1})
        async with asyncio.timeout(5):
            while "pong" not in heard:
                await asyncio.sleep(0.01)
        assert len(served.app[keys.CONNECTIONS]) == 1
        await answering.close()
        await reader


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


@pytest.mark.interpreted  # (ws.in_room replaced)
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


async def _closed_by_server(reader: asyncio.StreamReader, within_s: float) -> bool:
    """Whether the server closes this connection (EOF or reset) within ``within_s``."""
    try:
        async with asyncio.timeout(within_s):
            return await reader.read(1024) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def test_one_address_cannot_hold_more_idle_connections_than_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before HTTP (halfmoon_server.web.admission): one address holds at most 2 × cap + 16 TCP
    connections, the rest closed at once; and a connection that sends no whole request head
    (nothing, or a header line now and then: slowloris) is closed after --head-timeout, so
    silent sockets cannot hold the server's descriptors. The server answers throughout."""
    cap = 2  # WebSockets per address: TCP connections per address 2 × 2 + 16 = 20
    monkeypatch.setenv("HALFMOON_MAX_CONNECTIONS_PER_ADDRESS", str(cap))
    monkeypatch.setenv("HALFMOON_HEAD_TIMEOUT_S", "1.5")
    inst = await Instance(tmp_path / "data").start()
    writers: list[asyncio.StreamWriter] = []
    try:
        readers = []
        for k in range(30):
            reader, writer = await asyncio.open_connection("127.0.0.1", inst.port)
            if k % 2:  # half send nothing, half a request line and a header, then stall (slowloris)
                writer.write(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            readers.append(reader)
            writers.append(writer)
        over = await asyncio.gather(*(_closed_by_server(reader, 0.5) for reader in readers[20:]))
        assert all(over), f"{sum(over)} of the 10 connections over the address's 20 were closed at once"
        early = await asyncio.gather(*(_closed_by_server(reader, 0.2) for reader in readers[:20]))
        assert not any(early), "the 20 within the limit are not closed before their head timeout"
        late = await asyncio.gather(*(_closed_by_server(reader, 5.0) for reader in readers[:20]))
        assert all(late), f"{sum(late)} of 20 silent or slowloris connections were closed after the head timeout"
        # the limit is free again: the server answers
        async with aiohttp.ClientSession() as http, http.get(inst.base + "/healthz") as health:
            assert health.status == 200
    finally:
        for writer in writers:
            writer.close()
        inst.stop()
