"""The lobby keeps the live list up to date with the listed rooms it holds (``Lobby.list_live``,
each ticker round): a listed race is put there at its start and at each change, put again before
its entry's time-to-live runs out, taken off at its end or when the room leaves this instance; a
private room never; a live list that does not answer is tried again at the next round."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from halfmoon.codes import DealCode
from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import LogUnavailable
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient


class RecordingLiveList:
    """A live list that records every call, and fails the next ``failing`` ones."""

    def __init__(self, ttl_ms: int = 30_000) -> None:
        self.ttl_ms = ttl_ms
        self.calls: list[tuple[str, str, Any]] = []
        self.failing = 0
        self.reads = 0

    def _call(self, kind: str, room_id: str, summary: Any = None) -> None:
        if self.failing:
            self.failing -= 1
            raise LogUnavailable("the live list is down")
        self.calls.append((kind, room_id, summary))

    async def put(self, room_id: str, summary: dict[str, Any]) -> None:
        self._call("put", room_id, summary)

    async def drop(self, room_id: str) -> None:
        self._call("drop", room_id)

    async def races(self, limit: int) -> list[dict[str, Any]]:
        self.reads += 1
        return [summary for kind, _, summary in self.calls if kind == "put"][-1:]

    async def close(self) -> None:
        pass


async def started(server: Any, room_id: str, name: str) -> WsClient:
    client = await WsClient.connect(server, name)
    await client.send("join", room=room_id, name=name)
    await client.next("welcome")
    await client.send("start")
    await client.next("started")
    return client


async def test_a_listed_race_is_put_at_its_start_and_changes_refreshed_and_dropped_at_its_end(
    start_server: StartServer, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server(tick_s=3600.0)
    lobby: Lobby = server.app[keys.LOBBY]
    live = lobby.live = RecordingLiveList(ttl_ms=30_000)  # type: ignore[assignment]
    public = await lobby.create_race(DealCode.parse("HM1-N-AAAAAAB"), "127.0.0.1", listed=True)
    private = await lobby.create_race(None, "127.0.0.1")
    assert public.listed and not private.listed
    await lobby.list_live(clock.now_ms())
    assert live.calls == []  # in their lobbies: nothing yet
    ada = await started(server, public.id, "Ada")
    eve = await started(server, private.id, "Eve")
    await lobby.list_live(clock.now_ms())
    assert [(kind, room) for kind, room, _ in live.calls] == [("put", public.id)]
    await lobby.list_live(clock.now_ms())
    assert len(live.calls) == 1  # nothing changed: not put again
    clock.advance(10_000)  # a third of the ttl: put again, so it does not run out
    await lobby.list_live(clock.now_ms())
    assert len(live.calls) == 2
    # a live list that does not answer: the change is put at the next round
    watcher = await WsClient.connect(server, "watcher")
    await watcher.send("watch", room=public.id)
    await watcher.next("welcome")
    live.failing = 2
    with caplog.at_level(logging.WARNING, "halfmoon_server.lobby"):
        await lobby.list_live(clock.now_ms())
        await lobby.list_live(clock.now_ms())
    assert len(live.calls) == 2
    assert len(caplog.records) == 1, "an outage is one log line a minute, not one a round"
    await lobby.list_live(clock.now_ms())
    assert live.calls[-1][0] == "put" and live.calls[-1][2]["spectators"] == 1
    # the race ends: dropped, once
    await ada.send("give_up")
    await ada.next("race_over")
    await lobby.list_live(clock.now_ms())
    await lobby.list_live(clock.now_ms())
    assert live.calls[-1] == ("drop", public.id, None)
    assert [room for _, room, _ in live.calls] == [public.id] * 4  # the private race: never
    for client in (ada, eve, watcher):
        await client.close()


async def test_a_listed_room_that_leaves_this_instance_is_dropped_from_the_list(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(tick_s=3600.0)
    lobby: Lobby = server.app[keys.LOBBY]
    live = lobby.live = RecordingLiveList()  # type: ignore[assignment]
    public = await lobby.create_race(None, "127.0.0.1", listed=True)
    ada = await started(server, public.id, "Ada")
    await lobby.list_live(clock.now_ms())
    lobby._release(public)  # (as a room whose log went back is, to be loaded afresh)
    live.failing = 1  # and the first try fails
    await lobby.list_live(clock.now_ms())
    await lobby.list_live(clock.now_ms())
    assert [(kind, room) for kind, room, _ in live.calls] == [("put", public.id), ("drop", public.id)]
    await ada.close()


async def test_the_list_is_read_at_most_once_a_second_and_again_after_a_change_made_here(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(tick_s=3600.0)
    lobby: Lobby = server.app[keys.LOBBY]
    live = lobby.live = RecordingLiveList()  # type: ignore[assignment]
    assert await lobby.live_races(clock.now_ms()) == []
    clock.advance(999)
    assert await lobby.live_races(clock.now_ms()) == [] and live.reads == 1  # every visitor's poll: one read
    public = await lobby.create_race(None, "127.0.0.1", listed=True)
    ada = await started(server, public.id, "Ada")
    await lobby.list_live(clock.now_ms())  # put here: the next answer reads it
    [shown] = await lobby.live_races(clock.now_ms())
    assert shown["room"] == public.id and live.reads == 2
    clock.advance(1000)
    await lobby.live_races(clock.now_ms())
    assert live.reads == 3  # (another instance's changes: within a second)
    await ada.close()
