"""The terminal client rematches: ``r`` proposes, ``a`` accepts, the host's ``s``
starts the next race; with ``--series`` the results show the points table. Pure first (the
session and the racer fed messages), then two terminal racers against a real server."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from halfmoon_client.racer import Racer
from halfmoon_client.rest import create_room
from halfmoon_client.screens import race_screen
from halfmoon_client.terminal import play_race
from tests.client.support import RecordingScreen, summary, welcome


async def until(predicate: object, timeout: float = 20.0) -> None:
    assert callable(predicate)
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


def finished(racer: Racer) -> None:
    """Feed a one-race room of Ada (p1, the racer) and Bob, over, with a series of 2 under way."""
    racer.receive(welcome(3, phase="lobby", players=[summary("p1", "Ada"), summary("p2", "Bob")]), 0)
    table = [
        {"player": "p2", "name": "Bob", "points": 1, "score": 0, "time_ms": 2000, "races": 1},
        {"player": "p1", "name": "Ada", "points": 0, "score": 0, "time_ms": 3000, "races": 1},
    ]
    results = [
        {"rank": 1, "player": "p2", "name": "Bob", "score": 0, "moves": 0, "time_ms": 2000, "outcome": "gave_up"},
        {"rank": 2, "player": "p1", "name": "Ada", "score": 0, "moves": 0, "time_ms": 3000, "outcome": "gave_up"},
    ]
    series = {"races": 2, "race": 1, "over": False, "table": table}
    racer.receive({"type": "race_over", "seq": 9, "v": 1, "results": results, "round": 1, "series": series}, 0)


def rematch_event(seq: int) -> dict[str, Any]:
    return {
        "type": "rematch",
        "seq": seq,
        "v": 1,
        "round": 2,
        "host": "p2",
        "players": [summary("p2", "Bob")],
        "seated": [summary("p1", "Ada")],
        "code": None,
        "sealed": True,
        "commitment": "c" * 64,
        "series": {"races": 2, "race": 2, "over": False, "table": []},
    }


def test_r_and_a_are_refused_until_they_make_sense_and_a_stay_ends_only_with_the_input() -> None:
    racer = Racer(stay=True, series=2)
    racer.receive(welcome(1, phase="lobby", players=[summary("p1", "Ada")]), 0)
    assert racer.command("r") == [] and "No rematch" in racer.message
    assert racer.command("a") == [] and "No rematch" in racer.message
    assert racer.command("s") == [{"type": "start", "v": 1, "series": 2}]
    finished(racer)
    assert racer.session.race_over and not racer.done  # it stays for a rematch
    screen = race_screen(racer.session, local_ms=0, stay=True)
    assert "Series: race 1 of 2" in screen and "r rematch" in screen
    assert screen.index(" Bob") < screen.index(" Ada", screen.index("Series"))
    assert racer.command("rematch") == [{"type": "rematch", "v": 1, "entropy": racer.session.entropy}]
    assert re.fullmatch(r"[0-9a-f]{32}", racer.session.entropy or ""), "a fresh contribution to the next deal"
    racer.receive(rematch_event(10), 0)
    session = racer.session
    assert (session.phase, session.round, session.results, session.board) == ("lobby", 2, None, None)
    assert session.may_accept and "Bob proposes a rematch" in racer.screen(0)
    assert "a accepts the rematch" in racer.screen(0) and "race 2" in racer.screen(0)
    proposed = racer.session.entropy
    assert racer.command("a") == [{"type": "accept", "v": 1, "entropy": racer.session.entropy}]
    assert racer.session.entropy != proposed
    racer.receive({"type": "player_joined", "seq": 11, "v": 1, "player": summary("p1", "Ada"), "host": "p2"}, 0)
    assert not session.may_accept and list(session.players) == ["p2", "p1"]
    racer.input_closed = True
    assert not racer.done  # a race is on again: the stay lasts until it is over
    finished(racer)
    assert racer.done
    one_race = Racer()
    finished(one_race)
    assert one_race.done and "r rematch" not in one_race.screen(0)


def test_the_host_asks_for_no_series_while_one_is_under_way() -> None:
    racer = Racer(stay=True, series=3)
    finished(racer)  # a series of 2 is under way
    racer.receive({**rematch_event(10), "host": "p1", "players": [summary("p1", "Ada")], "seated": []}, 0)
    assert racer.command("s") == [{"type": "start", "v": 1}]


async def test_two_terminal_racers_rematch_and_run_a_series_to_its_table(server_url: str) -> None:
    created = await create_room(server_url, None)
    ada_lines: asyncio.Queue[str | None] = asyncio.Queue()
    bob_lines: asyncio.Queue[str | None] = asyncio.Queue()
    ada_screen, bob_screen = RecordingScreen(), RecordingScreen()
    ada = asyncio.create_task(
        play_race(server_url, created.room, "Ada", ada_lines, ada_screen, tick_s=0.1, series=2, stay=True)
    )
    await until(lambda: "You are the host" in ada_screen.last)
    bob = asyncio.create_task(play_race(server_url, created.room, "Bob", bob_lines, bob_screen, tick_s=0.1, stay=True))
    try:
        await until(lambda: "Bob" in ada_screen.last)
        host_lines = ada_lines
        for number in (1, 2):
            host_lines.put_nowait("s")
            await until(lambda: ada_screen.last.startswith("Time ") and bob_screen.last.startswith("Time "))
            ada_lines.put_nowait("g")
            bob_lines.put_nowait("g")
            await until(lambda: "Results" in ada_screen.last and "Results" in bob_screen.last)
            if number == 1:
                assert "Series: race 1 of 2" in ada_screen.last and "r rematch" in bob_screen.last
                bob_lines.put_nowait("r")  # Bob proposes: he hosts the next race
                await until(lambda: "a accepts the rematch" in ada_screen.last)
                ada_lines.put_nowait("a")
                await until(lambda: "You are the host" in bob_screen.last and "Ada" in bob_screen.last)
                host_lines = bob_lines
        assert "Series over (2 races): final table" in ada_screen.last
        assert re.search(r"\b[12] pts", ada_screen.last)
        for lines in (ada_lines, bob_lines):
            lines.put_nowait("q")
        first, second = await asyncio.wait_for(asyncio.gather(ada, bob), 10)
        assert first.session.round == second.session.round == 2
        assert first.session.series is not None and first.session.series["over"] is True
        assert first.session.verified is True and second.session.verified is True  # the sealed deal checked out
    finally:
        for task in (ada, bob):
            task.cancel()
