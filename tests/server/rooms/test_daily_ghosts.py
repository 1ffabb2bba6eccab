"""Today's daily as a ghost (``GET /api/daily/{date}/ghosts/{game}``): a player who has
finished their own attempt of the day may race another attempt's progress — each step's time and
the cards it removed — but never read its positions, cards or the day's code; a reader without a
key, or who has not finished today's attempt, is refused."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from halfmoon.cards import DECK
from halfmoon.codes import daily_code
from halfmoon.game import Game
from halfmoon.protocol import player_key_hash
from halfmoon_server.clock import ManualClock
from tests.server.conftest import StartServer
from tests.server.support import WsClient
from tests.server.web.test_history import DAY, stored

CODE = str(daily_code(DAY, b"test-secret", long=True))


async def ghost(server: TestServer, game: str, key: str | None, day: str = DAY.isoformat()) -> tuple[int, Any, str]:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url(f"/api/daily/{day}/ghosts/{game}"), headers=headers)
        text = await response.text()
    return response.status, json.loads(text), text


async def attempt(server: TestServer, clock: ManualClock, name: str, key: str, *, undo: bool) -> dict[str, Any]:
    """A daily attempt: two moves a second apart (and an undo of the second, if asked), then given up."""
    client = await WsClient.connect(server, name)
    await client.send("daily", name=name, player_key=key)
    await client.next("welcome")
    game = Game.from_code(CODE)
    for _ in range(2):
        move = next(iter(game.legal_moves()))
        game.push(move)
        await client.send("move", positions=move.names())
        await client.next("moved")
        clock.advance(1_000)
    if undo:
        await client.send("undo")
        await client.next("moved")
    await client.send("give_up")
    over = await client.next("game_over")
    await client.close()
    return over


async def test_a_daily_ghost_opens_only_after_your_own_attempt_and_shows_only_progress(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    ada, bea = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    theirs = await attempt(server, clock, "Bea", bea, undo=True)
    await stored(server, player_key_hash(bea), 1)
    # no key: 401; a key with no finished attempt of today: 403 — and the record stays hidden
    status, body, _ = await ghost(server, theirs["game"], None)
    assert (status, body["error"]["code"]) == (401, "no_player_key")
    status, body, _ = await ghost(server, theirs["game"], ada)
    assert (status, body["error"]["code"]) == (403, "finish_your_attempt_first")
    mine = await attempt(server, clock, "Ada", ada, undo=False)
    await stored(server, player_key_hash(ada), 1)
    status, body, text = await ghost(server, theirs["game"], ada)
    assert status == 200, text
    assert set(body) == {"game", "date", "name", "score", "time_ms", "outcome", "steps"}
    assert (body["game"], body["name"], body["outcome"]) == (theirs["game"], "Bea", "gave_up")
    assert body["steps"] == [{"at": 0, "cards": 2}, {"at": 1_000, "cards": 2}, {"at": 2_000, "cards": -2}]
    # nothing of the deal: not its code, not a card name, not a position
    assert CODE not in text and "moves" not in body and "code" not in body
    assert not any(card.name in text.replace(theirs["game"], "") for card in DECK)
    # your own attempt is a ghost too; another day, a game of another day, or a strange id is refused
    assert (await ghost(server, mine["game"], ada))[0] == 200
    past = (DAY - timedelta(days=1)).isoformat()
    assert (await ghost(server, theirs["game"], ada, past))[1]["error"]["code"] == "not_today"
    assert (await ghost(server, theirs["game"], ada, "2026-13-01"))[1]["error"]["code"] == "bad_date"
    assert (await ghost(server, "nope", ada))[1]["error"]["code"] == "no_such_game"


async def test_a_stored_record_that_is_no_record_is_refused_as_no_ghost_not_a_500(
    start_server: StartServer, clock: ManualClock
) -> None:
    """A row written by hand (or by a bug) whose record the engine cannot read: 409 ``no_times``
    with the usual error body, never a 500 — the moves are read as the engine reads records."""
    from sqlalchemy import update

    from halfmoon_server.adapters.models import GameRow
    from halfmoon_server.web import keys

    server = await start_server()
    ada, bea = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    theirs = await attempt(server, clock, "Bea", bea, undo=False)
    await stored(server, player_key_hash(bea), 1)
    await attempt(server, clock, "Ada", ada, undo=False)
    await stored(server, player_key_hash(ada), 1)
    crafted = [
        {"code": CODE, "moves": [7, 8], "times": [0, 1]},  # steps that are not moves
        {"code": CODE, "moves": [["1", "8"]], "times": [5, 1, 2]},  # times not one per step
        {"code": CODE, "moves": "undo", "times": []},
        {"code": CODE, "moves": [["1", "8"]], "times": ["soon"]},
        {"code": CODE, "moves": [["1", "8"]]},  # no times at all
    ]
    engine = server.app[keys.STORAGE].inner.engine  # type: ignore[attr-defined]
    for record in crafted:
        async with engine.begin() as conn:
            await conn.execute(update(GameRow).where(GameRow.id == theirs["game"]).values(record=record))
        status, body, text = await ghost(server, theirs["game"], ada)
        assert (status, body["error"]["code"]) == (409, "no_times"), (record, text)
