"""``halfmoon quick`` against a real server: two terminal players queue, see the count and the
countdown, are matched into one race that starts by itself and is played as ``halfmoon join``
plays it; ``q`` leaves the queue; a lone player's offer is kept waiting with Enter."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from halfmoon_client.cli import quick_race, register_quick, run_quick
from halfmoon_client.screens import queue_screen
from halfmoon_client.seats import SeatBook
from halfmoon_server import create_app
from halfmoon_server.settings import Settings
from halfmoon_server.web import keys
from tests.client.support import RecordingScreen


async def until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


@pytest.fixture
async def quick_server(aiohttp_server: Callable[..., Awaitable[TestServer]], tmp_path: Path) -> TestServer:
    settings = Settings(
        data_dir=tmp_path,
        db_url=f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}",
        secret=b"client-tests",
        countdown_s=0.2,
        tick_s=0.05,
        solver_workers=0,
        daily_requires_winnable=False,
        quick_fill_s=1.0,
        quick_lone_s=0.6,
    )
    return await aiohttp_server(create_app(settings))


def url(server: TestServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def seats(tmp_path: Path, who: str) -> SeatBook:
    """Each terminal player with a state directory (and so a player key) of their own."""
    return SeatBook(tmp_path / who / "seats.json")


async def test_two_terminal_players_are_matched_and_race_to_the_results(
    quick_server: TestServer, tmp_path: Path
) -> None:
    lines = {name: asyncio.Queue[str | None]() for name in ("Ada", "Bob")}
    screens = {name: RecordingScreen() for name in lines}
    tasks = {
        name: asyncio.create_task(
            quick_race(url(quick_server), name, lines[name], screens[name], tick_s=0.1, seats=seats(tmp_path, name))
        )
        for name in lines
    }
    await until(lambda: any("queued: 2 players · starts in" in f for f in screens["Ada"].frames))
    await until(lambda: all("Time 0:0" in s.last for s in screens.values()))
    # the first in sees the lobby (the last one's join starts the countdown)
    assert any("Quick race: it starts by itself" in f for s in screens.values() for f in s.frames)
    assert not any("You are the host" in f for s in screens.values() for f in s.frames)
    for queue in lines.values():
        queue.put_nowait("g")
    racers = {name: await asyncio.wait_for(task, 20) for name, task in tasks.items()}
    assert all(r is not None and r.done for r in racers.values())
    ada = racers["Ada"]
    bob = racers["Bob"]
    assert ada is not None and bob is not None and ada.session.room is not None
    assert ada.session.room == bob.session.room
    assert ada.session.code is not None and ada.session.code.startswith("HM1-S-")  # out once the race is over
    assert ada.session.verified is True


async def test_q_leaves_the_queue(quick_server: TestServer, tmp_path: Path) -> None:
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    book = seats(tmp_path, "a")
    task = asyncio.create_task(quick_race(url(quick_server), "Ada", lines, screen, tick_s=0.1, seats=book))
    await until(lambda: quick_server.app[keys.QUICK].count() == 1)
    lines.put_nowait("q")
    assert await asyncio.wait_for(task, 10) is None
    assert screen.last == "You left the queue."
    await until(lambda: quick_server.app[keys.QUICK].count() == 0)


async def test_a_lone_terminal_player_sees_the_offer_and_keeps_waiting_with_enter(
    quick_server: TestServer, tmp_path: Path
) -> None:
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    book = seats(tmp_path, "a")
    task = asyncio.create_task(quick_race(url(quick_server), "Ada", lines, screen, tick_s=0.1, seats=book))
    await until(lambda: "No rival yet" in screen.last)
    lines.put_nowait("")
    await until(lambda: "No rival yet" not in screen.last)  # kept waiting: the offer comes again later
    await until(lambda: "No rival yet" in screen.last)
    lines.put_nowait("q")
    assert await asyncio.wait_for(task, 10) is None


def test_the_queue_screen_shows_the_count_the_countdown_and_the_offer_in_both_languages() -> None:
    assert queue_screen(3, 10_400, False, None, local_ms=2_000) == (
        "Quick race · queued: 3 players · starts in 9 s\nq leaves the queue"
    )
    alone = queue_screen(1, None, True, {"name": "Gus", "code": "HM1-S-X", "game": "g1"}, local_ms=0, lang="it")
    assert alone.splitlines()[0] == "Gara veloce · in coda da solo: aspettiamo un avversario…"
    assert "Invio: continua ad aspettare" in alone and "--ghost g1" in alone and "--code HM1-S-X" in alone


def test_halfmoon_quick_needs_a_name_and_refuses_a_bad_server(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    register_quick(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["quick"])
    capsys.readouterr()
    args = parser.parse_args(["quick", "--name", "Ada", "--server", "ftp://nowhere"])
    assert run_quick(args) == 1
    assert capsys.readouterr().err.startswith("halfmoon quick: not a server URL")
