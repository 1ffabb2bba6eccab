"""A bounded fuzz of ``/ws``: a fixed seed, a few hundred random messages (random JSON shapes,
wrong types, huge numbers, unicode, nested objects, odd positions and ids) from one player of a
running race, while another player and a spectator watch. Invariants: every reply is a
documented message type, every error a documented code, no traceback text on the wire, the
other player's game is untouched and still playable, no message carries a hidden card, the
server still answers ``/healthz``."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import aiohttp

from halfmoon.game import Game
from tests.server.conftest import StartServer
from tests.server.support import WsClient, check_hidden_information

SEED = 20261129
MESSAGES = 300
CODE = "HM1-N-AAAAAAA"

SERVER_TYPES = frozenset(
    {
        "welcome", "player_joined", "player_left", "countdown", "started", "moved", "progress",
        "game_over", "race_over", "spectators", "error", "pong", "queued", "unqueued", "matched",
    }
)  # fmt: skip
ERROR_CODES = frozenset(
    {
        "bad_json", "bad_version", "unknown_type", "bad_message", "rate_limited", "no_such_room",
        "already_in_room", "not_in_room", "bad_name", "name_taken", "bad_code", "bad_token",
        "not_host", "race_started", "not_started", "not_playing", "illegal_move",
        "nothing_to_undo", "room_full", "private_room", "server_full", "already_queued", "not_queued",
        "seat_reserved", "too_many_steps",
    }
)  # fmt: skip
ENGINE_REASONS = frozenset({"not_playable", "same_position", "not_a_match", "bad_position"})
CLIENT_TYPES = [
    "join", "watch", "solo", "daily", "resume", "start", "move", "undo", "give_up", "leave", "ping", "queue", "unqueue",
]  # fmt: skip
ODD_TYPES = ["MOVE", "", "moves", "__proto__", "ping ", "welcome", "error", "é"]
POSITIONS = ["1", "12", "R1", "R8", "R0", "13", "-1", " 1", "01", "r3", "", "１", "R", "1.0", "\u202e1"]
STRINGS = ["", " ", "x", "Ada", "ÅsaØ", "名前", "🂡", "\u0000", "\u202egnp", "a" * 30, "HM1-N-AAAAAAB", "hm1-d-aaaaaaa"]
HUGE = [0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 18446744073709551615]
TRACEBACK_MARKS = ("Traceback", 'File "')


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice(HUGE)
    if kind == 1:
        return rng.choice([0.5, -1.0, 1e308, 1.0, 3.14])
    if kind == 2:
        return rng.choice(STRINGS + POSITIONS)
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return None
    if kind == 5:
        return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(1, 12)))
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {rng.choice(["a", "type", "v", "id", "room"]): _value(rng, depth + 1) for _ in range(rng.randrange(0, 3))}


def _message(rng: random.Random, room: str, token: str) -> str:
    """One random frame: mostly well-shaped messages with odd fields, sometimes not JSON at all."""
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(["{", "[]", "null", '"x"', "1", "{}", '{"v": 1}', "[" * 300 + "]" * 300])
    if roll < 0.10:
        return json.dumps(_value(rng))
    kind = rng.choice(CLIENT_TYPES + ODD_TYPES) if rng.random() < 0.15 else rng.choice(CLIENT_TYPES)
    body: dict[str, Any] = {"type": kind, "v": 1 if rng.random() < 0.9 else rng.choice([2, "1", 1.0, None, True])}
    if kind == "move":
        size = rng.choice([0, 1, 2, 2, 2, 3, 3, 4])
        body["positions"] = [rng.choice(POSITIONS) for _ in range(size)]
        if rng.random() < 0.3 and size >= 2:
            body["positions"][:2] = [body["positions"][0]] * 2  # duplicates
        if rng.random() < 0.1:
            body["positions"] = _value(rng)
    for field in ("room", "name", "token", "code"):
        if rng.random() < 0.3:
            body[field] = rng.choice([room, room.lower(), token, _value(rng)])
    for field in ("id", "since", "time_limit_s"):
        if rng.random() < 0.3:
            body[field] = rng.choice([*HUGE, "1", 1.5, None, [1], {"n": 1}])
    if rng.random() < 0.05:
        body["extra"] = _value(rng)
    if rng.random() < 0.05:
        body["score"], body["elapsed_ms"] = 999_999, 1  # a client never sets these
    frame = json.dumps(body, ensure_ascii=rng.random() < 0.5)
    return frame if len(frame.encode()) <= 4000 else json.dumps({"type": "ping", "v": 1})


def _check_reply(raw: str, sent: str) -> dict[str, Any]:
    for mark in TRACEBACK_MARKS:
        assert mark not in raw, (sent, raw)
    message = json.loads(raw)
    assert isinstance(message, dict) and message.get("v") == 1, (sent, raw)
    assert message["type"] in SERVER_TYPES, (sent, raw)
    if message["type"] == "error":
        assert message["code"] in ERROR_CODES, (sent, raw)
        assert isinstance(message["message"], str) and message["message"], (sent, raw)
        if message["code"] == "illegal_move":
            assert message["reason"] in ENGINE_REASONS, (sent, raw)
    return message


async def test_a_bounded_fuzz_of_ws_messages_breaks_nothing(start_server: StartServer) -> None:
    rng = random.Random(SEED)
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(server.make_url("/api/rooms"), json={"code": CODE})).json())["room"]
    bystander = await WsClient.connect(server, "bob")
    spectator = await WsClient.connect(server, "spectator")
    await bystander.send("join", room=room, name="Bob")
    await bystander.next("welcome")
    fuzzer_session = aiohttp.ClientSession()
    fuzzer = await fuzzer_session.ws_connect(server.make_url("/ws"))
    await fuzzer.send_str(json.dumps({"type": "join", "v": 1, "room": room, "name": "Fuzz"}))
    welcome = json.loads((await fuzzer.receive(timeout=5)).data)
    token = welcome["token"]
    await bystander.send("start")  # Bob is the host
    bob_board = (await bystander.next("started"))["board"]
    await spectator.send("watch", room=room)
    await spectator.next("welcome")

    counts: dict[str, int] = {}
    received: list[dict[str, Any]] = [welcome]
    for n in range(MESSAGES):
        frame = _message(rng, room, token)
        await fuzzer.send_str(frame)
        # a ping after each frame: everything before its pong answers that frame
        await fuzzer.send_str(json.dumps({"type": "ping", "v": 1, "id": n}))
        while True:
            msg = await fuzzer.receive(timeout=5)
            assert msg.type is aiohttp.WSMsgType.TEXT, (frame, msg)
            reply = _check_reply(msg.data, frame)
            received.append(reply)
            if reply["type"] == "pong":
                break
            key = reply["type"] if reply["type"] != "error" else reply["code"]
            counts[key] = counts.get(key, 0) + 1
    await fuzzer.close()
    await fuzzer_session.close()
    # the fuzz reached deep: refusals of many kinds, and some messages accepted
    assert len([k for k in counts if k in ERROR_CODES]) >= 8, counts
    assert set(counts) - ERROR_CODES, counts

    # no card the recipient's app does not show, to the fuzzer, to Bob or to the spectator
    for history in (received, bystander.history, spectator.history):
        assert check_hidden_information(history) == []

    # Bob's game is untouched: no move of his, still playing, and his next move is accepted
    await asyncio.sleep(0.1)
    for message in bystander.history + spectator.history:
        assert message["type"] in SERVER_TYPES, message
        assert not (message["type"] == "moved" and message["player"] == "p1"), message
    bob_progress = [m for m in bystander.history if m["type"] == "progress" and m["player"]["id"] == "p1"]
    assert all(m["player"]["status"] == "playing" for m in bob_progress), bob_progress
    game = Game.from_code(CODE)
    assert [c.name if c else None for c in (game.card_at(p) for p in range(20))] == bob_board["tops"]
    move = next(iter(game.legal_moves()))
    await bystander.send("move", positions=move.names(), id=1)
    moved = await bystander.next("moved")
    assert moved["player"] == "p1" and moved["moves"] == 1 and moved["id"] == 1
    spectator_moved = await spectator.next("moved")
    assert spectator_moved["player"] == "p1" and spectator_moved["moves"] == 1
    async with aiohttp.ClientSession() as http:
        health = await http.get(server.make_url("/healthz"))
        assert health.status == 200 and (await health.json()) == {"status": "ok"}
    await bystander.close()
    await spectator.close()
