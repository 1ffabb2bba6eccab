"""The lobby makes and starts a room as its mode's rules say (core/modes.py): a deal sealed only
in a mode that may seal one, a daily day only in the daily, a time limit from the rules; and a
``join`` seats a player only in a mode with a lobby (a solo room not started yet is watched)."""

from __future__ import annotations

import pytest

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode, Phase
from halfmoon_server.core.modes import rules_for
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient

CODE = DealCode.parse("HM1-N-AAAAAAA")


async def test_a_room_is_sealed_or_given_a_daily_day_only_in_a_mode_whose_rules_have_one(
    start_server: StartServer,
) -> None:
    server = await start_server()
    lobby = server.app[keys.LOBBY]
    with pytest.raises(ValueError, match="a solo room is dealt from a code: it cannot be sealed"):
        await lobby._new_room(Mode.SOLO, None)
    with pytest.raises(ValueError, match="a daily room needs daily day"):
        await lobby._new_room(Mode.DAILY, CODE)
    with pytest.raises(ValueError, match="a race room has no daily day"):
        await lobby._new_room(Mode.RACE, CODE, daily_day=lobby.daily_service.today())
    assert lobby.rooms == {}, "a room refused is not made"
    sealed = await lobby._new_room(Mode.RACE, None)
    assert sealed.race.sealed and sealed.race.phase is Phase.LOBBY


async def test_a_solo_game_has_no_time_limit_a_daily_the_dailys_and_a_race_is_no_single_game(
    start_server: StartServer,
) -> None:
    server = await start_server()
    lobby = server.app[keys.LOBBY]
    assert lobby._single_time_limit(rules_for(Mode.SOLO), None) is None
    day = lobby.daily_service.today()
    assert lobby._single_time_limit(rules_for(Mode.DAILY), day) == lobby.daily_limit_s
    with pytest.raises(ValueError, match="a race room starts from its lobby"):
        lobby._single_time_limit(rules_for(Mode.RACE), None)


async def test_a_join_to_a_room_of_a_mode_without_a_lobby_watches_it(start_server: StartServer) -> None:
    server = await start_server()
    lobby = server.app[keys.LOBBY]
    room = await lobby._new_room(Mode.SOLO, CODE)  # made, its player not started yet
    assert room.race.phase is Phase.LOBBY
    bob = await WsClient.connect(server, "bob")
    await bob.send("join", room=room.id, name="Bob")
    welcome = await bob.next("welcome")
    assert welcome["role"] == "spectator" and room.race.players == {}
    await bob.close()
