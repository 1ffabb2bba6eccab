"""The room logs this release wrote (tests/vectors/room_logs/, from
``tests/server/build_room_logs.py``) still replay: each golden log is put in a fresh journal or
Redis exactly as it was stored, read back through :class:`JournalLog` or :class:`RedisLog`, and
replayed on a fresh room, which must hold what the live room held when the log was written —
its phase, seq, every player's snapshot, a spectator's, the results, the tokens."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from halfmoon_server.adapters.journal import JournalLog
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.adapters.redis_log import RedisLog
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.commands import LOG_VERSION
from halfmoon_server.ports import RoomLog
from halfmoon_server.rooms.results import Recorder
from halfmoon_server.rooms.room import BackgroundTasks, Room, RoomServices
from tests.conftest import require_service
from tests.server.build_room_logs import (
    JOURNAL_PATH,
    REDIS_PATH,
    SCENARIOS,
    build_journal,
    dumps,
    expectation,
)
from tests.server.instances import RedisServer

JOURNAL = json.loads(JOURNAL_PATH.read_text(encoding="utf-8"))
REDIS = json.loads(REDIS_PATH.read_text(encoding="utf-8"))


async def replayed(log: RoomLog, room_id: str) -> dict[str, Any]:
    """The room rebuilt from what ``log`` holds, as the lobby rebuilds a room it loads."""
    loaded = await log.load(room_id)
    assert loaded is not None, room_id
    header, entries = loaded
    services = RoomServices(ManualClock(0), log, Recorder(MemoryStorage()), BackgroundTasks())
    room = Room(header, services)
    room.rebuild(entries, live=False)
    assert room.applied == len(entries)
    return expectation(room)


def fill_journal(path: Path, golden: dict[str, Any]) -> None:
    """A journal holding the golden rooms' rows, byte for byte as they were stored."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.executescript(
            "CREATE TABLE rooms (id TEXT PRIMARY KEY, header TEXT NOT NULL);"
            "CREATE TABLE entries (room TEXT NOT NULL, n INTEGER NOT NULL, entry TEXT NOT NULL,"
            " PRIMARY KEY (room, n)) WITHOUT ROWID;"
        )
        for room in golden["rooms"].values():
            stored = room["stored"]
            db.execute("INSERT INTO rooms VALUES (?, ?)", (room["room"], orjson.dumps(stored["header"]).decode()))
            db.executemany(
                "INSERT INTO entries VALUES (?, ?, ?)",
                [(room["room"], n, orjson.dumps(entry).decode()) for n, entry in stored["entries"]],
            )


@pytest.fixture
async def redis_server(tmp_path: Path) -> AsyncIterator[RedisServer]:
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    server = await RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.kill()


async def fill_redis(url: str, golden: dict[str, Any]) -> None:
    """A Redis holding the golden rooms' keys, byte for byte as they were stored."""
    from redis.asyncio import Redis

    redis = Redis.from_url(url)
    try:
        for room in golden["rooms"].values():
            for key, value in room["stored"].items():
                if key.endswith(":h"):
                    await redis.set(key, orjson.dumps(value))
                else:
                    await redis.rpush(key, *(b"%d %s" % (ms, orjson.dumps(entry)) for ms, entry in value))
    finally:
        await redis.aclose()


def test_the_golden_logs_hold_every_kind_of_room() -> None:
    assert list(JOURNAL["rooms"]) == list(SCENARIOS)
    assert list(REDIS["rooms"]) == [name for name, (_, _, on_redis) in SCENARIOS.items() if on_redis]
    modes = {room["stored"]["header"]["mode"] for room in JOURNAL["rooms"].values()}
    assert modes == {"solo", "race", "daily"}
    sealed = JOURNAL["rooms"]["sealed_rematch"]["stored"]["header"]
    assert sealed["code"] is None and "seed" in sealed


@pytest.mark.parametrize("name", list(JOURNAL["rooms"]))
async def test_a_room_the_journal_of_this_release_holds_replays_to_what_the_live_room_held(
    tmp_path: Path, name: str
) -> None:
    fill_journal(tmp_path / "journal.db", JOURNAL)
    journal = JournalLog(tmp_path / "journal.db")
    await journal.open()
    try:
        golden = JOURNAL["rooms"][name]
        assert await replayed(journal, golden["room"]) == golden["expect"]
    finally:
        await journal.close()


@pytest.mark.redis
@pytest.mark.parametrize("name", list(REDIS["rooms"]))
async def test_a_room_the_redis_log_of_this_release_holds_replays_to_what_the_live_room_held(
    redis_server: RedisServer, name: str
) -> None:
    await fill_redis(redis_server.url, REDIS)
    redis_log = RedisLog(redis_server.url)
    await redis_log.ping()  # (not followed: a load only)
    try:
        golden = REDIS["rooms"][name]
        assert await replayed(redis_log, golden["room"]) == golden["expect"]
    finally:
        await redis_log.close()


def _without_version(golden: dict[str, Any]) -> dict[str, Any]:
    for room in golden["rooms"].values():
        room["stored"]["header"].pop("v", None)
    return golden


async def test_the_builder_still_writes_the_journal_golden_file() -> None:
    """The journal's server runs on a manual clock with seeded randomness: the same bytes — but
    for the log format's version: the golden logs were written before the header had one
    (version 0), and must go on replaying as they are."""
    built = await build_journal()
    assert {room["stored"]["header"].get("v") for room in built["rooms"].values()} == {LOG_VERSION}
    committed = JOURNAL_PATH.read_text(encoding="utf-8")
    assert dumps(json.loads(committed)) == committed, "the file's layout: regenerate it"
    assert dumps(_without_version(built)) == dumps(_without_version(json.loads(committed))), (
        "the server writes other logs now: python -m tests.server.build_room_logs"
    )
