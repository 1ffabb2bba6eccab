"""The quick-race queue on a real server (rooms/quick.py over /ws): players queue, see how many
are in and the countdown, are matched into one sealed race whose seats are held for them, leave
with one message or by closing, are refused a second place, and — alone long enough — are offered
a ghost of a recent quick race or a solo game."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestServer

from halfmoon.protocol import Phase, player_key_hash
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.rating import PROVISIONAL_GAMES, Rated, Skill
from halfmoon_server.rooms.quick import distinct_names
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient

QUICK = {"quick_fill_s": 10.0, "quick_lone_s": 30.0, "quick_join_s": 15.0}


def key(n: int) -> str:
    return f"player-key-number-{n:04d}-xxxxxxxx"


async def queued(server: TestServer, n: int, name: str | None = None) -> WsClient:
    client = await WsClient.connect(server, f"p{n}")
    await client.send("queue", name=name or f"P{n}", player_key=key(n))
    return client


async def step(server: TestServer) -> None:
    await server.app[keys.QUICK].step()


async def join(client: WsClient, n: int, room: str) -> dict[str, Any]:
    await client.send("join", room=room, name=f"P{n}", player_key=key(n))
    return await client.next("welcome", "error")


async def test_two_players_see_the_count_and_countdown_then_race_in_one_sealed_room(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(**QUICK)
    ada = await queued(server, 1)
    assert (await ada.next("queued")) == {
        "type": "queued", "v": 1, "count": 1, "starts_at": None, "starts_in_ms": None, "offer": False,
    }
    clock.advance(2_000)
    bea = await queued(server, 2)
    for client in (ada, bea):
        status = await client.next("queued")
        assert (status["count"], status["starts_in_ms"]) == (2, 10_000)
    clock.advance(9_999)
    await step(server)
    assert [m for m in await ada.drain() if m["type"] == "matched"] == []
    clock.advance(1)
    await step(server)
    rooms = {(await client.next("matched"))["room"] for client in (ada, bea)}
    assert len(rooms) == 1
    room_id = rooms.pop()
    room = server.app[keys.LOBBY].rooms[room_id]
    loaded = await server.app[keys.LOBBY].log.load(room_id)
    assert loaded is not None
    header = loaded.header
    assert header["quick"]["seats"] == sorted(player_key_hash(key(n)) for n in (1, 2))
    assert header["listed"] is True and header["code"] is None and room.race.sealed
    assert server.app[keys.QUICK].count() == 0
    welcome = await join(ada, 1, room_id)
    assert welcome["type"] == "welcome" and welcome["room"]["quick"] is True and welcome["room"]["code"] is None
    assert room.race.phase is Phase.LOBBY
    assert (await join(bea, 2, room_id))["type"] == "welcome"
    await ada.next("countdown")  # every seat taken: it starts by itself
    started = await ada.next("started")
    assert started["code"] is None  # a sealed race: the deal stays secret until it is over
    for client in (ada, bea):
        await client.close()


async def test_a_stranger_cannot_take_a_matched_seat(start_server: StartServer) -> None:
    server = await start_server(**QUICK, quick_max_players=2)
    ada, bea = await queued(server, 1), await queued(server, 2)
    room_id = (await ada.next("matched"))["room"]
    eve = await WsClient.connect(server, "eve")
    refused = await join(eve, 9, room_id)
    assert refused["code"] == "seat_reserved"
    await eve.send("join", room=room_id, name="Eve")  # no key at all
    assert (await eve.next("error"))["code"] == "seat_reserved"
    assert server.app[keys.LOBBY].rooms[room_id].race.players == {}
    for client in (ada, bea, eve):
        await client.close()


async def test_two_players_who_queued_with_one_name_race_under_two(start_server: StartServer) -> None:
    server = await start_server(**QUICK, quick_max_players=2)
    ada, ada_too = await queued(server, 1, "Ada"), await queued(server, 2, "ADA")
    first, second = await ada.next("matched"), await ada_too.next("matched")
    assert (first["name"], second["name"]) == ("Ada", "ADA 2")
    for n, client, matched in ((1, ada, first), (2, ada_too, second)):
        await client.send("join", room=matched["room"], name=matched["name"], player_key=key(n))
        assert (await client.next("welcome", "error"))["type"] == "welcome"
    for client in (ada, ada_too):
        await client.close()


def test_a_taken_name_gets_a_number_within_the_longest_name() -> None:
    assert distinct_names(["Ada", "ada", "Bea", "АDA"]) == ["Ada", "ada 2", "Bea", "АDA 3"]  # (a Cyrillic А)
    assert distinct_names(["X" * 20, "x" * 20]) == ["X" * 20, "x" * 18 + " 2"]


async def test_six_players_are_matched_at_once_and_a_seventh_waits(start_server: StartServer) -> None:
    server = await start_server(**QUICK)
    clients = [await queued(server, n) for n in range(1, 8)]
    rooms = {(await c.next("matched"))["room"] for c in clients[:6]}
    assert len(rooms) == 1
    last = [m for m in await clients[6].drain() if m["type"] in ("queued", "matched")]
    assert last[-1]["type"] == "queued" and last[-1]["count"] == 1
    for client in clients:
        await client.close()


async def test_one_identity_waits_once_and_keeps_waiting_from_its_own_connection(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(**QUICK)
    ada = await queued(server, 1)
    await ada.next("queued")
    again = await queued(server, 1)
    assert (await again.next("error"))["code"] == "already_queued"
    clock.advance(30_000)
    await step(server)
    assert (await ada.next("queued"))["offer"] is True
    await ada.send("queue", name="P1", player_key=key(1))  # keep waiting
    assert (await ada.next("queued"))["offer"] is False
    assert server.app[keys.QUICK].count() == 1
    for client in (ada, again):
        await client.close()


async def test_leaving_the_queue_is_one_message_and_a_close_leaves_it_too(start_server: StartServer) -> None:
    server = await start_server(**QUICK)
    ada, bea = await queued(server, 1), await queued(server, 2)
    assert (await bea.next("queued"))["count"] == 2
    await bea.send("unqueue")
    await bea.next("unqueued")
    status = [m for m in await ada.drain(0.1) if m["type"] == "queued"][-1]
    assert (status["count"], status["starts_in_ms"]) == (1, None)
    await bea.send("unqueue")
    assert (await bea.next("error"))["code"] == "not_queued"
    await ada.close()
    await step(server)
    assert server.app[keys.QUICK].count() == 0
    await bea.close()


async def test_a_queued_connection_joins_nothing_else_until_it_leaves_the_queue(start_server: StartServer) -> None:
    server = await start_server(**QUICK)
    ada = await queued(server, 1)
    await ada.next("queued")
    await ada.send("solo", name="P1")
    assert (await ada.next("error"))["code"] == "already_queued"
    await ada.send("unqueue")
    await ada.send("solo", name="P1")
    assert (await ada.next("welcome"))["role"] == "player"
    await ada.send("queue", name="P1", player_key=key(1))
    assert (await ada.next("error"))["code"] == "already_in_room"
    await ada.close()


async def test_bad_queue_messages_are_refused_and_change_nothing(start_server: StartServer) -> None:
    server = await start_server(**QUICK)
    client = await WsClient.connect(server, "x")
    await client.send("queue", name="P1")
    refused = await client.next("error")
    assert refused["code"] == "bad_message" and "player_key" in refused["message"]
    await client.send("queue", name="", player_key=key(1))
    assert (await client.next("error"))["code"] == "bad_name"
    await client.send("queue", name="P1", player_key="short")
    assert (await client.next("error"))["code"] == "bad_message"
    assert server.app[keys.QUICK].count() == 0
    await client.close()


async def test_queueing_spends_a_room_credit(start_server: StartServer) -> None:
    server = await start_server(**QUICK, room_burst=1.0, room_per_min=0.001)
    ada = await queued(server, 1)
    await ada.next("queued")
    bea = await queued(server, 2)
    assert (await bea.next("error"))["code"] == "rate_limited"
    assert server.app[keys.QUICK].count() == 1
    for client in (ada, bea):
        await client.close()


async def test_a_queued_connection_is_not_closed_as_roomless(start_server: StartServer) -> None:
    server = await start_server(**QUICK, join_timeout_s=1.0)  # (Ada's queue must arrive within it)
    ada = await queued(server, 1)
    idle = await WsClient.connect(server, "idle")
    await ada.next("queued")
    await idle.drain(2.0)
    assert idle.closed and not ada.closed
    for client in (ada, idle):
        await client.close()


async def test_a_lone_player_is_offered_a_ghost_of_a_finished_quick_race(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(**QUICK, quick_max_players=2)
    ada, bea = await queued(server, 1), await queued(server, 2)
    room_id = (await ada.next("matched"))["room"]
    for n, client in ((1, ada), (2, bea)):
        await join(client, n, room_id)
    await ada.next("started")
    room = server.app[keys.LOBBY].rooms[room_id]
    for n, client in ((1, ada), (2, bea)):
        racer = next(r for r in room.race.players.values() if r.name == f"P{n}")
        assert racer.game is not None
        move = next(racer.game.legal_moves())
        await client.send("move", positions=move.names())
        await client.next("moved")
        await client.send("give_up")
    await ada.next("race_over")
    await bea.next("race_over")
    lone = await queued(server, 3)
    assert (await lone.next("queued"))["offer"] is False
    for _ in range(50):  # the games are stored a moment after the race ends
        if await server.app[keys.QUICK].ghost() is not None:
            break
        await lone.drain(0.05)
    clock.advance(30_000)
    await step(server)
    offer = await lone.next("queued")
    assert offer["offer"] is True and offer["ghost"]["game"] and offer["ghost"]["code"].startswith("HM1-S-")
    for client in (ada, bea, lone):
        await client.close()


async def test_a_lone_player_with_no_race_to_race_is_offered_no_ghost(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(**QUICK)
    lone = await queued(server, 1)
    await lone.next("queued")
    clock.advance(30_000)
    await step(server)
    offer = await lone.next("queued")
    assert offer["offer"] is True and offer["ghost"] is None
    await lone.close()


async def test_with_ratings_given_players_are_matched_within_a_band_that_widens(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(**QUICK)
    quick = server.app[keys.QUICK]
    ratings = {player_key_hash(key(1)): 1500.0, player_key_hash(key(2)): 1800.0}
    quick.rating_of = ratings.get  # (the ratings' port: by the hash of a player's key)
    ada, bea = await queued(server, 1), await queued(server, 2)
    assert (await ada.next("queued"))["count"] == 1
    assert (await bea.next("queued"))["count"] == 1  # 300 apart: out of the band at first
    clock.advance(quick.rules.band_reaches(300) or 0)
    await step(server)
    assert (await ada.next("queued"))["count"] == 2  # the band has widened to take Bea in
    for client in (ada, bea):
        await client.close()


class _Ratings:
    """The storage's ratings as the queue reads them (a port double): a settled or provisional
    skill per player key's hash, or none."""

    def __init__(self, skills: dict[str, Skill]) -> None:
        self.skills = skills

    async def player_rating(self, player: str, limit: int) -> tuple[Rated | None, list[Any]]:
        skill = self.skills.get(player)
        return (None if skill is None else Rated(player, "someone", skill)), []


SETTLED_1500, SETTLED_1800 = Skill(18.5, 2.0, 9), Skill(26.0, 2.0, 9)  # shown 1000 + 40 × (μ − 3σ)


async def test_settled_ratings_read_from_the_storage_keep_far_apart_players_waiting_until_the_band_widens(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(**QUICK)
    quick = server.app[keys.QUICK]
    assert quick.ratings is server.app[keys.STORAGE]  # the server reads the ratings job's table
    assert (SETTLED_1500.shown, SETTLED_1800.shown) == (1500, 1800)
    quick.ratings = _Ratings({player_key_hash(key(1)): SETTLED_1500, player_key_hash(key(2)): SETTLED_1800})
    ada, bea = await queued(server, 1), await queued(server, 2)
    assert (await ada.next("queued"))["count"] == 1
    assert (await bea.next("queued"))["count"] == 1  # 300 apart: out of each other's band at first
    clock.advance(quick.rules.band_reaches(300) or 0)
    await step(server)
    assert (await ada.next("queued"))["count"] == 2
    for client in (ada, bea):
        await client.close()


async def test_a_provisional_rating_puts_a_player_in_no_band(start_server: StartServer) -> None:
    server = await start_server(**QUICK)
    quick = server.app[keys.QUICK]
    provisional = Skill(26.0, 2.0, PROVISIONAL_GAMES - 1)
    quick.ratings = _Ratings({player_key_hash(key(1)): SETTLED_1500, player_key_hash(key(2)): provisional})
    ada, bea = await queued(server, 1), await queued(server, 2)
    assert (await ada.next("queued"))["count"] == 1
    assert (await bea.next("queued"))["count"] == 2  # no band for a rating still settling: together at once
    for client in (ada, bea):
        await client.close()
