"""``/ws?room=ID``: the room a connection is for, in its URL, where a balancer can route on it
(docs/protocol.md, "Routing by room"). A malformed one is refused with an error and a final close
(4003), never a traceback; a message naming another room is refused (``room_mismatch``) and
changes nothing; a URL without it works as before (older clients)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from halfmoon_server.web import keys
from halfmoon_server.web.ws import CLOSE_BAD_ROOM
from tests.server.conftest import StartServer
from tests.server.support import WsClient, won_record


async def _new_race(server: Any) -> str:
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    return str(created["room"])


def _ws_url(server: Any, query: str) -> str:
    return f"{server.make_url('/ws')}?{query}"


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("room=no", "'no'"),
        ("room=ABCDE1", "'ABCDE1'"),  # 1 is not in the alphabet (no look-alikes)
        ("room=ABCDEFG", "6 characters"),
        ("room=%00%00%00%00%00%00", "not a room id"),
        ("room=" + "Z" * 500, "6 characters"),
        ("room=ABCDEF&room=GHJKMN", "more than one room"),
    ],
    ids=["short", "outside-the-alphabet", "long", "nul-bytes", "very-long", "twice"],
)
async def test_a_malformed_room_in_the_url_is_refused_and_closed_for_good(
    start_server: StartServer, query: str, words: str
) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http, http.ws_connect(_ws_url(server, query)) as ws:
        first = await ws.receive_json(timeout=5)
        assert first["type"] == "error" and first["code"] == "no_such_room", first
        assert words in first["message"] and "URL" in first["message"] and "Traceback" not in first["message"]
        closing = await ws.receive(timeout=5)
        assert closing.type is aiohttp.WSMsgType.CLOSE and closing.data == CLOSE_BAD_ROOM
        assert closing.extra == "bad room id in the URL"
    assert server.app[keys.LOBBY].rooms == {}  # nothing was made


async def test_a_room_in_the_url_in_any_case_admits_join_watch_and_resume_of_that_room(
    start_server: StartServer,
) -> None:
    server = await start_server()
    room = await _new_race(server)
    ada = await WsClient.connect_url(_ws_url(server, f"room={room.lower()}"), "ada")
    await ada.send("join", room=room, name="Ada")
    welcome = await ada.next("welcome")
    assert welcome["role"] == "player" and welcome["room"]["room"] == room
    await ada.close()
    back = await WsClient.connect_url(_ws_url(server, f"room={room}"), "ada again")
    await back.send("resume", room=room, token=welcome["token"], since=welcome["seq"])
    assert (await back.next("welcome"))["you"] == welcome["you"]
    spectator = await WsClient.connect_url(_ws_url(server, f"room={room}"), "spectator")
    await spectator.send("watch", room=room.lower())
    assert (await spectator.next("welcome"))["role"] == "spectator"
    await back.close()
    await spectator.close()


async def test_a_message_for_another_room_than_the_urls_is_refused_and_changes_nothing(
    start_server: StartServer,
) -> None:
    server = await start_server()
    room, other = await _new_race(server), await _new_race(server)
    client = await WsClient.connect_url(_ws_url(server, f"room={room}"), "c")
    for kind, fields in [
        ("join", {"room": other, "name": "Ada"}),
        ("watch", {"room": other}),
        ("resume", {"room": other, "token": "x" * 32}),
    ]:
        await client.send(kind, **fields)
        error = await client.next("error")
        assert error["code"] == "room_mismatch", error
        assert room in error["message"] and other in error["message"]
    lobby = server.app[keys.LOBBY]
    assert not lobby.rooms[other].race.players and not lobby.rooms[other].spectators  # nobody entered
    # the connection is still good for its own room
    await client.send("join", room=room, name="Ada")
    assert (await client.next("welcome"))["role"] == "player"
    await client.close()


async def test_a_url_without_a_room_or_with_an_empty_one_works_as_before(start_server: StartServer) -> None:
    server = await start_server()
    room = await _new_race(server)
    for query in ("", "room=", "other=1"):
        client = await WsClient.connect_url(_ws_url(server, query), f"older {query}")
        await client.send("join", room=room, name=f"P{len(query)}")
        assert (await client.next("welcome"))["role"] == "player"
        await client.close()


async def test_a_new_game_on_a_connection_for_a_room_is_made_as_without_it(start_server: StartServer) -> None:
    """``solo`` and ``daily`` name no room: a client reconnecting for one kept in its URL (a
    solo game whose page it left) may start another."""
    server = await start_server()
    room = await _new_race(server)
    client = await WsClient.connect_url(_ws_url(server, f"room={room}"), "solo")
    await client.send("solo", name="Ada", code=str(won_record().code))
    welcome = await client.next("welcome")
    assert welcome["role"] == "player" and welcome["room"]["room"] != room
    await client.close()
