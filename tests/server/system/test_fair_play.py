"""Fair play: nobody learns a card or a deal code before they are entitled to it, through any door
— the WebSocket (players, spectators), REST (rooms, games, leaderboards, the daily, the live list
of public races) — in sealed races, open races, solo games and the daily challenge; and the doors
around the game (security headers, JSON-only room creation, the Origin check, unmasked frames) hold.

The audit records every message and every REST answer each party received, with the moment it
became entitled to the code, and checks none carried the code (or a deal) before then; the
hidden-information check (``check_hidden_information``) checks the cards. A deliberate leak
makes the audit fail (the last test)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from halfmoon.codes import daily_code, seal_commitment, sealed_code
from halfmoon.game import Game
from halfmoon.protocol import Mode, commitment_of
from halfmoon_client.verify import opening_board
from halfmoon_server.clock import ManualClock, day_start_ms
from halfmoon_server.core import race as race_module
from halfmoon_server.core.commands import apply_entry, race_of, room_header
from halfmoon_server.web import keys
from tests.conftest import ROOT
from tests.server.conftest import StartServer
from tests.server.support import WsClient, check_hidden_information, make_sealed_room

DAY = date(2026, 11, 28)
#: A card's name as a value in a JSON text ("AH", "10C", …).
CARD_IN_TEXT = re.compile(r'"(A|[2-9]|10|J|Q|K)[SHDC]"')


@dataclass
class Party:
    """One person at the table: what reached them, in order, and from when they may know the code."""

    name: str
    texts: list[str] = field(default_factory=list)
    entitled_from: int | None = None  # the index in texts from which the code may appear

    def got(self, text: str) -> None:
        self.texts.append(text)

    def entitled_now(self) -> None:
        if self.entitled_from is None:
            self.entitled_from = len(self.texts)


def leaks(parties: list[Party], code: str, *equivalents: str) -> list[str]:
    """Every answer that carried the code (or a deal, or one of the ``equivalents`` that give the
    code away: a sealed race's seed) before its party was entitled to it."""
    found = []
    for party in parties:
        until = len(party.texts) if party.entitled_from is None else party.entitled_from
        for text in party.texts[:until]:
            if code in text or '"deal"' in text or any(secret in text for secret in equivalents):
                found.append(f"{party.name} learned it early: {text[:160]}")
    return found


async def rest(http: aiohttp.ClientSession, server: Any, party: Party, *paths: str) -> list[Any]:
    answers = []
    for path in paths:
        response = await http.get(server.make_url(path))
        text = await response.text()
        party.got(text)
        answers.append((response.status, json.loads(text) if text.startswith(("{", "[")) else text))
    return answers


async def play_moves(client: WsClient, game: Game, count: int) -> None:
    """Up to ``count`` moves (fewer when the deal stalls: a sealed race's deal is drawn at random)."""
    for _ in range(count):
        move = next(iter(game.legal_moves()), None)
        if move is None:
            return
        game.push(move)
        await client.send("move", positions=move.names())
        while True:
            message = await client.next("moved", "error")
            assert message["type"] == "moved", message
            if message["player"] == next(m["you"] for m in client.history if m["type"] == "welcome"):
                break


ADA_ENTROPY, BOB_ENTROPY = "a1" * 16, "b2" * 16


ADA_KEY, BOB_KEY = "ada-player-key-" + "a" * 20, "bob-player-key-" + "b" * 20


async def sealed_race(server: Any, *, quick: bool = False) -> tuple[list[Party], str]:
    """A sealed race with two racers (each sends a contribution), a spectator and a REST reader;
    returns the parties (the REST reader's entitlement marked; the others' are where their
    game_over or race_over is). ``quick``: the racers meet in the quick-race queue (whose race
    starts by itself once both are in), not by a room made with ``POST /api/rooms``."""
    async with aiohttp.ClientSession() as http:
        ada_p, bob_p, sam_p, rex_p = Party("Ada"), Party("Bob"), Party("spectator"), Party("REST reader")
        ada = await WsClient.connect(server, "ada")
        bob = await WsClient.connect(server, "bob")
        sam = await WsClient.connect(server, "sam")
        if quick:
            await ada.send("queue", name="Ada", player_key=ADA_KEY)
            await bob.send("queue", name="Bob", player_key=BOB_KEY)
            matched = await ada.next("matched")
            assert (await bob.next("matched"))["room"] == matched["room"]
            room_id = matched["room"]
            created = (await rest(http, server, rex_p, f"/api/rooms/{room_id}"))[0][1]
        else:
            # a public race: on the live list, a door open to anyone, while it is in play
            created = await (await http.post(server.make_url("/api/rooms"), json={"listed": True})).json()
            room_id = created["room"]
            assert "code" not in created
        assert created["sealed"] is True
        room = server.app[keys.LOBBY].rooms[room_id]
        assert room.race.code is None and room.race.deal is None  # no deal exists before the start
        await ada.send("join", room=room_id, name="Ada", entropy=ADA_ENTROPY, player_key=ADA_KEY)
        tokens = [(await ada.next("welcome"))["token"]]
        await sam.send("watch", room=room_id)
        await sam.next("welcome")
        await rest(http, server, rex_p, f"/api/rooms/{room_id}")
        await bob.send("join", room=room_id, name="Bob", entropy=BOB_ENTROPY, player_key=BOB_KEY)
        tokens.append((await bob.next("welcome"))["token"])
        if not quick:
            await ada.send("start")  # (a quick race starts by itself once both are in)
        started = await ada.next("started")
        await bob.next("started")
        await sam.next("started")
        code = str(room.race.code)  # the test knows it now; nobody at the table may, yet
        assert started["code"] is None and started["commitment"] == created["commitment"]
        assert started["contributions"] == sorted([ADA_ENTROPY, BOB_ENTROPY])
        await play_moves(ada, Game.from_code(code), 4)
        bob_game = Game.from_code(code)
        await play_moves(bob, bob_game, 2)
        await ada.send("give_up")
        ada_over = await ada.next("game_over")  # Ada may know the deal from her game_over on
        await server.app[keys.TASKS].settle()  # (her game's write follows it: the database has it now)
        # Bob still plays: nothing he, the spectator or a REST reader can reach holds the deal
        await server.app[keys.LOBBY].list_live(server.app[keys.SETTINGS].clock.now_ms())  # (the ticker's round)
        statuses = await rest(
            http,
            server,
            rex_p,
            f"/api/rooms/{room_id}",
            f"/api/games/{ada_over['game']}",
            "/api/leaderboard/HM1-N-AAAAAAA",
            "/api/daily",
            "/api/live",
        )
        assert statuses[1][0] == 403 and statuses[1][1]["error"]["code"] == "game_hidden"
        # the live list shows the race — no code (the audit's), no card, no token, no commitment
        [shown] = statuses[4][1]["races"]
        assert shown["room"] == room_id and shown["players"] == ["Ada", "Bob"] and shown["finished"] == 1
        live_text = rex_p.texts[-1]
        assert not any(token in live_text for token in tokens) and created["commitment"] not in live_text
        assert not CARD_IN_TEXT.search(live_text), live_text
        await play_moves(bob, bob_game, 2)
        await bob.send("give_up")
        await bob.next("game_over")
        await sam.next("race_over")
        await ada.next("race_over")
        rex_p.entitled_now()  # the race is over: anyone may know
        await server.app[keys.TASKS].settle()  # (Bob's game is in the database)
        after = await rest(http, server, rex_p, f"/api/rooms/{room_id}", f"/api/games/{ada_over['game']}")
        assert after[0][1]["code"] == code and after[1][0] == 200
        stored = after[1][1]
        assert stored["commitment"] == seal_commitment(stored["seed"]) == created["commitment"]
        assert str(sealed_code(stored["seed"], stored["contributions"])) == code == stored["code"]
        for client, party in ((ada, ada_p), (bob, bob_p), (sam, sam_p)):
            await client.drain(0.05)
            for message in client.history:
                party.got(json.dumps(message))
            assert check_hidden_information(client.history) == [], party.name
            await client.close()
        return [ada_p, bob_p, sam_p, rex_p], code


def _entitled_at_first(party: Party, kind: str) -> None:
    for k, text in enumerate(party.texts):
        if f'"type": "{kind}"' in text:
            party.entitled_from = k
            return


async def test_a_sealed_race_keeps_its_code_from_every_door_until_each_party_is_entitled(
    start_server: StartServer,
) -> None:
    server = await start_server()
    parties, code = await sealed_race(server)
    # Ada gave up first: her game_over carries no code (a second seat of hers would learn it);
    # the race's end does, for everyone
    for party, kind in zip(parties[:3], ("race_over", "game_over", "race_over"), strict=True):
        _entitled_at_first(party, kind)
        assert party.entitled_from is not None, party.name
    seed = json.loads(parties[3].texts[-1])["seed"]  # the stored game's, read once the race was over
    assert leaks(parties, code, seed) == []  # the seed and the contributions (out at the start) are the code
    ada = parties[0]
    assert any(code in text for text in ada.texts[ada.entitled_from or 0 :]), "the race's end reveals it"
    ada_over = next(json.loads(t) for t in ada.texts if '"type": "game_over"' in t)
    assert ada_over["code"] is None and "salt" not in ada_over


async def test_a_quick_race_keeps_its_code_from_every_door_until_each_party_is_entitled(
    start_server: StartServer,
) -> None:
    server = await start_server(quick_max_players=2)
    parties, code = await sealed_race(server, quick=True)
    for party, kind in zip(parties[:3], ("race_over", "game_over", "race_over"), strict=True):
        _entitled_at_first(party, kind)
        assert party.entitled_from is not None, party.name
    seed = json.loads(parties[3].texts[-1])["seed"]
    assert leaks(parties, code, seed) == []
    assert any('"type": "matched"' in text for text in parties[0].texts)  # the queue's frames were audited too


async def test_the_audit_catches_a_deliberate_leak(start_server: StartServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the race tell every viewer its code once dealt (the bug the seal exists to prevent): the
    audit fails — Ada's own end and a REST reader's look while Bob still plays carry it."""
    monkeypatch.setattr(race_module.Race, "code_for", lambda self, viewer, now: self.code and str(self.code))
    server = await start_server()
    parties, code = await sealed_race(server)
    for party, kind in zip(parties[:3], ("race_over", "game_over", "race_over"), strict=True):
        _entitled_at_first(party, kind)
    found = leaks(parties, code)
    assert any(f.startswith("Ada") for f in found) and any(f.startswith("REST reader") for f in found), found


async def test_a_daily_code_reaches_nobody_until_every_attempt_of_the_day_has_ended(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    code = str(daily_code(DAY, b"test-secret", long=True))
    ada_p, rex_p = Party("Ada"), Party("REST reader")
    ada = await WsClient.connect(server, "ada")
    await ada.send("daily", name="Ada")
    welcome = await ada.next("welcome")
    assert welcome["room"]["time_limit_s"] == 1800
    await play_moves(ada, Game.from_code(code), 3)
    await ada.send("give_up")
    over = await ada.next("game_over")
    # (her game's write follows game_over: once it is stored, the reads below are refused as hidden, not
    # just not found)
    await server.app[keys.TASKS].settle()
    room_id = welcome["room"]["room"]
    async with aiohttp.ClientSession() as http:
        paths = [f"/api/rooms/{room_id}", f"/api/games/{over['game']}", "/api/daily"]
        paths.append("/api/daily/2026-11-28/leaderboard")
        hidden = [await rest(http, server, rex_p, *paths)]
        clock.set(day_start_ms(date(2026, 11, 29)) + 60_000)  # the day is over, an attempt may still run
        hidden.append(await rest(http, server, rex_p, *paths))
        # the stored game is found, and refused: the hidden path is what was read, not a 404
        assert [(game[0], game[1]["error"]["code"]) for _, game, *_ in hidden] == [(403, "daily_hidden")] * 2
        clock.set(day_start_ms(date(2026, 11, 29)) + 1_800_000)  # every attempt of the day has ended
        rex_p.entitled_now()
        answers = await rest(http, server, rex_p, *paths)
    assert answers[1][0] == 200 and answers[2][1]["past"][0]["code"] == code
    for message in ada.history:
        ada_p.got(json.dumps(message))
    salt = server.app[keys.DAILY].salt_for(DAY)  # with the commitment, it would let a short code be searched
    assert leaks([ada_p, rex_p], code, salt) == []
    assert check_hidden_information(ada.history) == []
    await ada.close()


async def test_an_open_race_and_a_solo_game_show_their_code_and_say_so(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={"code": "HM1-N-AAAAAAB"})).json()
    assert created["sealed"] is False and created["code"] == "HM1-N-AAAAAAB" and "commitment" not in created
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=created["room"], name="Ada")
    snapshot = (await ada.next("welcome"))["room"]
    assert (snapshot["code"], snapshot["sealed"], snapshot["commitment"]) == ("HM1-N-AAAAAAB", False, None)
    solo = await WsClient.connect(server, "solo")
    await solo.send("solo", name="Sol")
    room = (await solo.next("welcome"))["room"]
    assert room["code"].startswith("HM1-N-") and room["sealed"] is False  # the seed's bar shows it
    for client in (ada, solo):
        await client.close()


# -- the doors ----------------------------------------------------------------------------------------


async def test_every_answer_carries_the_security_headers(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        for path in ("/", "/r/K7WQ2M", "/api/daily", "/api/nothing", "/healthz"):
            response = await http.get(server.make_url(path))
            csp = response.headers.get("Content-Security-Policy", "")
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, path
            assert "'unsafe-inline'" not in csp, path
            assert response.headers["X-Content-Type-Options"] == "nosniff", path
            assert response.headers["Referrer-Policy"] == "same-origin", path


async def test_a_cross_site_form_cannot_make_rooms(start_server: StartServer) -> None:
    server = await start_server(room_burst=2)
    async with aiohttp.ClientSession() as http:
        for kind, body in (("text/plain", '{"code": "HM1-N-AAAAAAB"}'), ("application/x-www-form-urlencoded", "a=b")):
            response = await http.post(server.make_url("/api/rooms"), data=body, headers={"Content-Type": kind})
            assert response.status == 415 and (await response.json())["error"]["code"] == "bad_content_type"
        assert len(server.app[keys.LOBBY].rooms) == 0
        assert (await http.post(server.make_url("/api/rooms"), json={})).status == 201, "credits were not spent"
        assert (await http.post(server.make_url("/api/rooms"), json={})).status == 201


async def test_the_origin_must_match_the_public_url_in_scheme_host_and_port(start_server: StartServer) -> None:
    server = await start_server(public_url="https://halfmoon.example.org")
    async with aiohttp.ClientSession() as http:
        for origin, allowed in (
            ("https://halfmoon.example.org", True),
            ("http://halfmoon.example.org", False),  # the scheme differs
            ("https://halfmoon.example.org:8443", False),  # the port differs
            ("https://evil.example", False),
            (f"http://127.0.0.1:{server.port}", False),  # the Host matches, the public URL does not
        ):
            try:
                async with http.ws_connect(server.make_url("/ws"), headers={"Origin": origin}) as ws:
                    await ws.close()
                    got = True
            except aiohttp.WSServerHandshakeError as exc:
                assert exc.status == 403
                got = False
            assert got is allowed, origin


async def test_an_unmasked_client_frame_closes_the_connection(start_server: StartServer) -> None:
    server = await start_server()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101")
    ping = b'{"type": "ping", "v": 1}'
    key = b"\x01\x02\x03\x04"
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(ping))
    writer.write(bytes((0x81, 0x80 | len(ping))) + key + masked)  # a masked frame: answered
    answer = await asyncio.wait_for(reader.read(200), 5)
    assert b'"pong"' in answer
    writer.write(bytes((0x81, len(ping))) + ping)  # the same frame unmasked
    rest_of_stream = await asyncio.wait_for(reader.read(), 5)  # the server closes
    assert rest_of_stream.startswith(b"\x88\x02\x03\xea"), rest_of_stream  # close 1002, nothing else
    writer.close()


def test_halfmoon_verify_checks_a_commitment_and_refuses_a_forged_one() -> None:
    salt = "0" * 32
    good = commitment_of("HM1-N-AAAAAAA", salt)
    command = [sys.executable, "-m", "halfmoon", "verify", "--code", "HM1-N-AAAAAAA", "--salt", salt]
    ok = subprocess.run([*command, "--commitment", good], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert ok.returncode == 0 and "verified" in ok.stdout
    bad = subprocess.run([*command, "--commitment", "f" * 64], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert bad.returncode == 1 and "NOT VERIFIED" in bad.stdout


def _verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "halfmoon", "verify", *args], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def test_halfmoon_verify_accepts_a_true_seal_and_refuses_a_tampered_seed_contribution_code_or_board(
    tmp_path: Path,
) -> None:
    seed, contributions = "5e" * 32, ["a1" * 16, "b2" * 16]
    code = str(sealed_code(seed, contributions))
    board = tmp_path / "board.json"
    board.write_text(json.dumps(opening_board(code)))
    other_board = tmp_path / "other.json"
    other_board.write_text(json.dumps(opening_board(str(sealed_code(seed, contributions[:1])))))
    true = {
        "--commitment": seal_commitment(seed),
        "--code": code,
        "--seed": seed,
        "--contributions": ",".join(contributions),
        "--contribution": contributions[0],
        "--board": str(board),
    }

    def run(**changed: str) -> subprocess.CompletedProcess[str]:
        given = {**true, **{f"--{k}": v for k, v in changed.items()}}
        return _verify(*[part for pair in given.items() for part in pair])

    ok = run()
    assert ok.returncode == 0 and f"verified: {code}" in ok.stdout, ok.stdout + ok.stderr
    tampered = {
        "seed": "5f" + seed[2:],
        "contributions": contributions[0],  # Bob's left out: a deal the server alone could pick
        "code": str(sealed_code(seed, [])),
        "board": str(other_board),
        "contribution": "c3" * 16,  # mine is not in
    }
    for field_name, value in tampered.items():
        refused = run(**{field_name: value})
        assert refused.returncode == 1 and "NOT VERIFIED" in refused.stdout, (field_name, refused.stdout)


async def test_halfmoon_verify_checks_a_stored_sealed_game(start_server: StartServer, tmp_path: Path) -> None:
    server = await start_server()
    parties, code = await sealed_race(server)
    started = next(json.loads(t) for t in parties[0].texts if '"type": "started"' in t)
    board = tmp_path / "started.json"
    board.write_text(json.dumps(started))  # the whole started message Ada got: its board is what she saw
    async with aiohttp.ClientSession() as http:
        leaderboard = await (await http.get(server.make_url(f"/api/leaderboard/{code}"))).json()
    game = leaderboard["entries"][0]["game"]
    base = ["--server", str(server.make_url("/")).rstrip("/")]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return _verify(*base, *extra, "--", game)  # (a game id may begin with '-')

    mine = await asyncio.to_thread(
        run, "--commitment", started["commitment"], "--contribution", ADA_ENTROPY, "--board", str(board)
    )  # what Ada was given, sent and saw
    assert mine.returncode == 0 and f"verified: {code}" in mine.stdout, mine.stdout + mine.stderr
    not_mine = await asyncio.to_thread(run, "--commitment", started["commitment"], "--contribution", "c3" * 16)
    assert not_mine.returncode == 1 and "not among" in not_mine.stdout
    alone = await asyncio.to_thread(run)  # the server's own word proves nothing: a commitment is needed
    assert alone.returncode == 2 and "--commitment" in alone.stderr


def _sealed_race_of(entropies: dict[str, str | None], seed: str = "5e" * 32) -> race_module.Race:
    race = race_module.Race("K7WQ2M", Mode.RACE, None, race_module.RaceConfig(countdown_ms=0), now=0, seed=seed)
    for name, entropy in entropies.items():
        race.join(name, 0, entropy)
    race.start("p1", None, 0)
    race.tick(0)
    return race


def test_the_racers_contributions_change_the_deal_so_the_server_alone_cannot_choose_it() -> None:
    alone = _sealed_race_of({"Ada": None, "Bob": None})  # nobody contributed: the server's seed alone
    both = _sealed_race_of({"Ada": ADA_ENTROPY, "Bob": BOB_ENTROPY})
    other_bob = _sealed_race_of({"Ada": ADA_ENTROPY, "Bob": "c3" * 16})
    assert both.contributions == (ADA_ENTROPY, BOB_ENTROPY)
    assert both.code == sealed_code("5e" * 32, [ADA_ENTROPY, BOB_ENTROPY])
    assert len({str(alone.code), str(both.code), str(other_bob.code)}) == 3  # each racer's say changes the deal
    assert both.commitment == other_bob.commitment == seal_commitment("5e" * 32)  # committed before any of it


def test_a_racer_who_leaves_the_lobby_has_no_say_and_one_may_replace_theirs_before_the_start() -> None:
    race = race_module.Race("K7WQ2M", Mode.RACE, None, race_module.RaceConfig(countdown_ms=0), now=0, seed="5e" * 32)
    race.join("Ada", 0, ADA_ENTROPY)
    race.join("Bob", 0, BOB_ENTROPY)
    race.join("Cy", 0, "c3" * 16)
    race.leave("p3", 0)
    race.connect("p2", 0, "d4" * 16)  # Bob reloads his page in the lobby: a new contribution replaces his
    race.start("p1", None, 0)
    race.tick(0)
    assert race.contributions == (ADA_ENTROPY, "d4" * 16)
    race.connect("p2", 1, "e5" * 16)  # too late: the deal is dealt
    assert race.entropy["p2"] == "d4" * 16 and race.code == sealed_code("5e" * 32, [ADA_ENTROPY, "d4" * 16])


@pytest.mark.parametrize("entropy", ["abc", "A1" * 16, "a1" * 33, 7, "g" * 32])
async def test_a_bad_contribution_is_refused_and_changes_nothing(start_server: StartServer, entropy: object) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    room = server.app[keys.LOBBY].rooms[created["room"]]
    ada = await WsClient.connect(server, "ada")
    await ada.send("join", room=created["room"], name="Ada", entropy=entropy)
    refused = await ada.next("error", "welcome")
    assert refused["type"] == "error" and refused["code"] == "bad_message" and "entropy" in refused["message"]
    assert room.race.players == {} and room.race.entropy == {} and room.applied == 0  # nothing logged
    await ada.close()


@pytest.mark.parametrize("entropy", ["abc", "A1" * 16, "a1" * 33, 7, "g" * 32, "é" * 32, "a1" * 16 + "\n"])
async def test_a_bad_contribution_on_resume_rematch_or_accept_is_refused_and_changes_nothing(
    start_server: StartServer, clock: ManualClock, entropy: object
) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    room = server.app[keys.LOBBY].rooms[created["room"]]
    ada, bob = await WsClient.connect(server, "ada"), await WsClient.connect(server, "bob")
    await ada.send("join", room=created["room"], name="Ada", entropy="a1" * 16)
    await ada.next("welcome")
    await bob.send("join", room=created["room"], name="Bob", entropy="b2" * 16)
    token = (await bob.next("welcome"))["token"]

    async def refused(client: WsClient, kind: str, **fields: object) -> None:
        applied, kept, round_ = room.applied, dict(room.race.entropy), room.race.round
        await client.send(kind, entropy=entropy, **fields)
        error = await client.next("error", "welcome", "rematch", "player_joined")
        assert error["type"] == "error" and error["code"] == "bad_message" and "entropy" in error["message"], kind
        assert (room.applied, room.race.entropy, room.race.round) == (applied, kept, round_), kind  # nothing logged

    again = await WsClient.connect(server, "bob again")  # Bob reloads his page in the lobby
    await refused(again, "resume", room=created["room"], token=token)
    await ada.send("start")
    await ada.next("started")
    for client in (ada, bob):
        await client.send("give_up")
    await ada.next("race_over")
    await server.app[keys.TASKS].settle()  # (the games' writes, each logged as ``stored``, are done)
    await refused(ada, "rematch")
    await ada.send("rematch", entropy="a3" * 16)
    await bob.next("rematch")
    await refused(bob, "accept")
    assert list(room.race.players) == ["p1"] and room.race.entropy == {"p1": "a3" * 16}
    for client in (ada, bob, again):
        await client.close()


async def test_the_commitment_is_public_before_anyone_joins(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
        room = await (await http.get(server.make_url(f"/api/rooms/{created['room']}"))).json()
    race = server.app[keys.LOBBY].rooms[created["room"]].race
    assert race.players == {} and race.seed is not None
    assert created["commitment"] == room["commitment"] == seal_commitment(race.seed)
    assert race.seed not in json.dumps([created, room]) and "contributions" not in room


def test_a_sealed_room_logged_by_the_previous_release_replays_with_its_code_and_salt() -> None:
    """A header of the previous release holds the sealed race's code and salt (no seed): the room
    is rebuilt from it, committed to ``sha256(CODE:SALT)``, and its reveal is the code and salt."""
    header = room_header("K7WQ2M", Mode.RACE, "HM1-N-AAAAAAA", created_at=0, nonce="n0nce", daily_day=None)
    header.update(config=asdict(race_module.RaceConfig(countdown_ms=0)), salt="5" * 32)
    race = race_of(header)
    events: list[Any] = []
    for t, entry in enumerate(
        [
            {"k": "join", "n": "Ada", "tok": "a"},
            {"k": "join", "n": "Bob", "tok": "b"},
            {"k": "start", "p": "p1"},
            {"k": "tick"},
            {"k": "give_up", "p": "p1"},
            {"k": "give_up", "p": "p2"},
            {"k": "recorded", "p": "p1", "g": "g1"},
            {"k": "recorded", "p": "p2", "g": "g2"},
        ]
    ):
        events += apply_entry(race, {**entry, "t": t})
    assert race.sealed and race.seed is None and race.commitment == commitment_of("HM1-N-AAAAAAA", "5" * 32)
    over = events[-1]
    assert (over.code, over.salt, over.seed, over.sealed) == ("HM1-N-AAAAAAA", "5" * 32, None, True)


async def test_a_sealed_room_read_back_from_its_stored_games_still_opens_its_commitment(
    start_server: StartServer,
) -> None:
    server = await start_server()
    parties, code = await sealed_race(server)
    rest_reader = parties[3]
    created_commitment = json.loads(rest_reader.texts[0])["commitment"]
    lobby = server.app[keys.LOBBY]
    room_id = next(iter(lobby.rooms))
    await lobby.services.tasks.settle()
    lobby._release(lobby.rooms[room_id])  # the room expired: only its stored games are left
    await lobby.log.forget(room_id)
    async with aiohttp.ClientSession() as http:
        past = await (await http.get(server.make_url(f"/api/rooms/{room_id}"))).json()
    assert past["phase"] == "finished" and past["code"] == code and past["commitment"] == created_commitment
    assert str(sealed_code(past["seed"], past["contributions"])) == code


async def test_a_second_seat_that_gives_up_at_once_does_not_hand_its_owner_the_code(
    start_server: StartServer,
) -> None:
    """A hostile racer opens a second tab, joins the same sealed room as 'Ada2', and gives it up
    the moment the race starts: that seat's game_over carries the code (and `halfmoon solve CODE`
    gives a winning line in milliseconds) while 'Ada' has made no move yet. The seal then holds
    only against racers who never open a second tab. Revealing the code to a racer only once the
    race is over (race_over) — the game_over keeps the commitment — closes this."""
    server = await start_server()
    room_id, _ = await make_sealed_room(server)
    ada = await WsClient.connect(server, "ada")
    puppet = await WsClient.connect(server, "puppet")
    await ada.send("join", room=room_id, name="Ada")
    await ada.next("welcome")
    await puppet.send("join", room=room_id, name="Ada2")
    await puppet.next("welcome")
    await ada.send("start")
    await ada.next("started")
    await puppet.next("started")
    code = str(server.app[keys.LOBBY].rooms[room_id].race.code)  # dealt at the start
    await puppet.send("give_up")
    over = await puppet.next("game_over")
    assert server.app[keys.LOBBY].rooms[room_id].race.players["p1"].playing, "Ada is still playing"
    leaked = code in json.dumps(over)
    for client in (ada, puppet):
        await client.close()
    assert not leaked, f"a throwaway seat learned the code while its owner still plays: {over}"


async def test_verify_of_a_stored_game_is_not_fooled_by_a_server_that_swapped_the_deal(
    aiohttp_server: Any,
) -> None:
    """rest.get_game computes ``commitment`` from the stored code and salt, and verify.py compares
    sha256(code:salt) with that same field (ignoring --commitment): any server passes. A server that
    swapped the deal answers its new code, a fresh salt and their hash; the racer's commitment from
    the start (given with --commitment) must be what is checked."""
    promised = commitment_of("HM1-N-AAAAAAA", "1" * 32)  # what the racers were given at the start
    swapped_code, swapped_salt = "HM1-N-AAAAAAB", "2" * 32

    async def game(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "code": swapped_code,
                "salt": swapped_salt,
                "sealed": True,
                "commitment": commitment_of(swapped_code, swapped_salt),
            }
        )

    app = web.Application()
    app.router.add_get("/api/games/{game}", game)
    server = await aiohttp_server(app)
    result = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "halfmoon",
            "verify",
            "abcdefabcdef",
            "--server",
            str(server.make_url("/")).rstrip("/"),
            "--commitment",
            promised,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 1 and "NOT VERIFIED" in result.stdout, result.stdout + result.stderr
