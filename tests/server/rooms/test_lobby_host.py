"""The lobby's host: a host who drops or leaves the lobby hands over to a connected player, the
others can still start, and a player joining a lobby whose host is away becomes the host."""

from __future__ import annotations

import asyncio

import aiohttp

from tests.server.conftest import StartServer
from tests.server.support import WsClient


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
