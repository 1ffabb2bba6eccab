"""Room life: the lobby (host hand-over, full rooms), leaving mid-race, resuming (snapshot when
the log no longer covers ``since``, taking over from an older connection), abandoned rooms, and
sockets closed at shutdown."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from halfmoon.game import Game
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient, journal_entries, make_sealed_room, won_record


async def _room(server: object, code: str | None = None) -> str:
    async with aiohttp.ClientSession() as http:
        body = {"code": code} if code else {}
        response = await http.post(server.make_url("/api/rooms"), json=body)  # type: ignore[attr-defined]
        room: str = (await response.json())["room"]
        return room


async def test_lobby_host_hand_over_and_full_room(start_server: StartServer) -> None:
    server = await start_server(max_players=2)
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    cy = await WsClient.connect(server, "cy")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await cy.send("join", room=room, name="Cy")
    assert (await cy.next("error"))["code"] == "room_full"
    await ada.send("leave")
    left = await bob.next("player_left")
    assert left["player"]["name"] == "Ada" and left["player"]["status"] == "left" and left["host"] == "p2"
    await cy.send("join", room=room, name="Cy")  # a place came free
    assert (await cy.next("welcome"))["room"]["host"] == "p2"
    await cy.send("start")
    assert (await cy.next("error"))["code"] == "not_host"
    await bob.send("start")
    assert (await cy.next("started"))["board"] is not None
    for client in (ada, bob, cy):
        await client.close()


async def test_leaving_mid_race_counts_as_left_and_the_race_goes_on(start_server: StartServer) -> None:
    record = won_record()
    server = await start_server()
    room = await _room(server, str(record.code))
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await ada.send("start")
    await bob.next("started")
    await bob.send("move", positions=record.moves[0].names())  # type: ignore[union-attr]
    await bob.next("moved")
    await bob.send("leave")
    over = await bob.next("game_over")
    assert over["outcome"] == "left" and over["moves"] == 1
    left = await ada.next("player_left")
    assert left["player"]["status"] == "left"
    await bob.send("move", positions=record.moves[1].names())  # type: ignore[union-attr]
    assert (await bob.next("error"))["code"] == "not_in_room"
    await ada.send("give_up")
    results = (await ada.next("race_over"))["results"]
    assert [(e["name"], e["outcome"]) for e in results] == [("Bob", "left"), ("Ada", "gave_up")]
    await ada.close()
    await bob.close()


async def test_resume_gives_a_snapshot_when_the_log_is_too_short_and_replaces_old_sockets(
    start_server: StartServer,
) -> None:
    record = won_record()
    server = await start_server(event_log=4)
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada", code=str(record.code))
    welcome = await ada.next("welcome")
    room, token = welcome["room"]["room"], welcome["token"]
    for step in record.moves[:6]:
        await ada.send("move", positions=step.names())  # type: ignore[union-attr]
        await ada.next("moved")
    # a second connection takes the player over; the first is closed with 4001
    again = await WsClient.connect(server, "again")
    await again.send("resume", room=room, token=token, since=1)
    snapshot = await again.next("welcome")
    assert snapshot["room"] is not None and snapshot["seq"] == ada.seq  # since=1 is older than the log
    assert snapshot["room"]["players"][0]["moves"] == 6 and snapshot["room"]["board"] is not None
    await asyncio.wait_for(ada._reader, 5)
    assert ada.ws.close_code == 4001
    await again.send("move", positions=record.moves[6].names(), id=7)  # type: ignore[union-attr]
    assert (await again.next("moved"))["moves"] == 7
    await again.send("resume", room=room, token=token)
    assert (await again.next("error"))["code"] == "already_in_room"
    await again.close()
    await ada.session.close()


async def test_abandoned_rooms_are_closed_and_their_games_stored(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(abandon_after_s=60, finished_ttl_s=60)
    live = server.app[keys.LOBBY].rooms
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada")
    snapshot = (await ada.next("welcome"))["room"]
    room, code = snapshot["room"], snapshot["code"]
    await ada.close()
    empty = await _room(server)
    assert {room, empty} <= set(live)
    clock.advance(61_000)
    for _ in range(100):
        if live.get(room) is None and live.get(empty) is None:
            break
        await asyncio.sleep(0.02)
        if (found := live.get(room)) is not None and found.race.phase == "finished":
            clock.advance(61_000)
    assert live.get(room) is None and live.get(empty) is None
    async with aiohttp.ClientSession() as http:
        past = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()  # rebuilt from storage
        assert past["phase"] == "finished" and [e["outcome"] for e in past["results"]] == ["left"]
        gone = await http.get(server.make_url(f"/api/rooms/{empty}"))  # nothing was ever played there
        assert gone.status == 404
        board = await (await http.get(server.make_url(f"/api/leaderboard/{code}"))).json()
        assert board["entries"] == [], "stored, but a solo game left is not a result"


async def test_shutdown_closes_sockets_with_a_reason(start_server: StartServer) -> None:
    server = await start_server()
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada")
    await ada.next("welcome")
    await server.close()
    await asyncio.wait_for(ada._reader, 5)
    assert ada.ws.close_code == 1012  # "service restart": connect again, the game goes on
    await ada.session.close()


async def test_a_full_server_refuses_new_rooms(start_server: StartServer) -> None:
    server = await start_server(max_rooms=2)
    async with aiohttp.ClientSession() as http:
        assert (await http.post(server.make_url("/api/rooms"), json={})).status == 201
        client = await WsClient.connect(server, "ada")
        await client.send("solo", name="Ada")
        await client.next("welcome")
        full = await http.post(server.make_url("/api/rooms"), json={})
        assert full.status == 503 and (await full.json())["error"]["code"] == "server_full"
        other = await WsClient.connect(server, "bob")
        await other.send("solo", name="Bob")
        assert (await other.next("error"))["code"] == "server_full"
        await other.send("ping")
        await other.next("pong")  # refused, not disconnected
        await client.close()
        await other.close()


async def test_a_leave_after_the_time_limit_is_a_time_out(start_server: StartServer, clock: ManualClock) -> None:
    server = await start_server(tick_s=3600.0)  # the ticker never runs: only the leave sees the deadline
    room = await _room(server)
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await ada.send("start", time_limit_s=30)
    await ada.next("started")
    clock.advance(45_000)
    await ada.send("leave")
    over = await ada.next("game_over")
    assert over["outcome"] == "timed_out" and over["time_ms"] == 30_000
    await ada.close()


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


@pytest.mark.interpreted  # (JournalLog.append replaced)
async def test_a_left_races_game_over_does_not_land_in_the_next_room_of_that_connection(
    start_server: StartServer, monkeypatch: Any
) -> None:
    """`leave` keeps the leaving connection as the room's `departing` until the game's end is
    logged (`recorded`): the `game_over` goes out then — not when the database has the game (the
    write follows, and nothing waits for it: test_room.py's
    test_game_over_goes_out_with_the_entry_that_ends_the_game_while_the_database_writes_it). Should that connection
    have started a solo game (or joined any other room) meanwhile, the left race's `game_over` is
    not sent to it: a client now in its solo game would take it for its solo game's end. The
    `recorded` entry is held here (a slow room log) until Ada plays her solo game; then the race's
    game is recorded and stored once all the same. (Only a room of log format 1 — created before
    the entry that ends a game recorded it, still live after an upgrade — has that window: in this
    release's rooms the `game_over` goes out with the `leave` itself.)"""
    server = await start_server(room_log_version=1)  # its rooms are written as the previous release did
    room_log = server.app[keys.LOBBY].services.log
    holding, release = asyncio.Event(), asyncio.Event()
    append = room_log.append
    race_room = ""

    async def slow(room_id: str, entry: dict[str, Any]) -> int:
        if room_id == race_room and entry["k"] == "recorded":
            holding.set()
            await release.wait()  # the log takes the game's end late
        return await append(room_id, entry)

    monkeypatch.setattr(room_log, "append", slow)
    race_room, ada, bob = await _race_of_two(server)
    await ada.send("leave")
    await bob.next("player_left")
    async with asyncio.timeout(5):
        await holding.wait()  # Ada's game is over, its end not logged yet: no game_over has gone out
    code = str(won_record().code)
    await ada.send("solo", name="Ada", code=code)
    welcome = await ada.next("welcome")
    assert welcome["room"]["mode"] == "solo" and welcome["room"]["phase"] == "running"
    release.set()
    await server.app[keys.TASKS].settle()  # the race's game is recorded (its game_over published), then stored
    await ada.send("move", positions=next(iter(Game.from_code(code).legal_moves())).names())
    await ada.next("moved")  # (after any frame the race sent her connection before it)
    stray = [m for m in ada.history if m["type"] == "game_over"]
    assert stray == [], f"the solo game's connection got the race's game_over: {stray}"
    entries = [e for e in journal_entries(server, race_room) if e.get("p") == "p1"]
    assert [e["k"] for e in entries if e["k"] in ("recorded", "stored")] == ["recorded", "stored"]
    await bob.send("give_up")
    results = (await bob.next("race_over"))["results"]
    left = next(line for line in results if line["name"] == "Ada")
    assert left["outcome"] == "left" and left["game"] == entries[-1]["g"]
    async with aiohttp.ClientSession() as http:
        stored = await http.get(server.make_url(f"/api/games/{left['game']}"))
        assert stored.status == 200 and (await stored.json())["outcome"] == "left"
    for client in (ada, bob):
        await client.close()


async def test_a_name_and_its_lower_case_cannot_both_sit_in_a_room(start_server: StartServer) -> None:
    server = await start_server()
    room_id, _ = await make_sealed_room(server)
    first = await WsClient.connect(server, "first")
    second = await WsClient.connect(server, "second")
    await first.send("join", room=room_id, name="Ian")
    await first.next("welcome")
    await second.send("join", room=room_id, name="ian")
    answer = await second.next("welcome", "error")
    for client in (first, second):
        await client.close()
    assert answer["type"] == "error" and answer["code"] == "name_taken", answer


CODE = won_record().code


async def test_refused_commands_are_not_logged(start_server: StartServer) -> None:
    """A command the race refuses is never logged (`Room.submit` checks it first,
    `commands.check_entry`): ``undo`` with nothing to undo, ``give_up``/``undo`` after the game is
    over, ``start`` by a non-host, ``join`` with a taken name — so refused commands cannot grow a
    room's durable log, which every instance that loads the room replays."""
    server = await start_server()
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada", code=str(CODE))
    welcome = await ada.next("welcome")
    room_id = welcome["room"]["room"]
    before = len(journal_entries(server, room_id))
    for _ in range(30):
        await ada.send("undo")
        assert (await ada.next("error"))["code"] == "nothing_to_undo"
    after = journal_entries(server, room_id)
    await ada.close()
    assert len(after) == before, f"30 refused undos added {len(after) - before} entries to the room's log"
