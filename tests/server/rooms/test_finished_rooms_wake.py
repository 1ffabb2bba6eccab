"""A finished room asleep (out of memory after ``--finished-hold``) wakes safely: a restart holds
no more rooms than ``max_rooms``, a resume waiting on a load is not handed a dropped copy, a failed
wake-up load is still forgotten, a room dropped and held again at once stays followed in Redis,
and REST readers waking rooms do not crowd out new games. (Each test failed when written: on
fe82be7, the commit that put finished rooms to sleep, or on c5942f4.)"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import LogUnavailable
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.delegating import replaced
from tests.server.rooms.test_finished_rooms_sleep import _until_idle, _won_solo, assert_a_new_game_is_welcome
from tests.server.rooms.test_rooms_on_a_shared_log import _redis_room
from tests.server.support import WsClient


async def _asleep(lobby: Lobby, clock: ManualClock, server: Any, hold_ms: int) -> tuple[str, str]:
    """A solo game won, its player gone, the room dropped from memory: its id and token."""
    ada, room_id, token, _ = await _won_solo(server)
    await ada.close()
    await _until_idle(lobby, room_id)
    clock.advance(hold_ms)
    await lobby.tick()
    assert room_id not in lobby.rooms
    return room_id, token


async def test_a_restart_does_not_hold_more_rooms_than_max_rooms(start_server: StartServer, clock: ManualClock) -> None:
    """Rooms asleep in the journal take no place (that is the point), so the journal now holds
    more rooms than ``max_rooms``; ``Lobby.restore`` loads every one of them back into memory at
    start-up, past ``max_rooms`` (memory the operator sized for ``max_rooms``), and every new game
    is refused ``server_full`` until the first tick has put them back to sleep."""
    server = await start_server(tick_s=3600.0, finished_hold_s=1, max_rooms=2)
    lobby: Lobby = server.app[keys.LOBBY]
    for _ in range(3):
        await _asleep(lobby, clock, server, 1_000)
    assert lobby.rooms == {}
    await server.close()

    again = await start_server(tick_s=3600.0, finished_hold_s=1, max_rooms=2)  # the same data dir
    lobby = again.app[keys.LOBBY]
    assert len(lobby.rooms) <= 2, f"restore held {len(lobby.rooms)} rooms, max_rooms is 2"
    await assert_a_new_game_is_welcome(again)


async def test_a_resume_that_waits_on_a_load_is_not_handed_a_dropped_copy(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Two finders of a sleeping room: the first loads it, the second waits on the first's
    future (``Lobby.find``'s ``_loading``). The second resumes two loop turns after the load;
    a ticker round that runs in between finds the room idle (nobody attached yet), finished long
    ago, and drops it again. The waiter is handed that dropped copy: its ``connect`` is logged and
    applied to a copy the lobby no longer holds, the player gets a welcome, and then every
    command of theirs is refused ``not_in_room`` (and their disconnect is never logged)."""
    server = await start_server(tick_s=3600.0, finished_hold_s=60, finished_ttl_s=600)
    lobby: Lobby = server.app[keys.LOBBY]
    room_id, token = await _asleep(lobby, clock, server, 60_000)

    gate = asyncio.Event()
    original = lobby.log.load

    async def slow_load(wanted: str) -> Any:
        await gate.wait()
        return await original(wanted)

    lobby.log = replaced(original_log := lobby.log, load=slow_load)
    loader = asyncio.create_task(lobby.find(room_id))  # e.g. GET /api/rooms/{id}, or another player
    await asyncio.sleep(0.01)
    ada = await WsClient.connect(server, "ada-again")
    try:
        await ada.send("resume", room=room_id, token=token)
        for _ in range(100):  # the resume waits on the loader's future
            if room_id in lobby._loading and lobby._loading[room_id]._callbacks:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.01)
        gate.set()
        await loader
        await lobby.tick()  # the ticker's round, between the load and the waiter's turn
        await ada.next("welcome")
        assert room_id in lobby.rooms, "the player was welcomed into a copy of the room nobody holds"
        await ada.send("leave")
        extra = await ada.drain(0.2)
        assert not any(m.get("code") == "not_in_room" for m in extra), extra
    finally:
        lobby.log = original_log
        await ada.close()


async def test_a_room_whose_wake_up_load_fails_is_still_forgotten(
    start_server: StartServer, clock: ManualClock
) -> None:
    """``_LocalLog.due`` takes the room out of ``sleeping`` before the lobby loads it; when that
    load fails (a journal that did not answer in time, once), the tick just goes on: the room is
    never due again, its journal rows stay until the next restart, and its players can still
    resume it past ``finished_ttl_s``."""
    server = await start_server(tick_s=3600.0, finished_hold_s=60, finished_ttl_s=600)
    lobby: Lobby = server.app[keys.LOBBY]
    room_id, _ = await _asleep(lobby, clock, server, 60_000)

    original = lobby.log.load
    failures = [LogUnavailable("the journal did not answer in time", certain=False)]

    async def flaky_load(wanted: str) -> Any:
        if failures:
            raise failures.pop()
        return await original(wanted)

    lobby.log = replaced(original_log := lobby.log, load=flaky_load)
    try:
        clock.advance(600_000)  # its wake-up (finished_ttl_s): the load fails this once
        await lobby.tick()
        for _ in range(5):  # the journal answers again; rounds go on
            clock.advance(60_000)
            await lobby.tick()
    finally:
        lobby.log = original_log
    assert await lobby.log.load(room_id) is None, "the room's log outlived finished_ttl_s for good"


async def test_a_room_dropped_and_held_again_at_once_keeps_its_lease_in_redis(
    tmp_path: Any,
    clock: ManualClock,
    redis_server: Any,
) -> None:
    """A room asleep resumed at once: its drop lets the lease go in the background, and its
    load claims it again. Had the lease's release landed after the claim, this instance would
    hold the room without owning it: its next append fenced, its players sent away."""
    log, room = await _redis_room(tmp_path, clock, redis_server.url)
    try:
        lease = log._lease

        async def lease_late(*args: Any, **kwargs: Any) -> Any:  # the release takes a slower connection
            await asyncio.sleep(0.2)
            return await lease(*args, **kwargs)

        log._lease = lease_late
        log.unfollow(room.id)
        assert (await log.claim(room.id)).mine, "claimed once the release is through"
        log.follow(room)
        log._lease = lease
        await room.submit({"k": "join", "n": "Ada", "tok": "t"})
        assert room.applied == 1 and not room.lost, "appended: the lease is this instance's"
    finally:
        await log.close()


async def test_reading_sleeping_rooms_over_rest_does_not_crowd_out_new_games_for_the_whole_hold(
    start_server: StartServer, clock: ManualClock
) -> None:
    """``GET /api/rooms/{id}`` of a finished room asleep loads it with ``Lobby.find`` (hold=True):
    held, counted against ``max_rooms`` (``ensure_capacity``), with no capacity check of its own.
    Before c5942f4 the next ticker round put it back to sleep (it finished long ago); now its hold
    runs from the load (``_held_since``), so each anonymous, unlimited GET takes a room's place
    for ``finished_hold_s`` (60 s): a client that knows a few finished room ids (its own solo
    games, or the ``room`` of games on the leaderboards) keeps the server ``server_full``."""
    server = await start_server(tick_s=3600.0, finished_hold_s=60, finished_ttl_s=600, max_rooms=2)
    lobby: Lobby = server.app[keys.LOBBY]
    asleep = [(await _asleep(lobby, clock, server, 60_000))[0] for _ in range(2)]
    assert lobby.rooms == {}
    async with aiohttp.ClientSession() as http:
        for room_id in asleep:
            read = await (await http.get(server.make_url(f"/api/rooms/{room_id}"))).json()
            assert read["phase"] == "finished"
    clock.advance(1_000)
    await lobby.tick()  # a ticker round after the reads
    assert not set(asleep) & set(lobby.rooms), "two GETs hold two finished rooms for finished_hold_s"
    await assert_a_new_game_is_welcome(server)
