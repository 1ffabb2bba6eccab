"""The embedded default keeps its promise on one machine: kill ``halfmoon serve`` mid-game (SIGKILL,
no goodbye), start it again on the same data directory, and every game resumes with the same
tokens from its last acknowledged move; a crash never spends a ranked daily attempt; SIGTERM
tells clients to connect again (close 1012)."""

from __future__ import annotations

import asyncio
import hashlib
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from halfmoon.game import Move
from tests.server.instances import Instance
from tests.server.support import WsClient, leaderboard_holding, won_record

pytestmark = pytest.mark.slow  # real servers killed and restarted

LINE = [step for step in won_record().moves if isinstance(step, Move)]
CODE = str(won_record().code)


async def play(client: WsClient, moves: list[Move], first_id: int) -> list[dict[str, Any]]:
    """Play moves one by one, each acknowledged (``moved`` with its id) before the next."""
    acks = []
    for k, move in enumerate(moves, first_id):
        await client.send("move", positions=move.names(), id=k)
        while True:
            message = await client.next("moved", "error")
            assert message["type"] == "moved", message
            if message.get("id") == k:
                acks.append(message)
                break
    return acks


async def resume(inst: Instance, label: str, room: str, token: str, since: int | None) -> WsClient:
    client = await WsClient.connect_url(inst.ws, label)
    fields: dict[str, Any] = {"room": room, "token": token}
    if since is not None:
        fields["since"] = since
    await client.send("resume", **fields)
    return client


async def test_a_killed_server_loses_no_acknowledged_move_and_the_race_goes_on(tmp_path: Path) -> None:
    inst = await Instance(tmp_path / "data").start()
    try:
        async with aiohttp.ClientSession() as http:
            created = await (await http.post(f"{inst.base}/api/rooms", json={"code": CODE})).json()
        room = created["room"]
        ada = await WsClient.connect_url(inst.ws, "ada")
        await ada.send("join", room=room, name="Ada")
        ada_token = (await ada.next("welcome"))["token"]
        bob = await WsClient.connect_url(inst.ws, "bob")
        await bob.send("join", room=room, name="Bob")
        bob_token = (await bob.next("welcome"))["token"]
        await ada.send("start")
        await ada.next("started")
        await bob.next("started")
        ada_acks = await play(ada, LINE[:10], 1)
        bob_acks = await play(bob, LINE[:3], 1)
        seen_by_ada = ada.seq

        inst.kill(signal.SIGKILL)  # no goodbye: whatever was acknowledged must be on disk
        await ada.drain(0.1)
        await inst.start()

        ada2 = await resume(inst, "ada2", room, ada_token, seen_by_ada)
        welcome = await ada2.next("welcome")
        assert welcome["you"] == "p1" and welcome["room"] is None, "a catch-up: the events are still there"
        bob2 = await resume(inst, "bob2", room, bob_token, None)
        snapshot = (await bob2.next("welcome"))["room"]
        bob_me = next(p for p in snapshot["players"] if p["id"] == "p2")
        ada_seen = next(p for p in snapshot["players"] if p["id"] == "p1")
        assert (bob_me["moves"], bob_me["score"]) == (3, bob_acks[-1]["score"])
        assert (ada_seen["moves"], ada_seen["score"]) == (10, ada_acks[-1]["score"])
        assert snapshot["phase"] == "running" and snapshot["board"] is not None

        await play(ada2, LINE[10:], 11)
        over = await ada2.next("game_over")
        assert over["outcome"] == "won" and over["score"] == 520
        await bob2.send("give_up")
        bob_over = await bob2.next("game_over")
        race_over = await ada2.next("race_over")
        assert [(r["name"], r["moves"], r["outcome"]) for r in race_over["results"]] == [
            ("Ada", 48, "won"),
            ("Bob", 3, "gave_up"),
        ]
        board = await leaderboard_holding(inst.base, CODE, 2)
        assert [(e["name"], e["score"], e["game"]) for e in board["entries"]] == [
            ("Ada", 520, over["game"]),
            ("Bob", bob_acks[-1]["score"], bob_over["game"]),
        ]
        for client in (ada, bob, ada2, bob2):
            await client.close()
    finally:
        inst.stop()


async def test_a_crash_never_spends_a_ranked_daily_attempt(tmp_path: Path) -> None:
    inst = await Instance(tmp_path / "data").start()
    try:
        cy = await WsClient.connect_url(inst.ws, "cy")
        await cy.send("daily", name="Cy")
        welcome = await cy.next("welcome")
        room, token = welcome["room"]["room"], welcome["token"]
        board = welcome["room"]["board"]
        assert board is not None
        inst.kill(signal.SIGKILL)
        await inst.start()
        again = await resume(inst, "cy2", room, token, None)
        snapshot = (await again.next("welcome"))["room"]
        assert snapshot["mode"] == "daily" and snapshot["phase"] == "running" and snapshot["code"] is None
        assert snapshot["board"] == board, "the same attempt, where it was"
        await again.send("give_up")
        over = await again.next("game_over")
        assert over["ranked"] is True, "the attempt that crashed is still the ranked one"
        async with aiohttp.ClientSession() as http, asyncio.timeout(5):
            day = (await (await http.get(f"{inst.base}/api/daily")).json())["date"]
            while True:  # (game_over does not wait for the database: the write follows it)
                ranked = await (await http.get(f"{inst.base}/api/daily/{day}/leaderboard")).json()
                if ranked["entries"]:
                    break
                await asyncio.sleep(0.05)
        assert [e["name"] for e in ranked["entries"]] == ["Cy"]
        await cy.close()
        await again.close()
    finally:
        inst.stop()


async def test_sigterm_tells_clients_to_reconnect_and_their_game_goes_on_after_the_restart(tmp_path: Path) -> None:
    inst = await Instance(tmp_path / "data").start()
    try:
        ada = await WsClient.connect_url(inst.ws, "ada")
        await ada.send("solo", name="Ada", code=CODE)
        welcome = await ada.next("welcome")
        await play(ada, LINE[:5], 1)
        inst.kill(signal.SIGTERM)
        await ada._reader
        assert ada.ws.close_code == 1012, "service restart: connect again"
        await inst.start()
        again = await resume(inst, "ada2", welcome["room"]["room"], welcome["token"], ada.seq)
        assert (await again.next("welcome"))["room"] is None
        acks = await play(again, LINE[5:8], 6)
        assert acks[-1]["moves"] == 8
        await ada.session.close()
        await again.close()
    finally:
        inst.stop()


async def test_player_tokens_are_kept_hashed_in_the_journal_and_resume_after_a_restart(tmp_path: Path) -> None:
    """The embedded journal (a SQLite file an operator backs up) holds each token's SHA-256 only;
    after a SIGKILL and a restart the player resumes with the token and gets it back."""
    first = await Instance(tmp_path / "data").start()
    client = await WsClient.connect_url(first.ws, "ada")
    await client.send("solo", name="Ada", code=str(won_record().code))
    welcome = await client.next("welcome")
    room, token = welcome["room"]["room"], welcome["token"]
    moves = [step for step in won_record().moves if isinstance(step, Move)]
    await play(client, moves[:2], 1)
    first.kill(signal.SIGKILL)
    await client.close()
    journal = b"".join(path.read_bytes() for path in (tmp_path / "data").glob("journal.db*"))
    assert room.encode() in journal
    assert token.encode() not in journal, "a player's token lies in clear in the journal"
    assert hashlib.sha256(token.encode()).hexdigest().encode() in journal
    second = await Instance(tmp_path / "data", port=first.port).start()
    try:
        again = await resume(second, "ada2", room, token, None)
        assert (await again.next("welcome"))["token"] == token
        await play(again, moves[2:3], 3)
        await again.close()
    finally:
        second.stop()
