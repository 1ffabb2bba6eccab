"""The link's pure parts: the backoff schedule and frame decoding; a close the link never
reconnects after (the server refused the room in its URL), against a real server; and the client
modules' doctests (pytest collects doctests under tests/ only)."""

from __future__ import annotations

import asyncio
import doctest
import importlib
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from halfmoon_client.connection import BAD_ROOM_IN_URL, Backoff, Link, decode
from halfmoon_client.errors import ProtocolError, RefusedError, UnreachableError
from halfmoon_server.web.ws import CLOSE_BAD_ROOM


def test_backoff_doubles_up_to_the_cap_for_a_fixed_number_of_attempts() -> None:
    assert list(Backoff(first=0.5, factor=2, cap=4, jitter=0, attempts=6).delays()) == [0.5, 1, 2, 4, 4, 4]


def test_backoff_jitter_only_shortens_and_stays_within_its_fraction() -> None:
    plain = list(Backoff(jitter=0).delays())
    jittered = list(Backoff(jitter=0.25).delays(random.Random(3)))
    assert len(jittered) == len(plain) == 12
    assert all(0.75 * p <= j <= p for p, j in zip(plain, jittered, strict=True))
    assert jittered != plain


def test_decode_accepts_objects_only() -> None:
    assert decode('{"type": "pong", "v": 1, "now": 5}') == {"type": "pong", "v": 1, "now": 5}
    for raw in ("[1, 2]", "not json", b"\xff"):
        with pytest.raises(ProtocolError, match="the server sent"):
            decode(raw)


@pytest.mark.parametrize(
    "module", ["address", "commands", "connection", "screens", "session", "strategy", "words", "racer"]
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(f"halfmoon_client.{module}"))
    assert result.failed == 0


def test_the_link_and_the_server_agree_on_the_close_for_a_bad_room_in_the_url() -> None:
    assert BAD_ROOM_IN_URL == CLOSE_BAD_ROOM


async def test_a_close_for_a_bad_room_in_the_url_is_final_not_a_drop(server_url: str) -> None:
    """The server closes 4003 once the URL's room is refused: reconnecting would be refused
    again, so the link gives up at once (no ``reconnecting``) with the server's reason."""
    events: list[str] = []
    link = Link(
        server_url,
        hello=lambda: {"type": "ping", "v": 1},
        on_event=lambda kind, data: events.append(kind),
        backoff=Backoff(first=0.01, jitter=0, attempts=3),
    )
    link.url += "?room=NOTONE"  # (a Link checks the room it is given: this one reaches the server)
    await link.connect()
    seen = []
    with pytest.raises(RefusedError) as refused:
        async with asyncio.timeout(10):
            async for message in link.messages():
                seen.append(message)
    assert refused.value.code == "no_such_room"
    assert [m["code"] for m in seen] == ["no_such_room"] and "URL" in seen[0]["message"]
    assert events == [] and link.reconnects == 0
    await link.close()


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (429, "refused the connection with HTTP 429: too many connections from this address at once"),
        (503, "refused the connection with HTTP 503: it is not taking connections now"),
        (404, "is not a Half Moon server"),
    ],
)
async def test_a_websocket_upgrade_refused_with_a_status_says_what_it_means(
    aiohttp_server: Callable[..., Awaitable[TestServer]], status: int, says: str
) -> None:
    """nginx's limit_req (429) and a draining server (503) refuse a WebSocket with a status:
    a refusal to wait out, not a wrong address (what any other status still says)."""

    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=status, text="no")

    app = web.Application()
    app.router.add_get("/ws", refuse)
    server = await aiohttp_server(app)
    link = Link(f"http://127.0.0.1:{server.port}", hello=lambda: {"type": "hello"}, open_timeout=5)
    with pytest.raises(UnreachableError) as refused:
        await link.connect()
    assert says in str(refused.value)
    assert (status == 404) == ("not a Half Moon server" in str(refused.value))


async def test_an_entry_the_server_could_not_take_now_is_asked_again_and_gets_in(
    server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``unavailable`` before the welcome (a database the entry needs did not answer; nothing
    changed): the client asks again a little later — it used to wait silently until the server
    closed the connection for joining no room."""
    import aiohttp

    from halfmoon_client import connection
    from halfmoon_client.session import Session
    from halfmoon_server.errors import Refusal
    from halfmoon_server.web import ws as server_ws

    refusals = {"left": 2}
    original = server_ws._find_room

    async def flaky_find(lobby, room_id):  # type: ignore[no-untyped-def]
        if refusals["left"]:
            refusals["left"] -= 1
            raise Refusal("unavailable", "the server cannot check names right now; nothing changed: try again")
        return await original(lobby, room_id)

    monkeypatch.setattr(server_ws, "_find_room", flaky_find)
    monkeypatch.setattr(connection, "ENTRY_RETRY_S", (0.05, 0.05, 0.05))
    async with aiohttp.ClientSession() as http, http.post(f"{server_url}/api/rooms", json={}) as made:
        room = (await made.json())["room"]
    session = Session()
    hello = {"type": "join", "v": 1, "room": room, "name": "Ada"}
    link = Link(server_url, hello=lambda: hello, backoff=Backoff(first=0.01, jitter=0, attempts=3), room=room)
    seen: list[str] = []

    def feed(message: dict[str, Any]) -> None:
        seen.append(str(message.get("code") or message["type"]))
        session.receive(message, 0)

    async with asyncio.timeout(5):
        entering = connection.enter_room(link, session, feed)
        async for message in entering:
            assert message["type"] == "welcome", seen
            break
    await link.close()
    assert seen[:3] == ["unavailable", "unavailable", "welcome"] and session.welcomed and refusals["left"] == 0

    # refused every time: the client says so after its tries, and the link is not left waiting
    refusals["left"] = 10
    link = Link(server_url, hello=lambda: hello, backoff=Backoff(first=0.01, jitter=0, attempts=3), room=room)
    other = Session()
    with pytest.raises(RefusedError) as refused:
        async with asyncio.timeout(10):
            async for _ in connection.enter_room(link, other, lambda m: other.receive(m, 0)):
                pass
    await link.close()
    assert refused.value.code == "unavailable" and refusals["left"] == 10 - 4
