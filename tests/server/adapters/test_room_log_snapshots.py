"""A room's snapshot beside its log, in every room log (MemoryLog, the SQLite journal, Redis):
``load`` gives the latest snapshot and only the entries after it (``snapshot=False``: every
entry), an older snapshot never replaces a newer one, a dropped room's snapshot goes with it, and
a journal of an earlier release (no ``snapshots`` table) is opened, read and given one."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from redis.asyncio import Redis

from halfmoon_server.adapters.journal import JournalLog, MemoryLog
from halfmoon_server.adapters.redis_log import RedisLog
from tests.conftest import require_service
from tests.server.adapters.test_journal import _Room
from tests.server.instances import RedisServer

Log = MemoryLog | JournalLog | RedisLog
NO_REDIS = "no redis-server binary; apt-get install redis"


def snapshot(n: int) -> dict[str, Any]:
    return {"v": 1, "n": n, "race": {"steps": "1 R4,u" * n}}


@pytest.fixture(params=["memory", "journal", pytest.param("redis", marks=pytest.mark.redis)])
async def room_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Log]:
    if request.param == "memory":
        yield MemoryLog()
    elif request.param == "journal":
        journal = JournalLog(tmp_path / "journal.db")
        await journal.open()
        yield journal
        await journal.close()
    else:
        require_service("redis-server", RedisServer.binary() is not None, NO_REDIS)
        server = await RedisServer(tmp_path / "redis").start()
        redis_log = RedisLog(server.url)
        try:
            await redis_log.open()
            yield redis_log
        finally:
            await redis_log.close()
            server.kill()


async def room_of(room_log: Log, entries: int) -> _Room:
    follower = _Room("R1")
    assert await room_log.create({"room": "R1", "v": 1})
    room_log.follow(follower)
    for n in range(entries):
        await room_log.append("R1", {"k": "tick", "n": n})
    return follower


async def test_a_load_gives_the_latest_snapshot_and_only_the_entries_after_it(room_log: Log) -> None:
    await room_of(room_log, 5)
    loaded = await room_log.load("R1")
    assert loaded is not None and loaded.snapshot is None and loaded.base == 0 and len(loaded.entries) == 5

    await room_log.save_snapshot("R1", 3, snapshot(3))
    loaded = await room_log.load("R1")
    assert loaded is not None and loaded.header["room"] == "R1"
    assert (loaded.base, loaded.snapshot) == (3, snapshot(3))
    assert [entry["n"] for entry in loaded.entries] == [3, 4], "entries 4 and 5 (numbered from 1)"

    whole = await room_log.load("R1", snapshot=False)
    assert whole is not None and whole.snapshot is None and whole.base == 0
    assert [entry["n"] for entry in whole.entries] == [0, 1, 2, 3, 4]


async def test_an_older_snapshot_never_replaces_a_newer_one(room_log: Log) -> None:
    await room_of(room_log, 6)
    await room_log.save_snapshot("R1", 4, snapshot(4))
    await room_log.save_snapshot("R1", 2, snapshot(2))  # (a slow writer's, from earlier)
    loaded = await room_log.load("R1")
    assert loaded is not None and loaded.base == 4 and loaded.snapshot == snapshot(4)
    await room_log.save_snapshot("R1", 6, snapshot(6))
    loaded = await room_log.load("R1")
    assert loaded is not None and loaded.base == 6 and loaded.entries == []


async def test_a_dropped_rooms_snapshot_goes_with_it(room_log: Log) -> None:
    await room_of(room_log, 3)
    await room_log.save_snapshot("R1", 2, snapshot(2))
    room_log.unfollow("R1")
    await room_log.forget("R1")
    assert await room_log.load("R1") is None
    await room_log.save_snapshot("R1", 3, snapshot(3))  # (a late write, after the drop)
    assert await room_log.load("R1") is None
    if isinstance(room_log, RedisLog):
        redis = Redis.from_url(room_log.url)
        try:
            assert await redis.get("hm:{R1}:snap") is None, "no snapshot kept for a dropped room"
        finally:
            await redis.aclose()
    elif isinstance(room_log, MemoryLog):
        assert "R1" not in room_log.snapshots


@pytest.mark.redis
async def test_redis_keeps_a_snapshot_in_the_rooms_slot_as_number_and_json(tmp_path: Path) -> None:
    require_service("redis-server", RedisServer.binary() is not None, NO_REDIS)
    server = await RedisServer(tmp_path / "redis").start()
    redis_log = RedisLog(server.url)
    redis = Redis.from_url(server.url)
    try:
        await redis_log.open()
        await room_of(redis_log, 2)
        await redis_log.save_snapshot("R1", 2, snapshot(2))
        assert await redis.get("hm:{R1}:snap") == b"2 " + orjson.dumps(snapshot(2))
    finally:
        await redis.aclose()
        await redis_log.close()
        server.kill()


async def test_a_journal_of_an_earlier_release_gets_a_snapshots_table(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # the schema before snapshots
        db.executescript(
            "CREATE TABLE rooms (id TEXT PRIMARY KEY, header TEXT NOT NULL);"
            "CREATE TABLE entries (room TEXT NOT NULL, n INTEGER NOT NULL, entry TEXT NOT NULL,"
            " PRIMARY KEY (room, n)) WITHOUT ROWID;"
        )
        db.execute("INSERT INTO rooms VALUES ('R1', '{\"room\": \"R1\", \"v\": 1}')")
        db.executemany("INSERT INTO entries VALUES ('R1', ?, ?)", [(n, f'{{"k": "tick", "n": {n}}}') for n in (1, 2)])
    journal = JournalLog(path)
    await journal.open()
    try:
        loaded = await journal.load("R1")
        assert loaded is not None and loaded.snapshot is None and len(loaded.entries) == 2
        await journal.save_snapshot("R1", 1, snapshot(1))
    finally:
        await journal.close()
    reopened = JournalLog(path)
    await reopened.open()
    try:
        loaded = await reopened.load("R1")
        assert loaded is not None and loaded.base == 1 and loaded.snapshot == snapshot(1)
        assert [entry["n"] for entry in loaded.entries] == [2]
    finally:
        await reopened.close()
