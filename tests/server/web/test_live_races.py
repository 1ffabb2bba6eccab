"""Public races and the live list through REST: ``POST /api/rooms`` with ``"listed": true`` makes
a public race, which ``GET /api/live`` shows while it is in play — the most watched first, with
what a stranger may see and nothing more (docs/openapi.yaml's LiveRace exactly) — and a private
race, the default, is never there; bad input is a clear 400 that makes no room."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
import yaml  # type: ignore[import-untyped]

from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.conftest import ROOT
from tests.server.conftest import StartServer
from tests.server.support import WsClient

SCHEMAS = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())["components"]["schemas"]
CODE = "HM1-N-AAAAAAB"


async def create(http: aiohttp.ClientSession, server: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.post(server.make_url("/api/rooms"), json=body)
    assert response.status == 201, await response.text()
    created: dict[str, Any] = await response.json()
    return created


async def race_in_play(server: Any, room: str, *names: str) -> list[WsClient]:
    """Seat ``names`` in ``room`` and start its race (no countdown in the tests' settings)."""
    clients = []
    for name in names:
        client = await WsClient.connect(server, name)
        await client.send("join", room=room, name=name)
        await client.next("welcome")
        clients.append(client)
    await clients[0].send("start", time_limit_s=600)
    for client in clients:
        await client.next("started")
    return clients


async def live(http: aiohttp.ClientSession, server: Any, query: str = "") -> dict[str, Any]:
    await server.app[keys.LOBBY].list_live(server.app[keys.SETTINGS].clock.now_ms())  # (the ticker's round)
    response = await http.get(server.make_url(f"/api/live{query}"))
    assert response.status == 200, await response.text()
    answer: dict[str, Any] = await response.json()
    return answer


async def test_a_listed_race_in_play_is_on_the_live_list_and_a_private_one_never(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(tick_s=3600.0)  # the test runs the rounds itself
    async with aiohttp.ClientSession() as http:
        public = await create(http, server, {"listed": True})
        private = await create(http, server, {})
        open_private = await create(http, server, {"code": CODE, "listed": False})
        assert (public["listed"], private["listed"], open_private["listed"]) == (True, False, False)
        room = await (await http.get(server.make_url(f"/api/rooms/{public['room']}"))).json()
        assert room["listed"] is True
        assert (await live(http, server))["races"] == []  # in its lobby: not yet
        racers = await race_in_play(server, public["room"], "Ada", "Bob")
        others = await race_in_play(server, private["room"], "Cy", "Di")
        others += await race_in_play(server, open_private["room"], "Ed")
        clock.advance(5000)
        answer = await live(http, server)
        assert answer["featured"] == public["room"]
        [shown] = answer["races"]
        assert set(shown) == set(SCHEMAS["LiveRace"]["properties"])  # the document's fields exactly
        assert set(answer) == set(SCHEMAS["LiveList"]["required"])
        room_state = server.app[keys.LOBBY].rooms[public["room"]].race
        assert shown == {
            "room": public["room"], "mode": "race", "phase": "running", "sealed": True, "players": ["Ada", "Bob"],
            "racing": 2, "finished": 0, "spectators": 0, "starts_at": room_state.started_at,
            "started_at": room_state.started_at, "time_limit_s": 600, "elapsed_ms": 5000,
            "watch_url": f"http://{server.host}:{server.port}/watch/{public['room']}",
        }  # fmt: skip
        # a spectator comes, a racer finishes: the list says so at the next round
        watcher = await WsClient.connect(server, "watcher")
        await watcher.send("watch", room=public["room"])
        await watcher.next("welcome")
        await racers[0].send("give_up")
        await racers[0].next("game_over")
        [shown] = (await live(http, server))["races"]
        assert (shown["spectators"], shown["racing"], shown["finished"]) == (1, 1, 1)
        # the race is over: off the list
        await racers[1].send("give_up")
        await racers[1].next("race_over")
        assert await live(http, server) == {"now": clock.now_ms(), "featured": None, "races": []}
        for client in [*racers, *others, watcher]:
            await client.close()


async def test_the_most_watched_race_is_first_then_the_newest_and_limit_bounds_the_answer(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(tick_s=3600.0)
    clients: list[WsClient] = []
    async with aiohttp.ClientSession() as http:
        rooms = []
        for name in ("Ada", "Bob", "Cy"):
            room = (await create(http, server, {"listed": True}))["room"]
            clients += await race_in_play(server, room, name)
            rooms.append(room)
            clock.advance(1000)
        assert [r["room"] for r in (await live(http, server))["races"]] == rooms[::-1]  # the newest first
        for _ in range(2):
            watcher = await WsClient.connect(server, "watcher")
            await watcher.send("watch", room=rooms[1])
            await watcher.next("welcome")
            clients.append(watcher)
        answer = await live(http, server)
        assert answer["featured"] == rooms[1]
        assert [r["room"] for r in answer["races"]] == [rooms[1], rooms[2], rooms[0]]
        assert [r["room"] for r in (await live(http, server, "?limit=2"))["races"]] == [rooms[1], rooms[2]]
    for client in clients:
        await client.close()


@pytest.mark.parametrize("listed", ["yes", 1, None, [True], {"a": 1}])
async def test_a_listed_that_is_not_true_or_false_is_a_400_and_makes_no_room(
    start_server: StartServer, listed: object
) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        response = await http.post(server.make_url("/api/rooms"), json={"listed": listed})
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "bad_request"
    assert server.app[keys.LOBBY].rooms == {}


@pytest.mark.parametrize("limit", ["0", "51", "-1", "x", "1e3", "", "99999"])
async def test_a_bad_live_list_limit_is_a_400(start_server: StartServer, limit: str) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url(f"/api/live?limit={limit}"))
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "bad_request"
