"""The room ticker (``Lobby.tick``) looks after every room in slices of ``TICK_SLICE``, letting
the event loop run between them: at thousands of rooms a whole round in one go held every
room's moves back for tens of milliseconds, every tick. A room dropped while a round is under
way is not looked after."""

from __future__ import annotations

import asyncio

import pytest

from halfmoon_server.clock import ManualClock
from halfmoon_server.rooms import lobby as lobby_module
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.delegating import replaced


async def rooms_in(lobby: Lobby, count: int) -> None:
    for _ in range(count):
        await lobby.create_race(None, "127.0.0.1")


async def rounds_of_two_seconds(start_server: StartServer, rooms: int) -> tuple[Lobby, list[str]]:
    """A lobby of ``rooms`` rooms whose quiet rooms are looked at every 2 s (no ticker of its own:
    the test calls ``tick``), and the rooms each look finds, in order (the look itself only noted)."""
    server = await start_server(tick_s=3600.0, room_burst=10_000, room_per_min=10_000)
    lobby = server.app[keys.LOBBY]
    lobby.quiet_look_ms = 2000  # (a round every 500 ms: every fourth round)
    await rooms_in(lobby, rooms)
    looked: list[str] = []

    async def noted(room, now):  # type: ignore[no-untyped-def]
        looked.append(room.id)
        lobby._looked_at[room.id] = now

    lobby._look_after = noted  # type: ignore[method-assign]
    return lobby, looked


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


@pytest.mark.interpreted  # (Lobby._look_after replaced)
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


async def test_a_held_rooms_next_look_is_written_once_not_at_every_round(start_server: StartServer) -> None:
    """Each round used to write every held room's next look to the log's wake set (in Redis a
    ZADD a room every half second); it is written when it matters: the first time, sooner, due,
    or half the abandon time later."""
    server = await start_server(tick_s=3600.0, room_burst=10_000, room_per_min=10_000)
    lobby = server.app[keys.LOBBY]
    await rooms_in(lobby, 5)
    written: list[tuple[str, int | None]] = []
    original = lobby.log.wake

    async def spy(room_id: str, at: int | None) -> None:
        written.append((room_id, at))
        await original(room_id, at)

    lobby.log = replaced(lobby.log, wake=spy)
    await lobby.tick()
    assert sorted(room_id for room_id, _ in written) == sorted(lobby.rooms)
    written.clear()
    for _ in range(3):
        await lobby.tick()
    assert written == []


def test_a_next_look_is_worth_writing_when_new_sooner_due_or_much_later() -> None:
    hour = 3_600_000
    worth = lobby_module._look_worth_writing
    assert worth(None, 5_000, 0, hour)  # never written
    assert worth(10_000, 5_000, 0, hour)  # sooner: a deadline
    assert worth(10_000, 10_000 + hour, 10_000, hour)  # what was written is due
    assert worth(10_000, 10_000 + hour // 2, 0, hour)  # half the abandon time later
    assert not worth(10_000, 10_001, 0, hour)  # a little later: the written look is only early
    assert not worth(10_000, 10_000 + hour // 2 - 1, 9_999, hour)


@pytest.mark.interpreted  # (Lobby._look_after replaced)
async def test_the_tickers_rounds_look_at_a_quiet_room_every_few_rounds_and_a_pressing_one_at_every_round(
    start_server: StartServer, clock: ManualClock
) -> None:
    lobby, looked = await rounds_of_two_seconds(start_server, 3)
    quiet, due, lost = list(lobby.rooms.values())
    await lobby.tick(every_room=False)
    assert sorted(looked) == sorted([quiet.id, due.id, lost.id]), "never looked at: looked at in the first round"
    due.race._deadline = clock.now_ms() + 1200  # its countdown ends in 1.2 s
    lost.lost = True
    rounds = []
    for _ in range(8):
        clock.advance(500)
        looked.clear()
        await lobby.tick(every_room=False)
        rounds.append(sorted(looked))
    assert [quiet.id in r for r in rounds] == [False, False, False, True] * 2
    assert [due.id in r for r in rounds] == [False, False, True, True, True, True, True, True]
    assert all(lost.id in r for r in rounds)
    looked.clear()
    await lobby.tick()  # a direct call (tests, start-up) looks at every room
    assert sorted(looked) == sorted([quiet.id, due.id, lost.id])


@pytest.mark.interpreted  # (Lobby._look_after replaced)
async def test_the_tickers_rounds_still_look_at_a_quiet_room_after_the_wall_clock_is_set_back(
    start_server: StartServer, clock: ManualClock
) -> None:
    lobby, looked = await rounds_of_two_seconds(start_server, 1)
    (quiet,) = lobby.rooms.values()
    await lobby.tick(every_room=False)
    assert looked == [quiet.id]
    clock.ms -= 3_600_000  # the host's clock stepped back an hour (NTP, a VM resumed)
    looked.clear()
    for _ in range(4):
        clock.advance(500)
        await lobby.tick(every_room=False)
    assert looked == [quiet.id], "a quiet room is looked at every fourth round, not an hour later"


@pytest.mark.interpreted  # (Lobby._look_after replaced)
async def test_rooms_held_at_once_have_their_quiet_looks_spread_over_the_rounds(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(tick_s=3600.0, room_burst=10_000, room_per_min=10_000)
    lobby = server.app[keys.LOBBY]
    lobby.quiet_look_ms = 2000
    await rooms_in(lobby, 200)
    await lobby.tick()  # every room's first look, in one round (as at start-up)
    looked: list[str] = []
    original = lobby._look_after

    async def spy(room, now):  # type: ignore[no-untyped-def]
        looked.append(room.id)
        await original(room, now)

    lobby._look_after = spy  # type: ignore[method-assign]
    per_round = []
    for _ in range(8):
        clock.advance(500)
        looked.clear()
        await lobby.tick(every_room=False)
        per_round.append(set(looked))
    assert all(len(looked) <= 80 for looked in per_round), [len(r) for r in per_round]  # about a quarter each
    for first, second in zip(per_round[:4], per_round[4:], strict=True):
        assert first == second  # each room in the same round of every four
    assert set().union(*per_round[:4]) == set(lobby.rooms)  # every room once in four rounds
    assert sum(len(looked) for looked in per_round[:4]) == len(lobby.rooms)
