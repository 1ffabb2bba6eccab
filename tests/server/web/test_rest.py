"""The REST API against docs/openapi.yaml (validated, and its required fields checked on real
answers), its errors, and the static browser client with its single-page routes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not a dev dependency
from openapi_spec_validator import validate

from halfmoon.codes import daily_code
from halfmoon.deal import Deal
from halfmoon.game import Game
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.conftest import ROOT
from tests.server.conftest import StartServer
from tests.server.support import WsClient, solo_to_the_end, won_record

SPEC = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())


def _required(schema_name: str) -> set[str]:
    return set(SPEC["components"]["schemas"][schema_name]["required"])


def test_openapi_document_is_valid_and_names_every_route() -> None:
    validate(SPEC)
    assert set(SPEC["paths"]) == {
        "/api/rooms",
        "/api/rooms/{room}",
        "/api/live",
        "/api/leaderboard/{code}",
        "/api/daily",
        "/api/daily/{date}/leaderboard",
        "/api/daily/{date}/ghosts/{game}",
        "/api/games/{game}",
        "/api/me/history",
        "/api/games/{game}/rating",
        "/api/ratings",
        "/api/players/{player}/rating",
        "/api/account",
        "/api/account/register/options",
        "/api/account/register",
        "/api/account/signin/options",
        "/api/account/signin",
        "/api/account/signout",
        "/api/account/passkeys/{passkey}",
        "/api/account/devices/{device}",
        "/api/account/links",
        "/api/account/links/redeem",
        "/api/account/terminal",
        "/api/account/terminal/approve",
        "/api/account/player",
        "/healthz",
        "/readyz",
    }


async def test_rest_answers_match_the_document(start_server: StartServer, clock: ManualClock) -> None:
    record = won_record()
    server = await start_server()
    async with aiohttp.ClientSession() as http:

        async def get(path: str) -> Any:
            response = await http.get(server.make_url(path))
            assert response.status == 200, (path, await response.text())
            assert response.content_type == "application/json"
            return await response.json()

        assert await get("/healthz") == {"status": "ok"}
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()  # no code: a sealed race
        assert set(created) >= _required("CreatedRoom") and created["sealed"] is True and "code" not in created
        assert len(created["commitment"]) == 64
        room = await get(f"/api/rooms/{created['room'].lower()}")  # ids are case-insensitive
        assert _required("Room") <= set(room) and room["phase"] == "lobby" and room["players"] == []
        player = await WsClient.connect(server, "p")
        await player.send("solo", name="Ada", code=str(record.code))
        solo_room = (await player.next("welcome"))["room"]["room"]
        for step in record.moves:
            await player.send("move", positions=step.names())  # type: ignore[union-attr]
        over = await player.next("game_over")
        await player.next("race_over")
        await player.close()
        await server.app[keys.TASKS].settle()  # (game_over does not wait for the database: the write follows it)
        room = await get(f"/api/rooms/{solo_room}")
        assert room["phase"] == "finished" and room["results"][0]["game"] == over["game"]
        assert _required("PlayerSummary") <= set(room["players"][0])
        board = await get(f"/api/leaderboard/{str(record.code).lower()}")
        assert [set(e) for e in board["entries"]] == [_required("LeaderboardEntry")]
        assert board["entries"][0] == {
            "rank": 1, "name": "Ada", "score": 520, "moves": 48, "time_ms": 0, "outcome": "won", "game": over["game"],
            "ranked": False, "unranked_reason": "casual", "others": [],  # a solo game: its code was known
        }
        assert board["ranked"] is False  # a deal code's board is a casual board
        deal = Deal.from_code(record.code).to_json()  # the cards, for a client's replay
        stored = await get(f"/api/games/{over['game']}")
        assert stored == {
            **record.to_json(),
            **{"deal": deal, "name": "Ada", "score": 520, "time_ms": 0, "outcome": "won", "sealed": False},
            "ranked": False,
            "unranked_reason": "casual",
            "times": [0] * len(record.moves),  # each step's clock time (a ghost's): the clock stood still
        }
        daily = await get("/api/daily")
        assert _required("Daily") <= set(daily)
        assert await get("/api/daily/2026-11-28/leaderboard") == {"ranked": True, "entries": []}
        assert len((await get(f"/api/leaderboard/{record.code}?limit=1"))["entries"]) == 1


async def test_a_leaderboard_lists_each_players_best_game_and_no_solo_game_left(
    start_server: StartServer, clock: ManualClock
) -> None:
    """One entry per name (any letter case): the best game, the others under it; a solo game its
    player left (a «Nuova partita» mid-game) is no result."""
    server = await start_server()
    code = "HM1-N-AAAAAAB"

    async def solo(name: str, moves: int, end: str) -> None:
        await solo_to_the_end(await WsClient.connect(server, name), code, name, moves, end=end)

    await solo("Ada", 2, "give_up")
    await solo("ada", 1, "give_up")
    await solo("Bob", 3, "leave")  # left: not a result
    await solo("Cy", 1, "give_up")
    await server.app[keys.TASKS].settle()  # (each game_over comes before its game's write)
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/leaderboard/{code}"))).json()
    lines = [
        (e["rank"], e["name"], e["score"], [(o["name"], o["score"]) for o in e["others"]]) for e in board["entries"]
    ]
    assert lines[0][:2] == (1, "Ada") and lines[0][3] == [("ada", 10)]
    assert [line[1] for line in lines] == ["Ada", "Cy"], "one row per name; Bob left his solo game"
    await server.close()


async def test_rest_errors_are_json_with_proper_status(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        cases: list[tuple[str, str, Any, int, str]] = [
            ("POST", "/api/rooms", b"{nope", 400, "bad_json"),
            ("POST", "/api/rooms", b"[1]", 400, "bad_json"),
            ("POST", "/api/rooms", b'{"code": 5}', 400, "bad_code"),
            ("POST", "/api/rooms", b'{"code": "HM1-N-AAA"}', 400, "bad_code"),
            ("POST", "/api/rooms", b'{"code": "HM1-D-AAAAAAA"}', 400, "bad_code"),
            ("POST", "/api/rooms", b'{"code": "' + b"A" * 5000 + b'"}', 413, "too_large"),
            ("POST", "/api/rooms", b"code=HM1-N-AAAAAAB", 415, "bad_content_type"),  # a cross-site form
            ("GET", "/api/rooms/ZZZZZZ", None, 404, "no_such_room"),
            ("GET", "/api/rooms/bad!", None, 404, "no_such_room"),
            ("GET", "/api/leaderboard/HM9-N-AAAAAAA", None, 400, "bad_code"),
            ("GET", "/api/leaderboard/HM1-N-AAAAAAA?limit=0", None, 400, "bad_request"),
            ("GET", "/api/leaderboard/HM1-N-AAAAAAA?limit=x", None, 400, "bad_request"),
            ("GET", "/api/daily/yesterday/leaderboard", None, 400, "bad_date"),
            ("GET", "/api/daily/2099-01-01/leaderboard", None, 404, "no_such_day"),
            ("GET", "/api/games/nothing-here", None, 404, "no_such_game"),
            ("GET", "/api/nothing", None, 404, "not_found"),
            ("DELETE", "/api/rooms", None, 405, "method_not_allowed"),
            ("PUT", "/api/daily", None, 405, "method_not_allowed"),
        ]
        for method, path, body, status, code in cases:
            form = body is not None and body.startswith(b"code=")
            headers = {"Content-Type": "application/x-www-form-urlencoded" if form else "application/json"}
            response = await http.request(method, server.make_url(path), data=body, headers=headers)
            assert response.status == status, (method, path, await response.text())
            error = (await response.json())["error"]
            assert error["code"] == code and error["message"], (method, path, error)
            assert "Traceback" not in error["message"]
        assert len((await (await http.get(server.make_url("/api/leaderboard/HM1-N-AAAAAAA"))).json())["entries"]) == 0


async def test_static_client_and_single_page_routes(start_server: StartServer, tmp_path: Path) -> None:
    static = tmp_path / "static"
    (static / "js").mkdir(parents=True)
    (static / "index.html").write_text("<!doctype html><title>Half Moon</title>")
    (static / "js" / "app.js").write_text("export const x = 1;\n")
    (static / "style.css").write_text("body{}")
    (tmp_path / "secret.txt").write_text("not for the web")
    server = await start_server(static_dir=static)
    async with aiohttp.ClientSession() as http:
        for path in ("/", "/play/HM1-N-AAAAAAB", "/r/K7WQ2M", "/watch/K7WQ2M", "/daily", "/rules", "/examples",
                     "/replay/abc", "/leaderboard", "/leaderboard/HM1-N-AAAAAAB", "/leaderboard/ratings", "/me",
                     "/account", "/quick"):
            response = await http.get(server.make_url(path))
            assert response.status == 200, path
            assert response.content_type == "text/html" and "Half Moon" in await response.text()
            assert response.headers["Cache-Control"] == "no-cache"
            assert response.headers["Content-Encoding"] == "gzip", "what the 100 KB budget counts"
        # any other address: the app's own page with status 404 (it draws the 404 page itself);
        # the API's and the files' addresses keep their plain 404
        for path in ("/nowhere", "/rules/extra", "/a/b/c"):
            response = await http.get(server.make_url(path))
            assert response.status == 404 and response.content_type == "text/html", path
            assert "Half Moon" in await response.text()
        for path in ("/api/nowhere", "/static/nowhere.js"):
            response = await http.get(server.make_url(path))
            assert response.status == 404 and response.content_type != "text/html", path
        script = await http.get(server.make_url("/static/js/app.js"))
        assert script.status == 200 and script.content_type == "text/javascript"
        assert "max-age" in script.headers["Cache-Control"]
        assert (await http.get(server.make_url("/static/style.css"))).content_type == "text/css"
        assert (await http.get(server.make_url("/static/missing.js"))).status == 404
        assert (await http.get(server.make_url("/static/..%2Fsecret.txt"))).status == 404
        assert (await http.get(server.make_url("/static/%2e%2e/secret.txt"))).status == 404
    await server.close()
    (static / "index.html").unlink()
    server = await start_server(static_dir=static)
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url("/"))
        assert response.status == 503 and "not installed" in await response.text()


async def test_the_installed_browser_client_is_served(start_server: StartServer) -> None:
    from halfmoon_web import INDEX_HTML

    server = await start_server()
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url("/"))
        if INDEX_HTML.exists():
            assert response.status == 200 and response.content_type == "text/html"
        else:
            assert response.status == 503


@pytest.mark.postgres
@pytest.mark.parametrize("game", ["%00", "a%00b", "abc%20def", "%E2%98%83"])
async def test_a_game_id_the_server_never_makes_is_no_game_on_postgresql(
    start_server: StartServer, pg_database: str, game: str
) -> None:
    """Only the server's id alphabet reaches the database: a NUL byte sent to PostgreSQL was an
    'invalid byte sequence' and a 503 (SQLite answered 404)."""
    server = await start_server(db_url=pg_database)
    async with aiohttp.ClientSession() as http, http.get(server.make_url("/api/games/" + game)) as answer:
        assert answer.status == 404, await answer.text()
        assert (await answer.json())["error"]["code"] == "no_such_game"


async def test_casual_and_ranked_rows_through_rest_and_a_daily_board_of_ranked_rows_only(
    start_server: StartServer, clock: ManualClock
) -> None:
    """An open race on a typed code, a solo game and a daily retry are casual (or not ranked, with
    their reason); a sealed race and the daily's first attempt are ranked; a bot and a finish
    faster than a person can tap are not. The daily board lists ranked rows only."""
    server = await start_server()
    code = "HM1-N-AAAAAAB"
    day_code = str(daily_code(date(2026, 11, 28), b"test-secret"))

    async def get(path: str) -> Any:
        async with aiohttp.ClientSession() as http:
            response = await http.get(server.make_url(path))
            assert response.status == 200, await response.text()
            return await response.json()

    async def race(body: dict[str, Any], names: list[tuple[str, bool]], pace_ms: int) -> dict[str, dict[str, Any]]:
        """A race created with ``body``: each (name, bot) joins, plays a first move ``pace_ms``
        after the start, then gives up; returns each name's game_over."""
        async with aiohttp.ClientSession() as http:
            created = await (await http.post(server.make_url("/api/rooms"), json=body)).json()
        clients = {}
        for name, bot in names:
            client = await WsClient.connect(server, name)
            join: dict[str, Any] = {"room": created["room"], "name": name}
            if bot:
                join["bot"] = True
            await client.send("join", **join)
            clients[name] = client
            welcome = await client.next("welcome")
            assert welcome["ranked"] is bool(body == {} and not bot)  # said before the first move
        host = clients[names[0][0]]
        await host.send("start")
        for client in clients.values():
            await client.next("started")
        game = Game.from_code(str(server.app[keys.LOBBY].rooms[created["room"]].race.code))  # dealt at the start
        overs = {}
        for name, client in clients.items():
            for move in list(game.legal_moves())[:1]:
                clock.advance(pace_ms)
                await client.send("move", positions=move.names())
                await client.next("moved")
            await client.send("give_up")
            overs[name] = await client.next("game_over")
        for client in clients.values():
            await client.close()
        return overs

    open_race = await race({"code": code}, [("Ada", False)], 5000)
    sealed = await race({}, [("Bea", False), ("bot-1", True)], 5000)
    hasty = await race({}, [("Cy", False)], 10)  # 2 taps in 10 ms
    solo = await solo_to_the_end(await WsClient.connect(server, "Dee"), code, "Dee", 0)

    async def daily(name: str) -> dict[str, Any]:
        client = await WsClient.connect(server, name)
        await client.send("daily", name=name)
        await client.next("welcome")
        clock.advance(5000)
        await client.send("give_up")
        over = await client.next("game_over")
        await client.close()
        return over

    first, retry = await daily("Eve"), await daily("EVE")
    await server.app[keys.TASKS].settle()  # (each game_over comes before its game's write)
    said = {
        "open race": open_race["Ada"], "sealed": sealed["Bea"], "bot": sealed["bot-1"], "hasty": hasty["Cy"],
        "solo": solo, "daily first": first, "daily retry": retry,
    }
    assert {what: (o["ranked"], o["unranked_reason"]) for what, o in said.items()} == {
        "open race": (False, "casual"),
        "sealed": (True, None),
        "bot": (False, "bot"),
        "hasty": (False, "too_fast"),
        "solo": (False, "casual"),
        "daily first": (True, None),
        "daily retry": (False, "daily_retry"),
    }
    for what, over in said.items():  # each stored game says the same through REST
        if what.startswith("daily"):
            continue  # (a daily game's record opens after the day: its rows are on the board)
        stored = await get(f"/api/games/{over['game']}")
        assert (stored["ranked"], stored["unranked_reason"]) == (over["ranked"], over["unranked_reason"]), what
    board = await get(f"/api/leaderboard/{code}")
    assert board["ranked"] is False
    assert {(e["name"], e["ranked"], e["unranked_reason"]) for e in board["entries"]} == {
        ("Ada", False, "casual"), ("Dee", False, "casual"),
    }
    day = await get("/api/daily/2026-11-28/leaderboard")
    assert day["ranked"] is True
    assert [(e["name"], e["ranked"]) for e in day["entries"]] == [("Eve", True)]  # not the retry
    assert day_code not in json.dumps(day)


JSON = {"Content-Type": "application/json"}


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


async def test_a_static_path_too_long_for_the_file_system_is_a_404(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        for path in ("/static/" + "a" * 4000, "/static/" + "a/" * 2000 + "x.js", "/static/../../etc/passwd"):
            response = await http.get(server.make_url(path))
            assert response.status == 404, path
        assert (await http.get(server.make_url("/healthz"))).status == 200


@pytest.mark.parametrize(
    ("trust", "proto", "scheme"),
    [(True, "https", "https"), (True, "ftp", "http"), (False, "https", "http"), (True, None, "http")],
)
async def test_a_rooms_link_behind_a_tls_proxy_has_the_scheme_the_proxy_says(
    start_server: StartServer, trust: bool, proto: str | None, scheme: str
) -> None:
    """Without --public-url, the link POST /api/rooms returns is the request's origin: behind
    nginx ending TLS (deploy/nginx-site.conf sends X-Forwarded-Proto), https when it is trusted."""
    server = await start_server(trust_forwarded=trust)
    headers = {"X-Forwarded-Proto": proto} if proto else {}
    url = f"http://127.0.0.1:{server.port}/api/rooms"
    async with aiohttp.ClientSession() as session, session.post(url, json={}, headers=headers) as resp:
        assert resp.status == 201, await resp.text()
        created = await resp.json()
    assert created["url"] == f"{scheme}://127.0.0.1:{server.port}/r/{created['room']}"
