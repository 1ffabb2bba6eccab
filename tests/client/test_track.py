"""The terminal client's race track and splits: every racer's marker on one track of
104 cards (you too, the leader marked ▶), moving with each ``moved`` everyone gets; the results
with each racer's time at moves 12, 24, 36 and 48. First on the sans-I/O session, then against a
real server: a terminal racer and a second player on a bare WebSocket race to the results."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halfmoon.game import Game, Move
from halfmoon.protocol import SPLIT_MOVES
from halfmoon_client.rest import create_room
from halfmoon_client.screens import progress_bar, race_screen, results_screen, watch_screen
from halfmoon_client.session import Session
from halfmoon_client.terminal import play_race
from halfmoon_server import create_app
from halfmoon_server.settings import Settings
from tests.client.support import CODE, T0, RecordingScreen, moved, started, summary, welcome
from tests.server.support import won_record


def lane(screen: str, name: str) -> str:
    """``name``'s lane of the track, from its ▶/⌁ marks (up to four racers: a lane a line)."""
    for line in screen.split("\n"):
        found = re.search(rf"[▶ ][⌁ ]{re.escape(name)} ", line)
        if found:
            return line[found.start() :]
    raise AssertionError(f"no lane for {name} in:\n{screen}")


def marker(screen: str, name: str) -> str:
    """The track drawn in ``name``'s lane (the wide track of a race of up to four)."""
    found = re.search(r"[━●·]{52}", lane(screen, name))
    assert found, lane(screen, name)
    return found.group(0)


def race(players: list[dict[str, Any]]) -> Session:
    session = Session()
    session.receive(welcome(1, players=players), T0)
    session.receive(started(2, Game.from_code(CODE)), T0)
    return session


def test_the_marker_is_the_cards_removed_out_of_104() -> None:
    assert progress_bar(104) == "●·········"  # the start
    assert progress_bar(0) == "━━━━━━━━━●"  # all 104 removed: a won game's 48 moves
    assert progress_bar(104 - 60) == "━━━━━●····"
    assert [len(progress_bar(left)) for left in range(0, 105)] == [10] * 105


def test_every_racer_is_on_the_track_the_leader_marked_and_markers_move_with_each_move() -> None:
    session = race([summary("p1", "Ada"), summary("p2", "Bob"), summary("p3", "Cy")])
    screen = race_screen(session, local_ms=T0)
    assert "Rivals · K7WQ2M · track: cards removed of 104, ▶ leads" in screen
    assert "▶" not in screen.split("▶ leads")[1]  # nobody leads before a card is removed
    assert marker(screen, "Ada") == progress_bar(104, 52) and lane(screen, "Ada").endswith("←")
    assert marker(screen, "Bob") == progress_bar(104, 52)
    # Bob removes 5 cards in two moves (a pair and a triple): his marker moves, he leads
    bob = Game.from_code(CODE)
    for _ in range(2):
        move = next(bob.legal_moves())
        bob.push(move)
        session.receive(moved(session.seq + 1, "p2", bob, move.names(), changes=False), T0)
    screen = race_screen(session, local_ms=T0)
    assert marker(screen, "Bob") == progress_bar(bob.cards_left, 52) != progress_bar(104, 52)
    assert lane(screen, "Bob").startswith("▶") and not lane(screen, "Ada").startswith("▶")
    # an undo moves him back
    undo = moved(session.seq + 1, "p2", Game.from_code(CODE), [], changes=False, action="undo")
    session.receive(undo, T0)
    assert marker(race_screen(session, local_ms=T0), "Bob") == progress_bar(104, 52)


def test_the_leader_is_the_highest_score_then_the_shorter_finished_time_and_ties_lead_together() -> None:
    session = race([summary("p1", "Ada"), summary("p2", "Bob"), summary("p3", "Cy")])
    assert session.leaders() == set()
    session.receive({"type": "progress", "v": 1, "seq": 3, "player": summary("p1", "Ada", score=40)}, T0)
    session.receive({"type": "progress", "v": 1, "seq": 4, "player": summary("p2", "Bob", score=40)}, T0)
    assert session.leaders() == {"p1", "p2"}
    # Bob gives up on 40 at 50 s: ranked ahead of Ada, still playing on 40
    gave_up = summary("p2", "Bob", score=40, status="gave_up", elapsed_ms=50_000)
    session.receive({"type": "progress", "v": 1, "seq": 5, "player": gave_up}, T0)
    assert session.leaders() == {"p2"}
    session.receive({"type": "progress", "v": 1, "seq": 6, "player": summary("p3", "Cy", score=45)}, T0)
    assert session.leaders() == {"p3"}


def test_the_spectator_sees_the_track_and_the_leader_too() -> None:
    session = Session()
    session.receive(welcome(1, you=None, token=None, players=[summary("p1", "Ada"), summary("p2", "Bob")]), T0)
    games = {"p1": Game.from_code(CODE), "p2": Game.from_code(CODE)}
    session.receive(started(2, None, games), T0)
    move = next(games["p2"].legal_moves())
    games["p2"].push(move)
    session.receive(moved(3, "p2", games["p2"], move.names(), changes=False), T0)
    screen = watch_screen(session, local_ms=T0)
    bob = next(line for line in screen.split("\n") if "Bob" in line)
    ada = next(line for line in screen.split("\n") if "Ada" in line)
    assert bob.startswith("▶Bob") and progress_bar(games["p2"].cards_left) in bob
    assert ada.startswith(" Ada") and progress_bar(104) in ada


def results_session(results: list[dict[str, Any]]) -> Session:
    session = race([summary("p1", "Ada"), summary("p2", "Bob")])
    session.receive({"type": "race_over", "v": 1, "seq": 9, "results": results, "code": CODE}, T0)
    return session


RESULTS = [
    {"rank": 1, "player": "p1", "name": "Ada", "score": 520, "moves": 48, "time_ms": 96_500, "outcome": "won",
     "game": "g1", "splits": [24_000, 48_000, 72_000, 96_500]},
    {"rank": 2, "player": "p2", "name": "Bob", "score": 130, "moves": 13, "time_ms": 23_000, "outcome": "gave_up",
     "game": "g2", "splits": [12_000, None, None, None]},
]  # fmt: skip


def test_the_results_show_each_racers_splits() -> None:
    screen = results_screen(results_session(RESULTS), lang="en")
    lines = screen.split("\n")
    assert lines[2].split() == ["#", "Player", "Outcome", "Score", "Moves", "Time", "12", "24", "36", "48"]
    assert lines[3].split() == ["1", "Ada", "won", "520", "48", "1:36", "0:24", "0:48", "1:12", "1:36"]
    assert lines[4].split() == ["2", "Bob", "gave", "up", "130", "13", "0:23", "0:12", "—", "—", "—"]
    assert "Splits: the time at moves 12, 24, 36 and 48 (— not reached)." in screen
    italian = results_screen(results_session(RESULTS), lang="it")
    assert "Parziali: il tempo alla 12ª, 24ª, 36ª e 48ª mossa (— non raggiunta)." in italian
    assert italian.split("\n")[2].split()[-4:] == [str(n) for n in SPLIT_MOVES]


def test_long_names_are_cut_rather_than_the_last_split() -> None:
    long = [dict(entry, name=name) for entry, name in zip(RESULTS, ["Adalgisa_Bartolomea", "Bob"], strict=True)]
    long[1]["outcome"] = "timed_out"
    long[1]["time_ms"] = 7_200_000
    screen = results_screen(results_session(long), lang="it")
    assert all(len(line) <= 80 for line in screen.split("\n")), screen
    assert screen.split("\n")[3].endswith("1:36") and "Adalgisa_Barto…" in screen
    # an older server's results (no splits): the table as it was
    plain = [{k: v for k, v in entry.items() if k != "splits"} for entry in RESULTS]
    assert results_screen(results_session(plain)).split("\n")[2].split()[-1] == "Time"
    assert "Splits" not in results_screen(results_session(plain))


async def next_of(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            message: dict[str, Any] = await ws.receive_json()
            if message["type"] == kind:
                return message


async def until(predicate: object, timeout: float = 20.0) -> None:
    assert callable(predicate)
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


@pytest.fixture
async def fast_server(aiohttp_server: Callable[..., Awaitable[TestServer]], tmp_path: Path) -> str:
    """A server as ``server_url``'s, whose rate limit lets a test type a whole game at once."""
    settings = Settings(
        data_dir=tmp_path,
        db_url=f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}",
        secret=b"client-tests",
        countdown_s=0.2,
        tick_s=0.05,
        solver_workers=0,
        rate_burst=200.0,
    )
    server = await aiohttp_server(create_app(settings))
    return f"http://127.0.0.1:{server.port}"


async def test_a_live_race_moves_the_markers_and_ends_with_splits(fast_server: str) -> None:
    server_url = fast_server
    record = won_record()
    line = [step for step in record.moves if isinstance(step, Move)]
    created = await create_room(server_url, str(record.code))
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    ada_task = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.1))
    await until(lambda: "You are the host" in screen.last)
    ws_url = server_url.replace("http", "ws", 1) + "/ws"
    async with aiohttp.ClientSession() as http, http.ws_connect(ws_url) as bob:
        await bob.send_json({"type": "join", "v": 1, "room": created.room, "name": "Bob"})
        await next_of(bob, "welcome")
        await until(lambda: "Bob" in screen.last)
        lines.put_nowait("s")
        await next_of(bob, "started")
        await until(lambda: screen.last.startswith("Time "))
        assert marker(screen.last, "Bob") == progress_bar(104, 52)
        # Bob's move reaches Ada's track as a plain summary (no card): his marker moves, he leads
        bob_game = Game.from_code(str(record.code))
        bob_game.push(line[0])
        await bob.send_json({"type": "move", "v": 1, "positions": line[0].names(), "id": 1})
        await until(
            lambda: marker(screen.last, "Bob") == progress_bar(bob_game.cards_left, 52) != progress_bar(104, 52)
        )
        assert lane(screen.last, "Bob").startswith("▶")
        # Ada plays two moves: she overtakes him
        ada_game = Game.from_code(str(record.code))
        for move in line[:2]:
            lines.put_nowait(" ".join(move.names()))
            ada_game.push(move)
            await until(lambda: f"Moves {ada_game.move_count}  ·" in screen.last)
        await until(lambda: lane(screen.last, "Ada").startswith("▶"))
        assert marker(screen.last, "Ada") == progress_bar(ada_game.cards_left, 52)
        assert not lane(screen.last, "Bob").startswith("▶")
        await bob.send_json({"type": "give_up", "v": 1})
        await next_of(bob, "game_over")
        for move in line[2:]:
            lines.put_nowait(" ".join(move.names()))
            ada_game.push(move)
            await until(lambda: f"Moves {ada_game.move_count}  ·" in screen.last or screen.last.startswith("Results"))
        racer = await asyncio.wait_for(ada_task, 20)
        over = await next_of(bob, "race_over")
    results = {entry["name"]: entry for entry in over["results"]}
    assert results["Bob"]["splits"] == [None, None, None, None]
    ada_splits = results["Ada"]["splits"]
    assert all(isinstance(ms, int) for ms in ada_splits) and ada_splits == sorted(ada_splits)
    assert ada_splits[-1] == results["Ada"]["time_ms"]
    assert racer.session.results == over["results"]
    final = screen.last.split("\n")
    assert final[0].startswith(f"Results — room {created.room}") and final[2].split()[-4:] == ["12", "24", "36", "48"]
    ada_row = next(row for row in final if " Ada " in row)
    assert ada_row.split()[-4:] == [f"{ms // 60_000}:{ms // 1000 % 60:02d}" for ms in ada_splits]
    assert next(row for row in final if " Bob " in row).split()[-4:] == ["—"] * 4
