"""The room logs this release writes (tests/vectors/room_logs/journal.json and redis.json, from
``tests/server/build_room_logs.py``) and those of earlier releases — before the log had a version
(``journal-v0.json``, ``redis-v0.json``: a header without ``v``), before ``game_over`` stopped
waiting for the database (``journal-stored-first.json``, ``redis-stored-first.json``), and before
the entry that ends a game recorded it (``journal-v1.json``, ``redis-v1.json``: a ``recorded``
entry of its own after each game's end) — still replay: each golden log
is put in a fresh journal or Redis exactly as it was stored, read back through
:class:`JournalLog` or :class:`RedisLog`, and replayed on a fresh room, which must hold what the
live room held when the log was written — its phase, seq, every player's snapshot, a
spectator's, the results, the tokens."""

from __future__ import annotations

import contextlib
import json
import sqlite3
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
#: the same rooms as the release before the log's version wrote them (kept as they were)
JOURNAL_V0 = json.loads(JOURNAL_PATH.with_name("journal-v0.json").read_text(encoding="utf-8"))
REDIS_V0 = json.loads(REDIS_PATH.with_name("redis-v0.json").read_text(encoding="utf-8"))
#: the same rooms as the release before game_over stopped waiting for the database wrote them (a
#: game stored before its ``recorded``, which says so: ``"s": true``, and no ``stored`` after it)
JOURNAL_STORED_FIRST = json.loads(JOURNAL_PATH.with_name("journal-stored-first.json").read_text(encoding="utf-8"))
REDIS_STORED_FIRST = json.loads(REDIS_PATH.with_name("redis-stored-first.json").read_text(encoding="utf-8"))
#: the same rooms as the release before the entry that ends a game recorded it wrote them (log
#: format 1: each game's ``recorded`` an entry of its own, after the game's end)
JOURNAL_V1 = json.loads(JOURNAL_PATH.with_name("journal-v1.json").read_text(encoding="utf-8"))
REDIS_V1 = json.loads(REDIS_PATH.with_name("redis-v1.json").read_text(encoding="utf-8"))
JOURNALS = {"current": JOURNAL, "v1": JOURNAL_V1, "stored-first": JOURNAL_STORED_FIRST, "v0": JOURNAL_V0}
REDISES = {"current": REDIS, "v1": REDIS_V1, "stored-first": REDIS_STORED_FIRST, "v0": REDIS_V0}


async def replayed(log: RoomLog, room_id: str) -> dict[str, Any]:
    """The room rebuilt from what ``log`` holds, as the lobby rebuilds a room it loads."""
    loaded = await log.load(room_id)
    assert loaded is not None, room_id
    assert loaded.snapshot is None and loaded.base == 0, "a golden log holds no snapshot"
    services = RoomServices(ManualClock(0), log, Recorder(MemoryStorage()), BackgroundTasks())
    room = Room(loaded.header, services)
    room.rebuild(loaded.entries, live=False)
    assert room.applied == len(loaded.entries)
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


@pytest.mark.parametrize("release", list(JOURNALS))
def test_the_golden_logs_hold_every_kind_of_room(release: str) -> None:
    journal, redis = JOURNALS[release], REDISES[release]
    assert list(journal["rooms"]) == list(SCENARIOS)
    assert list(redis["rooms"]) == [name for name, (_, _, on_redis) in SCENARIOS.items() if on_redis]
    modes = {room["stored"]["header"]["mode"] for room in journal["rooms"].values()}
    assert modes == {"solo", "race", "daily"}
    sealed = journal["rooms"]["sealed_rematch"]["stored"]["header"]
    assert sealed["code"] is None and "seed" in sealed
    versions = {room["stored"]["header"].get("v") for room in journal["rooms"].values()}
    assert versions == {"current": {LOG_VERSION}, "v1": {1}, "stored-first": {1}, "v0": {None}}[release]
    # a game is recorded by the entry that ends it from format 2 on; before, by an entry of its own
    kinds = {entry["k"] for room in journal["rooms"].values() for _, entry in room["stored"]["entries"]}
    assert ("recorded" in kinds) == (release != "current")


@pytest.mark.parametrize("release", list(JOURNALS))
@pytest.mark.parametrize("name", list(JOURNAL["rooms"]))
async def test_a_room_the_journal_holds_replays_to_what_the_live_room_held(
    tmp_path: Path, name: str, release: str
) -> None:
    fill_journal(tmp_path / "journal.db", JOURNALS[release])
    journal = JournalLog(tmp_path / "journal.db")
    await journal.open()
    try:
        golden = JOURNALS[release]["rooms"][name]
        assert await replayed(journal, golden["room"]) == golden["expect"]
    finally:
        await journal.close()


@pytest.mark.redis
@pytest.mark.parametrize("release", list(REDISES))
@pytest.mark.parametrize("name", list(REDIS["rooms"]))
async def test_a_room_the_redis_log_holds_replays_to_what_the_live_room_held(
    redis_server: RedisServer, name: str, release: str
) -> None:
    await fill_redis(redis_server.url, REDISES[release])
    redis_log = RedisLog(redis_server.url)
    await redis_log.ping()  # (not followed: a load only)
    try:
        golden = REDISES[release]["rooms"][name]
        assert await replayed(redis_log, golden["room"]) == golden["expect"]
    finally:
        await redis_log.close()


async def test_the_builder_still_writes_the_journal_golden_file() -> None:
    """The journal's server runs on a manual clock with seeded randomness: the same bytes. (A
    release that writes other logs regenerates journal.json and redis.json, keeping the earlier
    ones beside them as they are: every one of them must go on replaying.)"""
    built = await build_journal()
    committed = JOURNAL_PATH.read_text(encoding="utf-8")
    assert dumps(json.loads(committed)) == committed, "the file's layout: regenerate it"
    assert dumps(built) == committed, "the server writes other logs now: python -m tests.server.build_room_logs"
