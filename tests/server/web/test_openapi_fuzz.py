"""schemathesis against docs/openapi.yaml on a live server: every operation's generated requests
(valid ones and, as schemathesis's negative mode makes them, invalid ones), then the answers to
real data (rooms in each phase, open and sealed games, solo and daily games, leaderboards, a past
day). Checks on every answer: no 5xx, a documented status code, a documented content type, a
body that matches the documented schema, and no traceback in the server's log.

The server runs in a thread of its own on 127.0.0.1 (schemathesis calls it through ``requests``,
synchronously), with the test settings and a manual clock. ``max_examples`` is small for CI;
``HALFMOON_OPENAPI_EXAMPLES`` raises it for a longer run.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
import requests
import schemathesis
from aiohttp import web
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.engine import make_url

from halfmoon.game import Game
from halfmoon_server import create_app
from halfmoon_server.clock import ManualClock, utc_day
from halfmoon_server.rooms.daily import PAST_DAYS_FOR_MS
from halfmoon_server.web import keys
from tests.conftest import ROOT
from tests.server.support import T0, WsClient, make_settings, won_record

sys.path.insert(0, str(ROOT / "bench"))
from tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow  # schemathesis over every operation: ~10 s

SCHEMA = schemathesis.openapi.from_path(ROOT / "docs" / "openapi.yaml")
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = int(os.environ.get("HALFMOON_OPENAPI_EXAMPLES", "30"))
DAY_MS = 86_400_000
CODE = str(won_record().code)
T = TypeVar("T")


class TracebackLog(logging.Handler):
    """Keeps every record the server logs at ERROR or with a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.bad: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info is not None or record.levelno >= logging.ERROR:
            self.bad.append(record)

    def lines(self) -> list[str]:
        return [f"{r.name}: {r.getMessage()}" for r in self.bad]


class LiveServer:
    """``create_app`` served on 127.0.0.1 from an event loop in a thread of its own."""

    def __init__(self, data_dir: Path, clock: ManualClock, **changes: Any) -> None:
        self.clock = clock
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="openapi-live-server", daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        # room_burst: the generated POSTs may make rooms without end (429 is tested in test_rest.py)
        settings = make_settings(data_dir, clock, **{"room_burst": 1e9, "room_per_min": 1e9, **changes})
        self.runner = web.AppRunner(create_app(settings), access_log=None)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> None:
        self.thread.start()
        self.run(self._start())

    async def _start(self) -> None:
        await self.runner.setup()
        await web.SockSite(self.runner, self.sock).start()

    def stop(self) -> None:
        try:
            self.run(self.runner.cleanup())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


class Seeded:
    """What the seeding left on the server: the ids real requests can name."""

    def __init__(self) -> None:
        self.rooms: list[str] = []
        self.games: list[str] = []
        self.days: list[str] = []
        self.codes: list[str] = []


async def _seed(base: str, clock: ManualClock) -> Seeded:
    """Rooms in every phase and stored games of every kind: a won open race, a sealed race given
    up, a solo game, a daily attempt (then a day passes, so it is a past day with its code out)."""
    seeded = Seeded()
    record = won_record()
    code = str(record.code)
    seeded.codes.append(code)
    ws_url = base.replace("http", "ws", 1) + "/ws"
    async with aiohttp.ClientSession() as http:

        async def new_room(body: dict[str, Any]) -> str:
            answer = await http.post(f"{base}/api/rooms", json=body)
            assert answer.status == 201, await answer.text()
            room: str = (await answer.json())["room"]
            seeded.rooms.append(room)
            return room

        await new_room({})  # a sealed race left in the lobby
        # an open race won to the end (race_over: finished, with results)
        ada = await WsClient.connect_url(ws_url, "ada")
        await ada.send("join", room=await new_room({"code": code}), name="Ada")
        await ada.next("welcome")
        await ada.send("start")
        await ada.next("started")
        for step in record.moves:
            await ada.send("move", positions=step.names())  # type: ignore[union-attr]
        seeded.games.append((await ada.next("game_over"))["game"])
        await ada.next("race_over")
        await ada.close()
        # a sealed race: Bea gives up, Cy is still playing (her game is hidden: 403 game_hidden)
        sealed = await new_room({})
        bea, cy = await WsClient.connect_url(ws_url, "bea"), await WsClient.connect_url(ws_url, "cy")
        for client, name in ((bea, "Bea"), (cy, "Cy")):
            await client.send("join", room=sealed, name=name)
            await client.next("welcome")
        await bea.send("start")
        await bea.next("started")
        await bea.send("give_up")
        seeded.games.append((await bea.next("game_over"))["game"])
        # a solo game with a move played, then given up
        dee = await WsClient.connect_url(ws_url, "dee")
        await dee.send("solo", name="Dee", code=code)
        seeded.rooms.append((await dee.next("welcome"))["room"]["room"])
        await dee.send("move", positions=next(Game.from_code(code).legal_moves()).names())
        await dee.next("moved")
        await dee.send("give_up")
        seeded.games.append((await dee.next("game_over"))["game"])
        # today's daily, given up; its game is hidden until the day is over
        eve = await WsClient.connect_url(ws_url, "eve")
        await eve.send("daily", name="Eve")
        seeded.rooms.append((await eve.next("welcome"))["room"]["room"])
        await eve.send("give_up")
        seeded.games.append((await eve.next("game_over"))["game"])
        seeded.days.append(utc_day(clock.now_ms()).isoformat())
        for client in (bea, dee, eve):
            await client.close()
        # Cy plays on in the sealed race (running): its room answers with players, the race's games stay hidden
        await cy.close()
    return seeded


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Seeded, TracebackLog]]:
    """A live server with seeded data, and a log handler collecting what it logs as errors."""
    clock = ManualClock(T0)
    server = LiveServer(tmp_path_factory.mktemp("openapi") / "data", clock)
    log = TracebackLog()
    logging.getLogger().addHandler(log)
    server.start()
    try:
        seeded = server.run(_seed(server.base, clock))
        # (each game_over comes before its game's write: the seeded games are stored once these are done,
        # so a hidden one answers 403, not 404)
        server.run(server.runner.app[keys.TASKS].settle())
        yield server, seeded, log
    finally:
        server.stop()
        logging.getLogger().removeHandler(log)


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@SCHEMA.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_generated_requests_get_documented_answers(
    case: schemathesis.Case, live: tuple[LiveServer, Seeded, TracebackLog], http: requests.Session
) -> None:
    server, _, log = live
    case.call_and_validate(base_url=server.base, session=http, checks=CHECKS, timeout=10)
    assert log.lines() == []


def test_answers_on_real_data_match_the_document(
    live: tuple[LiveServer, Seeded, TracebackLog], http: requests.Session
) -> None:
    """The seeded rooms, games, leaderboards and days, in each state, through the same checks:
    first on the day they were played, then a day later (the daily's game opens, the sealed
    race's last racer has timed out, so its games open too)."""
    server, seeded, log = live
    won, sealed_given_up, solo, daily = seeded.games

    def check(path: str, method: str, expected: int, **fields: Any) -> schemathesis.Response:
        case = SCHEMA[path][method].Case(**fields)
        response = case.call_and_validate(base_url=server.base, session=http, checks=CHECKS, timeout=10)
        assert response.status_code == expected, (method, case.formatted_path, case.query, response.text)
        return response

    def check_all(hidden: set[str], gone: set[str]) -> None:
        for room in seeded.rooms:
            check("/api/rooms/{room}", "GET", 404 if room in gone else 200, path_parameters={"room": room})
            check("/api/rooms/{room}", "GET", 404 if room in gone else 200, path_parameters={"room": room.lower()})
        check("/api/rooms/{room}", "GET", 404, path_parameters={"room": "ZZZZZZ"})
        for game in seeded.games:
            check("/api/games/{game}", "GET", 403 if game in hidden else 200, path_parameters={"game": game})
        check("/api/games/{game}", "GET", 404, path_parameters={"game": "x" * 40})
        for code in seeded.codes:
            check("/api/leaderboard/{code}", "GET", 200, path_parameters={"code": code})
            check("/api/leaderboard/{code}", "GET", 200, path_parameters={"code": code}, query={"limit": 1})
            check("/api/leaderboard/{code}", "GET", 400, path_parameters={"code": code}, query={"limit": 0})
        check("/api/daily", "GET", 200)
        for day in seeded.days:
            check("/api/daily/{date}/leaderboard", "GET", 200, path_parameters={"date": day})
        check("/api/rooms", "POST", 201, body={}, media_type="application/json")
        check("/api/rooms", "POST", 201, body={"code": "HM1-N-AAAAAAB"}, media_type="application/json")
        check("/api/rooms", "POST", 400, body={"code": "HM1-D-AAAAAAA"}, media_type="application/json")
        check("/healthz", "GET", 200)

    # Cy still races the sealed room (Bea's game hidden), today's daily is not over (Eve's hidden)
    check_all(hidden={sealed_given_up, daily}, gone=set())
    server.clock.advance(DAY_MS)
    # the ticker times Cy out on its next round: wait for it (bounded), then everything is open
    for _ in range(250):
        if http.get(f"{server.base}/api/games/{sealed_given_up}", timeout=10).status_code == 200:
            break
        server.run(asyncio.sleep(0.02))
    seeded.days.append(utc_day(server.clock.now_ms()).isoformat())
    # the lobby nobody joined was closed as abandoned, and it stored no game: gone
    check_all(hidden=set(), gone={seeded.rooms[0]})
    past = http.get(f"{server.base}/api/daily", timeout=10).json()["past"]
    assert [day["date"] for day in past] == seeded.days[:1], past
    assert {won, solo} <= set(seeded.games)
    assert log.lines() == []


@pytest.mark.postgres
def test_a_lost_database_gets_documented_503_answers(pg_database: str, tmp_path: Path) -> None:
    """PostgreSQL cut (a TCP proxy resets every connection): each operation that reads the
    database answers 503 ``unavailable``, as documented, in the documented shape (``/api/daily``
    once its cached counts are due again)."""
    url = make_url(pg_database)
    with TcpProxy(url.port or 5432, url.host or "127.0.0.1") as proxy:
        server = LiveServer(
            tmp_path / "data", ManualClock(T0), db_url=url.set(port=proxy.port).render_as_string(hide_password=False)
        )
        server.start()
        try:
            with requests.Session() as http:
                assert http.get(f"{server.base}/api/daily", timeout=10).status_code == 200
                proxy.cut("reset")
                server.clock.advance(PAST_DAYS_FOR_MS)  # past /api/daily's cache: it counts again
                reads: list[tuple[str, dict[str, Any]]] = [
                    ("/api/rooms/{room}", {"room": "ZZZZZZ"}),  # not in memory: looked up in the database
                    ("/api/leaderboard/{code}", {"code": CODE}),
                    ("/api/daily", {}),
                    ("/api/daily/{date}/leaderboard", {"date": utc_day(T0).isoformat()}),
                    ("/api/games/{game}", {"game": "g" * 20}),
                ]
                for path, parameters in reads:
                    case = SCHEMA[path]["GET"].Case(path_parameters=parameters)
                    # a 503 here is the documented answer: every check but not_a_server_error
                    response = case.call_and_validate(base_url=server.base, session=http, checks=CHECKS[1:], timeout=30)
                    assert response.status_code == 503, (path, response.text)
                    assert response.json()["error"]["code"] == "unavailable", (path, response.text)
        finally:
            proxy.restore()
            server.stop()


@pytest.mark.parametrize(
    ("limit", "status"),
    [
        ("1", 200), ("1000", 200), ("0000001", 200), ("0", 400), ("1001", 400), ("-1", 400), ("9" * 5000, 400),
        (" 10", 400), ("10 ", 400), ("1_0", 400), ("１０", 400), ("+5", 400), ("1e2", 400), ("10.0", 400), ("", 400),
    ],
)  # fmt: skip
def test_a_limit_is_an_integer_written_in_ascii_digits(
    live: tuple[LiveServer, Seeded, TracebackLog], http: requests.Session, limit: str, status: int
) -> None:
    """``limit`` is an integer, 1-1000, in plain digits: Python's int() alone took " 10", "1_0"
    and "１０" (full-width digits) as 10."""
    server, seeded, log = live
    for path, parameters in (
        ("/api/leaderboard/{code}", {"code": CODE}),
        ("/api/daily/{date}/leaderboard", {"date": seeded.days[0]}),
    ):
        case = SCHEMA[path]["GET"].Case(path_parameters=parameters, query={"limit": limit})
        response = case.call_and_validate(base_url=server.base, session=http, checks=CHECKS, timeout=10)
        assert response.status_code == status, (path, limit[:20], response.text)
        if status == 400:
            assert response.json()["error"]["code"] == "bad_request"
    assert log.lines() == []
