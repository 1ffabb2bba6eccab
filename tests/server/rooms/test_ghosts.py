"""Ghosts: a stored game carries the time of each of its steps, so it can be raced
later. Driven through the real server with an injected clock, so every time is exact; and the
record's parser takes ``times`` while refusing a malformed list."""

from __future__ import annotations

import aiohttp
import pytest

from halfmoon.errors import InvalidRecordError
from halfmoon.game import Game
from halfmoon.record import GameRecord, replay
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient

CODE = "HM1-N-AAAAAAA"


async def test_a_stored_game_carries_the_clock_time_of_each_step_undos_included(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    ada = await WsClient.connect(server, "Ada")
    await ada.send("solo", name="Ada", code=CODE)
    await ada.next("welcome")
    game = Game.from_code(CODE)
    sent: list[object] = []
    # the solo clock starts at the first move: its step is at 0 ms; then 1.5 s, 2.5 s and 4 s later
    for pause, action in [(7_000, "move"), (1_500, "move"), (1_000, "undo"), (1_500, "move")]:
        clock.advance(pause)
        if action == "undo":
            game.undo()
            await ada.send("undo")
            sent.append("undo")
        else:
            move = next(game.legal_moves())
            game.push(move)
            await ada.send("move", positions=move.names())
            sent.append(move.names())
        await ada.next("moved")
    clock.advance(2_000)
    await ada.send("give_up")
    over = await ada.next("game_over")
    assert over["time_ms"] == 6_000
    await server.app[keys.TASKS].settle()  # (game_over does not wait for the database: the write follows it)
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url(f"/api/games/{over['game']}"))
        assert response.status == 200
        stored = await response.json()
    await ada.close()
    assert stored["moves"] == sent
    assert stored["times"] == [0, 1_500, 2_500, 4_000]
    # the engine reads the stored record as before: the times change nothing in a replay
    record = GameRecord.from_json(stored)
    assert record.times == [0, 1_500, 2_500, 4_000] and replay(record).ok
    assert replay(record).game.move_count == 2


def test_a_record_without_times_reads_and_writes_as_before() -> None:
    data = {"code": CODE, "moves": [["1", "2"], "undo"]}
    record = GameRecord.from_json(data)
    assert record.times is None and record.to_json() == data


@pytest.mark.parametrize(
    ("times", "reason"),
    [
        ([0], "a list of 2 numbers"),
        ("0,1", "a list of 2 numbers"),
        ([0, -1], "time 1: -1"),
        ([5, 4], "time 1: 4"),
        ([0, 1.5], "time 1: 1.5"),
        ([True, 2], "time 0: True"),
    ],
)
def test_malformed_times_are_refused_naming_the_bad_one(times: object, reason: str) -> None:
    with pytest.raises(InvalidRecordError, match=reason):
        GameRecord.from_json({"code": CODE, "moves": [["1", "2"], "undo"], "times": times})
