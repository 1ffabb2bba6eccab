"""The daily challenge across a UTC date change (the clock is injected): one deal per day, its
code hidden until the attempt ends (and from everyone until the day is over), the first attempt
per nickname ranked and a few per address (on the default SQLite too, requests sent at once),
past days browsable."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

import aiohttp
import pytest

from halfmoon.codes import daily_code
from halfmoon.game import Game
from halfmoon.protocol import commitment_of
from halfmoon_server.clock import ManualClock, day_start_ms, utc_day
from halfmoon_server.rooms import daily as daily_module
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import T0, WsClient, check_hidden_information, daily_ranked

DAY1 = date(2026, 11, 28)
DAY2 = date(2026, 11, 29)


async def _attempt(
    server: object, name: str, timeout: float = 5.0
) -> tuple[WsClient, dict[str, Any], dict[str, Any]]:
    client = await WsClient.connect(server, name)  # type: ignore[arg-type]
    await client.send("daily", name=name)
    welcome = await client.next("welcome", timeout=timeout)
    return client, welcome, welcome["room"]


async def _play_and_give_up(client: WsClient, code: str, moves: int) -> dict[str, object]:
    game = Game.from_code(code)
    for _ in range(moves):
        move = next(game.legal_moves())
        game.push(move)
        await client.send("move", positions=move.names())
        await client.next("moved")
    await client.send("give_up")
    return await client.next("game_over")


async def test_daily_challenge_across_a_date_change(start_server: StartServer, clock: ManualClock) -> None:
    server = await start_server()
    day1_code = str(daily_code(DAY1, b"test-secret", long=True))
    http = aiohttp.ClientSession()

    ada, welcome, room = await _attempt(server, "Ada")
    assert room["mode"] == "daily" and room["phase"] == "running" and room["code"] is None
    assert welcome["room"]["board"] is not None
    watcher = await WsClient.connect(server, "w")
    await watcher.send("watch", room=room["room"])
    assert (await watcher.next("error"))["code"] == "private_room"
    clock.advance(60_000)
    over = await _play_and_give_up(ada, day1_code, 3)
    # the attempt is over, yet its player is not told the code: a throwaway attempt scouts nothing
    assert over["code"] is None and over["ranked"] is True and over["time_ms"] == 60_000
    assert "analysis" not in over  # the app never says whether a deal could be won (the seed)
    assert welcome["room"]["time_limit_s"] == 1800, "a daily attempt has a time limit"
    assert check_hidden_information(ada.history) == []
    assert all(day1_code not in str(m) for m in ada.history)

    again, _, _ = await _attempt(server, "ADA")  # same nickname, any case: unranked
    second = await _play_and_give_up(again, day1_code, 5)
    assert second["ranked"] is False

    bob, _, _ = await _attempt(server, "Bob")
    clock.advance(60_000)  # a person's pace: a ranked result takes a person's time (docs/security.md)
    bob_over = await _play_and_give_up(bob, day1_code, 6)
    clock.set(day_start_ms(DAY2) - 60_000)  # 23:59: Dan starts late, and still plays at midnight
    dan, _, dan_room = await _attempt(server, "Dan")
    dan_token = (dan.history[0])["token"]

    await server.app[keys.TASKS].settle()  # (game_over does not wait for the database: the writes follow it)
    today = await (await http.get(server.make_url("/api/daily"))).json()
    assert today["date"] == "2026-11-28" and today["players"] == 2 and today["past"] == []
    assert day1_code not in str(today)
    board = await (await http.get(server.make_url("/api/daily/2026-11-28/leaderboard"))).json()
    assert [(e["rank"], e["name"], e["score"]) for e in board["entries"]] == [
        (1, "Bob", bob_over["score"]),
        (2, "Ada", over["score"]),
    ]
    hidden = await http.get(server.make_url(f"/api/games/{over['game']}"))
    assert hidden.status == 403 and (await hidden.json())["error"]["code"] == "daily_hidden"
    future = await http.get(server.make_url("/api/daily/2026-11-29/leaderboard"))
    assert future.status == 404

    # midnight UTC: a new deal; yesterday's code stays hidden while Dan's attempt may still run
    clock.set(day_start_ms(DAY2) + 1_000)
    today = await (await http.get(server.make_url("/api/daily"))).json()
    assert today["date"] == "2026-11-29" and today["players"] == 0
    assert today["past"] == [] and day1_code not in str(today)
    hidden = await http.get(server.make_url(f"/api/games/{over['game']}"))
    assert hidden.status == 403
    await dan.close()
    dan = await WsClient.connect(server, "dan")
    await dan.send("resume", room=dan_room["room"], token=dan_token)
    assert (await dan.next("welcome"))["room"]["code"] is None, "Dan still plays yesterday's deal"

    # every attempt of the day has ended (each lasts at most 30 min): the code is public, records open
    clock.set(day_start_ms(DAY2) + 1_800_000)
    assert (await dan.next("game_over"))["outcome"] == "timed_out"  # his time ran out
    await server.app[keys.TASKS].settle()  # (his game's write follows his game_over: the count holds it now)
    today = await (await http.get(server.make_url("/api/daily"))).json()
    revealed = today["past"][0]
    assert {k: v for k, v in revealed.items() if k not in ("salt", "commitment")} == {  # Ada, Bob, Dan ranked
        "date": "2026-11-28",
        "code": day1_code,
        "players": 3,
        "leaderboard": "/api/daily/2026-11-28/leaderboard",
    }
    assert commitment_of(day1_code, revealed["salt"]) == revealed["commitment"] == room["commitment"]
    record = await (await http.get(server.make_url(f"/api/games/{over['game']}"))).json()
    assert record["code"] == day1_code and len(record["moves"]) == 3
    await dan.send("leave")
    dan2 = await WsClient.connect(server, "dan2")
    await dan2.send("resume", room=dan_room["room"], token=dan_token)
    assert (await dan2.next("welcome"))["room"]["code"] == day1_code  # shown to all now
    await dan2.close()

    carol, _, _ = await _attempt(server, "Carol")
    carol_over = await _play_and_give_up(carol, str(daily_code(DAY2, b"test-secret", long=True)), 1)
    assert carol_over["code"] is None and carol_over["moves"] == 1  # the new day's deal played
    ada2, _, _ = await _attempt(server, "Ada")  # a new day: Ada's first attempt is ranked again
    assert (await _play_and_give_up(ada2, str(daily_code(DAY2, b"test-secret", long=True)), 0))["ranked"] is True
    for client in (ada, again, bob, dan, carol, ada2, watcher):
        await client.close()
    await http.close()


async def test_tomorrows_daily_commitment_is_public_a_day_ahead_and_the_reveal_opens_it(
    start_server: StartServer, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GET /api/daily publishes today's commitment and tomorrow's; the day's attempt starts with it;
    once the day is revealed its code and salt open the commitment published a day before — and a
    day whose commitment is out keeps its deal, however new days come to be chosen since."""
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        day1 = await (await http.get(server.make_url("/api/daily"))).json()
        ahead = day1["next"]
        assert ahead["date"] == "2026-11-29" and len(ahead["commitment"]) == 64
        code2 = str(daily_code(DAY2, b"test-secret", long=True))
        assert code2 not in str(day1) and day1["commitment"] != ahead["commitment"]
        # days come to be chosen otherwise (and the memory of chosen days is gone): the stored day
        # keeps its deal, so its published commitment still holds
        monkeypatch.setattr(daily_module, "choose_daily_code", lambda *args: "HM1-D-AAAAAAA")
        server.app[keys.DAILY]._codes.clear()
        clock.set(day_start_ms(DAY2) + 1_000)
        ada, _, room = await _attempt(server, "Ada")
        assert room["commitment"] == ahead["commitment"]
        started_with = room["commitment"]
        await _play_and_give_up(ada, code2, 2)  # the deal committed to a day ahead is the one dealt
        clock.set(day_start_ms(date(2026, 11, 30)) + 1_800_000)  # every attempt of DAY2 has ended
        revealed = (await (await http.get(server.make_url("/api/daily"))).json())["past"][0]
        assert revealed["date"] == "2026-11-29" and revealed["code"] == code2
        assert commitment_of(revealed["code"], revealed["salt"]) == ahead["commitment"] == started_with
        await ada.close()


async def test_daily_deal_is_the_first_winnable_candidate(start_server: StartServer, clock: ManualClock) -> None:
    from halfmoon_server.solver.search import first_winnable_daily

    server = await start_server(daily_requires_winnable=True, solver_workers=1, solver_node_budget=100_000)
    client, _, room = await _attempt(server, "Ada", timeout=60)  # the solver runs in a fresh process
    assert room["code"] is None
    await client.send("give_up")
    over = await client.next("game_over", timeout=60)
    assert "analysis" not in over, "the solver chooses the deal and says nothing to the player"
    clock.set(day_start_ms(DAY2) + 1_800_000)  # every attempt of DAY1 has ended: its code is public
    async with aiohttp.ClientSession() as http:
        past = (await (await http.get(server.make_url("/api/daily"))).json())["past"]
    assert past[0]["code"] == str(first_winnable_daily(DAY1, b"test-secret", node_budget=100_000))
    await client.close()


@pytest.mark.slow
async def test_the_daily_player_count_is_a_count_not_a_capped_list(start_server: StartServer) -> None:
    """1,200 ranked players (and unranked attempts, and another day's) say 1,200: the leaderboard
    is capped at 1,000 rows, the count is a COUNT."""
    from datetime import UTC, datetime

    from halfmoon_server.ports import FinishedGame

    server = await start_server()
    storage = server.app[keys.STORAGE]
    at = datetime(2026, 11, 28, 12, tzinfo=UTC)

    def game(n: int, *, ranked: bool, day: date) -> FinishedGame:
        score, time_ms = n % 520, 1000 + n
        code, outcome = "HM1-D-AAAAAAA", "gave_up"
        return FinishedGame(f"P{n}", code, "daily", "ROOM01", score, 10, time_ms, outcome, {}, ranked, day, at)

    for n in range(1200):  # one at a time: SQLite has one writer
        await storage.save_game(game(n, ranked=True, day=DAY1), f"d1-{n:05d}")
    for n in range(30):
        await storage.save_game(game(n, ranked=False, day=DAY1), f"u1-{n:05d}")
    for n in range(7):
        await storage.save_game(game(n, ranked=True, day=DAY2), f"d2-{n:05d}")
    assert await storage.daily_players(DAY1) == 1200
    async with aiohttp.ClientSession() as http:
        today = await (await http.get(server.make_url("/api/daily"))).json()
    assert today["date"] == DAY1.isoformat() and today["players"] == 1200


async def test_simultaneous_daily_attempts_from_one_address_rank_at_most_the_cap_on_sqlite(
    start_server: StartServer,
) -> None:
    """25 names from one address ask for the daily at once, on the default database (SQLite): the
    claims serialise (docs/security.md), so 3 are ranked, not every one that counted before the
    others had inserted. (PostgreSQL: test_storage's test of the same claims.)"""
    server = await start_server(daily_ranked_per_address=3, room_burst=100)
    assert server.app[keys.SETTINGS].database_url().startswith("sqlite+aiosqlite:///")

    async def attempt(k: int) -> bool:
        client, welcome, _ = await _attempt(server, f"Rush{k}", timeout=20)
        await client.close()
        return bool(welcome["ranked"])

    ranked = await asyncio.gather(*(attempt(k) for k in range(25)))
    assert sum(ranked) == 3, ranked


async def test_a_program_playing_the_daily_can_say_it_is_a_bot_and_is_never_ranked(
    start_server: StartServer, clock: ManualClock
) -> None:
    """``daily`` (and ``solo``) take ``bot`` as ``join`` does: a program that says so is shown as a
    bot and its attempt is not ranked (``bot``), even as its name's first of the day; it does
    not stand on the day's board. A ``bot`` that is not a boolean is refused and starts nothing."""
    server = await start_server()
    code = str(daily_code(DAY1, b"test-secret", long=True))
    program = await WsClient.connect(server, "program")
    await program.send("daily", name="Helper", bot="yes")
    assert (await program.next("error"))["code"] == "bad_message"
    await program.send("daily", name="Helper", bot=True)
    welcome = await program.next("welcome")
    assert (welcome["ranked"], welcome["unranked_reason"]) == (False, "bot")
    assert [p["bot"] for p in welcome["room"]["players"]] == [True]
    clock.advance(60_000)
    over = await _play_and_give_up(program, code, 2)
    assert (over["ranked"], over["unranked_reason"]) == (False, "bot")
    solo = await WsClient.connect(server, "solo")
    await solo.send("solo", name="Helper", code="HM1-N-AAAAAAB", bot=True)
    assert (await solo.next("welcome"))["unranked_reason"] == "bot"
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/daily/{DAY1.isoformat()}/leaderboard"))).json()
    assert board["entries"] == []


async def test_the_daily_code_stays_off_every_rest_answer_until_the_day_is_over(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(finished_ttl_s=1.0)
    ada = await WsClient.connect(server, "ada")
    await ada.send("daily", name="Ada")
    room = (await ada.next("welcome"))["room"]["room"]

    async def rest_texts(game: str | None) -> list[str]:
        paths = [f"/api/rooms/{room}", "/api/daily", f"/api/daily/{_today(clock)}/leaderboard"]
        if game is not None:
            paths.append(f"/api/games/{game}")
        async with aiohttp.ClientSession() as http:
            return [await (await http.get(server.make_url(path))).text() for path in paths]

    during = await rest_texts(None)
    await ada.send("give_up")
    over = await ada.next("game_over")
    assert over["code"] is None, "not even its own player learns the daily code before the day's reveal"
    # (game_over does not wait for the database: once the write is done the stored game is read, and
    # the room can expire after the clock's advance below)
    await server.app[keys.TASKS].settle()
    code = str(daily_code(utc_day(clock.now_ms()), b"test-secret", long=True))
    assert all(code not in text for text in during)
    after = await rest_texts(over["game"])  # the attempt is over, the day is not
    assert all(code not in text for text in after), after
    assert json.loads(after[0])["code"] is None
    assert json.loads(after[3])["error"]["code"] == "daily_hidden", "the stored game is found, and hidden"
    await ada.close()
    clock.advance(5_000)  # the finished room expires: its answer is rebuilt from the stored games
    for _ in range(100):
        if json.loads((await rest_texts(None))[0]).get("players") == []:
            break
        await asyncio.sleep(0.02)
    expired = await rest_texts(over["game"])
    assert json.loads(expired[0])["players"] == [] and all(code not in text for text in expired), expired
    clock.advance(86_400_000 + 1_800_000)  # the day is over and so is every attempt: the code is public
    async with aiohttp.ClientSession() as http:
        past = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()
        assert past["code"] == code
        game = await http.get(server.make_url(f"/api/games/{over['game']}"))
        assert game.status == 200
        # the salt that opens the day's commitment comes with the code, from the room as from the game
        assert past["salt"] == (await game.json())["salt"] == server.app[keys.DAILY].salt_for(utc_day(T0))
        assert past["commitment"] == commitment_of(code, past["salt"])  # the one published a day ahead


def _today(clock: ManualClock) -> str:
    return utc_day(clock.now_ms()).isoformat()


DAY = date(2026, 11, 28)  # the day of support.T0


async def test_a_name_in_another_case_gets_no_second_ranked_daily_attempt(start_server: StartServer) -> None:
    server = await start_server()
    ranked = []
    for name in ("Otto", "otto"):
        client = await WsClient.connect(server, name)
        await client.send("daily", name=name)
        await client.next("welcome")
        await client.send("give_up")
        ranked.append((await client.next("game_over"))["ranked"])
        await client.close()
    assert ranked == [True, False], ranked


async def test_an_ipv6_64_is_one_address_for_the_daily_limit(start_server: StartServer) -> None:
    """Every IPv6 host holds a /64 (privacy addresses rotate within it): counted per full address,
    one home line gets 2^64 sets of ranked attempts. Count an IPv6 client by its /64."""
    server = await start_server(trust_forwarded=True, daily_ranked_per_address=2)
    ranked = [
        await daily_ranked(server, f"Player{k}", {"X-Forwarded-For": f"2001:db8:1:2::{k + 1:x}"}) for k in range(4)
    ]
    assert ranked == [True, True, False, False], ranked


@pytest.mark.postgres
async def test_simultaneous_daily_requests_from_one_address_stay_within_the_ranked_limit(
    start_server: StartServer, pg_database: str
) -> None:
    """claim_daily_attempt counts the address's ranked attempts, then inserts, in one READ COMMITTED
    transaction: requests sent at once all count below the limit and all are ranked."""
    server = await start_server(db_url=pg_database, daily_ranked_per_address=2, room_burst=50)

    async def attempt(k: int) -> bool:
        client = await WsClient.connect(server, f"n{k}")
        await client.send("daily", name=f"Rush{k}")
        welcome = await client.next("welcome", "error", timeout=20)
        assert welcome["type"] == "welcome", welcome
        await client.send("give_up")
        ranked = bool((await client.next("game_over", timeout=20))["ranked"])
        await client.close()
        return ranked

    ranked = await asyncio.gather(*(attempt(k) for k in range(12)))
    assert sum(ranked) <= 2, f"{sum(ranked)} ranked attempts from one address with a limit of 2"


async def test_a_throwaway_daily_attempt_gets_no_solver_verdict_before_the_code_is_public(
    start_server: StartServer,
) -> None:
    """game_over.analysis (winnable, last_winnable_move) of an unranked daily attempt is a solver
    oracle: play a line under a throwaway name, give up, read which move lost the win; try again
    from there (unranked attempts cost only room credits). A few dozen attempts walk a winning
    line for the ranked one. Hold a daily attempt's analysis until the day is revealed (or send
    it only with the ranked attempt). NB: tests/server/rooms/test_daily.py asserts the analysis is sent."""
    server = await start_server(solver_workers=1, solver_node_budget=100_000)
    code = str(daily_code(DAY, b"test-secret", long=True))
    assert await daily_ranked(server, "Scout") is True
    client = await WsClient.connect(server, "scout")
    await client.send("daily", name="Scout")  # the same name again: unranked, a throwaway
    await client.next("welcome", timeout=60)
    game = Game.from_code(code)
    for _ in range(3):
        move = next(game.legal_moves())
        game.push(move)
        await client.send("move", positions=move.names())
        await client.next("moved")
    await client.send("give_up")
    over = await client.next("game_over", timeout=60)
    await client.close()
    assert over["ranked"] is False
    # (mended for good: game_over has no analysis at all any more — the seed forbids it)
    assert "analysis" not in over, f"an unranked daily attempt was told {over['analysis']} before the reveal"


async def test_a_daily_attempt_begun_after_midnight_has_ended_when_its_days_code_is_published(
    start_server: StartServer, clock: ManualClock
) -> None:
    """lobby.daily takes the day (today()) before its awaits (the code, the room log, the attempt's
    row) and the attempt starts at the time of its 'single' entry, after them. Asked for at
    23:59:59.9 with a slow database, the attempt of day D starts after midnight and runs past
    reveal_at = end of D + the limit: /api/daily then publishes the code while it still plays.
    (Simulated: the attempt's row takes 2 s to write.) Cap the attempt's deadline at reveal_at
    (or take the day from the start time)."""
    server = await start_server()
    storage = server.app[keys.STORAGE]
    real_claim = storage.claim_daily_attempt

    async def slow_claim(*args: Any, **kwargs: Any) -> bool:
        clock.advance(2_000)  # the database took two seconds
        return await real_claim(*args, **kwargs)

    storage.claim_daily_attempt = slow_claim  # type: ignore[method-assign]
    next_day = day_start_ms(date(2026, 11, 29))
    clock.set(next_day - 100)
    client = await WsClient.connect(server, "late")
    await client.send("daily", name="Late")
    welcome = await client.next("welcome")
    room = server.app[keys.LOBBY].rooms[welcome["room"]["room"]]
    reveal = server.app[keys.DAILY].reveal_at(DAY)
    deadline = room.race.next_deadline()
    await client.close()
    assert deadline is not None
    assert deadline <= reveal, f"the attempt ends {deadline - reveal} ms after the reveal"


async def test_look_alike_names_share_one_ranked_daily_attempt_and_an_address_gets_a_few(
    start_server: StartServer,
) -> None:
    server = await start_server(daily_ranked_per_address=2)
    ranked = []
    for name in ("Ada", "\u0410da", "\uff21\uff44\uff41", "Bob", "Cy"):  # Ada, Cyrillic Аda, fullwidth Ａｄａ
        client = await WsClient.connect(server, name)
        await client.send("daily", name=name)
        await client.next("welcome")
        await client.send("give_up")
        ranked.append((name, (await client.next("game_over"))["ranked"]))
        await client.close()
    # Ada ranked; her look-alikes are Ada again; Bob is the address's second; Cy is over the limit
    assert ranked == [("Ada", True), ("\u0410da", False), ("\uff21\uff44\uff41", False), ("Bob", True), ("Cy", False)]
