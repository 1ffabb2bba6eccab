"""Regressions found by the adversarial review of the server: a host who drops in the lobby,
versions that only look like 1, binary floods, Host headers yarl cannot parse, dates in ISO
forms the API does not name, a room body sent in pieces, and a leave after the time limit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp

from halfmoon.codes import daily_code
from halfmoon_server.clock import ManualClock, utc_day
from tests.server.conftest import StartServer
from tests.server.support import WsClient

JSON = {"Content-Type": "application/json"}


async def _room(server: object) -> str:
    async with aiohttp.ClientSession() as http:
        response = await http.post(server.make_url("/api/rooms"), json={})  # type: ignore[attr-defined]
        room: str = (await response.json())["room"]
        return room


async def test_a_host_who_drops_in_the_lobby_hands_over_to_a_connected_player(start_server: StartServer) -> None:
    server = await start_server()
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("join", room=room, name="Ada")
    ada_token = (await ada.next("welcome"))["token"]
    await bob.send("join", room=room, name="Bob")
    bob_token = (await bob.next("welcome"))["token"]
    await ada.close()  # the host's page dies; she may never come back
    away = await bob.next("progress")
    assert away["player"]["id"] == "p1" and away["player"]["connected"] is False and away["host"] == "p2"
    await bob.close()  # now nobody is connected: the host stays Bob
    # Ada comes back to a lobby whose host is away: she can start it
    ada = await WsClient.connect(server, "ada2")
    await ada.send("resume", room=room, token=ada_token)
    assert (await ada.next("welcome"))["room"]["host"] == "p1"
    bob = await WsClient.connect(server, "bob2")
    await bob.send("resume", room=room, token=bob_token)
    back = await ada.next("progress")
    assert back["player"]["id"] == "p2" and back["player"]["connected"] is True and back["host"] == "p1"
    await bob.next("welcome")
    await bob.send("start")
    assert (await bob.next("error"))["code"] == "not_host"
    await ada.send("start")
    assert (await bob.next("started"))["board"] is not None
    for client in (ada, bob):
        await client.close()


async def test_a_host_drop_in_the_lobby_lets_the_others_start(start_server: StartServer) -> None:
    server = await start_server()
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await ada.close()
    assert (await bob.next("progress"))["host"] == "p2"
    await bob.send("start")
    started = await bob.next("started")
    assert started["board"] is not None
    await bob.close()


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


async def test_daily_leaderboard_dates_are_yyyy_mm_dd_only(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        for text in ("20261128", "2026-W48-6", "2026-11-28T00:00", " 2026-11-28", "2026-13-01"):
            response = await http.get(server.make_url(f"/api/daily/{text}/leaderboard"))
            assert response.status == 400, text
            assert (await response.json())["error"]["code"] == "bad_date"
        response = await http.get(server.make_url("/api/daily/2026-11-28/leaderboard"))
        assert response.status == 200 and (await response.json()) == {"ranked": True, "entries": []}


async def test_a_room_body_sent_in_pieces_is_read_whole(start_server: StartServer) -> None:
    server = await start_server()

    async def pieces() -> AsyncIterator[bytes]:
        yield b'{"code": '
        await asyncio.sleep(0.1)
        yield b'"HM1-N-AAAAAAB"}'

    async with aiohttp.ClientSession() as http:
        response = await http.post(server.make_url("/api/rooms"), data=pieces(), headers=JSON)
        assert response.status == 201
        assert (await response.json())["code"] == "HM1-N-AAAAAAB"

        async def too_much() -> AsyncIterator[bytes]:
            for _ in range(5):
                yield b" " * 1000
                await asyncio.sleep(0.01)

        response = await http.post(server.make_url("/api/rooms"), data=too_much(), headers=JSON)
        assert response.status == 413 and (await response.json())["error"]["code"] == "too_large"


async def test_a_leave_after_the_time_limit_is_a_time_out(start_server: StartServer, clock: ManualClock) -> None:
    server = await start_server(tick_s=3600.0)  # the ticker never runs: only the leave sees the deadline
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await ada.send("start", time_limit_s=30)
    await ada.next("started")
    clock.advance(45_000)
    await ada.send("leave")
    over = await ada.next("game_over")
    assert over["outcome"] == "timed_out" and over["time_ms"] == 30_000
    await ada.close()


async def test_a_host_who_leaves_the_lobby_hands_over_to_a_connected_player(start_server: StartServer) -> None:
    server = await start_server()
    room = await _room(server)
    ada, bob, cy = [await WsClient.connect(server, name) for name in ("ada", "bob", "cy")]
    for client, name in ((ada, "Ada"), (bob, "Bob"), (cy, "Cy")):
        await client.send("join", room=room, name=name)
        await client.next("welcome")
    await bob.close()  # Bob (next in line) is away
    assert (await cy.next("progress"))["host"] == "p1"
    await ada.send("leave")
    left = await cy.next("player_left")
    assert left["player"]["id"] == "p1" and left["host"] == "p3"
    await cy.send("start")
    assert (await cy.next("started"))["board"] is not None
    await ada.close()
    await cy.close()


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


async def test_a_static_path_too_long_for_the_file_system_is_a_404(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        for path in ("/static/" + "a" * 4000, "/static/" + "a/" * 2000 + "x.js", "/static/../../etc/passwd"):
            response = await http.get(server.make_url(path))
            assert response.status == 404, path
        assert (await http.get(server.make_url("/healthz"))).status == 200


async def test_the_daily_code_stays_off_every_rest_answer_until_the_day_is_over(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(finished_ttl_s=1.0)
    ada = await WsClient.connect(server, "ada")
    await ada.send("daily", name="Ada")
    room = (await ada.next("welcome"))["room"]["room"]

    async def rest_texts(game: str | None) -> list[str]:
        paths = [f"/api/rooms/{room}", "/api/daily", f"/api/daily/{_today(clock)}/leaderboard"]
        if game is not None:
            paths.append(f"/api/games/{game}")
        async with aiohttp.ClientSession() as http:
            return [await (await http.get(server.make_url(path))).text() for path in paths]

    during = await rest_texts(None)
    await ada.send("give_up")
    over = await ada.next("game_over")
    assert over["code"] is None, "not even its own player learns the daily code before the day's reveal"
    code = str(daily_code(utc_day(clock.now_ms()), b"test-secret", long=True))
    assert all(code not in text for text in during)
    after = await rest_texts(over["game"])  # the attempt is over, the day is not
    assert all(code not in text for text in after), after
    assert json.loads(after[0])["code"] is None
    await ada.close()
    clock.advance(5_000)  # the finished room expires: its answer is rebuilt from the stored games
    for _ in range(100):
        if json.loads((await rest_texts(None))[0]).get("players") == []:
            break
        await asyncio.sleep(0.02)
    expired = await rest_texts(over["game"])
    assert json.loads(expired[0])["players"] == [] and all(code not in text for text in expired), expired
    clock.advance(86_400_000 + 1_800_000)  # the day is over and so is every attempt: the code is public
    async with aiohttp.ClientSession() as http:
        past = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()
        assert past["code"] == code
        assert (await http.get(server.make_url(f"/api/games/{over['game']}"))).status == 200


def _today(clock: ManualClock) -> str:
    return utc_day(clock.now_ms()).isoformat()


async def test_a_player_joining_a_lobby_whose_host_is_away_becomes_the_host(start_server: StartServer) -> None:
    server = await start_server()
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await ada.close()  # alone in the lobby, then gone
    await asyncio.sleep(0.05)
    bob = await WsClient.connect(server, "bob")
    await bob.send("join", room=room, name="Bob")
    assert (await bob.next("welcome"))["room"]["host"] == "p2"
    await bob.send("start")
    assert (await bob.next("started"))["board"] is not None
    await bob.close()
