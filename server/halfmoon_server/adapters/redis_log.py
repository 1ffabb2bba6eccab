"""The room log of a cluster, in Redis: every instance serves any player of any room.

Per room, under one hash tag (so a Redis Cluster keeps a room's keys on one shard):

- ``hm:{ROOM}:h`` — the header (claimed with ``SET NX``: room ids are unique across instances);
- ``hm:{ROOM}:log`` — a list, one JSON entry per command: ``RPUSH``'s answer is the entry's number;
- ``hm:{ROOM}:followers`` — the instances that hold the room.

Each instance listens on one channel of its own, ``hm:instance:<name>``. One Lua script appends
an entry, publishes it as ``"<room> <number> <json>"`` to every *other* follower's channel, and
answers every entry after the ones the caller's copy of the room has applied — so an instance
applies its own command at once and in order, and never hears it back; the others get it from
their channel, in the order the scripts ran. A gap (an instance that was away) is filled from
the list. Appends made while a round trip is under way go together in the next pipeline (group
commit, as the journal does). The instance's commands are acknowledged only once Redis has
them: with ``appendonly yes`` and ``appendfsync always`` an acknowledged move survives Redis
itself dying; ``everysec`` may lose the last second (docs/server.md).

Each entry's time is Redis's clock (``TIME`` in the script): one clock for every instance.

Across the cluster: ``hm:wake`` (a sorted set: room → when it next needs a look) lets a free
instance settle a room that no live instance holds (its holders died); ``hm:instances``
(instance → last heartbeat) tells which instances are alive, so the players and spectators of
one that died are counted out. A dropped room leaves a tombstone for a while: nobody loads it
again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from halfmoon_server.adapters.journal import new_instance_name
from halfmoon_server.errors import LogUnavailable

if TYPE_CHECKING:
    from halfmoon_server.rooms.room import Room

log = logging.getLogger("halfmoon_server.redis_log")

Entry = dict[str, Any]

# KEYS: the log, the followers; ARGV: the entry, entries the caller applied, the room, the caller.
# Each entry is stored as "<ms> <json>": its time is Redis's clock, one clock for every instance.
_APPEND = """
local now = redis.call('TIME')
local line = (now[1] * 1000 + math.floor(now[2] / 1000)) .. ' ' .. ARGV[1]
local n = redis.call('RPUSH', KEYS[1], line)
local message = ARGV[3] .. ' ' .. n .. ' ' .. line
for _, instance in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if instance ~= ARGV[4] then redis.call('PUBLISH', 'hm:instance:' .. instance, message) end
end
if n <= tonumber(ARGV[2]) then return false end
return redis.call('LRANGE', KEYS[1], tonumber(ARGV[2]), -1)
"""
TOMBSTONE = b'{"dropped": true}'
WAKE = "hm:wake"
INSTANCES = "hm:instances"
HEARTBEAT_S = 1.0
#: An instance whose heartbeat is older than this is taken for dead.
DEAD_AFTER_MS = 15_000
#: How long an instance that takes a room for a look keeps the others from taking it too.
LOOK_CLAIM_MS = 5_000
#: Connections to Redis one instance opens at most (appends go in pipelines: few are needed).
MAX_CONNECTIONS = 32
#: How long a dropped room's log stays readable.
FORGET_AFTER_S = 600


def _header_key(room_id: str) -> str:
    return f"hm:{{{room_id}}}:h"


def _log_key(room_id: str) -> str:
    return f"hm:{{{room_id}}}:log"


def _entry(line: bytes | str) -> Entry:
    """A stored line, ``"<ms> <json>"``, as an entry whose time is the stored one."""
    stamp, _, raw = (line.encode() if isinstance(line, str) else line).partition(b" ")
    entry: Entry = orjson.loads(raw)
    entry["t"] = int(stamp)
    return entry


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    """Answer an append's waiter, unless it gave up waiting (cancelled)."""
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


def _followers_key(room_id: str) -> str:
    return f"hm:{{{room_id}}}:followers"


@dataclass(slots=True)
class _Append:
    room: Room
    entry: bytes
    applied: int
    done: asyncio.Future[None]


class RedisLog:
    """:class:`halfmoon_server.ports.RoomLog` on Redis, for a cluster of instances."""

    def __init__(self, url: str, *, timeout_s: float = 2.0) -> None:
        self.url = url
        self.instance = new_instance_name()
        # a bounded pool that makes bursts wait their turn (a thousand rooms followed at once)
        # instead of failing with "too many connections"
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            max_connections=MAX_CONNECTIONS,
            timeout=timeout_s,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
        )
        self.redis = aioredis.Redis(connection_pool=pool)
        self.rooms: dict[str, Room] = {}
        self._append = self.redis.register_script(_APPEND)
        self._alive: set[str] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._following: set[asyncio.Task[None]] = set()
        self._follow_changes: dict[str, asyncio.Task[None]] = {}  # each room's last change, in order
        self._queue: list[_Append] = []
        self._writer: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Check Redis answers and start following. Raises :class:`LogUnavailable`."""
        try:
            await self.redis.ping()
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis at {self.url} does not answer: {exc}") from exc
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read_feed()), loop.create_task(self._heartbeat())]

    async def ping(self) -> None:
        """PING Redis (every call has a connect and a read timeout: a blackholed Redis fails it)."""
        try:
            await self.redis.ping()
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis at {self.url} does not answer: {exc}") from exc

    # -- rooms --------------------------------------------------------------------------------------

    async def create(self, header: Entry) -> bool:
        try:
            return bool(await self.redis.set(_header_key(header["room"]), orjson.dumps(header), nx=True))
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis: {exc}") from exc

    async def append(self, room: Room, entry: Entry) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Append(room, orjson.dumps(entry), room.applied, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())
        await done

    async def _write(self) -> None:
        """Send everything queued in one pipeline per round trip, then deliver the answers."""
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for item in batch:
                        room_id = item.room.id
                        await self._append(  # queued in the pipeline (sent by execute)
                            keys=[_log_key(room_id), _followers_key(room_id)],
                            args=[item.entry, item.applied, room_id, self.instance],
                            client=pipe,
                        )
                    answers = await pipe.execute(raise_on_error=False)
            except (RedisError, OSError) as exc:
                answers = [exc] * len(batch)
            for item, answer in zip(batch, answers, strict=True):
                # (an append whose waiter was cancelled meanwhile — its connection closed — is
                # delivered all the same, and the rest of the batch still answered)
                if isinstance(answer, BaseException):  # it may have run before the answer was lost
                    _settle(item.done, LogUnavailable(f"Redis: {answer}", certain=False))
                elif answer is None:  # the list is shorter than what this copy applied: it went back
                    item.room.lost = True
                    _settle(item.done, LogUnavailable("the room's log in Redis lost entries", certain=False))
                else:
                    for number, line in enumerate(answer, item.applied + 1):
                        if number > item.room.applied:
                            item.room.deliver(number, _entry(line))
                    _settle(item.done, None)

    async def catch_up(self, room: Room) -> None:
        applied = room.applied
        try:
            lines = await self.redis.lrange(_log_key(room.id), applied, -1)
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis: {exc}") from exc
        for number, line in enumerate(lines, applied + 1):
            room.deliver(number, _entry(line))

    async def load(self, room_id: str) -> tuple[Entry, list[Entry]] | None:
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.get(_header_key(room_id))
                pipe.lrange(_log_key(room_id), 0, -1)
                header, entries = await pipe.execute()
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis: {exc}") from exc
        if header is None or header == TOMBSTONE:
            return None
        return orjson.loads(header), [_entry(line) for line in entries]

    async def room_ids(self) -> list[str]:
        return []  # rooms are loaded where their players come, not all at start-up

    async def forget(self, room_id: str) -> None:
        """The room is over: its log and followers go; its id stays taken for a while, and a
        tombstone says the room is gone (nobody loads it again)."""
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.set(_header_key(room_id), TOMBSTONE, ex=FORGET_AFTER_S)
                pipe.delete(_log_key(room_id), _followers_key(room_id))
                pipe.zrem(WAKE, room_id)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis: {exc}") from exc

    async def due(self, now: int) -> list[str]:
        """Rooms whose look is due and that no live instance holds; each is claimed for a few
        seconds (its wake moved on), so instances do not all take the same one."""
        try:
            rooms = await self.redis.zrangebyscore(WAKE, "-inf", now, start=0, num=50)
            orphans = []
            for raw in rooms:
                room_id = raw.decode() if isinstance(raw, bytes) else str(raw)
                followers = await self.redis.smembers(_followers_key(room_id))
                if any(self.alive(f.decode() if isinstance(f, bytes) else str(f)) for f in followers):
                    continue  # its holder looks after it
                if await self.redis.zadd(WAKE, {room_id: now + LOOK_CLAIM_MS}, xx=True, ch=True):
                    orphans.append(room_id)
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis: {exc}") from exc
        return orphans

    async def wake(self, room_id: str, at: int | None) -> None:
        try:
            if at is None:
                await self.redis.zrem(WAKE, room_id)
            else:
                await self.redis.zadd(WAKE, {room_id: at})
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"Redis: {exc}") from exc

    # -- following ------------------------------------------------------------------------------------

    def follow(self, room: Room) -> None:
        self.rooms[room.id] = room
        self._follow(room.id, follow=True)

    def unfollow(self, room: Room) -> None:
        if self.rooms.pop(room.id, None) is not None:
            self._follow(room.id, follow=False)

    def _follow(self, room_id: str, *, follow: bool) -> None:
        # one room's changes go to Redis in the order they were made: a room dropped and loaded
        # again at once (a resume of a room asleep) must end followed, whichever connection of
        # the pool each change takes
        previous = self._follow_changes.get(room_id)

        async def change() -> None:
            if previous is not None:
                await asyncio.wait({previous})
            try:
                if follow:
                    await self.redis.sadd(_followers_key(room_id), self.instance)
                    room = self.rooms.get(room_id)
                    if room is not None:
                        await self.catch_up(room)  # what was appended before this instance followed
                else:
                    await self.redis.srem(_followers_key(room_id), self.instance)
            except (RedisError, OSError, LogUnavailable) as exc:
                log.warning("Redis: could not change who follows room %s: %s", room_id, exc)

        task = asyncio.get_running_loop().create_task(change())
        self._following.add(task)
        self._follow_changes[room_id] = task

        def done(finished: asyncio.Task[None]) -> None:
            self._following.discard(finished)
            if self._follow_changes.get(room_id) is finished:
                del self._follow_changes[room_id]

        task.add_done_callback(done)

    async def _read_feed(self) -> None:
        """Deliver the entries other instances append to the rooms held here; reconnect (and
        catch up every room) when Redis drops."""
        delay = 0.1
        channel = f"hm:instance:{self.instance}"
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.subscribe(channel)
                for room_id in list(self.rooms):  # Redis may have restarted without its sets
                    await self.redis.sadd(_followers_key(room_id), self.instance)
                for room in list(self.rooms.values()):
                    await self.catch_up(room)
                delay = 0.1
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message is None or message["type"] != "message":
                        continue
                    room_id, number, line = message["data"].split(b" ", 2)
                    target = self.rooms.get(room_id.decode())
                    if target is not None and int(number) > target.applied:
                        target.deliver(int(number), _entry(line))
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError, LogUnavailable) as exc:
                log.warning("Redis feed lost (%s); reconnecting in %.1f s", exc, delay)
            except Exception:
                log.exception("the Redis feed reader failed; restarting it")
            # (redis-py typed aclose() in 8.x, not before: a reference is fine with both, a call
            # would need a "type: ignore" the newer one reports as unused)
            close: Callable[[], Awaitable[None]] = pubsub.aclose
            with contextlib.suppress(Exception):
                await close()
            await asyncio.sleep(delay)
            delay = min(5.0, delay * 2)

    async def _heartbeat(self) -> None:
        """Say this instance is alive, learn which others are, and now and then take the dead
        ones out of the followers of the rooms held here."""
        beats = 0
        while True:
            try:
                seconds, micros = await self.redis.time()
                now = int(seconds) * 1000 + int(micros) // 1000
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.zadd(INSTANCES, {self.instance: now})
                    pipe.zremrangebyscore(INSTANCES, "-inf", now - 10 * DEAD_AFTER_MS)
                    pipe.zrangebyscore(INSTANCES, now - DEAD_AFTER_MS, "+inf")
                    *_, alive = await pipe.execute()
                self._alive = {a.decode() if isinstance(a, bytes) else str(a) for a in alive}
                beats += 1
                if beats % 10 == 0:
                    for room_id in list(self.rooms):
                        followers = await self.redis.smembers(_followers_key(room_id))
                        dead = [f for f in followers if not self.alive(f.decode() if isinstance(f, bytes) else str(f))]
                        if dead:
                            await self.redis.srem(_followers_key(room_id), *dead)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                log.debug("Redis heartbeat failed: %s", exc)
            await asyncio.sleep(HEARTBEAT_S)

    def alive(self, instance: str) -> bool:
        if instance == self.instance or self._alive is None:
            return True  # not known yet: assume alive
        return instance in self._alive

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._following, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.redis.zrem(INSTANCES, self.instance)
        await self.redis.aclose()
        await self.redis.connection_pool.disconnect()  # the pool is ours: Redis does not close it
