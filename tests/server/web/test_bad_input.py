"""Bad input at the boundary: every malformed, unknown, oversized, flooding or out-of-turn message
gets an explicit error or a clean close with a reason — never a crash, never a change to anyone's
game, never a traceback on the wire. And a client that stops reading is dropped, not waited for."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import struct
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from halfmoon.game import Game
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.delegating import replaced
from tests.server.support import WsClient, illegal_move, won_record
from tests.server.web.test_slow_clients import serve


async def _error(client: WsClient, frame: str) -> dict[str, Any]:
    await client.ws.send_str(frame)
    return await client.next("error")


async def test_malformed_and_unknown_messages_get_explicit_errors(start_server: StartServer) -> None:
    server = await start_server()
    client = await WsClient.connect(server, "c")
    cases = [
        ("{not json", "bad_json", "not valid JSON"),
        ("[1, 2]", "bad_json", "JSON object"),
        ('{"type": "ping"}', "bad_version", "'v'"),
        ('{"type": "ping", "v": 2}', "bad_version", "'v'"),
        ('{"v": 1}', "bad_message", "'type'"),
        ('{"type": "teleport", "v": 1}', "unknown_type", "teleport"),
        ('{"type": "join", "v": 1, "room": "ABCDEF"}', "bad_message", "'name' is missing"),
        ('{"type": "join", "v": 1, "room": 7, "name": "Ada"}', "bad_message", "'room' must be a string"),
        ('{"type": "join", "v": 1, "room": "ABCDEF", "name": ""}', "bad_name", "empty"),
        ('{"type": "join", "v": 1, "room": "ABCDEF", "name": "<script>"}', "bad_name", "<"),
        ('{"type": "join", "v": 1, "room": "ABCDEF", "name": "' + "x" * 21 + '"}', "bad_name", "longer"),
        ('{"type": "join", "v": 1, "room": "ZZZZZZ", "name": "Ada"}', "no_such_room", "ZZZZZZ"),
        ('{"type": "watch", "v": 1, "room": "no"}', "no_such_room", "6 characters"),
        ('{"type": "resume", "v": 1, "room": "ABCDEF", "token": "nope"}', "bad_token", "token"),
        ('{"type": "resume", "v": 1, "room": "ABCDEF", "token": "t", "since": "x"}', "bad_message", "'since'"),
        ('{"type": "move", "v": 1, "positions": ["1"]}', "bad_message", "2 or 3"),
        ('{"type": "move", "v": 1, "positions": "1 2"}', "bad_message", "'positions'"),
        ('{"type": "move", "v": 1, "positions": ["1", "Z9"], "id": 5}', "illegal_move", "Z9"),
        ('{"type": "move", "v": 1, "positions": ["1", "2"], "id": "x"}', "bad_message", "'id'"),
        ('{"type": "move", "v": 1, "positions": ["1", "2"]}', "not_in_room", "join"),
        ('{"type": "undo", "v": 1}', "not_in_room", "join"),
        ('{"type": "start", "v": 1}', "not_in_room", "join"),
        ('{"type": "leave", "v": 1}', "not_in_room", "join"),
        ('{"type": "solo", "v": 1, "name": "Ada", "code": "HM1-Q-AAAAAAA"}', "bad_code", "kind"),
        ('{"type": "solo", "v": 1, "name": "Ada", "code": "HM1-D-AAAAAAA"}', "bad_code", "daily"),
    ]
    for frame, code, words in cases:
        error = await _error(client, frame)
        assert error["code"] == code, (frame, error)
        assert words in error["message"], (frame, error)
        assert "Traceback" not in error["message"] and error["v"] == 1
    error = await _error(client, '{"type": "move", "v": 1, "positions": ["1", "Z9"], "id": 5}')
    assert error["id"] == 5 and error["reason"] == "bad_position"
    await client.ws.send_bytes(b'{"type": "ping", "v": 1}')
    assert (await client.next("error"))["code"] == "bad_json"
    await client.send("ping")
    assert (await client.next("pong"))["now"] > 0  # still connected and answering
    await client.close()


async def test_bad_input_never_changes_the_game(start_server: StartServer) -> None:
    record = won_record()
    code = str(record.code)
    server = await start_server()
    player = await WsClient.connect(server, "p")
    await player.send("solo", name="Ada", code=code)
    welcome = await player.next("welcome")
    assert welcome["room"]["phase"] == "running" and welcome["room"]["code"] == code
    watcher = await WsClient.connect(server, "w")
    await watcher.send("join", room=welcome["room"]["room"], name="Late")
    assert (await watcher.next("welcome"))["role"] == "spectator"
    await watcher.send("move", positions=record.moves[0].names())  # type: ignore[union-attr]
    assert (await watcher.next("error"))["code"] == "not_playing"
    await watcher.send("start")
    assert (await watcher.next("error"))["code"] == "race_started"
    await player.send("undo")
    assert (await player.next("error"))["code"] == "nothing_to_undo"
    await player.send("move", positions=illegal_move(Game.from_code(code)).names())
    assert (await player.next("error"))["code"] == "illegal_move"
    await player.send("move", positions=["1", "1"])
    assert (await player.next("error"))["reason"] == "same_position"
    await player.send("start")
    assert (await player.next("error"))["code"] == "race_started"
    await player.send("join", room=welcome["room"]["room"], name="Again")
    assert (await player.next("error"))["code"] == "already_in_room"
    # the game is exactly as it was: the first legal move is move 1
    await player.send("move", positions=record.moves[0].names(), id=1)  # type: ignore[union-attr]
    moved = await player.next("moved")
    assert moved["moves"] == 1 and moved["score"] in (10, 15) and moved["cards_left"] in (102, 101)
    seen = await watcher.next("moved")
    assert seen["moves"] == 1 and seen["changes"] == moved["changes"]
    await player.close()
    await watcher.close()


async def test_a_server_failure_answers_internal_without_a_traceback(start_server: StartServer) -> None:
    record = won_record()
    server = await start_server()
    client = await WsClient.connect(server, "c")
    await client.send("solo", name="Ada", code=str(record.code))
    await client.next("welcome")
    (room,) = server.app[keys.LOBBY].rooms.values()
    services = room.services

    async def broken(room_id: str, entry: dict[str, object]) -> int:
        raise RuntimeError("secret internals /etc/passwd")

    room.services = dataclasses.replace(services, log=replaced(services.log, append=broken))
    await client.send("move", positions=record.moves[0].names(), id=9)  # type: ignore[union-attr]
    error = await client.next("error")
    assert error["code"] == "internal" and error["id"] == 9
    assert "secret" not in json.dumps(error) and "Traceback" not in json.dumps(error)
    room.services = services
    await client.send("ping")
    await client.next("pong")
    await client.close()


async def test_oversized_frames_close_the_connection_with_a_reason(start_server: StartServer) -> None:
    server = await start_server()
    client = await WsClient.connect(server, "c")
    await client.ws.send_str(json.dumps({"type": "ping", "v": 1, "pad": "x" * 5000}))
    await client._reader
    assert client.ws.close_code == 1009
    await client.session.close()
    # far bigger than the limit: cut off by the WebSocket layer, still 1009
    client = await WsClient.connect(server, "c2")
    await client.ws.send_str("x" * 100_000)
    await client._reader
    assert client.ws.close_code == 1009
    await client.session.close()


async def test_oversized_frame_reason_is_frame_too_big(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as session, session.ws_connect(server.make_url("/ws")) as ws:
        await ws.send_str(json.dumps({"type": "ping", "v": 1, "pad": "x" * 5000}))
        msg = await ws.receive()
        assert msg.type is aiohttp.WSMsgType.CLOSE
        assert msg.data == 1009 and msg.extra == "frame too big"


async def test_a_flood_is_rate_limited_then_closed(start_server: StartServer) -> None:
    server = await start_server(rate_burst=5, rate_per_s=0.001, rate_max_refused=10)
    async with aiohttp.ClientSession() as session, session.ws_connect(server.make_url("/ws")) as ws:
        for _ in range(40):
            if ws.closed:
                break
            await ws.send_str('{"type": "ping", "v": 1}')
        kinds: list[str] = []
        while True:
            msg = await ws.receive()
            if msg.type is not aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(msg.data)
            kinds.append(data["type"] if data["type"] == "pong" else data["code"])
        assert kinds == ["pong"] * 5 + ["rate_limited"] * 9
        assert msg.type is aiohttp.WSMsgType.CLOSE and msg.data == 1008 and msg.extra == "rate limit"


async def test_cross_origin_browser_upgrades_are_refused(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(server.make_url("/ws"), headers={"Origin": "http://evil.example"})
        assert refused.value.status == 403
        own = f"http://{server.host}:{server.port}"
        async with session.ws_connect(server.make_url("/ws"), headers={"Origin": own}) as ws:
            await ws.send_str('{"type": "ping", "v": 1}')
            assert json.loads((await ws.receive()).data)["type"] == "pong"
        async with session.ws_connect(server.make_url("/ws")) as ws:  # no Origin: not a browser
            await ws.send_str('{"type": "ping", "v": 1}')
            assert json.loads((await ws.receive()).data)["type"] == "pong"


def _masked_text_frame(payload: bytes) -> bytes:
    mask = os.urandom(4)
    header = bytes([0x81])
    if len(payload) < 126:
        header += bytes([0x80 | len(payload)])
    else:
        header += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _silent_spectator(host: str, port: int, room: str) -> socket.socket:
    """A raw WebSocket client that watches a room and then never reads again."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, port))
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(1)
    assert b" 101 " in response
    sock.sendall(_masked_text_frame(json.dumps({"type": "watch", "v": 1, "room": room}).encode()))
    return sock


async def test_a_client_that_stops_reading_is_dropped_without_stalling_the_room(
    start_server: StartServer, clock: ManualClock
) -> None:
    record = won_record()
    server = await start_server(max_send_buffer=16 * 1024, ws_send_buffer=8192)
    player = await WsClient.connect(server, "p")
    await player.send("solo", name="Ada", code=str(record.code))
    room = (await player.next("welcome"))["room"]["room"]
    assert server.port is not None
    sock = await asyncio.to_thread(_silent_spectator, str(server.host), server.port, room)
    assert (await player.next("spectators"))["count"] == 1
    first = record.moves[0].names()  # type: ignore[union-attr]
    answered = 0
    dropped = False
    for _ in range(20_000):
        await player.send("move", positions=first)
        await player.next("moved")
        await player.send("undo")
        await player.next("moved")
        answered += 2
        if any(m["type"] == "spectators" and m["count"] == 0 for m in player.history[-6:]):
            dropped = True
            break
    sock.close()
    assert dropped, f"the silent spectator was never dropped after {answered} events"
    # the room went on: the player is still answered at once
    await player.send("move", positions=first, id=1)
    assert (await player.next("moved"))["id"] == 1
    await player.close()


async def test_a_version_that_only_looks_like_1_is_refused(start_server: StartServer) -> None:
    server = await start_server()
    client = await WsClient.connect(server, "c")
    for v in ("1.0", '"1"', "true", "null"):
        await client.ws.send_str('{"type": "ping", "v": ' + v + "}")
        error = await client.next("error", "pong")
        assert error["type"] == "error" and error["code"] == "bad_version", (v, error)
    await client.send("ping")
    assert (await client.next("pong"))["now"] > 0
    await client.close()


async def test_binary_frames_count_against_the_rate_limit_and_the_size_limit(start_server: StartServer) -> None:
    server = await start_server(rate_burst=5, rate_per_s=0.001, rate_max_refused=10)
    async with aiohttp.ClientSession() as session, session.ws_connect(server.make_url("/ws")) as ws:
        for _ in range(40):
            if ws.closed:
                break
            await ws.send_bytes(b"x")
        codes: list[str] = []
        while True:
            msg = await ws.receive(timeout=5)
            if msg.type is not aiohttp.WSMsgType.TEXT:
                break
            codes.append(json.loads(msg.data)["code"])
        assert codes == ["bad_json"] * 5 + ["rate_limited"] * 9
        assert msg.type is aiohttp.WSMsgType.CLOSE and msg.data == 1008 and msg.extra == "rate limit"
    async with aiohttp.ClientSession() as session, session.ws_connect(server.make_url("/ws")) as ws:
        await ws.send_bytes(b"x" * 5000)
        msg = await ws.receive(timeout=5)
        assert msg.type is aiohttp.WSMsgType.CLOSE and msg.data == 1009 and msg.extra == "frame too big"


async def test_an_unparsable_host_header_is_refused_not_a_server_error(start_server: StartServer) -> None:
    server = await start_server()
    for host in ("x:99999", "[::1"):
        reader, writer = await asyncio.open_connection(server.host, server.port)
        writer.write(
            (
                f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                f"Origin: http://{server.host}:{server.port}\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.read(200), 5)
        writer.close()
        assert head.startswith(b"HTTP/1.1 403"), (host, head)
    async with aiohttp.ClientSession() as http:
        assert (await http.get(server.make_url("/healthz"))).status == 200


async def test_names_drawn_as_nothing_are_refused(start_server: StartServer) -> None:
    server = await start_server()
    client = await WsClient.connect(server, "c")
    for name in ("\u3164", "\u115f\u1160", "A\uffa0"):
        await client.send("solo", name=name)
        error = await client.next("error", "welcome")
        assert error["type"] == "error" and error["code"] == "bad_name", (name, error)
    await client.send("solo", name="Ådæ 名前")
    assert (await client.next("welcome"))["room"]["players"][0]["name"] == "Ådæ 名前"
    await client.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
async def test_a_non_get_request_to_ws_still_carries_the_security_headers(tmp_path: Path, method: str) -> None:
    """A non-GET request to /ws is refused by aiohttp's router (405) before any handler runs; the
    middlewares hand /ws "straight on", and that answer still gets the security headers every
    other answer (errors included) carries."""
    async with serve(tmp_path) as served, aiohttp.ClientSession() as http:
        async with http.request(method, served.base + "/ws") as response:
            assert response.status == 405
            assert response.headers.get("X-Frame-Options") == "DENY", dict(response.headers)
        # the same refusal on any other path has them (the invariant the middleware promises)
        async with http.request(method, served.base + "/metrics") as response:
            assert response.status == 405
            assert response.headers.get("X-Frame-Options") == "DENY"


async def test_an_origin_whose_host_cannot_be_decoded_is_refused_not_a_server_error(start_server: StartServer) -> None:
    """ws.origin_allowed guards only URL(origin) with its try: yarl decodes the host lazily, so
    ``url.host`` raises UnicodeError (a ValueError) outside it for 'https://xn--halfmoon.example.org'
    — the upgrade answers 500 and logs a traceback (anyone can fill the log with them). Read
    ``url.host`` inside the try."""
    server = await start_server(public_url="https://halfmoon.example.org")
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            async with http.ws_connect(server.make_url("/ws"), headers={"Origin": "https://xn--halfmoon.example.org"}):
                pass
    assert refused.value.status == 403


async def test_a_websocket_abandoned_during_its_handshake_is_no_internal_error(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A client (or nginx, for a client that left) that sends the upgrade and hangs up before
    the answer: nothing to answer, no ERROR and no traceback in the log (as 24 bots refused by
    nginx's limit_req left 23 of their sockets behind)."""
    server = await start_server()
    request = (
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    with caplog.at_level("DEBUG"):
        for _ in range(20):
            _, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(request.encode())
            writer.transport.abort()  # the request and the hang-up in one go: RST, nothing read
        await asyncio.sleep(0.3)
    errors = [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL") or r.exc_info]
    assert not errors, [r.getMessage() for r in errors]
