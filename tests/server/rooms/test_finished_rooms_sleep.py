"""A finished room nobody is in leaves memory after ``finished_hold_s`` and stays readable from
the room log until ``finished_ttl_s``: a resume, a watch or ``GET /api/rooms/…`` rebuilds it
there. A finished race of four held ~55 KiB for the whole 30-minute TTL, so a server's memory
grew with every race of the last half hour; now it holds only the last minute's."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from halfmoon_server.adapters.journal import MemoryLog
from halfmoon_server.clock import ManualClock
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient, won_record


async def _won_solo(server: Any) -> tuple[WsClient, str, str, dict[str, Any]]:
    """A solo game won over a new connection: the client, the room, the token, its game_over."""
    record = won_record()
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada", code=str(record.code))
    welcome = await ada.next("welcome")
    for step in record.moves:
        await ada.send("move", positions=step.names())  # type: ignore[union-attr]
        await ada.next("moved")
    over = await ada.next("game_over")
    assert over["outcome"] == "won"
    return ada, welcome["room"]["room"], welcome["token"], over


async def assert_a_new_game_is_welcome(server: Any) -> None:
    """A new solo game starts (not refused ``server_full``)."""
    bob = await WsClient.connect(server, "bob")
    try:
        await bob.send("solo", name="Bob", code="HM1-N-AAAAAAA")
        answer = await bob.next("welcome", "error")
        assert answer["type"] == "welcome", answer
    finally:
        await bob.close()


async def _until_idle(lobby: Lobby, room_id: str) -> None:
    """The room's game is recorded and stored and its connection gone (the server's side)."""
    for _ in range(200):
        room = lobby.rooms.get(room_id)
        if room is not None and room.idle and not room.race.unrecorded:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"room {room_id} never became idle")


async def _held_for_a_minute_once_left(lobby: Lobby, clock: ManualClock, player: WsClient, room_id: str) -> None:
    """The player leaves the finished room: it stays in memory for ``finished_hold_s`` (60 s
    here) from its end or its rebuild, then the ticker drops it."""
    await player.close()
    await _until_idle(lobby, room_id)
    await lobby.tick()
    assert room_id in lobby.rooms, "held for finished_hold_s"
    clock.advance(60_000)
    await lobby.tick()
    assert room_id not in lobby.rooms, "nobody in it past the hold: out of memory"


async def test_a_finished_room_nobody_is_in_leaves_memory_and_comes_back_from_the_log(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(tick_s=3600.0, finished_hold_s=60, finished_ttl_s=600)
    lobby: Lobby = server.app[keys.LOBBY]
    ada, room_id, token, over = await _won_solo(server)
    await _held_for_a_minute_once_left(lobby, clock, ada, room_id)  # from its end
    assert lobby.log.sleeping[room_id] > clock.now_ms()  # type: ignore[attr-defined]

    again = await WsClient.connect(server, "again")  # a reload: the room is rebuilt from the log
    await again.send("resume", room=room_id, token=token)
    snapshot = (await again.next("welcome"))["room"]
    assert snapshot["phase"] == "finished"
    assert snapshot["game_over"]["outcome"] == "won" and snapshot["game_over"]["moves"] == over["moves"]
    assert snapshot["code"] == over["code"]
    assert room_id in lobby.rooms
    await lobby.tick()
    assert room_id in lobby.rooms, "a player is in it again: it stays"
    await _held_for_a_minute_once_left(lobby, clock, again, room_id)  # from its rebuild

    async with aiohttp.ClientSession() as http:
        url = server.make_url(f"/api/rooms/{room_id}")
        read = await (await http.get(url)).json()
        assert read["phase"] == "finished" and [r["outcome"] for r in read["results"]] == ["won"]
        clock.advance(600_000)  # past finished_ttl_s: its log is cleared at its wake-up
        await lobby.tick()
        assert room_id not in lobby.rooms and room_id not in lobby.log.sleeping  # type: ignore[attr-defined]
        assert await lobby.log.load(room_id) is None
        past = await (await http.get(url)).json()  # from the stored games from now on
        assert past["phase"] == "finished" and [r["outcome"] for r in past["results"]] == ["won"]


async def test_a_finished_room_a_player_is_still_in_stays(start_server: StartServer, clock: ManualClock) -> None:
    server = await start_server(tick_s=3600.0, finished_hold_s=60, finished_ttl_s=600)
    lobby: Lobby = server.app[keys.LOBBY]
    ada, room_id, _, _ = await _won_solo(server)  # still on the end box (a rematch may follow)
    for _ in range(200):
        if not lobby.rooms[room_id].busy:
            break
        await asyncio.sleep(0.01)
    clock.advance(120_000)
    await lobby.tick()
    assert room_id in lobby.rooms
    await ada.send("ping")
    assert (await ada.next("pong"))["type"] == "pong"
    await ada.close()


async def test_a_room_out_of_memory_frees_its_place(start_server: StartServer, clock: ManualClock) -> None:
    """``max_rooms`` counts the rooms held: one asleep in the log takes none."""
    server = await start_server(tick_s=3600.0, finished_hold_s=1, max_rooms=1)
    lobby: Lobby = server.app[keys.LOBBY]
    ada, room_id, _, _ = await _won_solo(server)
    await ada.close()
    await _until_idle(lobby, room_id)
    clock.advance(1_000)
    await lobby.tick()
    assert lobby.rooms == {}
    bob, other, _, _ = await _won_solo(server)  # refused server_full while the first was held
    assert other != room_id
    await bob.close()


async def test_the_local_log_wakes_only_rooms_it_does_not_hold() -> None:
    log = MemoryLog()
    log.rooms["HELD"] = object()  # type: ignore[assignment]  # followed: the ticker looks at it
    await log.wake("HELD", 5)
    await log.wake("A", 30)
    await log.wake("B", 10)
    await log.wake("A", 20)  # moved earlier: its first time is stale
    await log.wake("C", 15)
    await log.wake("C", None)  # never mind
    assert await log.due(9) == []
    assert await log.due(25) == ["B", "A"]
    assert await log.due(10_000) == [], "each wake-up once; A's stale time and C are skipped"
    assert log.sleeping == {}
    await log.wake("D", 40)
    await log.forget("D")
    assert await log.due(50) == []
