"""Ghosts in the terminal: ``halfmoon join ROOM --ghost GAME`` draws a stored game's
run under the track, its marker moving on the race's clock, then its result; no card of it."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

import aiohttp
import pytest

from halfmoon.game import Game
from halfmoon_client import cli
from halfmoon_client.errors import ProtocolError, RefusedError
from halfmoon_client.ghost import Ghost
from halfmoon_client.rest import create_room, stored_game
from halfmoon_client.terminal import play_race
from tests.client.support import RecordingScreen

CODE = "HM1-N-AAAAAAB"
GAME = {
    "code": CODE,
    "moves": [["1", "2"], ["3", "4", "5"], "undo", ["6", "7"]],
    "times": [0, 1000, 1500, 4000],
    "name": "Gus",
    "time_ms": 5000,
    "outcome": "gave_up",
}


def test_a_ghost_counts_its_cards_and_moves_on_the_clock() -> None:
    ghost = Ghost.from_game(GAME)
    assert [(s.at, s.removed, s.moves, s.score) for s in ghost.steps] == [
        (0, 2, 1, 10), (1000, 5, 2, 25), (1500, 2, 1, 10), (4000, 4, 2, 20),
    ]
    assert ghost.at(999).removed == 2 and ghost.at(1000).removed == 5 and ghost.at(3999).removed == 2
    assert ghost.at(-1).removed == 0  # before its first step: the deal
    playing = ghost.lane(1200, lang="en", cells=21)
    assert playing.split()[:4] == ["Gus", "(ghost)", "25", "2"] and "●" in playing
    assert ghost.lane(5000, lang="en").endswith("finished: gave up, 0:05")
    assert ghost.lane(10, over=True, lang="it").endswith("finito: arreso, 0:05")  # your game is over: its end


@pytest.mark.parametrize(
    ("game", "reason"),
    [
        ({k: v for k, v in GAME.items() if k != "times"}, "without its times"),
        ({**GAME, "times": [0, 1]}, "times"),
        ({**GAME, "moves": ["undo"], "times": [0]}, "nothing to undo"),
        ({**GAME, "time_ms": None}, "time_ms"),
        ([], "not a stored game"),
    ],
)
def test_what_is_not_a_raceable_game_is_refused_plainly(game: object, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        Ghost.from_game(game)


async def until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


async def _ghost_run(server_url: str) -> str:
    """Gus plays three moves of a solo game, 0.4 s apart, and gives up: his game id."""
    game = Game.from_code(CODE)
    async with aiohttp.ClientSession() as http, http.ws_connect(f"{server_url}/ws") as ws:
        await ws.send_json({"type": "solo", "v": 1, "name": "Gus", "code": CODE})

        async def next_of(kind: str) -> dict[str, object]:
            while True:
                message = await ws.receive_json(timeout=5)
                assert message["type"] != "error", message
                if message["type"] == kind:
                    return dict(message)

        await next_of("welcome")
        for i in range(3):
            if i:
                await asyncio.sleep(0.4)
            move = next(game.legal_moves())
            game.push(move)
            await ws.send_json({"type": "move", "v": 1, "positions": move.names()})
            await next_of("moved")
        await asyncio.sleep(0.4)
        await ws.send_json({"type": "give_up", "v": 1})
        return str((await next_of("game_over"))["game"])


async def test_a_race_against_a_ghost_from_the_terminal(server_url: str) -> None:
    game_id = await _ghost_run(server_url)
    data = None
    for _ in range(100):  # the game is stored just after its end
        try:
            data = await stored_game(server_url, game_id)
            break
        except RefusedError as exc:
            assert exc.code == "no_such_game"
            await asyncio.sleep(0.05)
    assert data is not None and len(data["times"]) == 3
    ghost = Ghost.from_game(data)
    created = await create_room(server_url, CODE)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    race = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.05, ghost=ghost))
    await until(lambda: "You are the host" in screen.last)
    assert "(ghost)" not in screen.last  # no lane in the lobby
    lines.put_nowait("s")
    await until(lambda: "finished: gave up" in screen.last)
    lanes = [line for frame in screen.frames for line in frame.splitlines() if line.startswith("  Gus (ghost)")]
    scores = [int(line.split()[2]) for line in lanes if "●" in line]  # while the ghost plays
    assert len(set(scores)) >= 2, f"the ghost's lane moved on the race's clock: {lanes}"
    assert scores == sorted(scores)  # Gus never undid: it only moves on
    assert "♠" not in "\n".join(lanes) and "♥" not in "\n".join(lanes)
    lines.put_nowait("g")
    racer = await asyncio.wait_for(race, 20)
    assert racer.done
    assert "finished: gave up" in screen.last  # its result stays with the race's results


async def test_join_with_an_unknown_ghost_says_so_in_one_line(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    created = await create_room(server_url, CODE)
    parser = argparse.ArgumentParser(prog="halfmoon")
    cli.register_join(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["join", created.room, "--name", "Ada", "--server", server_url, "--ghost", "nope"])
    assert await asyncio.to_thread(args.func, args) == 1
    assert capsys.readouterr().err.startswith("halfmoon join: there is no game 'nope'")


async def test_a_ghost_of_another_deal_is_named_not_raced(server_url: str) -> None:
    """``join ROOM --ghost GAME`` where the room plays another deal than the ghost did: its lane
    would race a run on other cards, so the screen says so (and how to race it) instead."""
    ghost = Ghost.from_game(GAME)  # played on CODE
    created = await create_room(server_url, "HM1-N-AAAAAAC")
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    race = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.05, ghost=ghost))
    await until(lambda: "You are the host" in screen.last)
    assert f"The ghost played another deal ({CODE})" in screen.last
    assert f"halfmoon race --code {CODE}" in screen.last
    lines.put_nowait("s")
    await until(lambda: "another deal" in screen.last and "Rivals" in screen.last)
    assert "(ghost)" not in "\n".join(screen.frames)  # never a lane
    lines.put_nowait("g")
    await asyncio.wait_for(race, 20)
