"""The bot's brain without a socket: it starts when the room is full, plays legal moves from
what it sees, waits for each answer, gives up when stalled."""

from __future__ import annotations

import random

import pytest

from halfmoon.game import Game, Move
from halfmoon.view import BoardView
from halfmoon_client.bots import BotBrain
from halfmoon_client.strategy import STRATEGIES
from tests.client.support import CODE, T0, moved, started, summary, welcome


def brain(*team: str) -> BotBrain:
    return BotBrain(STRATEGIES["greedy"], random.Random(7), team=frozenset(team), time_limit_s=120)


def test_the_host_bot_starts_once_everyone_joined() -> None:
    bot = brain("bot-1", "bot-2", "bot-3")
    bot.receive(welcome(1, players=[summary("p1", "bot-1")]), T0)
    assert bot.next_message() is None
    bot.receive({"type": "player_joined", "v": 1, "seq": 2, "player": summary("p2", "bot-2")}, T0)
    assert bot.next_message() is None
    bot.receive({"type": "player_joined", "v": 1, "seq": 3, "player": summary("p3", "bot-3")}, T0)
    assert bot.next_message() == {"type": "start", "v": 1, "time_limit_s": 120}
    assert bot.next_message() is None  # once


def test_a_bot_plays_its_own_game_to_the_end_one_answered_move_at_a_time() -> None:
    bot = brain()
    bot.receive(welcome(1), T0)
    game = Game.from_code(CODE)
    bot.receive(started(2, game), T0)
    seq = 2
    while True:
        message = bot.next_message()
        assert message is not None
        assert bot.next_message() is None  # waits for the answer
        if message["type"] == "give_up":
            assert not list(game.legal_moves()) and game.cards_left > 0
            break
        move = Move.from_names(message["positions"])
        assert game.is_legal(move)
        game.push(move)
        seq += 1
        bot.receive(moved(seq, "p1", game, message["positions"], changes=True, id=message["id"]), T0)
        assert bot.session.board is not None and bot.session.board.view() == BoardView.of(game)
        if game.is_won:
            assert bot.next_message() is None or bot.session.players["p1"].status == "won"
            break
    assert bot.moves_sent == game.move_count


def test_a_refusal_frees_the_bot_to_try_again() -> None:
    bot = brain()
    bot.receive(welcome(1), T0)
    bot.receive(started(2, Game.from_code(CODE)), T0)
    first = bot.next_message()
    assert first is not None and first["type"] == "move"
    bot.receive({"type": "error", "v": 1, "code": "rate_limited", "message": "slow down"}, T0)
    again = bot.next_message()
    assert again is not None and again["type"] == "move"


def test_a_bot_in_the_lobby_that_is_not_host_never_starts() -> None:
    bot = brain("x", "y")
    bot.receive(welcome(1, you="p2", players=[summary("p1", "x"), summary("p2", "y")]), T0)
    assert bot.next_message() is None


def test_the_host_bot_waits_for_its_own_team_not_for_a_head_count() -> None:
    """A room made with POST /api/rooms has no host: the first bot of ``--room R --players 3``
    becomes it, and starts once its two team-mates are in — a stranger does not count."""
    bot = brain("bot-1", "bot-2", "bot-3")
    bot.receive(welcome(1, players=[summary("p1", "bot-1")]), T0)
    bot.receive({"type": "player_joined", "v": 1, "seq": 2, "player": summary("p2", "Ada")}, T0)
    bot.receive({"type": "player_joined", "v": 1, "seq": 3, "player": summary("p3", "bot-2")}, T0)
    assert bot.next_message() is None  # three players, but bot-3 is not in yet
    bot.receive({"type": "player_joined", "v": 1, "seq": 4, "player": summary("p4", "bot-3")}, T0)
    assert bot.next_message() == {"type": "start", "v": 1, "time_limit_s": 120}


async def test_a_run_of_several_new_rooms_refused_in_one_stops_the_host_still_joining_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from halfmoon_client import bots
    from halfmoon_client.errors import RefusedError
    from halfmoon_client.rest import CreatedRoom

    running: set[str] = set()

    async def a_room(server: str) -> CreatedRoom:
        a_room.made += 1  # type: ignore[attr-defined]
        return CreatedRoom(room=f"ROOM{a_room.made}", code=None, url="")  # type: ignore[attr-defined]

    a_room.made = 0  # type: ignore[attr-defined]

    async def bot(server: str, room: str, name: str, brain: BotBrain, **_: object) -> bots.BotReport:
        if room == "ROOM2":
            await asyncio.sleep(0.05)
            raise RefusedError("server_full", f"bot {name}: the server is full")
        running.add(name)
        try:
            await asyncio.sleep(3600)  # still connecting: never welcomed
        finally:
            running.discard(name)
        raise AssertionError("unreachable")

    monkeypatch.setattr(bots, "create_room", a_room)
    monkeypatch.setattr(bots, "run_bot", bot)
    with pytest.raises(RefusedError, match="full"):
        await bots.run_bots("http://127.0.0.1:1", players=4, per_room=2, think_ms=0)  # two new rooms
    await asyncio.sleep(0)
    assert running == set()  # room 1's host, still joining, was stopped with the run
