"""The live list (:class:`~halfmoon_server.ports.LiveList`): the public races in play, in the
process's memory (:class:`MemoryLiveList`, one server) or in Redis (:class:`RedisLiveList`, shared
by a cluster's instances).

In Redis, two keys under one hash tag (so a Redis Cluster keeps them on one slot, and one script
touches both):

- ``hm:{live}:until`` — a sorted set: room id → when its entry expires (Redis's clock, ms);
- ``hm:{live}:rooms`` — a hash: room id → its summary (JSON).

A put sets both (the expiry ``ttl_ms`` from Redis's own clock: one clock for every instance), a
drop removes both, and a read first removes what has expired, then answers the rest — so a room
whose every instance died leaves the list within ``ttl_ms``, with nobody to drop it.
"""

from __future__ import annotations

from typing import Any

import orjson

from halfmoon_server.clock import Clock
from halfmoon_server.errors import LogUnavailable

#: The live list's keys in Redis (one hash tag: one slot in a Redis Cluster).
UNTIL_KEY = "hm:{live}:until"
ROOMS_KEY = "hm:{live}:rooms"

# KEYS: until, rooms; ARGV: the room, its summary, the ttl (ms).
_PUT = """
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
"""
# KEYS: until, rooms; ARGV: the room.
_DROP = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
"""
# KEYS: until, rooms; ARGV: at most this many. The expired go first (500 at a time: unpack's
# bound), then the summaries of the rest.
_READ = """
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
while true do
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 500)
  if #gone == 0 then break end
  redis.call('HDEL', KEYS[2], unpack(gone))
  redis.call('ZREM', KEYS[1], unpack(gone))
end
local rooms = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'LIMIT', 0, tonumber(ARGV[1]))
if #rooms == 0 then return {} end
return redis.call('HMGET', KEYS[2], unpack(rooms))
"""


class MemoryLiveList:
    """The live list of one process: a dict of summaries and their expiries, by the clock."""

    def __init__(self, clock: Clock, ttl_ms: int) -> None:
        self.clock = clock
        self.ttl_ms = ttl_ms
        self._entries: dict[str, tuple[int, dict[str, Any]]] = {}

    async def put(self, room_id: str, summary: dict[str, Any]) -> None:
        self._entries[room_id] = (self.clock.now_ms() + self.ttl_ms, dict(summary))

    async def drop(self, room_id: str) -> None:
        self._entries.pop(room_id, None)

    async def races(self, limit: int) -> list[dict[str, Any]]:
        now = self.clock.now_ms()
        for room_id in [room_id for room_id, (until, _) in self._entries.items() if until <= now]:
            del self._entries[room_id]
        return [dict(summary) for _, summary in list(self._entries.values())[:limit]]

    async def close(self) -> None:
        self._entries.clear()


class RedisLiveList:
    """The live list of a cluster, in Redis (see the module docstring); a Redis Cluster is found
    at :meth:`open`. Every method raises :class:`~halfmoon_server.errors.LogUnavailable` when
    Redis does not answer. redis-py is imported here, not by the module: the embedded server
    (``pip install '.[server]'``, no Redis client) uses :class:`MemoryLiveList` from this module."""

    def __init__(self, url: str, *, ttl_ms: int, timeout_s: float = 2.0) -> None:
        import redis.asyncio as aioredis
        from redis.exceptions import RedisClusterException, RedisError

        self._failures: tuple[type[BaseException], ...] = (RedisError, RedisClusterException, OSError)
        self.url = url
        self.ttl_ms = ttl_ms
        self.timeout_s = timeout_s
        self.redis: Any = aioredis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self.cluster = False
        self._scripts()

    def _scripts(self) -> None:
        self._put = self.redis.register_script(_PUT)
        self._drop = self.redis.register_script(_DROP)
        self._read = self.redis.register_script(_READ)

    async def open(self) -> None:
        """Check Redis answers and learn whether it is a Redis Cluster. Raises :class:`LogUnavailable`."""
        try:
            info = await self.redis.info("cluster")
            if info.get("cluster_enabled"):
                from redis.asyncio.cluster import RedisCluster

                single = self.redis
                self.redis = RedisCluster.from_url(
                    self.url, socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s
                )
                await single.aclose()
                await self.redis.initialize()
                self.cluster = True
                self._scripts()
        except self._failures as exc:
            raise LogUnavailable(f"the live list's Redis does not answer: {type(exc).__name__}") from None

    async def put(self, room_id: str, summary: dict[str, Any]) -> None:
        try:
            await self._put(keys=[UNTIL_KEY, ROOMS_KEY], args=[room_id, orjson.dumps(summary), self.ttl_ms])
        except self._failures as exc:
            raise LogUnavailable(f"the live list could not be written: {type(exc).__name__}") from None

    async def drop(self, room_id: str) -> None:
        try:
            await self._drop(keys=[UNTIL_KEY, ROOMS_KEY], args=[room_id])
        except self._failures as exc:
            raise LogUnavailable(f"the live list could not be written: {type(exc).__name__}") from None

    async def races(self, limit: int) -> list[dict[str, Any]]:
        try:
            found = await self._read(keys=[UNTIL_KEY, ROOMS_KEY], args=[limit])
        except self._failures as exc:
            raise LogUnavailable(f"the live list could not be read: {type(exc).__name__}") from None
        return [orjson.loads(raw) for raw in found if raw is not None]

    async def close(self) -> None:
        await self.redis.aclose()
