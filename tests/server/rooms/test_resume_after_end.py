"""Coming back after one's own game has ended (a reload, another tab): the snapshot carries the
player's ``game_over`` — the end box comes back with the board — and, once a sealed race's code is
out, its salt, so the deal can be checked again. Nothing in it arrives before the player is
entitled to it (docs/protocol.md, "Who sees what")."""

from __future__ import annotations

from typing import Any

import aiohttp

from halfmoon.codes import daily_code, seal_commitment, sealed_code
from halfmoon.game import Game
from halfmoon_server.clock import ManualClock
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient, check_hidden_information, won_record
from tests.server.system.test_fair_play import DAY, play_moves


async def _reload(server: Any, room: str, token: str) -> dict[str, Any]:
    """A new connection resumes the seat without ``since`` (a reloaded page): the snapshot."""
    again = await WsClient.connect(server, "reload")
    await again.send("resume", room=room, token=token)
    snapshot: dict[str, Any] = (await again.next("welcome"))["room"]
    assert snapshot is not None
    assert check_hidden_information(again.history) == []
    await again.close()
    return snapshot


def _body(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in ("type", "seq", "v")}


async def test_a_won_solo_game_comes_back_with_its_game_over(start_server: StartServer) -> None:
    record = won_record()
    server = await start_server()
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada", code=str(record.code))
    welcome = await ada.next("welcome")
    assert "game_over" not in welcome["room"], "nothing has ended yet"
    room, token = welcome["room"]["room"], welcome["token"]
    for step in record.moves:
        await ada.send("move", positions=step.names())  # type: ignore[union-attr]
        await ada.next("moved")
    over = await ada.next("game_over")
    assert over["outcome"] == "won"
    snapshot = await _reload(server, room, token)
    assert snapshot["game_over"] == _body(over)
    assert "salt" not in snapshot
    await ada.session.close()


async def test_a_daily_attempt_comes_back_ended_without_its_code(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    code = str(daily_code(DAY, b"test-secret", long=True))
    ada = await WsClient.connect(server, "ada")
    await ada.send("daily", name="Ada")
    welcome = await ada.next("welcome")
    room, token = welcome["room"]["room"], welcome["token"]
    clock.advance(10_000)  # a person's pace: two moves at once would not be ranked (too_fast)
    await play_moves(ada, Game.from_code(code), 2)
    await ada.send("give_up")
    over = await ada.next("game_over")
    snapshot = await _reload(server, room, token)
    assert snapshot["game_over"] == _body(over)
    assert snapshot["game_over"]["code"] is None and snapshot["code"] is None
    assert snapshot["game_over"]["outcome"] == "gave_up" and snapshot["game_over"]["ranked"] is True
    await ada.session.close()


async def test_a_sealed_race_gives_its_salt_on_resume_only_once_the_race_is_over(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    room = created["room"]
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("join", room=room, name="Ada")
    token = (await ada.next("welcome"))["token"]
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await ada.send("start")
    await ada.next("started")
    await bob.next("started")
    code = str(server.app[keys.LOBBY].rooms[room].race.code)  # dealt at the start
    await play_moves(ada, Game.from_code(code), 2)
    await ada.send("give_up")
    ada_over = await ada.next("game_over")
    # Bob still plays: Ada's own end comes back, the deal does not
    during = await _reload(server, room, token)
    assert during["game_over"] == _body(ada_over) and during["game_over"]["code"] is None
    assert during["code"] is None and "seed" not in during and "seed" not in during["game_over"]
    assert code not in str(during)
    async with aiohttp.ClientSession() as http:
        mid = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()
    assert "seed" not in mid and mid["code"] is None
    await bob.send("give_up")
    await bob.next("game_over")
    await bob.next("race_over")
    after = await _reload(server, room, token)
    assert after["code"] == code == after["game_over"]["code"]
    assert seal_commitment(after["seed"]) == created["commitment"] == after["commitment"]
    assert str(sealed_code(after["seed"], after["contributions"])) == code
    assert after["game_over"]["seed"] == after["seed"]
    async with aiohttp.ClientSession() as http:  # a REST reader: the same seed once the race is over, no game_over
        public = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()
    assert public["seed"] == after["seed"] and "game_over" not in public
    await ada.session.close()
    await bob.close()
