"""A room's deadlines fire by themselves: the countdown ends with no command or ticker round to
settle it, and a time limit further off than one timer (``_MAX_TIMER_S``) still ends the race.
(Both failed at b46f17c, during the race-core redesign.)"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient


async def _room(server: Any, code: str | None = None) -> str:
    async with aiohttp.ClientSession() as http:
        body = {"code": code} if code else {}
        response = await http.post(server.make_url("/api/rooms"), json=body)
        room: str = (await response.json())["room"]
        return room


async def _settle(server: Any, room_id: str) -> None:
    """Settle what is due in a room as its timer should (a logged tick)."""
    room = server.app[keys.LOBBY].rooms.get(room_id)
    await room.tick()


async def test_the_countdown_ends_by_itself(start_server: StartServer, clock: ManualClock) -> None:
    """Passes at 1158242; failed at b46f17c, which made `Room._now` tick the race only
    `if self._timer_at is not None and now >= self._timer_at`, but `Room._on_timer` set
    `_timer_at = None` *before* calling `tick()` → `_now()`:
    the timer's own tick is a no-op, nothing is published, nothing re-arms, and the ticker's
    `room.tick()` goes through the same gate. A race's countdown never ended (11 existing tests in
    tests/server failed there). Kept as a regression test."""
    server = await start_server(countdown_s=0.05)
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await ada.send("start")
    await ada.next("countdown")
    clock.advance(50)
    started = await ada.next("started", timeout=2.0)
    assert started["board"] is not None
    await ada.close()


async def test_a_long_time_limit_still_ends_the_race(
    start_server: StartServer, clock: ManualClock, monkeypatch: Any
) -> None:
    """A deadline further off than `_MAX_TIMER_S` (3600 s; a time limit may be 7200 s) gets a timer
    that fires early to be re-armed. At b46f17c the early firing clears `_timer_at`, ticks nothing and
    re-arms nothing; from then on neither a command nor the ticker settles the time limit (36fc040
    re-armed through `publish([])`); at 1158242 the ticker settles it. The cap is shortened here
    so the test runs in real time."""
    from halfmoon_server.rooms import room as room_module

    monkeypatch.setattr(room_module, "_MAX_TIMER_S", 0.05)
    server = await start_server()
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await ada.send("start", time_limit_s=7200)
    await asyncio.sleep(0.05)
    await _settle(server, room)
    await ada.next("started")
    await asyncio.sleep(0.2)  # the capped timer fires (early) at least once
    clock.advance(7200 * 1000)
    over = await ada.next("game_over", timeout=2.0)
    assert over["outcome"] == "timed_out"
    await ada.close()
