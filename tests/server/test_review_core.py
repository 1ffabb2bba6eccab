"""Adversarial review of the race-core redesign (36fc040 against dc33302): each test shows one
behaviour a hostile client or an unlucky sequence can trigger. A test that fails here names a
problem; the report that came with this file says where it lives and how to fix it."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient, won_record


async def _room(server: Any, code: str | None = None) -> str:
    async with aiohttp.ClientSession() as http:
        body = {"code": code} if code else {}
        response = await http.post(server.make_url("/api/rooms"), json=body)
        room: str = (await response.json())["room"]
        return room


async def _race_of_two(server: Any) -> tuple[str, WsClient, WsClient]:
    """Ada (host) and Bob in a running race on the won record's deal."""
    room = await _room(server, str(won_record().code))
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await ada.send("start")
    await asyncio.sleep(0.05)
    await _settle(server, room)  # as the deadline timer does (it settled nothing at b46f17c: finding 1)
    await ada.next("started")
    await bob.next("started")
    return room, ada, bob


async def _settle(server: Any, room_id: str) -> None:
    """Settle what is due in a room as its timer should (a logged tick)."""
    room = server.app[keys.LOBBY].rooms.get(room_id)
    await room.tick()


# -- 1. the deadline timer settles nothing: countdowns never end, time limits never fire -------------


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


# -- 2. a recording that fails with anything but StorageError wedges the room forever ----------------


async def test_a_recording_that_fails_still_ends_the_race_and_the_result_is_stored_once_the_database_is_back(
    start_server: StartServer, clock: ManualClock, monkeypatch: Any
) -> None:
    """(Reviewed at 36fc040: a write that blew up jammed the room.) Now the room's log is the
    result's outbox: a failing write does not hold up game_over or race_over (the game's id is
    fixed up front); the write is retried with backoff, lands exactly once when the database is
    back, and only then may the room go."""
    from halfmoon_server.core import room_state

    monkeypatch.setattr(room_state, "STORE_RETRY_FIRST_S", 0.05)
    server = await start_server(finished_ttl_s=60)
    storage = server.app[keys.STORAGE]
    save = storage.save_game
    broken_until_fixed = {"broken": True, "calls": 0}

    async def flaky(game: Any, game_id: str) -> None:
        broken_until_fixed["calls"] += 1
        if broken_until_fixed["broken"]:
            raise RuntimeError("the database is down")
        await save(game, game_id)

    monkeypatch.setattr(storage, "save_game", flaky)  # the Recorder holds this same object
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada")
    room = (await ada.next("welcome"))["room"]["room"]
    await ada.send("give_up")
    over = await ada.next("game_over", timeout=5.0)
    assert over["game"] is not None, "the id is fixed up front: game_over does not wait for the database"
    results = await ada.next("race_over", timeout=2.0)
    assert [(r["outcome"], r["game"]) for r in results["results"]] == [("gave_up", over["game"])]
    await ada.close()
    live = server.app[keys.LOBBY].rooms
    clock.advance(61_000)
    await asyncio.sleep(0.3)
    assert live.get(room) is not None, "the room is the result's outbox: it stays until the game is stored"
    assert broken_until_fixed["calls"] >= 2, "the write is tried again"
    broken_until_fixed["broken"] = False  # the database is back
    for _ in range(200):
        if live.get(room) is None:
            break
        clock.advance(1_000)
        await asyncio.sleep(0.05)
    assert live.get(room) is None, "stored: the room may go"
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()
    assert [(e["name"], e["game"]) for e in board["results"]] == [("Ada", over["game"])], "stored exactly once"


# -- 3. a player who left gets that race's game_over in the room they went to next --------------------


async def test_a_left_races_game_over_does_not_land_in_the_next_room_of_that_connection(
    start_server: StartServer, monkeypatch: Any
) -> None:
    """`Room.leave` hands the leaving connection to the recorder as `departing`; `_record` sends it
    the `game_over` whenever the store finishes — even if that connection has meanwhile started a
    solo game (or joined any other room). The frame carries the old room's `seq` and an outcome
    `left`: a client that is now in its solo game sees its game end (and its `seq` jumps).
    (Pre-existing: old rooms.py did the same with `notify=conn`.)"""
    server = await start_server()
    storage = server.app[keys.STORAGE]
    release = asyncio.Event()
    save = storage.save_game

    async def slow(game: Any) -> str:
        if game.outcome == "left":
            await release.wait()  # a slow database (or a slow post-game analysis)
        return await save(game)

    monkeypatch.setattr(storage, "save_game", slow)
    _room_id, ada, bob = await _race_of_two(server)
    await ada.send("leave")
    await bob.next("player_left")
    await ada.send("solo", name="Ada")
    welcome = await ada.next("welcome")
    assert welcome["room"]["mode"] == "solo" and welcome["room"]["phase"] == "running"
    release.set()
    await asyncio.sleep(0.2)
    after = ada.history[ada.history.index(welcome) + 1 :]
    stray = [m for m in after if m["type"] == "game_over"]
    assert stray == [], f"the solo game's connection got the race's game_over: {stray}"
    for client in (ada, bob):
        await client.close()


# -- 4. daily attempts get past max_rooms while their claim is in flight ------------------------------


async def test_daily_attempts_in_flight_cannot_take_the_server_past_max_rooms(
    start_server: StartServer, monkeypatch: Any
) -> None:
    """A `daily` whose claim is in flight holds a place: concurrent clients cannot take the
    server past `max_rooms` (the bound on rooms in memory), and the claimed attempt is not
    refused after it was spent."""
    server = await start_server(max_rooms=1)
    storage = server.app[keys.STORAGE]
    release = asyncio.Event()
    claim = storage.claim_daily_attempt

    async def slow(*args: Any, **options: Any) -> bool:
        await release.wait()
        return await claim(*args, **options)

    monkeypatch.setattr(storage, "claim_daily_attempt", slow)
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("daily", name="Ada")
    await asyncio.sleep(0.1)  # Ada's claim is waiting on the database
    await bob.send("solo", name="Bob")
    assert (await bob.next("welcome", "error"))["code"] == "server_full"  # Ada's claim holds the place
    release.set()
    answer = await ada.next("welcome", "error")
    live = server.app[keys.LOBBY].rooms
    assert answer["type"] == "welcome" and answer["room"]["mode"] == "daily"
    assert len(live) <= 1, f"max_rooms is 1 but {len(live)} rooms are live"
    for client in (ada, bob):
        await client.close()
