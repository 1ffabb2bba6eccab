"""The Redis room log's batching (appends sent together in one pipeline are each answered) and
its failures (what they say quotes no secret of the room's)."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

import pytest

from halfmoon.codes import daily_code
from halfmoon.protocol import Mode
from halfmoon_server.adapters.redis_log import RedisLog
from halfmoon_server.core.commands import room_header
from halfmoon_server.errors import LogUnavailable
from tests.server.instances import RedisServer

pytestmark = pytest.mark.redis


class Follower:
    """A room as the log sees it: an id, how far it has applied, what it was delivered."""

    def __init__(self, room_id: str) -> None:
        self.id = room_id
        self.applied = 0
        self.lost = False
        self.delivered: list[tuple[int, dict[str, Any]]] = []

    def deliver(self, number: int, entry: dict[str, Any]) -> None:
        self.applied = number
        self.delivered.append((number, entry))

    def went_back(self) -> None:
        self.lost = True

    def fenced(self) -> None:
        raise AssertionError("no other instance owns the room")


async def test_an_append_whose_waiter_gave_up_leaves_the_rest_of_its_batch_answered(
    redis_server: RedisServer,
) -> None:
    log = RedisLog(redis_server.url)
    await log.ping()  # (no feed: one instance, nobody else to hear)
    try:
        room = Follower("K7WQ2M")
        assert await log.create({"room": room.id})
        log.follow(room)
        first = asyncio.create_task(log.append(room.id, {"k": "tick", "t": 1}))
        second = asyncio.create_task(log.append(room.id, {"k": "tick", "t": 2}))
        await asyncio.sleep(0)  # both queued: one pipeline
        first.cancel()  # its connection closed while it was being written
        async with asyncio.timeout(5):
            await second
        assert [number for number, _ in room.delivered] == [1, 2]  # the first is in the log all the same
    finally:
        await log.close()


async def test_a_write_redis_refuses_says_why_without_quoting_the_rooms_header(redis_server: RedisServer) -> None:
    """redis-py quotes a pipeline's failing command in its error; a daily room's header holds the
    day's code (a sealed race's, its seed), and the error reaches the client as ``unavailable``."""
    from redis.asyncio import Redis

    code = str(daily_code(date(2026, 11, 28), b"secret", long=True))
    header = room_header("K7WQ2M", Mode.DAILY, code, created_at=0, nonce="n", daily_day="2026-11-28")
    header["seed"] = "5e" * 32
    admin = Redis.from_url(redis_server.url)
    log = RedisLog(redis_server.url)
    await log.ping()
    try:
        await admin.config_set("maxmemory-policy", "noeviction")
        await admin.config_set("maxmemory", 1)  # every write refused: "used memory > 'maxmemory'"
        with pytest.raises(LogUnavailable) as refused:
            await log.create(header)
        said = str(refused.value)
        assert "maxmemory" in said
        assert code[6:13] not in said and "5e5e" not in said and "hm:{" not in said, said
    finally:
        await admin.config_set("maxmemory", 0)
        await admin.aclose()
        await log.close()


async def test_appends_ask_no_script_exists_and_go_on_after_the_node_lost_its_scripts(
    redis_server: RedisServer,
) -> None:
    """A group commit is one round trip: its appends go as EVALSHA with no ``SCRIPT EXISTS`` first
    (redis-py's script objects ask it before every pipeline). A node without the script (restarted,
    promoted, flushed) answers NOSCRIPT and runs nothing: the script is loaded and the appends are
    sent again, in order, each once."""
    from redis.asyncio import Redis

    admin = Redis.from_url(redis_server.url)
    log = RedisLog(redis_server.url)
    await log.ping()
    try:
        room = Follower("K7WQ2M")
        assert await log.create({"room": room.id})
        log.follow(room)

        async def script_exists_calls() -> int:
            stats = await admin.info("commandstats")
            return int(stats.get("cmdstat_script|exists", {}).get("calls", 0))

        asked = await script_exists_calls()
        for t in range(1, 6):
            await log.append(room.id, {"k": "tick", "n": t})
        together = [asyncio.create_task(log.append(room.id, {"k": "tick", "n": t})) for t in range(6, 9)]
        await asyncio.gather(*together)
        assert await script_exists_calls() == asked

        await admin.script_flush()
        again = [asyncio.create_task(log.append(room.id, {"k": "tick", "n": t})) for t in range(9, 12)]
        assert await asyncio.gather(*again) == [9, 10, 11]
        assert [entry["n"] for _, entry in room.delivered] == list(range(1, 12))
        assert await admin.llen(f"hm:{{{room.id}}}:log") == 11
    finally:
        await log.close()
        await admin.aclose()


async def test_an_append_a_node_answers_noscript_again_after_the_reload_is_refused_as_certainly_not_logged(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NOSCRIPT runs nothing: when the node answers it again to the appends sent once more after
    the script's reload (flushed again meanwhile), they are refused as not taken (``certain``:
    the room's command may be sent again) — not as possibly logged, which would leave the room's
    command waiting for an entry that can never show up."""
    from redis.asyncio import Redis

    admin = Redis.from_url(redis_server.url)
    log = RedisLog(redis_server.url)
    await log.ping()
    try:
        room = Follower("K7WQ2N")
        assert await log.create({"room": room.id})
        log.follow(room)
        assert await log.append(room.id, {"k": "tick", "n": 1}) == 1

        async def flushed_again(script: Any) -> str:  # the reload lost to a flush right after it
            await admin.script_flush()
            return str(log._append.sha)

        await admin.script_flush()
        monkeypatch.setattr(log.redis, "script_load", flushed_again)
        with pytest.raises(LogUnavailable) as refused:
            await log.append(room.id, {"k": "tick", "n": 2})
        assert refused.value.certain, refused.value
        assert "NOSCRIPT" in str(refused.value) or "NoScript" in str(refused.value)
        assert await admin.llen(f"hm:{{{room.id}}}:log") == 1 and room.applied == 1, "nothing logged"
        monkeypatch.undo()
        assert await log.append(room.id, {"k": "tick", "n": 3}) == 2, "the next append reloads it"
    finally:
        await log.close()
        await admin.aclose()
