"""A player's history (``GET /api/me/history``): games kept under the hash of the player key a
client sends with ``join``/``solo``/``daily``; the counts, the clean wins (no undo), the best time
per deal, the daily streak — and no deal code before its reader is entitled to it (a daily's until
every attempt of its day has ended, a sealed race's until nobody plays it), nor the key itself
anywhere the server writes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp.test_utils import TestServer

from halfmoon.codes import daily_code
from halfmoon.errors import BadMessageError
from halfmoon.game import Game
from halfmoon.protocol import Daily, Join, Solo, parse_message, player_key_hash
from halfmoon_server import create_app
from halfmoon_server.adapters.storage import open_storage
from halfmoon_server.clock import ManualClock, day_start_ms
from halfmoon_server.core import visibility
from halfmoon_server.ports import FinishedGame, Storage
from halfmoon_server.web import keys
from halfmoon_server.web.rest import _streak
from tests.conftest import ROOT
from tests.server.conftest import StartServer
from tests.server.protocol_example import normalise
from tests.server.support import T0, WsClient, make_settings, won_record

DAY = date(2026, 11, 28)  # the day of T0 (tests.server.support)


def new_key() -> str:
    return secrets.token_urlsafe(32)


async def history(server: TestServer, key: str | None, **headers: str) -> tuple[int, Any, str]:
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url("/api/me/history"), headers=headers)
        text = await response.text()
    return response.status, json.loads(text), text


async def play_solo(
    server: TestServer, clock: ManualClock, key: str | None, *, undo_first: bool, step_ms: int
) -> dict[str, Any]:
    """A solo game on the golden won record's deal, won (with one undo first, if asked), each move
    ``step_ms`` apart on the clock; returns its ``game_over``."""
    record = won_record()
    client = await WsClient.connect(server, "solo")
    fields: dict[str, Any] = {"name": "Ada", "code": str(record.code)}
    if key is not None:
        fields["player_key"] = key
    await client.send("solo", **fields)
    await client.next("welcome")
    moves = [step for step in record.moves if step != "undo"]
    if undo_first:
        await client.send("move", positions=moves[0].names())  # type: ignore[union-attr]
        await client.next("moved")
        await client.send("undo")
        await client.next("moved")
    for move in moves:
        clock.advance(step_ms)
        await client.send("move", positions=move.names())  # type: ignore[union-attr]
        await client.next("moved")
    over = await client.next("game_over")
    await client.close()
    return over


async def play_daily(server: TestServer, key: str, clock: ManualClock | None = None) -> dict[str, Any]:
    """Today's daily attempt: three moves (with ``clock``, 5 s apart: a person's pace), then given
    up; returns its ``game_over``."""
    code = str(daily_code(DAY, b"test-secret", long=True))
    client = await WsClient.connect(server, "daily")
    await client.send("daily", name="Ada", player_key=key)
    await client.next("welcome")
    game = Game.from_code(code)
    for _ in range(3):
        move = next(iter(game.legal_moves()), None)
        if move is None:
            break
        game.push(move)
        if clock is not None:
            clock.advance(5000)
        await client.send("move", positions=move.names())
        await client.next("moved")
    await client.send("give_up")
    over = await client.next("game_over")
    await client.close()
    return over


async def stored(server: TestServer, player: str, count: int) -> None:
    """Wait until ``count`` games are stored under ``player`` (storing follows the game's end)."""
    for _ in range(250):
        if len(await server.app[keys.STORAGE].games_of_player(player, 100)) >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{count} games were not stored")


async def test_the_history_after_three_games_counts_wins_clean_wins_best_time_and_the_streak(
    start_server: StartServer, clock: ManualClock, tmp_path: Path
) -> None:
    server = await start_server()
    key = new_key()
    code = str(won_record().code)
    await play_solo(server, clock, key, undo_first=False, step_ms=1000)  # clean: 47 s
    await play_solo(server, clock, key, undo_first=True, step_ms=500)  # one undo, faster: 24 s
    await play_daily(server, key, clock)  # the day's first attempt: ranked
    await play_solo(server, clock, None, undo_first=False, step_ms=10)  # no key: nobody's history
    await stored(server, player_key_hash(key), 3)

    status, body, text = await history(server, key)
    assert status == 200, body
    # the solo games are casual (their code was known): counted apart; the daily is ranked
    assert (body["games"], body["ranked_games"], body["wins"], body["clean_wins"], body["name"]) == (3, 1, 0, 0, "Ada")
    assert (body["casual"]["games"], body["casual"]["wins"], body["casual"]["clean_wins"]) == (2, 2, 1)
    assert (body["streak"], body["daily_today"]) == (1, True)
    assert [line["mode"] for line in body["recent"]] == ["daily", "solo", "solo"]  # newest first
    daily, with_undo, clean = body["recent"]
    assert (clean["clean"], clean["undos"], clean["outcome"], clean["code"]) == (True, 0, "won", code)
    assert (clean["ranked"], clean["unranked_reason"], daily["ranked"], daily["unranked_reason"]) == (
        False, "casual", True, None,
    )
    assert (with_undo["clean"], with_undo["undos"], with_undo["time_ms"]) == (False, 1, 24_000)
    assert clean["time_ms"] == 47_000  # the clock starts at the first move
    # the daily's code is today's: hidden until every attempt of the day has ended
    assert daily["code"] is None and daily["daily_date"] == DAY.isoformat() and daily["outcome"] == "gave_up"
    assert str(daily_code(DAY, b"test-secret", long=True)) not in text
    # the best time of the deal: the fastest win, undo or not (the clean mark says which) — casual
    # wins have casual bests, never ranked ones
    assert body["best"] == []
    assert [(b["code"], b["time_ms"], b["clean"]) for b in body["casual"]["best"]] == [(code, 24_000, False)]
    assert "record" not in text and '"moves": [' not in text  # no record travels here
    # docs/openapi.yaml names exactly these fields (the schema is fuzzed: it must be exact)
    schemas = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())["components"]["schemas"]
    assert set(body) == set(schemas["History"]["required"]) == set(schemas["History"]["properties"])
    assert set(body["casual"]) == set(schemas["History"]["properties"]["casual"]["required"])
    for line in body["recent"] + body["best"] + body["casual"]["best"]:
        assert set(line) == set(schemas["HistoryGame"]["required"]) == set(schemas["HistoryGame"]["properties"])

    # another key sees none of it; the limit trims the list, not the counts
    another_key = new_key()
    other = await history(server, another_key)
    assert other[:2] == (
        200,
        {"player": player_key_hash(another_key), "name": None, "games": 0, "ranked_games": 0, "wins": 0,
         "clean_wins": 0, "streak": 0, "daily_today": False, "best": [],
         "casual": {"games": 0, "wins": 0, "clean_wins": 0, "best": []}, "recent": []},
    )
    async with aiohttp.ClientSession() as http:
        response = await http.get(
            server.make_url("/api/me/history?limit=1"), headers={"Authorization": f"Bearer {key}"}
        )
        trimmed = await response.json()
    assert len(trimmed["recent"]) == 1 and trimmed["games"] == 3

    # the day is over and every attempt of it has ended: the daily's code is the player's to see
    clock.set(day_start_ms(DAY + timedelta(days=1)) + 1_800_000)
    status, body, _ = await history(server, key)
    assert body["recent"][0]["code"] == str(daily_code(DAY, b"test-secret", long=True))
    assert (body["streak"], body["daily_today"]) == (1, False)  # yesterday's counts until today ends
    clock.set(day_start_ms(DAY + timedelta(days=2)))
    assert (await history(server, key))[1]["streak"] == 0

    # the server kept the key's hash, never the key: not in the database, the journal, the logs
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    games = await server.app[keys.STORAGE].games_of_player(hashlib.sha256(key.encode()).hexdigest(), 10)
    assert len(games) == 3


async def test_a_sealed_race_code_stays_out_of_the_history_until_nobody_plays_it(start_server: StartServer) -> None:
    server = await start_server()
    ada_key, bob_key = new_key(), new_key()
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    room_id = created["room"]
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("join", room=room_id, name="Ada", player_key=ada_key)
    await ada.next("welcome")
    await bob.send("join", room=room_id, name="Bob", player_key=bob_key)
    await bob.next("welcome")
    await ada.send("start")
    await ada.next("started")
    code = str(server.app[keys.LOBBY].rooms[room_id].race.code)  # dealt at the start
    await ada.send("give_up")
    await ada.next("game_over")
    await stored(server, player_key_hash(ada_key), 1)
    status, body, text = await history(server, ada_key)  # Bob still plays the same deal
    assert status == 200 and body["games"] == 1
    assert body["recent"][0]["code"] is None and code not in text
    await bob.send("give_up")
    await bob.next("game_over")
    await ada.next("race_over")
    status, body, text = await history(server, ada_key)
    assert body["recent"][0]["code"] == code and body["recent"][0]["mode"] == "race"
    assert body["recent"][0]["room"] == room_id
    await stored(server, player_key_hash(bob_key), 1)
    assert (await history(server, bob_key))[1]["recent"][0]["name"] == "Bob"
    for client in (ada, bob):
        await client.close()


async def test_with_the_reveal_rule_broken_the_history_would_show_the_code(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the stored games' code rule of the visibility policy broken (always shown), the
    history shows today's code: the policy is what keeps it out."""
    server = await start_server()
    monkeypatch.setattr(visibility, "stored_code_visible", lambda game, now, running_since: True)
    key = new_key()
    await play_daily(server, key)
    await stored(server, player_key_hash(key), 1)
    assert str(daily_code(DAY, b"test-secret", long=True)) in (await history(server, key))[2]


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "no_player_key"),
        ({"Authorization": "Basic QWRhOnB3"}, "bad_player_key"),
        ({"Authorization": "Bearer "}, "bad_player_key"),
        ({"Authorization": "Bearer short"}, "bad_player_key"),
        ({"Authorization": "Bearer " + "x" * 65}, "bad_player_key"),
        ({"Authorization": "Bearer " + "é" * 30}, "bad_player_key"),
    ],
)
async def test_a_missing_or_malformed_key_is_a_clear_401(
    start_server: StartServer, headers: dict[str, str], code: str
) -> None:
    server = await start_server()
    status, body, _ = await history(server, None, **headers)
    assert status == 401 and body["error"]["code"] == code


async def test_a_bad_limit_is_a_400(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        response = await http.get(
            server.make_url("/api/me/history?limit=0"), headers={"Authorization": f"Bearer {new_key()}"}
        )
        assert response.status == 400 and (await response.json())["error"]["code"] == "bad_request"


async def test_a_bad_player_key_on_the_websocket_is_refused_and_starts_nothing(start_server: StartServer) -> None:
    server = await start_server()
    client = await WsClient.connect(server, "bad")
    await client.send("solo", name="Ada", player_key="not a key!")
    error = await client.next("error", "welcome")
    assert error["type"] == "error" and error["code"] == "bad_message" and "player_key" in error["message"]
    assert "not a key" not in error["message"]  # a key is a secret: never echoed
    assert server.app[keys.LOBBY].rooms == {}
    await client.close()


def test_the_player_key_is_optional_and_round_trips_in_join_solo_and_daily() -> None:
    key = "A" * 43
    for message in (Join("K7WQ2M", "Ada", key), Solo("Ada", None, key), Daily("Ada", key)):
        assert parse_message(json.dumps(message.to_json())) == message
    old = {"type": "join", "v": 1, "room": "K7WQ2M", "name": "Ada"}  # an old client: still valid
    assert parse_message(json.dumps(old)) == Join("K7WQ2M", "Ada")
    assert "player_key" not in Join("K7WQ2M", "Ada").to_json()
    for bad in ("", "A" * 21, "A" * 65, "A" * 42 + "=", "A" * 42 + "/", 7):
        with pytest.raises(BadMessageError) as caught:
            parse_message(json.dumps({"type": "daily", "v": 1, "name": "Ada", "player_key": bad, "id": 4}))
        assert caught.value.code == "bad_message" and caught.value.msg_id == 4


async def test_streaks_and_bests_count_ranked_games_only_and_casual_ones_apart(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Yesterday's daily was too fast (not ranked): today's ranked daily starts a streak of 1, not 2.
    A sealed race's win is a ranked best; a faster casual win of the same deal is a casual best."""
    server = await start_server()
    key = new_key()
    player = player_key_hash(key)
    storage = server.app[keys.STORAGE]
    now = datetime.fromtimestamp(clock.now_ms() / 1000, UTC)

    def game(mode: str, day: date | None, outcome: str, time_ms: int, reason: str | None, at: datetime) -> FinishedGame:
        return FinishedGame(
            nickname="Ada", code="HM1-N-AAAAAAA", mode=mode, room="ABCDEF", score=520 if outcome == "won" else 40,
            moves=48, time_ms=time_ms, outcome=outcome, record={"code": "HM1-N-AAAAAAA", "moves": []},
            ranked=reason is None, daily_date=day, finished_at=at, player=player, unranked_reason=reason,
            salt="ab" * 16 if mode == "race" and reason is None else None,
        )

    yesterday = game("daily", DAY - timedelta(days=1), "gave_up", 900, "too_fast", now - timedelta(days=1))
    await storage.save_game(yesterday, "y")
    await storage.save_game(game("daily", DAY, "gave_up", 60_000, None, now - timedelta(hours=2)), "t")
    await storage.save_game(game("race", None, "won", 90_000, None, now - timedelta(hours=1)), "sealed")
    await storage.save_game(game("race", None, "won", 30_000, "casual", now), "open")
    status, body, _ = await history(server, key)
    assert status == 200
    assert (body["games"], body["ranked_games"], body["wins"], body["streak"]) == (4, 2, 1, 1)
    assert [(b["game"], b["time_ms"]) for b in body["best"]] == [("sealed", 90_000)]
    assert (body["casual"]["games"], body["casual"]["wins"]) == (2, 1)
    assert [(b["game"], b["unranked_reason"]) for b in body["casual"]["best"]] == [("open", "casual")]
    assert [(line["game"], line["ranked"]) for line in body["recent"]] == [
        ("open", False), ("sealed", True), ("t", True), ("y", False),
    ]


def test_the_streak_counts_consecutive_days_up_to_today_or_yesterday() -> None:
    today = date(2026, 12, 1)
    days = {today - timedelta(days=n) for n in (1, 2, 3, 5)}
    assert _streak(days, today) == 3  # yesterday back to three days ago; today's not played yet
    assert _streak(days | {today}, today) == 4
    assert _streak({today - timedelta(days=2)}, today) == 0
    assert _streak(set(), today) == 0


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def any_storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"
    else:
        url = request.getfixturevalue("pg_database")
    storage = await open_storage(url)
    yield storage
    await storage.close()


async def test_every_storage_lists_a_players_games_newest_first(any_storage: Storage) -> None:
    at = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    base = FinishedGame(
        nickname="Ada", code="HM1-N-AAAAAAA", mode="solo", room="ABCDEF", score=520, moves=48, time_ms=60_000,
        outcome="won", record={"code": "HM1-N-AAAAAAA", "moves": []}, ranked=True, daily_date=None,
        finished_at=at, player="a" * 64,
    )
    await any_storage.save_game(base, "g1")
    await any_storage.save_game(replace(base, finished_at=at + timedelta(minutes=5)), "g2")
    await any_storage.save_game(replace(base, player="b" * 64), "other")
    await any_storage.save_game(replace(base, player=None), "nobody")
    assert [g.id for g in await any_storage.games_of_player("a" * 64, 10)] == ["g2", "g1"]
    assert [g.id for g in await any_storage.games_of_player("a" * 64, 1)] == ["g2"]
    assert [g.undos for g in await any_storage.games_of_player("a" * 64, 10)] == [0, 0]
    await any_storage.save_game(
        replace(base, record={"code": "HM1-N-AAAAAAA", "moves": [["1", "2"], "undo", ["1", "2"], "undo"]},
                finished_at=at + timedelta(minutes=9)), "undone")
    newest = (await any_storage.games_of_player("a" * 64, 1))[0]
    assert (newest.id, newest.undos, newest.nickname, newest.time_ms) == ("undone", 2, "Ada", 60_000)
    assert await any_storage.games_of_player("c" * 64, 10) == []


#: The player key of docs/protocol.md's example (a real one comes from 32 random bytes).
EXAMPLE_KEY = "Zk3v9QmW2xR7tL0pYb5nC8dH4sJ6gA1eU_oI-fKqTzM"


async def history_example(data_dir: Path) -> list[str]:
    """The example at the end of docs/protocol.md: Ada, with her player key, wins a solo game
    and gives up today's daily; then reads her history (the daily's code still hidden)."""
    lines: list[str] = []
    clock = ManualClock(T0)
    record = won_record()
    moves = [step.names() for step in record.moves]  # type: ignore[union-attr]

    def out(arrow: str, message: dict[str, Any]) -> None:
        lines.append(f"Ada {arrow} {json.dumps(message, separators=(', ', ': '))}")

    async def send(client: WsClient, **message: Any) -> None:
        message = {"type": message.pop("type"), "v": 1, **message}
        out("→", message)
        await client.ws.send_str(json.dumps(message))

    server = TestServer(create_app(make_settings(data_dir, clock, public_url="http://127.0.0.1:8080")))
    await server.start_server()
    try:
        ada = await WsClient.connect(server, "Ada")
        await send(ada, type="solo", name="Ada", code=str(record.code), player_key=EXAMPLE_KEY)
        await ada.next("welcome")
        lines.append("(Ada gets her welcome and plays the 48 moves of a won game, one every 2 s)")
        for move in moves:
            clock.advance(2000)
            await ada.send("move", positions=move)
            await ada.next("moved")
        out("←", await ada.next("game_over"))
        await ada.close()
        ada = await WsClient.connect(server, "Ada")
        await send(ada, type="daily", name="Ada", player_key=EXAMPLE_KEY)
        await ada.next("welcome")
        lines.append("(her welcome: today's daily, its code hidden)")
        clock.advance(5000)
        await send(ada, type="give_up")
        out("←", await ada.next("game_over"))
        await ada.close()
        await stored(server, player_key_hash(EXAMPLE_KEY), 2)
        status, body, _ = await history(server, EXAMPLE_KEY)
        lines.append(f"GET /api/me/history  Authorization: Bearer {EXAMPLE_KEY}  →  {status} {json.dumps(body)}")
    finally:
        await server.close()
    return lines


async def test_the_history_example_in_protocol_md_is_what_the_server_sends(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "protocol.md").read_text()
    section = doc[doc.index("## A player's history, worked through") :]
    block = section[section.index("```text\n") + len("```text\n") :]
    documented = normalise(block[: block.index("```")]).strip().splitlines()
    produced = normalise("\n".join(await history_example(tmp_path / "data"))).splitlines()
    assert produced == documented, "\n".join(produced)
