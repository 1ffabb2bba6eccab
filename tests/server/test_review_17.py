"""Review of issue 17 (rematches, series, the track, the history) from a hostile player's side:
each test pins a hole found by playing against the server, fixed since."""

from __future__ import annotations

import asyncio
import secrets

import aiohttp
import pytest

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode, PlayerStatus, player_key_hash
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.events import Rematched
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.errors import Refusal
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import T0, WsClient

CODE = DealCode.parse("HM1-N-AAAAAAA")
NEXT = DealCode.parse("HM1-N-AAAAAAB")
SALT = "5" * 32
CONFIG = RaceConfig(countdown_ms=0, default_time_limit_s=600)


def test_a_player_who_left_the_race_is_not_seated_in_the_rematch_and_may_join_it_by_name() -> None:
    race = Race("K7WQ2M", Mode.RACE, CODE, CONFIG, now=T0)
    for name in ("Ada", "Bob", "Cy"):
        race.join(name, T0)
    race.start("p1", None, T0)
    race.tick(T0)
    race.leave("p3", T0 + 500)  # Cy quits the room mid-race: her connection is no longer hers
    assert race.players["p3"].status is PlayerStatus.LEFT
    for number, pid in enumerate(("p1", "p2"), 1):
        race.give_up(pid, T0 + 1000 * number)
    for pid in list(race.players):
        race.recorded(pid, f"g-{pid}", T0 + 9000)
    assert race.results is not None and "p3" in [r.player for r in race.results]  # her game counts
    with pytest.raises(Refusal):
        race.rematch("p3", T0 + 10_000, code=NEXT, salt=SALT)  # (the server never lets her connection say it)
    [rematched] = race.rematch("p2", T0 + 10_000, code=NEXT, salt=SALT)
    # she is not listed as one who may still accept ("Not in yet: Ada, Cy" would wait for nobody)
    assert isinstance(rematched, Rematched) and [p.id for p in rematched.seated] == ["p1"]
    assert "p3" not in race.seated
    # and coming back by the room's link with her name is a join, not "name taken"
    newcomer, _ = race.join("Cy", T0 + 11_000)
    assert newcomer.name == "Cy" and newcomer.id in race.players


async def test_an_earlier_races_game_stays_readable_while_the_rooms_rematch_runs_and_the_rematchs_does_not(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Race 1's code is out with its results: its game (replay, history line) must not vanish
    again — «someone is still playing on the same deal» — while race 2 runs on another deal; race
    2's game stays hidden until race 2 is over."""
    server = await start_server(countdown_s=0.01)
    ada_key = secrets.token_urlsafe(32)
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
        ada = await WsClient.connect(server, "Ada")
        bob = await WsClient.connect(server, "Bob")
        try:
            await ada.send("join", room=room, name="Ada", player_key=ada_key)
            await ada.next("welcome")
            await bob.send("join", room=room, name="Bob")
            await bob.next("welcome")
            await ada.send("start")
            await ada.next("countdown")
            clock.advance(10)
            await ada.next("started")
            for client in (ada, bob):
                clock.advance(1000)
                await client.send("give_up")
            first = await ada.next("race_over")
            first_game = next(line["game"] for line in first["results"] if line["name"] == "Ada")
            clock.advance(5000)
            await bob.send("rematch")
            await ada.next("rematch")
            await ada.send("accept")
            await bob.next("player_joined")
            await bob.send("start")
            await ada.next("countdown")
            clock.advance(10)
            await ada.next("started")
            clock.advance(1000)
            await ada.send("give_up")  # Bob races on: race 2's deal is still in play
            second_game = (await ada.next("game_over"))["game"]
            for _ in range(250):
                stored = await server.app[keys.STORAGE].games_of_player(player_key_hash(ada_key), 10)
                if len(stored) == 2:
                    break
                await asyncio.sleep(0.02)
            old = await http.get(server.make_url(f"/api/games/{first_game}"))
            assert old.status == 200 and (await old.json())["code"] == first["code"]
            new = await http.get(server.make_url(f"/api/games/{second_game}"))
            assert new.status == 403 and (await new.json())["error"]["code"] == "game_hidden"
            mine = await http.get(server.make_url("/api/me/history"), headers={"Authorization": f"Bearer {ada_key}"})
            codes = {line["game"]: line["code"] for line in (await mine.json())["recent"]}
            assert codes == {first_game: first["code"], second_game: None}
        finally:
            for client in (ada, bob):
                await client.close()
