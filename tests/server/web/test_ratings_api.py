"""Ratings over REST (docs/openapi.yaml): a sealed race between two identified players is rated
by the server's ratings job after it ends — the end screen's poll of ``/api/games/{game}/rating``
says ``due``, then the change — and shows on the ratings leaderboard and the players' pages;
bad input is a clear 4xx."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import aiohttp
import yaml  # type: ignore[import-untyped]
from aiohttp.test_utils import TestServer

from halfmoon.game import Game
from halfmoon.protocol import player_key_hash
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.conftest import ROOT
from tests.server.conftest import StartServer
from tests.server.support import WsClient

SPEC = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())


def required(schema: str) -> set[str]:
    return set(SPEC["components"]["schemas"][schema]["required"])


async def get(server: TestServer, path: str, status: int = 200, **headers: str) -> Any:
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url(path), headers=headers)
        assert response.status == status, (path, await response.text())
        return await response.json()


async def race(server: TestServer, clock: ManualClock, cards: dict[str, int]) -> dict[str, dict[str, Any]]:
    """A sealed race of the players ``cards`` names (each with a key of its own), each making
    that many moves at a person's pace, then giving up; each one's ``game_over``."""
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
    clients = {}
    for name in cards:
        client = clients[name] = await WsClient.connect(server, name)
        await client.send("join", room=room, name=name, player_key=KEYS[name])
        await client.next("welcome")
    first = clients[next(iter(cards))]
    await first.send("start")
    for client in clients.values():
        await client.next("started")
    code = str(server.app[keys.LOBBY].rooms[room].race.code)
    overs = {}
    for name, moves in cards.items():
        game = Game.from_code(code)
        for _ in range(moves):
            move = next(iter(game.legal_moves()))
            game.push(move)
            clock.advance(5_000)
            await clients[name].send("move", positions=move.names())
            await clients[name].next("moved")
        await clients[name].send("give_up")
        overs[name] = await clients[name].next("game_over")
    for client in clients.values():
        await client.close()
    return overs


KEYS = {name: secrets.token_urlsafe(32) for name in ("Ada", "Bob", "Cy")}


async def rating_of(server: TestServer, game: str) -> dict[str, Any]:
    """Poll the game's rating as the end screen does, until it is no longer due (once the game is
    stored: until then the game is not found, as game_over does not wait for the database)."""
    await server.app[keys.TASKS].settle()
    for _ in range(100):
        body: dict[str, Any] = await get(server, f"/api/games/{game}/rating")
        if body["status"] != "due":
            return body
        await asyncio.sleep(0.1)
    raise AssertionError("the game's rating stayed due")


async def test_a_sealed_race_is_rated_after_its_end_and_shows_everywhere(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    overs = await race(server, clock, {"Ada": 3, "Bob": 1, "Cy": 0})
    ada = await rating_of(server, overs["Ada"]["game"])
    bob = await rating_of(server, overs["Bob"]["game"])
    assert set(ada) == required("GameRating") | required("RatingChange")
    assert ada["status"] == bob["status"] == "rated"
    assert (ada["before"], bob["before"]) == (1000, 1000)
    assert ada["change"] > 0 > bob["change"] and (ada["place"], bob["place"]) == (1, 2)
    assert ada["provisional"] is True
    # Cy removed no card: left out, and moved by nothing
    assert await rating_of(server, overs["Cy"]["game"]) == {"game": overs["Cy"]["game"], "status": "not_rated"}

    assert await get(server, "/api/ratings") == {"provisional_games": 5, "entries": []}  # all provisional
    board = await get(server, "/api/ratings?provisional=true&limit=10")
    assert [e["name"] for e in board["entries"]] == ["Ada", "Bob"]
    assert all(set(e) == required("RatingEntry") for e in board["entries"])
    assert board["entries"][0]["rating"] == ada["after"] and board["entries"][0]["provisional"] is True

    hash_of_ada = player_key_hash(KEYS["Ada"])
    assert board["entries"][0]["player"] == hash_of_ada
    page = await get(server, f"/api/players/{hash_of_ada}/rating")
    assert set(page) == required("PlayerRating")
    assert page["rating"] == ada["after"] and page["games"] == 1 and page["name"] == "Ada"
    assert [{k: h[k] for k in ("game", "before", "after", "change")} for h in page["history"]] == [
        {k: ada[k] for k in ("game", "before", "after", "change")}
    ]
    history = await get(server, "/api/me/history", Authorization=f"Bearer {KEYS['Ada']}")
    assert history["player"] == hash_of_ada  # how a player's own page finds its rating


async def test_an_open_race_is_not_rated(start_server: StartServer, clock: ManualClock) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={"code": "HM1-N-AAAAAAA"})).json()
    assert created["sealed"] is False
    room = created["room"]
    clients = []
    for name in ("Ada", "Bob"):
        client = await WsClient.connect(server, name)
        await client.send("join", room=room, name=name, player_key=KEYS[name])
        await client.next("welcome")
        clients.append(client)
    await clients[0].send("start")
    game = Game.from_code("HM1-N-AAAAAAA")
    move = next(iter(game.legal_moves()))
    overs = []
    for client in clients:
        await client.next("started")
        clock.advance(5_000)
        await client.send("move", positions=move.names())
        await client.next("moved")
        await client.send("give_up")
        overs.append(await client.next("game_over"))
    for over in overs:
        assert await rating_of(server, over["game"]) == {"game": over["game"], "status": "not_rated"}
    for client in clients:
        await client.close()


async def test_bad_input_is_a_clear_error(start_server: StartServer) -> None:
    server = await start_server()
    assert (await get(server, "/api/players/ADA/rating", 400))["error"]["code"] == "bad_player"
    assert (await get(server, f"/api/players/{'A' * 64}/rating", 400))["error"]["code"] == "bad_player"
    assert (await get(server, "/api/ratings?provisional=maybe", 400))["error"]["code"] == "bad_request"
    assert (await get(server, "/api/ratings?limit=0", 400))["error"]["code"] == "bad_request"
    assert (await get(server, "/api/games/nope/rating", 404))["error"]["code"] == "no_such_game"
    assert (await get(server, "/api/games/..%2F/rating", 404))["error"]["code"] in ("no_such_game", "not_found")
    nobody = await get(server, f"/api/players/{'0' * 64}/rating")
    assert nobody == {
        "player": "0" * 64, "name": None, "rating": None, "provisional": True, "games": 0,
        "provisional_games": 5, "history": [],
    }


async def test_two_keys_of_one_account_in_a_race_are_one_identity_and_either_reads_its_rating(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Ada's and Bob's keys are one account's (Ada's device linked first): in one sealed race they
    are one identity at its worse place (Bob's better run is no second try), rated against Cy
    alone; Bob's key reads the account's rating."""
    server = await start_server()
    accounts = server.app[keys.ACCOUNTS]
    assert await accounts.link_player("acct", player_key_hash(KEYS["Ada"]), 1_000)
    assert await accounts.link_player("acct", player_key_hash(KEYS["Bob"]), 2_000)
    overs = await race(server, clock, {"Ada": 1, "Bob": 3, "Cy": 2})
    worse = await rating_of(server, overs["Ada"]["game"])
    cy = await rating_of(server, overs["Cy"]["game"])
    assert (worse["status"], worse["place"], cy["place"]) == ("rated", 2, 1)
    assert await rating_of(server, overs["Bob"]["game"]) == {"game": overs["Bob"]["game"], "status": "not_rated"}
    board = await get(server, "/api/ratings?provisional=true&limit=10")
    hash_of_ada = player_key_hash(KEYS["Ada"])
    # the account under its key linked first (Ada's), below Cy
    assert [(e["player"], e["name"]) for e in board["entries"]] == [
        (player_key_hash(KEYS["Cy"]), "Cy"),
        (hash_of_ada, "Ada"),
    ]
    by_ada = await get(server, f"/api/players/{hash_of_ada}/rating")
    by_bob = await get(server, f"/api/players/{player_key_hash(KEYS['Bob'])}/rating")
    assert by_ada["rating"] == by_bob["rating"] == worse["after"] and by_ada["history"] == by_bob["history"]
