"""Restarts and takeovers load a room from its latest snapshot and the entries after it: the
embedded server's journal after a restart (``Lobby.restore``), and another instance of a cluster
on a real Redis (``Lobby.find`` there) — the player resumes with their token and plays on, the
room as it was, its events numbered on from where they were."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode
from halfmoon_server.adapters.journal import JournalLog
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.adapters.redis_log import RedisLog
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.commands import room_header
from halfmoon_server.core.race import RaceConfig
from halfmoon_server.core.snapshots import take_snapshot
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.rooms.results import Recorder
from halfmoon_server.rooms.room import BackgroundTasks, Room, RoomServices
from halfmoon_server.web import keys
from halfmoon_server.web.app import create_app
from tests.conftest import require_service
from tests.server.instances import RedisServer
from tests.server.support import T0, WsClient, make_settings, won_record

RECORD = won_record()
FIRST = RECORD.moves[0].names()  # type: ignore[union-attr]


class Box:
    room: str | None = None
    player_id: str | None = None
    closed = False

    def send(self, frame: bytes) -> None:
        return None

    def close(self, code: int, reason: str) -> None:
        return None


async def test_a_restart_restores_a_room_from_its_snapshot_and_the_player_plays_on(
    aiohttp_server: Any, tmp_path: Path, clock: ManualClock
) -> None:
    settings = make_settings(tmp_path / "data", clock, snapshot_every=20, tick_s=3600.0)
    first: TestServer = await aiohttp_server(create_app(settings))
    lobby: Lobby = first.app[keys.LOBBY]
    ada = await WsClient.connect(first, "ada")
    await ada.send("solo", name="Ada", code=str(RECORD.code))
    welcome = await ada.next("welcome")
    room_id, token = welcome["room"]["room"], welcome["token"]
    for n in range(25):  # 51 entries: a snapshot after entry 40 or so, then a few more
        await ada.send("move", positions=FIRST, id=2 * n)
        await ada.next("moved")
        await ada.send("undo", id=2 * n + 1)
        await ada.next("moved")
    room = lobby.rooms[room_id]
    await room.services.tasks.settle()
    before = take_snapshot(room.state)
    await ada.close()
    await first.close()

    journal = JournalLog(tmp_path / "data" / "journal.db")
    await journal.open()
    try:
        loaded = await journal.load(room_id)
    finally:
        await journal.close()
    assert loaded is not None and loaded.snapshot is not None and loaded.base >= 40
    assert len(loaded.entries) < 20, "the restart replays only the entries after the snapshot"

    second: TestServer = await aiohttp_server(create_app(make_settings(tmp_path / "data", clock, snapshot_every=20)))
    restored = second.app[keys.LOBBY].rooms[room_id]
    assert restored.snapshot_at == loaded.base
    after = take_snapshot(restored.state)
    # the players of the previous process are marked away once it is gone: all else is as it was
    assert {k: v for k, v in after.items() if k not in ("n", "race", "last_time", "seq", "player")} == {
        k: v for k, v in before.items() if k not in ("n", "race", "last_time", "seq", "player")
    }
    assert after["race"]["players"][0]["steps"] == before["race"]["players"][0]["steps"]
    again = await WsClient.connect(second, "again")
    try:
        await again.send("resume", room=room_id, token=token)
        resumed = await again.next("welcome")
        assert resumed["room"]["players"][0]["moves"] == 0 and resumed["seq"] >= before["seq"]
        await again.send("move", positions=FIRST, id=99)
        moved = await again.next("moved")
        assert moved["seq"] > resumed["seq"], "events numbered on from where they were"
    finally:
        await again.close()


@pytest.mark.redis
async def test_another_instance_loads_a_room_from_its_snapshot_on_redis(tmp_path: Path) -> None:
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary: apt-get install redis")
    server = await RedisServer(tmp_path / "redis").start()
    one, two = RedisLog(server.url), RedisLog(server.url)
    try:
        await one.open()
        await two.open()
        clock = ManualClock(T0)
        services_one = RoomServices(clock, one, Recorder(MemoryStorage()), BackgroundTasks(), snapshot_every=30)
        header = room_header("R3D1S5", Mode.SOLO, str(RECORD.code), created_at=T0, nonce="n0nce", daily_day=None)
        header["config"] = asdict(RaceConfig())
        assert await one.create(header)
        room = Room(header, services_one)
        assert (await one.claim(room.id)).mine  # only a room's owner appends (a cluster)
        one.follow(room)
        box = Box()
        await room.submit({"k": "single", "n": "Ada", "tok": "t0ken", "r": True}, box)
        player = box.player_id
        assert player is not None and DealCode.parse(header["code"])
        for _ in range(40):
            await room.submit({"k": "move", "p": player, "m": FIRST})
            await room.submit({"k": "undo", "p": player})
            await asyncio.sleep(0)
        await room.services.tasks.settle()

        one.unfollow(room.id)  # the owner lets the room go (it sleeps, say): its lease goes, in the background
        async with asyncio.timeout(2):
            while not (await two.claim(room.id)).mine:
                await asyncio.sleep(0.02)
        loaded = await two.load(room.id)  # another instance: as Lobby._load reads it
        assert loaded is not None and loaded.snapshot is not None
        assert loaded.base >= 30 and loaded.base + len(loaded.entries) == 81
        there = Room(loaded.header, RoomServices(clock, two, Recorder(MemoryStorage()), BackgroundTasks()))
        there.restore(loaded.snapshot)
        two.follow(there)
        there.rebuild(loaded.entries)
        assert take_snapshot(there.state) == take_snapshot(room.state)
        await there.submit({"k": "move", "p": player, "m": FIRST})  # and it plays on there
        assert there.applied == 82
        reloaded = await one.load(room.id)
        assert reloaded is not None and reloaded.base + len(reloaded.entries) == 82, "in the log for the next owner"
    finally:
        await one.close()
        await two.close()
        server.kill()


async def test_a_snapshot_that_cannot_be_used_is_passed_over_for_the_whole_log(
    aiohttp_server: Any, tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Another release's snapshot (or a damaged one) is not restored: the room is replayed from
    its first entry, as it would have been without it, and the reason is logged (its kind only)."""
    settings = make_settings(tmp_path / "data", clock, db_url="memory://", snapshot_every=10, tick_s=3600.0)
    server: TestServer = await aiohttp_server(create_app(settings))
    lobby: Lobby = server.app[keys.LOBBY]
    room, player = await lobby.solo(Box(), "Ada", DealCode.parse(str(RECORD.code)), "198.51.100.7")
    for _ in range(15):
        await room.submit({"k": "move", "p": player, "m": FIRST})
        await room.submit({"k": "undo", "p": player})
        await asyncio.sleep(0)
    await room.services.tasks.settle()
    expected = take_snapshot(room.state)
    lobby._release(room)  # (out of memory: a read loads a copy from the log)
    kept = lobby.log.snapshots[room.id]  # type: ignore[attr-defined]
    assert kept[0] >= 10
    for damaged in ({**kept[1], "v": 99}, {**kept[1], "race": {"players": "?"}}):
        lobby.log.snapshots[room.id] = (kept[0], damaged)  # type: ignore[attr-defined]
        copy_ = await lobby.find(room.id, hold=False)
        assert copy_ is not None and copy_ is not room
        assert take_snapshot(copy_.state) == expected, "the whole log replayed"
    assert "its snapshot is not used" in caplog.text and str(RECORD.code) not in caplog.text
