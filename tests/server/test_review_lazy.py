"""Review of 43feedf (the spectators' copy of a board built when first needed) and c5942f4
(review fixes of the finished-room sleep): bugs found, each shown by a test that fails on c5942f4."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import SettingsError
from halfmoon_server.ops import diagnostics
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.settings import Settings
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.rooms.test_finished_rooms_sleep import assert_a_new_game_is_welcome
from tests.server.rooms.test_finished_rooms_wake import _asleep


async def test_reading_sleeping_rooms_over_rest_does_not_crowd_out_new_games_for_the_whole_hold(
    start_server: StartServer, clock: ManualClock
) -> None:
    """``GET /api/rooms/{id}`` of a finished room asleep loads it with ``Lobby.find`` (hold=True):
    held, counted against ``max_rooms`` (``ensure_capacity``), with no capacity check of its own.
    Before c5942f4 the next ticker round put it back to sleep (it finished long ago); now its hold
    runs from the load (``_held_since``), so each anonymous, unlimited GET takes a room's place
    for ``finished_hold_s`` (60 s): a client that knows a few finished room ids (its own solo
    games, or the ``room`` of games on the leaderboards) keeps the server ``server_full``."""
    server = await start_server(tick_s=3600.0, finished_hold_s=60, finished_ttl_s=600, max_rooms=2)
    lobby: Lobby = server.app[keys.LOBBY]
    asleep = [(await _asleep(lobby, clock, server, 60_000))[0] for _ in range(2)]
    assert lobby.rooms == {}
    async with aiohttp.ClientSession() as http:
        for room_id in asleep:
            read = await (await http.get(server.make_url(f"/api/rooms/{room_id}"))).json()
            assert read["phase"] == "finished"
    clock.advance(1_000)
    await lobby.tick()  # a ticker round after the reads
    assert not set(asleep) & set(lobby.rooms), "two GETs hold two finished rooms for finished_hold_s"
    await assert_a_new_game_is_welcome(server)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("HALFMOON_FINISHED_HOLD_S", "1e306"), ("HALFMOON_ABANDON_AFTER_S", "1e306"), ("HALFMOON_COUNTDOWN_S", "1e306")],
)
def test_a_finite_but_huge_timing_is_a_settings_error_not_a_start_up_traceback(variable: str, value: str) -> None:
    """c5942f4 refuses nan and inf so that a bad setting is a one-line SettingsError, not a
    traceback at start-up; but ``Lobby.__init__`` still computes ``int(seconds * 1000)``, and a
    finite 1e306 s is inf once multiplied: ``OverflowError: cannot convert float infinity to
    integer`` when the app starts. (A TTL of 1e16 s passes too and overflows orjson's 64-bit
    integers in every new room's header.) The timings need an upper bound."""
    with pytest.raises(SettingsError):
        Settings.from_env({variable: value})
    with pytest.raises(OverflowError):  # what the server does with it (Lobby.__init__)
        int(float(value) * 1000)


async def _deep(depth: int, release: asyncio.Event, where: str) -> None:
    if depth:
        await _deep(depth - 1, release, where)
    elif where == "a":
        await _waits_in_a(release)
    else:
        await _waits_in_b(release)


async def _waits_in_a(release: asyncio.Event) -> None:
    await release.wait()


async def _waits_in_b(release: asyncio.Event) -> None:
    await release.wait()


async def test_tasks_stuck_in_different_places_under_a_deep_chain_are_not_merged() -> None:
    """``await_chain`` keeps the *outermost* ``DEPTH`` (12) frames, though ``DEPTH``'s own comment
    says the innermost (where a task waits) matter most (threads do keep the innermost:
    ``format_stack(limit=12)``). c5942f4 now groups tasks by that truncated chain: two tasks under
    the same 12 outer frames, one stuck in a journal commit and one in a Redis call, become
    "2 tasks" with neither place shown. An aiohttp WebSocket handler's chain (RequestHandler.start,
    _handle_request, Application._handle, three middlewares, websocket_handler, dispatch, handle,
    Room.submit, the log's append, ...) is about that deep."""
    release = asyncio.Event()
    tasks = [asyncio.create_task(_deep(12, release, where), name=f"deep-{where}") for where in "ab"]
    await asyncio.sleep(0)
    try:
        described = diagnostics.describe_tasks()
        assert "in _waits_in_a" in described and "in _waits_in_b" in described, described
    finally:
        release.set()
        await asyncio.gather(*tasks)
