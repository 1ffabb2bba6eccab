"""One client address cannot fill the server: new rooms (races, solo games, daily attempts) are
rate-limited per address, behind a proxy by the address the proxy saw."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import aiohttp
from multidict import CIMultiDict

from halfmoon_server.clock import ManualClock
from halfmoon_server.core.commands import step_budget
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient, daily_ranked


async def _post_room(session: aiohttp.ClientSession, url: str, **headers: str) -> tuple[int, dict[str, object]]:
    async with session.post(url, headers=headers, json={}) as response:
        return response.status, await response.json()


async def test_too_many_races_from_one_address_get_429_until_credits_refill(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(room_burst=3, room_per_min=60)  # one credit back each second
    url = str(server.make_url("/api/rooms"))
    live = server.app[keys.LOBBY].rooms
    async with aiohttp.ClientSession() as session:
        assert [(await _post_room(session, url))[0] for _ in range(3)] == [201, 201, 201]
        status, body = await _post_room(session, url)
        assert status == 429
        assert body["error"]["code"] == "rate_limited"  # type: ignore[index]
        assert "try again" in body["error"]["message"]  # type: ignore[index]
        assert len(live) == 3, "a refused request creates no room"
        clock.advance(1000)
        assert (await _post_room(session, url))[0] == 201
        assert (await _post_room(session, url))[0] == 429


async def test_solo_games_and_daily_attempts_share_the_limit_and_a_refusal_spends_no_attempt(
    start_server: StartServer,
) -> None:
    server = await start_server(room_burst=2, room_per_min=1)
    live = server.app[keys.LOBBY].rooms
    first = await WsClient.connect(server, "first")
    await first.send("solo", name="Ada")
    assert (await first.next("welcome"))["role"] == "player"
    second = await WsClient.connect(server, "second")
    await second.send("daily", name="Bob")
    assert (await second.next("welcome"))["room"]["mode"] == "daily"
    third = await WsClient.connect(server, "third")
    await third.send("daily", name="Cy")
    error = await third.next("error")
    assert error["code"] == "rate_limited"
    assert len(live) == 2
    # Cy's ranked attempt of the day was not used up by the refusal
    day = server.app[keys.DAILY].today()
    assert await server.app[keys.STORAGE].claim_daily_attempt(day, "cy", datetime.now(UTC)) is True
    for client in (first, second, third):
        await client.close()


async def test_behind_a_trusted_proxy_each_client_has_its_own_credits(start_server: StartServer) -> None:
    server = await start_server(room_burst=1, room_per_min=1, trust_forwarded=True)
    url = str(server.make_url("/api/rooms"))
    async with aiohttp.ClientSession() as session:
        # the proxy appends the address it saw; earlier entries are the client's own claims
        assert (await _post_room(session, url, **{"X-Forwarded-For": "203.0.113.7"}))[0] == 201
        assert (await _post_room(session, url, **{"X-Forwarded-For": "198.51.100.1, 203.0.113.7"}))[0] == 429
        assert (await _post_room(session, url, **{"X-Forwarded-For": "203.0.113.8"}))[0] == 201


async def test_without_a_trusted_proxy_a_forged_header_does_not_buy_credits(start_server: StartServer) -> None:
    server = await start_server(room_burst=1, room_per_min=1)
    url = str(server.make_url("/api/rooms"))
    async with aiohttp.ClientSession() as session:
        assert (await _post_room(session, url, **{"X-Forwarded-For": "203.0.113.7"}))[0] == 201
        assert (await _post_room(session, url, **{"X-Forwarded-For": "203.0.113.8"}))[0] == 429


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


async def test_a_client_forged_forwarded_for_header_is_not_taken_for_the_proxys(start_server: StartServer) -> None:
    """A proxy that appends its own X-Forwarded-For *field* (HAProxy's option forwardfor) after the
    client's: client_address reads only the first field (headers.get), the client's forgery, so each
    forged address gets its own ranked attempts and room credits. RFC 9110 §5.3: several fields are
    one comma-joined list — the last entry of all of them is the proxy's (low severity: the shipped
    nginx sends one field)."""
    server = await start_server(trust_forwarded=True, daily_ranked_per_address=1)
    ranked = []
    for k in range(2):
        headers: CIMultiDict[str] = CIMultiDict()
        headers.add("X-Forwarded-For", f"10.0.0.{k + 1}")  # the client's claim
        headers.add("X-Forwarded-For", "198.51.100.7")  # what the proxy saw
        ranked.append(await daily_ranked(server, f"Forger{k}", headers))
    assert ranked == [True, False], ranked


async def test_a_seat_reconnecting_in_a_loop_cannot_fill_its_rooms_log_and_freeze_the_race(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Each reconnection logs a ``connect`` (and its close a ``disconnect``), and new connections
    are not limited per room: one racer resuming in a loop over fresh connections (~1,000 a
    second from one script) filled the room's log to its cap within a minute, and from then on
    every other racer's move was refused ``room_log_full`` — the race frozen for all. Arrivals
    in one room (joins and reconnections) are rate-limited: refused ``rate_limited`` past a
    burst, nothing logged."""
    server = await start_server(tick_s=3600.0, countdown_s=0, max_room_entries=1_000, max_connections_per_address=4_096)
    lobby = server.app[keys.LOBBY]
    async with aiohttp.ClientSession() as http:
        room_id = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
    ada = await WsClient.connect(server, "ada")
    bea = await WsClient.connect(server, "bea")
    await ada.send("join", room=room_id, name="Ada", player_key="A" * 43)
    await ada.next("welcome")
    await bea.send("join", room=room_id, name="Bea", player_key="B" * 43)
    token = (await bea.next("welcome"))["token"]
    await ada.send("start")
    started = await ada.next("started")
    await bea.close()
    room = lobby.rooms[room_id]

    answers: list[str] = []
    for _ in range(600):  # 1,200 entries if every one were logged: past the cap
        again = await WsClient.connect(server, "bea-again")
        await again.send("resume", room=room_id, token=token)
        answer = await again.next("welcome", "error", timeout=5)
        answers.append(answer.get("code") or answer["type"])
        await again.close()
        if answers[-1] != "welcome":
            break
    assert "rate_limited" in answers, "reconnections past the room's burst are refused"
    assert answers[-1] == "rate_limited", answers[-3:]
    for _ in range(100):  # (each close's disconnect is logged as its socket goes)
        if all(not r.connected for r in room.race.players.values() if r.name == "Bea"):
            break
        await asyncio.sleep(0.01)
    assert room.applied < 500, f"{room.applied} entries logged: the arrivals were not bounded"

    assert started["type"] == "started"
    await ada.send("undo", id=9)  # (any command of the race: an undo with nothing to undo answers)
    answer = await ada.next("error", "undone")
    assert answer.get("code") != "room_log_full", "the other racer can still play"
    await ada.close()


async def test_one_client_spamming_moves_and_undos_on_its_seat_is_stopped_before_the_log_is_full(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Each racer's moves and undos take at most their share of four fifths of the room's log in
    a race (core/commands.step_budget: 265 of 1,000 with three seats, the joins and the start
    logged): the next is refused ``too_many_steps``, nothing logged, while the others play on and
    the log is not full."""
    server = await start_server(tick_s=3600.0, countdown_s=0, max_room_entries=1_000)
    lobby = server.app[keys.LOBBY]
    async with aiohttp.ClientSession() as http:
        room_id = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
    clients = [await WsClient.connect(server, name) for name in ("ada", "bea", "cy")]
    ids = []
    for client, name in zip(clients, ("Ada", "Bea", "Cy"), strict=True):
        await client.send("join", room=room_id, name=name)
        ids.append((await client.next("welcome"))["you"])
    ada, bea, _ = clients
    await ada.send("start")
    await ada.next("started")
    room = lobby.rooms[room_id]
    spammer = room.race.players[ids[0]]
    assert spammer.game is not None
    move = next(spammer.game.legal_moves()).names()
    budget = step_budget(1_000 - room.applied, 3)
    assert budget == 265, room.applied
    while spammer.step_count < budget:  # the room's real path, as the socket's messages take it
        await room.submit({"k": "undo" if spammer.step_count % 2 else "move", "p": ids[0], "m": move})
    logged = room.applied
    await ada.send("move", positions=move, id=7)
    refused = await ada.next("error")
    assert refused["code"] == "too_many_steps" and refused.get("id") == 7, refused
    await ada.send("undo", id=8)
    assert (await ada.next("error"))["code"] == "too_many_steps"
    assert room.applied == logged < 1_000, "nothing logged, and the log is far from full"
    await bea.drain()  # (the spammer's moves as the others saw them)
    await bea.send("move", positions=move, id=1)  # another racer plays on
    assert (await bea.next("moved", "error"))["player"] == ids[1]
    await ada.send("give_up")  # and what ends the spammer's game is taken
    assert (await ada.next("game_over"))["outcome"] == "gave_up"
    for client in clients:
        await client.close()
