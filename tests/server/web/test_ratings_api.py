"""The ratings through a real server: a sealed race between two players with keys moves both
ratings, the winner's up (``GET /api/ratings``, ``GET /api/players/{player}/rating``), and nothing
of the race shows there while one of them still plays its deal."""

from __future__ import annotations

import json
import secrets
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halfmoon.protocol import player_key_hash
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient


async def get(server: TestServer, path: str) -> tuple[int, Any, str]:
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url(path))
        body = await response.text()
    return response.status, json.loads(body), body


async def sealed_race(server: TestServer, clock: ManualClock) -> dict[str, Any]:
    """Ada and Bob (each with a key) race a sealed deal: Bob gives up at once, Ada makes a move
    and gives up a minute later — the better score: Ada wins. Returns what each step showed."""
    ada_key, bob_key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    async with aiohttp.ClientSession() as http:
        room_id = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
    ada, bob = await WsClient.connect(server, "ada"), await WsClient.connect(server, "bob")
    await ada.send("join", room=room_id, name="Ada", player_key=ada_key)
    ada_id = (await ada.next("welcome"))["you"]
    await bob.send("join", room=room_id, name="Bob", player_key=bob_key)
    await bob.next("welcome")
    await ada.send("start")
    await ada.next("started")
    room = server.app[keys.LOBBY].rooms[room_id]
    assert room.race.sealed
    code = str(room.race.code)
    await bob.send("give_up")
    await bob.next("game_over")
    clock.advance(60_000)
    game = room.race.players[ada_id].game
    move = next(game.legal_moves())
    seen: dict[str, Any] = {"code": code, "ada": player_key_hash(ada_key), "bob": player_key_hash(bob_key)}
    seen["board_while_ada_plays"] = await get(server, "/api/ratings")
    seen["bob_while_ada_plays"] = await get(server, f"/api/players/{seen['bob']}/rating")
    await ada.send("move", positions=move.names())
    await ada.next("moved")
    await ada.send("give_up")
    await ada.next("game_over")
    await ada.next("race_over")
    for client in (ada, bob):
        await client.close()
    return seen


async def test_a_sealed_race_between_two_keys_rates_both_and_the_winner_goes_up(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    seen = await sealed_race(server, clock)
    status, board, text = seen["board_while_ada_plays"]
    assert status == 200 and board["entries"] == [] and seen["code"] not in text
    assert seen["bob_while_ada_plays"][0] == 404  # his race is not over: not rated, nothing told
    status, board, text = await get(server, "/api/ratings?limit=10")
    assert status == 200 and board["provisional_games"] == 10
    assert [(e["rank"], e["player"], e["name"], e["games"], e["provisional"]) for e in board["entries"]] == [
        (1, seen["ada"], "Ada", 1, True),
        (2, seen["bob"], "Bob", 1, True),
    ]
    ada, bob = board["entries"]
    assert ada["mu"] > 25 > bob["mu"] and ada["rating"] > bob["rating"]
    status, mine, text = await get(server, f"/api/players/{seen['ada']}/rating")
    assert status == 200 and mine["rating"] == ada["rating"] and seen["code"] not in text
    [change] = mine["history"]
    assert (change["place"], change["field"], change["rated"], change["reason"]) == (1, 2, True, None)
    assert change["rating_before"] == 1000 and change["change"] == change["rating"] - 1000
    status, game, _ = await get(server, f"/api/games/{change['game']}")
    assert status == 200 and game["name"] == "Ada"  # the race's game, opened by its own rules
    theirs = (await get(server, f"/api/players/{seen['bob']}/rating"))[1]
    assert theirs["history"][0]["place"] == 2 and theirs["history"][0]["change"] < 0 < change["change"]


async def test_the_provisional_threshold_is_a_setting(start_server: StartServer, clock: ManualClock) -> None:
    server = await start_server(rating_provisional=1)
    seen = await sealed_race(server, clock)
    status, board, _ = await get(server, "/api/ratings")
    assert status == 200 and board["provisional_games"] == 1 and len(board["entries"]) == 2
    assert not any(e["provisional"] for e in board["entries"])
    assert (await get(server, f"/api/players/{seen['ada']}/rating"))[1]["provisional"] is False


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/api/players/" + "A" * 64 + "/rating", 400, "bad_player"),
        ("/api/players/abc/rating", 400, "bad_player"),
        ("/api/players/" + "0" * 64 + "/rating", 404, "no_rating"),
        ("/api/players/" + "0" * 64 + "/rating?limit=0", 400, "bad_request"),
        ("/api/ratings?limit=x", 400, "bad_request"),
        ("/api/ratings?limit=1001", 400, "bad_request"),
    ],
)
async def test_bad_rating_requests_get_a_clear_error(
    start_server: StartServer, path: str, status: int, code: str
) -> None:
    server = await start_server()
    got, body, _ = await get(server, path)
    assert (got, body["error"]["code"]) == (status, code)
