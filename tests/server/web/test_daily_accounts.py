"""The daily challenge and accounts (docs/security.md, "Accounts"; docs/protocol.md, "daily"): the
day's one ranked attempt is the account's, whichever of its linked player keys (devices) asks —
under any name, signed in or not, two devices asking at the same moment included; a device signed
in to the account continues the attempt another of its devices started (the same seat, board and
clock, no token handed out), and nobody else can: not an unsigned connection holding none of the
account's keys, not a device of another account, not a cookie that is no session."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from halfmoon.game import Game
from halfmoon_server.core.accounts import SESSION_COOKIE
from halfmoon_server.errors import StorageError
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.passkeys import SoftPasskey
from tests.server.support import WsClient
from tests.server.web.test_accounts import ORIGIN, RP_ID, Device


@pytest.fixture
async def server(start_server: StartServer) -> TestServer:
    # (every socket comes from 127.0.0.1: no cap per address here)
    return await start_server(public_url=ORIGIN, account_burst=1000.0, daily_ranked_per_address=0)


@pytest.fixture
async def devices(server: TestServer) -> Any:
    made: list[Device] = []

    def make() -> Device:
        made.append(Device(server))
        return made[-1]

    yield make
    for device in made:
        await device.close()


@pytest.fixture
async def sockets() -> Any:
    opened: list[WsClient] = []
    yield opened
    for client in opened:
        await client.close()


async def daily(
    server: TestServer, sockets: list[WsClient], name: str, key: str | None, cookie: str | None
) -> tuple[WsClient, dict[str, Any]]:
    """A socket (with the device's session cookie, if any) asking for today's daily: its welcome."""
    headers = {} if cookie is None else {"Cookie": f"{SESSION_COOKIE}={cookie}"}
    client = await WsClient.connect(server, name, headers=headers)
    sockets.append(client)
    await client.send("daily", name=name, **({} if key is None else {"player_key": key}))
    return client, await client.next("welcome", "error")


async def a_legal_move(server: TestServer) -> list[str]:
    service = server.app[keys.DAILY]
    code = await service.code_for(service.today())
    return list(next(iter(Game.from_code(code).legal_moves())).names())


async def test_a_signed_in_device_continues_the_accounts_daily_attempt_and_gets_no_second_one(
    server: TestServer, devices: Any, sockets: list[WsClient]
) -> None:
    phone, laptop = devices(), devices()
    passkey = SoftPasskey(RP_ID, ORIGIN)
    assert (await phone.register(passkey, name="Ada"))[0] == 201
    assert (await laptop.sign_in(passkey))[0] == 200

    # the phone starts today's attempt (ranked) and makes a move
    on_phone, started = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    assert started["type"] == "welcome" and started["ranked"] is True and started["token"]
    room, seat = started["room"]["room"], started["you"]
    await on_phone.send("move", positions=await a_legal_move(server), id=1)
    assert (await on_phone.next("moved"))["moves"] == 1

    # the laptop, signed in to the same account, asks for the daily (under another name): the same
    # attempt, resumed — same room, seat, board, move count and clock; no token, no new deal
    on_laptop, resumed = await daily(server, sockets, "Ada on the laptop", laptop.key, laptop.cookie())
    assert resumed["type"] == "welcome", resumed
    assert (resumed["room"]["room"], resumed["you"]) == (room, seat)
    assert "token" not in resumed and resumed["ranked"] is True
    snapshot = resumed["room"]
    assert snapshot["started_at"] == started["room"]["started_at"]
    assert snapshot["time_limit_s"] == started["room"]["time_limit_s"]
    [me] = snapshot["players"]
    assert me["moves"] == 1
    assert snapshot["code"] is None  # the day's code stays hidden, as on the phone
    # the phone's socket is told its seat went on another connection
    await asyncio.wait_for(on_phone.ws.receive(), 5)
    assert on_phone.ws.close_code == 4001
    # the laptop plays on the same game
    await on_laptop.send("give_up")
    over = await on_laptop.next("game_over")
    assert over.get("unranked_reason") != "daily_retry", over  # the ranked attempt (given up at once: too fast)

    # once the attempt is over, asking again is a new, unranked attempt — from either device
    _, again = await daily(server, sockets, "Ada", laptop.key, laptop.cookie())
    assert again["room"]["room"] != room and again["ranked"] is False
    assert again["unranked_reason"] == "daily_retry"


async def test_nobody_outside_the_account_can_continue_its_attempt(
    server: TestServer, devices: Any, sockets: list[WsClient]
) -> None:
    phone, other = devices(), devices()
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN), name="Ada"))[0] == 201
    assert (await other.register(SoftPasskey(RP_ID, ORIGIN), name="Bo"))[0] == 201
    on_phone, started = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    room = started["room"]["room"]

    # a device of another account, an unsigned stranger, a cookie that is no session: each gets an
    # attempt of its own (ranked: each its first), never the account's seat
    for name, key, cookie in (
        ("Bo", other.key, other.cookie()),
        ("Cy", devices().key, None),
        ("Di", devices().key, "not-a-session-" + "x" * 30),
    ):
        _, welcome = await daily(server, sockets, name, key, cookie)
        assert welcome["type"] == "welcome", welcome
        assert welcome["room"]["room"] != room and welcome["ranked"] is True, (name, welcome)
    # and the phone kept its seat all along
    assert not on_phone.closed
    await on_phone.send("ping")
    assert (await on_phone.next("pong"))["type"] == "pong"


async def test_a_linked_key_without_a_session_gets_no_second_ranked_attempt(
    server: TestServer, devices: Any, sockets: list[WsClient]
) -> None:
    """The rule follows the key's account, signed in or not (signing out does not buy another
    ranked attempt); such a device does not continue the attempt either (no session)."""
    phone, laptop = devices(), devices()
    passkey = SoftPasskey(RP_ID, ORIGIN)
    assert (await phone.register(passkey, name="Ada"))[0] == 201
    assert (await laptop.sign_in(passkey))[0] == 200
    _, started = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    _, second = await daily(server, sockets, "Zed", laptop.key, None)
    assert second["room"]["room"] != started["room"]["room"]
    assert (second["ranked"], second["unranked_reason"]) == (False, "daily_retry")


async def test_two_devices_of_an_account_asking_at_the_same_moment_get_one_ranked_attempt(
    server: TestServer, devices: Any, sockets: list[WsClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both claims are held until both are in flight, then let go together: the database's unique
    (day, account) decides, and one attempt alone is ranked."""
    phone, laptop = devices(), devices()
    passkey = SoftPasskey(RP_ID, ORIGIN)
    assert (await phone.register(passkey, name="Ada"))[0] == 201
    assert (await laptop.sign_in(passkey))[0] == 200
    storage = server.app[keys.STORAGE]
    claim = storage.claim_daily_attempt
    arrived = 0
    both = asyncio.Event()

    async def together(*args: Any, **options: Any) -> bool:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 5)
        return await claim(*args, **options)

    monkeypatch.setattr(storage, "claim_daily_attempt", together)
    welcomes = await asyncio.gather(
        daily(server, sockets, "Ada", phone.key, None), daily(server, sockets, "Ada two", laptop.key, None)
    )
    assert arrived == 2
    rooms = {w["room"]["room"] for _, w in welcomes}
    assert len(rooms) == 2
    assert sorted(w["ranked"] for _, w in welcomes) == [False, True], welcomes


async def _raw_request(server: TestServer, head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """``head`` (a request's line and headers, sent byte for byte: aiohttp's client would encode
    them) to the server; the answer's status line and headers."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(head)
    await writer.drain()
    return reader, writer, await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)


async def test_a_session_cookie_that_cannot_be_a_session_is_no_session_not_a_failure(
    server: TestServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A cookie whose bytes are not UTF-8 names no session: the account page answers 401 (not a
    500), and the daily asked on a socket carrying it is a fresh ranked attempt (not ``internal``)
    — no traceback either way."""
    cookie = b"Cookie: " + SESSION_COOKIE.encode() + b"=\xff\xfe-not-utf-8\r\n"
    _, writer, answer = await _raw_request(
        server, b"GET /api/account HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + cookie + b"\r\n"
    )
    writer.close()
    assert answer.startswith(b"HTTP/1.1 401"), answer

    reader, writer, answer = await _raw_request(
        server,
        b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" + cookie + b"\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 101"), answer
    payload = json.dumps({"v": 1, "type": "daily", "name": "Zed", "player_key": "k" * 32}).encode()
    mask = b"\x01\x02\x03\x04"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    writer.write(bytes([0x81, 0x80 | 126]) + len(payload).to_bytes(2, "big") + mask + masked)
    await writer.drain()
    first = await asyncio.wait_for(reader.readexactly(2), 5)
    size = first[1] & 0x7F
    if size == 126:
        size = int.from_bytes(await reader.readexactly(2), "big")
    elif size == 127:
        size = int.from_bytes(await reader.readexactly(8), "big")
    frame = json.loads(await asyncio.wait_for(reader.readexactly(size), 5))
    writer.close()
    assert frame["type"] == "welcome" and frame["ranked"] is True, frame
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records if r.exc_info]


async def test_an_unranked_look_under_a_name_played_today_spends_the_accounts_ranked_attempt(
    server: TestServer, devices: Any, sockets: list[WsClient]
) -> None:
    """The account's device first plays under a name someone played today (unranked: a look at
    the cards), gives up, then asks under its own name: not ranked — the account's attempt of the
    day was the look."""
    stranger, phone = devices(), devices()
    _, theirs = await daily(server, sockets, "Ann", stranger.key, None)
    assert theirs["ranked"] is True
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN), name="Ada"))[0] == 201
    look, scouting = await daily(server, sockets, "Ann", phone.key, None)
    assert (scouting["ranked"], scouting["unranked_reason"]) == (False, "daily_retry")
    await look.send("give_up")
    await look.next("game_over")
    _, then = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    assert then["room"]["room"] != scouting["room"]["room"]
    assert (then["ranked"], then["unranked_reason"]) == (False, "daily_retry"), then


async def test_a_signed_in_devices_daily_is_unavailable_while_its_accounts_attempt_cannot_be_read(
    server: TestServer, devices: Any, sockets: list[WsClient], caplog: pytest.LogCaptureFixture
) -> None:
    phone = devices()
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN), name="Ada"))[0] == 201
    storage = server.app[keys.STORAGE]
    real_read = storage.daily_attempt_room

    async def down(*args: Any, **kwargs: Any) -> Any:
        raise StorageError("the database did not answer within 3 s")

    storage.daily_attempt_room = down  # type: ignore[method-assign]
    _, refused = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    assert refused["type"] == "error" and refused["code"] == "unavailable", refused
    said = [r for r in caplog.records if "daily attempt could not be read" in r.getMessage()]
    assert len(said) == 1 and said[0].exc_info is None
    storage.daily_attempt_room = real_read  # type: ignore[method-assign]
    _, welcome = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    assert welcome["type"] == "welcome" and welcome["ranked"] is True, "nothing was spent"


async def test_a_lost_daily_claim_is_not_handed_back_after_the_account_looked_under_another_name(
    server: TestServer, devices: Any, sockets: list[WsClient]
) -> None:
    """The account's claim of 'Ada' is recorded but its answer lost; the same device then plays
    'Zed' (unranked: the account's attempt of the day is taken) and sees the cards. Asking for
    'Ada' again is then a second look: not ranked."""
    phone = devices()
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN), name="Ada"))[0] == 201
    storage = server.app[keys.STORAGE]
    real_claim = storage.claim_daily_attempt
    lost = [True]

    async def claim(*args: Any, **kwargs: Any) -> bool:
        ranked: bool = await real_claim(*args, **kwargs)
        if lost.pop() if lost else False:
            raise StorageError("the database did not answer within 3 s")
        return ranked

    storage.claim_daily_attempt = claim
    _, first = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    assert first["type"] == "error" and first["code"] == "unavailable"
    look, scouting = await daily(server, sockets, "Zed", phone.key, None)
    assert scouting["type"] == "welcome" and scouting["ranked"] is False
    await look.send("give_up")
    await look.next("game_over")
    _, again = await daily(server, sockets, "Ada", phone.key, phone.cookie())
    assert again["type"] == "welcome" and again["ranked"] is False
