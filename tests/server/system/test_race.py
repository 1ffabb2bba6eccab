"""A whole race through real WebSocket connections: three players, spectators, a reconnect, an
illegal move, a stall and a give-up, the results, the hidden-information rule on every message,
and the leaderboard after a server restart."""

from __future__ import annotations

import aiohttp

from halfmoon.game import Game
from halfmoon.record import GameRecord, replay
from halfmoon_server.clock import ManualClock
from tests.server.conftest import StartServer
from tests.server.support import WsClient, check_hidden_information, illegal_move, stalling_line, won_record


async def test_three_player_race_to_the_end(start_server: StartServer, clock: ManualClock) -> None:
    record = won_record()
    code = str(record.code)
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        response = await http.post(server.make_url("/api/rooms"), json={"code": code})
        assert response.status == 201
        created = await response.json()
    room = created["room"]
    assert created["code"] == code and created["url"].endswith(f"/r/{room}")

    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    cy = await WsClient.connect(server, "cy")
    spec = await WsClient.connect(server, "spec")
    await ada.send("join", room=room, name="Ada")
    welcome = await ada.next("welcome")
    assert welcome["role"] == "player" and welcome["room"]["host"] == welcome["you"] == "p1"
    assert len(welcome["token"]) == 32
    await bob.send("join", room=room, name="Bob")
    bob_welcome = await bob.next("welcome")
    bob_token = bob_welcome["token"]
    await cy.send("join", room=room, name="ada")  # names are unique case-insensitively
    assert (await cy.next("error"))["code"] == "name_taken"
    await cy.send("join", room=room, name="Cy")
    cy_token = (await cy.next("welcome"))["token"]
    await spec.send("watch", room=room)
    spec_welcome = await spec.next("welcome")
    assert spec_welcome["role"] == "spectator" and spec_welcome["you"] is None
    assert "token" not in spec_welcome
    assert (await ada.next("player_joined"))["player"]["name"] == "Bob"
    assert (await ada.next("spectators"))["count"] == 1

    # moves before the start and a start by someone else are refused
    await ada.send("move", positions=record.moves[0].names(), id=1)  # type: ignore[union-attr]
    assert (await ada.next("error"))["code"] == "not_started"
    await cy.send("start")
    assert (await cy.next("error"))["code"] == "not_host"

    await ada.send("start", time_limit_s=600)
    countdown = await ada.next("countdown")
    assert countdown["time_limit_s"] == 600
    starts = {c.label: await c.next("started") for c in (ada, bob, cy, spec)}
    assert starts["ada"]["started_at"] == clock.now_ms() and starts["ada"]["code"] == code
    assert starts["ada"]["board"] == starts["bob"]["board"]  # same deal, same instant
    assert "boards" not in starts["ada"] and set(starts["spec"]["boards"]) == {"p1", "p2", "p3"}

    # a late joiner becomes a spectator; players see the count
    dee = await WsClient.connect(server, "dee")
    await dee.send("join", room=room, name="Dee")
    assert (await dee.next("welcome"))["role"] == "spectator"
    assert (await bob.next("spectators"))["count"] == 2

    # Ada plays the winning line, one move a second
    moves = record.moves
    for i, step in enumerate(moves[:20]):
        clock.advance(1000)
        await ada.send("move", positions=step.names(), id=100 + i)  # type: ignore[union-attr]
        moved = await ada.next("moved")
        assert moved["id"] == 100 + i and moved["moves"] == i + 1

    # Bob drops; Ada plays on; Bob resumes with his token and the last seq he saw
    since = bob.seq
    await bob.close()
    away = (await ada.next("progress"))["player"]
    assert (away["id"], away["name"], away["status"], away["connected"]) == ("p2", "Bob", "playing", False)
    for i, step in enumerate(moves[20:25], 20):
        clock.advance(1000)
        await ada.send("move", positions=step.names(), id=100 + i)  # type: ignore[union-attr]
        await ada.next("moved")
    bob = await WsClient.connect(server, "bob")
    await bob.send("resume", room=room, token="x" * 32, since=since)
    assert (await bob.next("error"))["code"] == "bad_token"
    await bob.send("resume", room=room, token=bob_token, since=since)
    resumed = await bob.next("welcome")
    assert resumed["room"] is None and resumed["seq"] == since and resumed["you"] == "p2"
    caught_up = [m for m in await bob.drain() if m["type"] == "moved"]
    assert [m["moves"] for m in caught_up] == [21, 22, 23, 24, 25]  # Ada's moves he missed
    assert all("changes" not in m for m in caught_up)  # an opponent's cards never reach him

    # Cy reloads the page: a resume without `since` gets a full snapshot with only Cy's board
    cy_before = cy.history
    await cy.close()
    cy = await WsClient.connect(server, "cy")
    cy.history = cy_before
    await cy.send("resume", room=room, token=cy_token)
    snapshot = (await cy.next("welcome"))["room"]
    assert snapshot["phase"] == "running" and snapshot["boards"] is None
    assert snapshot["board"] == starts["cy"]["board"]  # Cy has not moved yet
    assert [p["moves"] for p in snapshot["players"]] == [25, 0, 0]

    # Bob: an illegal move changes nothing; then he stalls, undoes, stalls again and gives up
    mirror = Game.from_code(code)
    wrong = illegal_move(mirror)
    await bob.send("move", positions=wrong.names(), id=7)
    error = await bob.next("error")
    assert error["code"] == "illegal_move" and error["id"] == 7 and error["reason"] == "not_a_match"
    line = stalling_line(code)
    for step in line:
        clock.advance(500)
        await bob.send("move", positions=step.names())
        moved = await bob.next("moved")
    assert moved["status"] == "stalled" and moved["moves"] == len(line)
    assert moved["elapsed_ms"] == clock.now_ms() - starts["bob"]["started_at"]  # the clock ran while away
    await bob.send("undo", id=8)
    undone = await bob.next("moved")
    assert undone["action"] == "undo" and undone["status"] == "playing" and undone["moves"] == len(line) - 1
    await bob.send("move", positions=line[-1].names())
    assert (await bob.next("moved"))["status"] == "stalled"
    await bob.send("give_up")
    bob_over = await bob.next("game_over")
    assert bob_over["outcome"] == "gave_up" and bob_over["moves"] == len(line)
    await bob.send("move", positions=line[0].names())
    assert (await bob.next("error"))["code"] == "not_playing"

    # Ada wins; Cy wins later
    for i, step in enumerate(moves[25:], 25):
        clock.advance(1000)
        await ada.send("move", positions=step.names(), id=100 + i)  # type: ignore[union-attr]
        await ada.next("moved")
    ada_over = await ada.next("game_over")
    assert ada_over["outcome"] == "won" and ada_over["score"] == 520 and ada_over["moves"] == 48
    assert ada_over["time_ms"] == 48_000 + 500 * len(line)
    for step in moves:
        clock.advance(1500)
        await cy.send("move", positions=step.names())  # type: ignore[union-attr]
        await cy.next("moved")
    cy_over = await cy.next("game_over")
    assert cy_over["outcome"] == "won" and cy_over["time_ms"] > ada_over["time_ms"]

    results = [(await c.next("race_over"))["results"] for c in (ada, bob, cy, spec, dee)]
    assert all(r == results[0] for r in results)
    for step in line:
        mirror.push(step)
    table = [(e["rank"], e["name"], e["score"], e["outcome"], e["time_ms"]) for e in results[0]]
    assert table == [
        (1, "Ada", 520, "won", ada_over["time_ms"]),
        (2, "Cy", 520, "won", cy_over["time_ms"]),
        (3, "Bob", mirror.score, "gave_up", bob_over["time_ms"]),
    ]
    assert [e["game"] for e in results[0]] == [ada_over["game"], cy_over["game"], bob_over["game"]]

    # hidden information: every message anyone received shows only cards their app shows
    for client in (ada, bob, cy, spec, dee):
        assert check_hidden_information(client.history) == [], client.label
    for client in (ada, bob, cy, spec, dee):
        await client.close()

    # the leaderboard survives a restart: a new app on the same database
    await server.close()
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/leaderboard/{code}"))).json()
        assert [(e["rank"], e["name"], e["outcome"]) for e in board["entries"]] == [
            (1, "Ada", "won"),
            (2, "Cy", "won"),
            (3, "Bob", "gave_up"),
        ]
        past = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()  # rebuilt from storage
        assert past["phase"] == "finished" and past["code"] == code
        assert [(e["rank"], e["name"], e["game"]) for e in past["results"]] == [
            (e["rank"], e["name"], e["game"]) for e in results[0]
        ]
        stored = await (await http.get(server.make_url(f"/api/games/{ada_over['game']}"))).json()
    result = replay(GameRecord.from_json(stored))
    assert result.ok and result.game.is_won


def test_the_hidden_information_checker_catches_a_leak() -> None:
    board = {"tops": ["5S"] + [None] * 19, "counts": [8] + [0] * 19}
    history = [
        {"type": "welcome", "role": "player", "you": "p1", "room": {"board": board, "boards": None}, "seq": 1},
        {"type": "moved", "seq": 2, "player": "p2", "changes": [{"pos": "1", "card": "KH", "count": 7}]},
        {"type": "moved", "seq": 3, "player": "p1", "changes": [{"pos": "1", "card": "QD", "count": 7}]},
        {"type": "progress", "seq": 4, "player": {"id": "p2", "name": "JC"}},
    ]
    problems = check_hidden_information(history)
    assert len(problems) == 3 and "revealed" in problems[0] and "JC" in problems[-1]


async def test_time_limit_ends_the_race(start_server: StartServer, clock: ManualClock) -> None:
    record = won_record()
    server = await start_server()
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("solo", name="Solo Sam", code="nonsense")
    assert (await ada.next("error"))["code"] == "bad_code"
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(server.make_url("/api/rooms"), json={"code": str(record.code)})).json())["room"]
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await ada.send("start", time_limit_s=10)
    assert (await ada.next("error"))["code"] == "bad_message"
    await ada.send("start", time_limit_s=30)
    started = await ada.next("started")
    clock.advance(5_000)
    await ada.send("move", positions=record.moves[0].names())  # type: ignore[union-attr]
    await ada.next("moved")
    clock.advance(25_001)  # past the limit: the ticker ends the race
    over = await ada.next("game_over")
    assert over["outcome"] == "timed_out" and over["time_ms"] == 30_000 and over["score"] > 0
    results = (await bob.next("race_over"))["results"]
    assert [(e["name"], e["outcome"], e["time_ms"]) for e in results] == [
        ("Ada", "timed_out", 30_000),
        ("Bob", "timed_out", 30_000),
    ]
    await ada.send("move", positions=record.moves[1].names())  # type: ignore[union-attr]
    assert (await ada.next("error"))["code"] == "not_playing"
    assert started["started_at"] + 30_000 <= clock.now_ms()
    await ada.close()
    await bob.close()
