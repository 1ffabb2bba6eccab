"""The room ticker (``Lobby.tick``) looks after every room in slices of ``TICK_SLICE``, letting
the event loop run between them: at thousands of rooms a whole round in one go held every
room's moves back for tens of milliseconds, every tick. A room dropped while a round is under
way is not looked after."""

from __future__ import annotations

import asyncio

from halfmoon_server.rooms import lobby as lobby_module
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.web import keys
from tests.server.conftest import StartServer


async def rooms_in(lobby: Lobby, count: int) -> None:
    for _ in range(count):
        await lobby.create_race(None, "127.0.0.1")


async def test_a_round_over_many_rooms_lets_the_loop_run_between_slices(start_server: StartServer) -> None:
    server = await start_server(tick_s=3600.0, room_burst=10_000, room_per_min=10_000)  # no round of its own
    lobby = server.app[keys.LOBBY]
    await rooms_in(lobby, 3 * lobby_module.TICK_SLICE + 10)
    turns = 0
    stop = asyncio.Event()

    async def count_turns() -> None:
        nonlocal turns
        while not stop.is_set():
            await asyncio.sleep(0)
            turns += 1

    counter = asyncio.create_task(count_turns())
    await asyncio.sleep(0)
    before = turns
    await lobby.tick()
    during = turns - before
    stop.set()
    await counter
    assert during >= 3, f"the loop ran {during} times while {len(lobby.rooms)} rooms were looked after"


async def test_a_room_dropped_during_a_round_is_not_looked_after(start_server: StartServer) -> None:
    server = await start_server(tick_s=3600.0, room_burst=10_000, room_per_min=10_000)
    lobby = server.app[keys.LOBBY]
    await rooms_in(lobby, lobby_module.TICK_SLICE + 5)
    last = list(lobby.rooms.values())[-1]
    looked: list[str] = []
    original = lobby._look_after

    async def spy(room, now):  # type: ignore[no-untyped-def]
        looked.append(room.id)
        if len(looked) == 1:
            lobby._release(last)  # dropped while the round is under way
        await original(room, now)

    lobby._look_after = spy  # type: ignore[method-assign]
    await lobby.tick()
    assert last.id not in looked
    assert len(looked) == lobby_module.TICK_SLICE + 4
