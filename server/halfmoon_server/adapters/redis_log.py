"""The room log of a cluster, in Redis: one owner per room, any instance takes a dead one's place.

Per room, under one hash tag (so a Redis Cluster keeps a room's keys on one shard):

- ``hm:{ROOM}:h`` — the header (claimed with ``SET NX``: room ids are unique across instances);
- ``hm:{ROOM}:log`` — a list, one JSON entry per command: ``RPUSH``'s answer is the entry's number;
- ``hm:{ROOM}:owner`` — ``"<instance> <epoch>"``, the room's owner and its lease (``PX``);
  ``hm:{ROOM}:epoch`` — the fencing epoch, one more at each new owner (``INCR``);
- ``hm:{ROOM}:sync`` — a counter confirmed reads write (with ``replicas``).

**One owner per room.** Only the owner holds the room, applies its commands and appends them;
another instance relays the room's connections there (:mod:`halfmoon_server.web.relay`). The
claim script (:meth:`RedisLog.claim`) takes a room whose owner key is gone (a new epoch), renews
the caller's own lease, or answers the holder and its lease's time left. **The append script is
fenced**: it appends only when the owner key still holds the caller's ``"<instance> <epoch>"``
(renewing the lease), else it answers ``fenced`` and appends nothing — so an owner that was paused
past its lease (a stopped process, a long GC pause, a lost network) can never append again once
another took the room; its copy is let go and its members told to connect again
(:meth:`~halfmoon_server.ports.Follower.fenced`). Idle rooms' leases are renewed every third of
the lease, one pipeline per master. Each instance keeps the rooms it owns in
``hm:owned:{<instance>}``: a survivor that stops hearing an instance's heartbeat
(:data:`ADOPT_AFTER_MS`) looks there and takes over every room whose lease ran out
(:meth:`RedisLog.adopt`), rebuilding it from the log. A room let go (asleep, dropped, a
shutdown) gives its lease back at once.

The append script answers every entry after the ones the owner's copy applied, so the owner
applies its own command at once and in order; nothing is published (no other instance follows
the room). Appends made while a round trip is under way go together in the next pipeline (group
commit, as the journal does). A command is acknowledged only once Redis has it: with
``appendonly yes`` and ``appendfsync always`` an acknowledged move survives Redis itself dying;
``everysec`` may lose the last second (docs/server.md).

Each entry's time is Redis's clock (``TIME`` in the script): one clock for every instance (in a
Redis Cluster, the clock of the room's master: keep the nodes' clocks in step, NTP).

**A Redis Cluster** (found at :meth:`RedisLog.open`: the node the URL names answers
``cluster_enabled:1``): every command and script touches the keys of one slot only — a room's
keys share their hash tag; the wake set is split into buckets (``hm:wake:{b<N>}``), each on a
slot of its own, and :meth:`RedisLog.due` reads them all; ``hm:instances``, ``hm:routes``,
``{hm:instances}:reads`` (in the slot of ``hm:instances``) and each ``hm:owned:{<instance>}`` are
one key each. The group commit and the lease renewals send one
pipeline per master, to the master that owns each room's slot; a node that fails or answers
``MOVED`` makes the client learn the cluster's map again (a replica promoted).

**A command is acknowledged only once a replica has it** when ``replicas`` > 0: each pipeline
ends with ``WAIT replicas wait_ms``, and only a confirmed append is delivered (applied here);
one the ``WAIT`` could not confirm in time is refused as uncertain (it may survive, or be lost
with its master). Reads that deliver entries (a catch-up, a load) write a counter in the room's
slot and ``WAIT`` too, so no instance applies an entry the replicas lack.

Across the cluster: ``hm:wake`` (a sorted set: room → when it next needs a look) lets a free
instance settle a room that nobody owns (asleep); ``hm:instances`` (instance → last heartbeat,
Redis's clock) tells which instances are heard from, ``hm:routes`` (instance → advertised URL)
where each is reached, ``{hm:instances}:reads`` (instance → version) the newest room log format
each reads: new rooms are written in one every instance heard from reads
(:meth:`RedisLog.shared_reads`). A dropped room leaves a tombstone for a while: nobody loads it
again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import redis.asyncio as aioredis
from redis.exceptions import (
    AskError,
    ClusterDownError,
    NoScriptError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    TryAgainError,
)

from halfmoon_server.adapters.journal import new_instance_name
from halfmoon_server.errors import LogUnavailable
from halfmoon_server.ports import Claim, LoadedRoom

if TYPE_CHECKING:
    from halfmoon_server.ports import Follower

log = logging.getLogger("halfmoon_server.redis_log")

Entry = dict[str, Any]

# KEYS: the log, the owner; ARGV: the entry, entries the caller applied, the caller's lease
# ("<instance> <epoch>"), the lease (ms). Fenced: unless the owner key holds the caller's lease,
# nothing is appended and the answer is 'fenced' (another instance owns the room now); else the
# lease is renewed. Each entry is stored as "<ms> <json>": its time is Redis's clock, one clock for
# every instance (of the room's shard, in a Redis Cluster). The answer: the entries after the ones
# the caller applied (false: the list is shorter than that, it went back).
_APPEND = """
if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 'fenced' end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
local now = redis.call('TIME')
local line = (now[1] * 1000 + math.floor(now[2] / 1000)) .. ' ' .. ARGV[1]
local n = redis.call('RPUSH', KEYS[1], line)
if n <= tonumber(ARGV[2]) then return false end
return redis.call('LRANGE', KEYS[1], tonumber(ARGV[2]), -1)
"""
# A room's header and its entries from ARGV[1] on; ARGV[2] == "1": also write the room's sync
# counter, so a WAIT that follows confirms the replicas hold everything read.
# KEYS: the header, the log, the sync counter.
_READ = """
if ARGV[2] == '1' then redis.call('INCR', KEYS[3]) end
return {redis.call('GET', KEYS[1]), redis.call('LRANGE', KEYS[2], tonumber(ARGV[1]), -1)}
"""
# A room's header, its latest snapshot ("<n> <json>", or nil) and its entries after the snapshot's n
# (all without one), in one read; ARGV[1] == "1": write the sync counter too (as _READ).
# KEYS: the header, the log, the sync counter, the snapshot.
_READ_FROM_SNAPSHOT = """
if ARGV[1] == '1' then redis.call('INCR', KEYS[3]) end
local snap = redis.call('GET', KEYS[4])
local from = 0
if snap then from = tonumber(string.match(snap, '^(%d+) ')) or 0 end
return {redis.call('GET', KEYS[1]), snap, redis.call('LRANGE', KEYS[2], from, -1)}
"""
# Keep a room's snapshot unless the one kept is newer; only while the room's header is there (a
# dropped room's tombstone takes none). KEYS: the snapshot, the header; ARGV: n, "<n> <json>".
_SAVE_SNAPSHOT = """
local header = redis.call('GET', KEYS[2])
if not header or header == '{"dropped": true}' then return 0 end
local kept = redis.call('GET', KEYS[1])
if kept and (tonumber(string.match(kept, '^(%d+) ')) or 0) >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""
# KEYS: the instances; ARGV: this instance, forget after (ms). Redis's clock: the time now and
# every instance with its last beat.
_HEARTBEAT = """
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('ZADD', KEYS[1], ms, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[2]))
return {ms, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')}
"""
# A room's ownership. KEYS: the owner, the epoch counter, the header; ARGV: this instance, the
# lease (ms), the tombstone. No live room: {''}. No owner: a new epoch, taken. This instance's:
# renewed. Another's: {holder, its lease's ms left}.
_CLAIM = """
local header = redis.call('GET', KEYS[3])
if not header or header == ARGV[3] then return {''} end
local held = redis.call('GET', KEYS[1])
if not held then
  local epoch = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. epoch, 'PX', ARGV[2])
  return {'mine', epoch}
end
local space = string.find(held, ' ', 1, true)
if string.sub(held, 1, space - 1) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'mine', tonumber(string.sub(held, space + 1))}
end
return {held, redis.call('PTTL', KEYS[1])}
"""
# Renew (ARGV[2]: the lease, ms) or let go ('' : delete) a lease, only if it is still the caller's
# (ARGV[1]: "<instance> <epoch>"). KEYS: the owner. 1: done, 0: another's (fenced).
_LEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""
TOMBSTONE = b'{"dropped": true}'
WAKE = "hm:wake"
#: The wake set's buckets in a Redis Cluster (``hm:wake:{b0}`` … ``{b15}``, spread over the slots).
WAKE_BUCKETS = 16
INSTANCES = "hm:instances"
#: Each instance's advertised URL (a hash: instance → URL), written with its heartbeat.
ROUTES = "hm:routes"
#: The newest room log format each instance reads (a hash: instance → version), written with its
#: heartbeat, in the slot of ``hm:instances`` (its hash tag). An instance of a release before it
#: writes none: it reads format 1 at most.
READS = "{hm:instances}:reads"
#: What an instance that says nothing of the formats it reads is taken to read.
OLDEST_READS = 1
HEARTBEAT_S = 1.0
#: An instance not heard from for this long gets no relayed connection (they wait for its
#: lease to run out instead, and take its rooms over).
STALE_AFTER_MS = 2_500
#: An instance not heard from for this long is looked at: its owned rooms whose leases ran out
#: are taken over (:meth:`RedisLog.adopt`). One heartbeat and a half: a late beat costs a look.
ADOPT_AFTER_MS = 1_500
#: How long an instance a relay could not reach gets no relayed connection.
UNREACHABLE_MS = 5_000
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


def _snapshot_key(room_id: str) -> str:
    """The room's latest snapshot, ``"<n> <json>"`` (:mod:`halfmoon_server.core.snapshots`)."""
    return f"hm:{{{room_id}}}:snap"


def _entry(line: bytes | str) -> Entry:
    """A stored line, ``"<ms> <json>"``, as an entry whose time is the stored one."""
    stamp, _, raw = (line.encode() if isinstance(line, str) else line).partition(b" ")
    entry: Entry = orjson.loads(raw)
    entry["t"] = int(stamp)
    return entry


def _reason(exc: BaseException) -> str:
    """What a Redis failure says, without the command it failed on. redis-py quotes a pipeline's
    failing command in the error («Command # 1 (SET hm:{ROOM}:h {…"code": …}) of pipeline caused
    error: …»): its arguments are a room's header (a daily's deal code, a sealed race's seed) or an
    entry (a rematch's seed), and these messages reach clients (``unavailable``) and log lines."""
    text = str(exc)
    return text.rsplit(" caused error: ", 1)[1] if " caused error: " in text else text


def _stopping() -> bool:
    """The running task was asked to stop: a cancellation redis-py turned into a connection
    error (a call cut short) must still end a background loop, or closing waits for ever."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _settle(done: asyncio.Future[int], outcome: BaseException | int) -> None:
    """Answer an append's waiter — its entry's number, or why it failed — unless it gave up
    waiting (cancelled: its connection closed), so the rest of its batch is still answered."""
    if done.done():
        return
    if isinstance(outcome, BaseException):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)


def _owner_key(room_id: str) -> str:
    """The room's owner and its lease: ``"<instance> <epoch>"``, expiring (``PX``)."""
    return f"hm:{{{room_id}}}:owner"


def _epoch_key(room_id: str) -> str:
    """The room's fencing epoch: one more at each new owner (``INCR``)."""
    return f"hm:{{{room_id}}}:epoch"


def _owned_key(instance: str) -> str:
    """The rooms an instance owns (a set, in a slot of its own), where survivors find a dead
    instance's rooms."""
    return f"hm:owned:{{{instance}}}"


def _version(raw: str | None) -> int:
    """A log format version an instance advertised (anything else: the oldest)."""
    if raw is None or not (raw.isascii() and raw.isdigit() and len(raw) <= 3):
        return OLDEST_READS
    return int(raw)


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _sync_key(room_id: str) -> str:
    """A counter a confirmed read writes, so ``WAIT`` covers what it read (in the room's slot)."""
    return f"hm:{{{room_id}}}:sync"


#: What a Redis call may raise: redis-py's cluster errors (an uncovered slot) are not RedisErrors.
_FAILURES = (RedisError, RedisClusterException, OSError)


@dataclass(slots=True)
class _Append:
    room: Follower
    entry: bytes
    applied: int
    done: asyncio.Future[int]
    lease: str  # the room's lease as this instance holds it: "<instance> <epoch>"


class RedisLog:
    """:class:`halfmoon_server.ports.RoomLog` on Redis, for a cluster of instances: one Redis node
    (with replicas or not), or a Redis Cluster (found by :meth:`open`)."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 2.0,
        replicas: int = 0,
        wait_ms: int = 500,
        lease_ms: int = 3000,
        advertise: str | None = None,
        reads: int = OLDEST_READS,
    ) -> None:
        self.url = url
        self.instance = new_instance_name()
        #: the newest room log format this instance reads (advertised with its heartbeat)
        self.reads = reads
        #: the newest every instance heard from reads, as the last heartbeat found (none yet: the
        #: oldest), and until when (loop time) that holds: a heartbeat that fails makes it the oldest
        self._shared_reads = OLDEST_READS
        self._shared_reads_until = 0.0
        #: how long a room's owner keeps it without renewing (ms)
        self.lease_ms = lease_ms
        #: this instance's internal URL, where the others relay its rooms' connections
        self.advertise = advertise
        self._leases: dict[str, str] = {}  # the rooms owned here: room → "<instance> <epoch>"
        self._renewed: dict[str, float] = {}  # when each lease was last renewed (loop time)
        self._releasing: dict[str, asyncio.Task[None]] = {}  # leases being let go
        self._routes: dict[str, str] = {}  # instance → advertised URL
        self._fresh: set[str] = set()  # instances heard from within STALE_AFTER_MS
        self._stale: list[str] = []  # the others not heard from for ADOPT_AFTER_MS
        self._unreachable: dict[str, float] = {}  # instance → until when (loop time)
        #: replicas that must hold an append before it is acknowledged (``WAIT``; 0: no wait)
        self.replicas = replicas
        self.wait_ms = wait_ms
        # a call that ends with a WAIT may take the wait on top of the time-out
        self.timeout_s = timeout_s = timeout_s + (wait_ms / 1000 if replicas else 0)
        # a bounded pool that makes bursts wait their turn (a thousand rooms followed at once)
        # instead of failing with "too many connections"
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            max_connections=MAX_CONNECTIONS,
            timeout=timeout_s,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
        )
        self.redis: Any = aioredis.Redis(connection_pool=pool)  # or a RedisCluster (open)
        #: whether the URL names a node of a Redis Cluster (known once open)
        self.cluster = False
        self._nodes: dict[str, aioredis.Redis] = {}  # a Redis Cluster's masters, by name
        self.rooms: dict[str, Follower] = {}  # the rooms followed here, by id
        self._wake_keys = [WAKE]
        self._append = self.redis.register_script(_APPEND)
        self._read = self.redis.register_script(_READ)
        self._read_from_snapshot = self.redis.register_script(_READ_FROM_SNAPSHOT)
        self._save_snapshot = self.redis.register_script(_SAVE_SNAPSHOT)
        self._beat = self.redis.register_script(_HEARTBEAT)
        self._claim = self.redis.register_script(_CLAIM)
        self._lease = self.redis.register_script(_LEASE)
        self._refreshing: asyncio.Task[None] | None = None
        self._alive: set[str] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()  # leases let go, owned sets tidied
        self._queue: list[_Append] = []
        self._writer: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Check Redis answers, learn whether it is a Redis Cluster, and start following.
        Raises :class:`LogUnavailable`."""
        try:
            await self.redis.ping()
            info = await self.redis.info("cluster")
            if info.get("cluster_enabled"):
                await self._open_cluster()
            # heard from before it owns anything: a death right after start leaves its rooms findable
            await self._beat_once()
        except _FAILURES as exc:
            raise LogUnavailable(f"Redis at {self.url} does not answer: {_reason(exc)}") from exc
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._heartbeat()),
            loop.create_task(self._renew_leases()),
        ]

    async def _open_cluster(self) -> None:
        """Talk to the Redis Cluster the URL's node belongs to: its map of slots, its masters."""
        from redis.asyncio.cluster import RedisCluster

        single = self.redis
        self.redis = RedisCluster.from_url(
            self.url,
            max_connections=4 * MAX_CONNECTIONS,
            socket_timeout=self.timeout_s,
            socket_connect_timeout=self.timeout_s,
        )
        await single.aclose()
        await single.connection_pool.disconnect()
        await self.redis.initialize()
        self.cluster = True
        self._wake_keys = [f"{WAKE}:{{b{n}}}" for n in range(WAKE_BUCKETS)]
        log.info("Redis at %s is a Redis Cluster of %d masters", self.url, len(self.redis.get_primaries()))

    async def ping(self) -> None:
        """PING Redis (every call has a connect and a read timeout: a blackholed Redis fails it)."""
        try:
            await self.redis.ping()
        except _FAILURES as exc:
            raise LogUnavailable(f"Redis at {self.url} does not answer: {_reason(exc)}") from exc

    def _node(self, room_id: str) -> aioredis.Redis:
        """The client for the room's keys: in a Redis Cluster, the master that owns their slot
        (raises when no master does)."""
        if not self.cluster:
            return self.redis  # type: ignore[no-any-return]
        node = self.redis.get_node_from_key(_log_key(room_id))
        client = self._nodes.get(node.name)
        if client is None:
            from redis.asyncio.connection import parse_url
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            options: dict[str, Any] = dict(parse_url(self.url))
            options.update(host=node.host, port=node.port)
            pool = aioredis.BlockingConnectionPool(
                max_connections=MAX_CONNECTIONS,
                timeout=self.timeout_s,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.timeout_s,
                retry=Retry(NoBackoff(), 0),  # an append sent twice would be logged twice
                **options,
            )
            client = self._nodes[node.name] = aioredis.Redis(connection_pool=pool)
        return client

    def _lost_node(self) -> None:
        """A master failed or no longer owns a slot: learn the cluster's map again (a replica
        may have been promoted), at most four times a second."""
        if not self.cluster or (self._refreshing is not None and not self._refreshing.done()):
            return

        async def refresh() -> None:
            with contextlib.suppress(*_FAILURES):
                await self.redis.nodes_manager.initialize()
            await asyncio.sleep(0.25)

        self._refreshing = asyncio.get_running_loop().create_task(refresh())

    # -- rooms --------------------------------------------------------------------------------------

    async def create(self, header: Entry, *, own: bool = True) -> bool:
        try:
            client = self._node(header["room"])
            async with client.pipeline(transaction=False) as pipe:
                pipe.set(_header_key(header["room"]), orjson.dumps(header), nx=True)
                if self.replicas:
                    pipe.wait(self.replicas, self.wait_ms)
                created, *acks = await pipe.execute()
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        if acks and int(acks[0]) < self.replicas:
            raise LogUnavailable(self._unconfirmed(int(acks[0])), certain=False)
        if created and own:
            await self.claim(header["room"])  # the instance that makes a room owns it
        return bool(created)

    # -- ownership ------------------------------------------------------------------------------------

    async def claim(self, room_id: str) -> Claim:
        """Own the room (a new epoch, or this instance's lease renewed) unless another
        instance's lease is live. The room goes in this instance's owned set first, so a death
        right after the claim leaves it findable (:meth:`adopt`)."""
        releasing = self._releasing.get(room_id)
        if releasing is not None:  # a lease being let go is gone before it is claimed again
            await asyncio.wait({releasing})
        owned = _owned_key(self.instance)
        try:
            if room_id not in self._leases:
                await self.redis.sadd(owned, room_id)
            sent = asyncio.get_running_loop().time()
            answer = await self._claim(
                keys=[_owner_key(room_id), _epoch_key(room_id), _header_key(room_id)],
                args=[self.instance, self.lease_ms, TOMBSTONE],
                client=self._node(room_id),
            )
            status = _text(answer[0])
            if status == "mine":
                self._leases[room_id] = f"{self.instance} {int(answer[1])}"
                self._renewed[room_id] = sent
                return Claim(self.instance, mine=True)
            self._leases.pop(room_id, None)
            self._renewed.pop(room_id, None)
            await self.redis.srem(owned, room_id)
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        if not status:
            return Claim(None)
        return Claim(status.split(" ", 1)[0], ttl_ms=max(0, int(answer[1])))

    async def owner(self, room_id: str) -> str | None:
        try:
            held = await self._node(room_id).get(_owner_key(room_id))
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        return None if held is None else _text(held).split(" ", 1)[0]

    def route(self, instance: str) -> str | None:
        if instance == self.instance or instance not in self._fresh:
            return None
        until = self._unreachable.get(instance)
        if until is not None:
            if asyncio.get_running_loop().time() < until:
                return None
            del self._unreachable[instance]
        return self._routes.get(instance)

    def unreachable(self, instance: str) -> None:
        self._unreachable[instance] = asyncio.get_running_loop().time() + UNREACHABLE_MS / 1000

    async def adopt(self) -> list[str]:
        """The rooms of instances not heard from for :data:`ADOPT_AFTER_MS` whose leases ran
        out: any survivor may claim them (the first claim wins). Rooms taken over, or gone,
        leave the stale instance's owned set."""
        orphans: list[str] = []
        try:
            for instance in self._stale:
                owned = _owned_key(instance)
                for raw in await self.redis.smembers(owned):
                    room_id = _text(raw)
                    async with self._node(room_id).pipeline(transaction=False) as pipe:
                        pipe.get(_owner_key(room_id))
                        pipe.get(_header_key(room_id))
                        held, header = await pipe.execute()
                    if header is None or header == TOMBSTONE:
                        await self.redis.srem(owned, room_id)  # forgotten meanwhile
                    elif held is None:
                        orphans.append(room_id)
                    elif _text(held).split(" ", 1)[0] != instance:
                        await self.redis.srem(owned, room_id)  # taken over
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        return orphans

    def _fence(self, room_id: str) -> None:
        """Another instance owns the room now: let it go here and tell its follower."""
        if self._leases.pop(room_id, None) is None:
            return
        self._renewed.pop(room_id, None)
        log.warning("room %s is owned by another instance now (this one's lease ran out): let go here", room_id)
        self._spawn(self._quietly(self.redis.srem(_owned_key(self.instance), room_id)))
        room = self.rooms.get(room_id)
        if room is not None:
            room.fenced()

    async def _quietly(self, call: Awaitable[Any]) -> None:
        try:
            await call
        except _FAILURES as exc:
            log.debug("Redis: %s", _reason(exc))

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _release(self, room_id: str) -> None:
        """Let the room's lease go (the room was dropped here): another instance may own it at once."""
        lease = self._leases.pop(room_id, None)
        self._renewed.pop(room_id, None)
        if lease is None:
            return

        async def release() -> None:
            try:
                await self._lease(keys=[_owner_key(room_id)], args=[lease, ""], client=self._node(room_id))
                await self.redis.srem(_owned_key(self.instance), room_id)
            except _FAILURES as exc:  # the lease runs out by itself
                log.debug("Redis: the lease of room %s could not be let go: %s", room_id, _reason(exc))
            finally:
                if self._releasing.get(room_id) is task:
                    del self._releasing[room_id]

        task = self._releasing[room_id] = self._spawn(release())

    async def _renew_leases(self) -> None:
        """Every third of the lease, renew the leases no append renewed since: one pipeline per
        master. A lease found to be another's is fenced (:meth:`_fence`)."""
        period = self.lease_ms / 3000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            groups: dict[int, tuple[aioredis.Redis, list[tuple[str, str]]]] = {}
            for room_id, at in list(self._renewed.items()):
                if now - at >= period * 0.9:
                    try:
                        client = self._node(room_id)
                    except _FAILURES:
                        self._lost_node()
                        continue
                    groups.setdefault(id(client), (client, []))[1].append((room_id, self._leases[room_id]))
            await asyncio.gather(*(self._renew(client, leases, now) for client, leases in groups.values()))
            if _stopping():  # (a cancellation redis-py swallowed)
                raise asyncio.CancelledError

    async def _renew(self, client: aioredis.Redis, leases: list[tuple[str, str]], sent: float) -> None:
        try:
            async with client.pipeline(transaction=False) as pipe:
                for room_id, lease in leases:
                    await self._lease(keys=[_owner_key(room_id)], args=[lease, self.lease_ms], client=pipe)
                answers = await pipe.execute(raise_on_error=False)
        except _FAILURES as exc:
            if _stopping():
                raise asyncio.CancelledError from exc
            self._lost_node()
            log.warning("Redis: %d room leases could not be renewed: %s", len(leases), _reason(exc))
            return
        for (room_id, lease), answer in zip(leases, answers, strict=True):
            if self._leases.get(room_id) != lease:
                continue  # let go or claimed again meanwhile
            if isinstance(answer, BaseException):
                self._lost_node()
            elif int(answer) == 1:
                self._renewed[room_id] = max(self._renewed.get(room_id, 0.0), sent)
            else:
                self._fence(room_id)

    def _unconfirmed(self, acks: int) -> str:
        return f"{acks} of {self.replicas} Redis replicas confirmed it within {self.wait_ms} ms"

    async def append(self, room_id: str, entry: Entry) -> int:
        room = self.rooms.get(room_id)
        if room is None:
            raise LogUnavailable(f"room {room_id} is not followed here")
        lease = self._leases.get(room_id)
        if lease is None:
            raise LogUnavailable(f"room {room_id} is not owned here: connect again")
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queue.append(_Append(room, orjson.dumps(entry), room.applied, done, lease))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())
        return await done

    async def _write(self) -> None:
        """Send everything queued in one pipeline per round trip (one per master, in a Redis
        Cluster), then deliver the answers."""
        while self._queue:
            batch, self._queue = self._queue, []
            groups: dict[int, tuple[aioredis.Redis, list[_Append]]] = {}
            for item in batch:
                try:
                    client = self._node(item.room.id)
                except _FAILURES as exc:  # no master owns the slot: nothing was sent
                    self._lost_node()
                    _settle(item.done, LogUnavailable(f"Redis: {_reason(exc)}"))
                    continue
                groups.setdefault(id(client), (client, []))[1].append(item)
            await asyncio.gather(*(self._commit(client, items) for client, items in groups.values()))

    async def _commit(self, client: aioredis.Redis, batch: list[_Append], *, loaded: bool = False) -> None:
        """One pipeline of appends to one node, then ``WAIT`` for its replicas when asked to.

        The appends go as plain ``EVALSHA``: through redis-py's script objects a pipeline first asks
        ``SCRIPT EXISTS`` in a round trip of its own, every time — one more round trip per group
        commit, paid most where batches are small. A node that does not have the script (a
        restarted or promoted node, a ``SCRIPT FLUSH``) answers ``NOSCRIPT`` without running
        anything: the script is loaded and those appends sent again, once (``loaded``); a second
        NOSCRIPT refuses them as not taken. Another client's flush can land between two appends
        of one batch: the first ran, the second is sent again with a ``WAIT`` of its own, and
        its confirmed answer delivers both — so an append whose own batch's ``WAIT`` fell short
        but whose entry is applied by then is acknowledged, not refused as maybe lost. (Two
        appends of one room in a batch come from different connections, each of which sends its
        next command only once its last is answered: one sent again after the other ran is
        ordered after it in the log, as if it had come later.)"""
        sent = asyncio.get_running_loop().time()
        try:
            async with client.pipeline(transaction=False) as pipe:
                for item in batch:
                    room_id = item.room.id
                    pipe.evalsha(  # queued in the pipeline (sent by execute)
                        self._append.sha,
                        2,
                        _log_key(room_id),
                        _owner_key(room_id),
                        item.entry,
                        item.applied,
                        item.lease,
                        self.lease_ms,
                    )
                if self.replicas:
                    pipe.wait(self.replicas, self.wait_ms)
                answers = await pipe.execute(raise_on_error=False)
        except _FAILURES as exc:
            self._lost_node()
            answers = [exc] * (len(batch) + (1 if self.replicas else 0))
        unloaded = [i for i, answer in enumerate(answers[: len(batch)]) if isinstance(answer, NoScriptError)]
        if unloaded and not loaded:
            again = [batch[i] for i in unloaded]
            try:
                await client.script_load(_APPEND)
            except _FAILURES as exc:
                self._lost_node()
                for item in again:
                    _settle(item.done, LogUnavailable(f"Redis: {_reason(exc)}"))  # (nothing ran)
            else:
                await self._commit(client, again, loaded=True)
            kept = [i for i in range(len(batch)) if i not in set(unloaded)]
            batch = [batch[i] for i in kept]
            answers = [answers[i] for i in kept] + answers[len(answers) - (1 if self.replicas else 0) :]
            if not batch:
                return
        unconfirmed = None
        if self.replicas:
            acks = answers.pop()
            if isinstance(acks, BaseException):
                unconfirmed = f"Redis: {acks}"
            elif int(acks) < self.replicas:
                unconfirmed = self._unconfirmed(int(acks))
        for item, answer in zip(batch, answers, strict=True):
            if isinstance(answer, (AskError, ClusterDownError, ReadOnlyError, TryAgainError, NoScriptError)):
                # it did not run (NOSCRIPT again after the reload: the node lost the script once more)
                self._lost_node()  # (a slot moved, a master turned replica: the map is learnt again)
                _settle(item.done, LogUnavailable(f"Redis: {type(answer).__name__}: {_reason(answer)}"))
            elif isinstance(answer, BaseException):  # it may have run before the answer was lost
                self._lost_node()
                _settle(item.done, LogUnavailable(f"Redis: {_reason(answer)}", certain=False))
            elif answer == b"fenced":  # another instance owns the room now: nothing was appended
                _settle(item.done, LogUnavailable("another server owns this room now: connect again"))
                self._fence(item.room.id)
            elif answer is None:  # the list is shorter than what this copy applied: it went back
                item.room.went_back()
                _settle(item.done, LogUnavailable("the room's log in Redis lost entries", certain=False))
            elif unconfirmed is not None and item.applied + len(answer) > item.room.applied:
                # in the master's list, maybe not in a replica's: not applied here (the room's
                # next entry brings it, if it stays)
                _settle(item.done, LogUnavailable(unconfirmed, certain=False))
            elif unconfirmed is not None:  # applied meanwhile: a confirmed answer brought it (the
                # appends of this batch sent again after NOSCRIPT, and their own WAIT)
                _settle(item.done, item.applied + len(answer))
            else:
                if self._leases.get(item.room.id) == item.lease:  # (the script renewed it)
                    self._renewed[item.room.id] = max(self._renewed.get(item.room.id, 0.0), sent)
                number = item.applied
                for line in answer:
                    number += 1
                    if number > item.room.applied:
                        item.room.deliver(number, _entry(line))
                _settle(item.done, number)

    async def _read_room(self, room_id: str, start: int) -> tuple[bytes | None, list[bytes]]:
        """The room's header and its entries from ``start`` (0: all), in one read; with replicas
        asked for, only once they hold everything read."""
        try:
            client = self._node(room_id)
            if not self.replicas:
                async with client.pipeline(transaction=True) as pipe:
                    pipe.get(_header_key(room_id))
                    pipe.lrange(_log_key(room_id), start, -1)
                    header, lines = await pipe.execute()
                return header, lines
            async with client.pipeline(transaction=False) as pipe:
                await self._read(
                    keys=[_header_key(room_id), _log_key(room_id), _sync_key(room_id)], args=[start, "1"], client=pipe
                )
                pipe.wait(self.replicas, self.wait_ms)
                (header, lines), acks = await pipe.execute()
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        if int(acks) < self.replicas:
            raise LogUnavailable(self._unconfirmed(int(acks)))
        return header, lines

    async def catch_up(self, room_id: str) -> None:
        room = self.rooms.get(room_id)
        if room is None:
            return  # (unfollowed meanwhile)
        applied = room.applied
        lines: list[bytes] | list[bytes | str]
        if self.replicas:
            _, lines = await self._read_room(room_id, applied)
        else:
            try:
                lines = await self._node(room_id).lrange(_log_key(room_id), applied, -1)
            except _FAILURES as exc:
                self._lost_node()
                raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        for number, line in enumerate(lines, applied + 1):
            room.deliver(number, _entry(line))

    async def load(self, room_id: str, *, snapshot: bool = True) -> LoadedRoom | None:
        if not snapshot:
            header, entries = await self._read_room(room_id, 0)
            kept: bytes | None = None
        else:
            header, kept, entries = await self._read_room_from_snapshot(room_id)
        if header is None or header == TOMBSTONE:
            return None
        base, data = 0, None
        if kept is not None:
            number, _, raw = kept.partition(b" ")
            base, data = int(number), orjson.loads(raw)
        return LoadedRoom(orjson.loads(header), [_entry(line) for line in entries], data, base)

    async def _read_room_from_snapshot(self, room_id: str) -> tuple[bytes | None, bytes | None, list[bytes]]:
        """The room's header, its latest snapshot and the entries after it, in one script (one
        round trip); with replicas asked for, only once they hold everything read."""
        keys = [_header_key(room_id), _log_key(room_id), _sync_key(room_id), _snapshot_key(room_id)]
        try:
            client = self._node(room_id)
            if not self.replicas:
                header, kept, lines = await self._read_from_snapshot(keys=keys, args=["0"], client=client)
                return header, kept, lines
            async with client.pipeline(transaction=False) as pipe:
                await self._read_from_snapshot(keys=keys, args=["1"], client=pipe)
                pipe.wait(self.replicas, self.wait_ms)
                (header, kept, lines), acks = await pipe.execute()
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        if int(acks) < self.replicas:
            raise LogUnavailable(self._unconfirmed(int(acks)))
        return header, kept, lines

    async def save_snapshot(self, room_id: str, number: int, snapshot: Entry) -> None:
        """Keep the room's snapshot as ``hm:{ROOM}:snap`` = ``"<number> <json>"`` (in the room's
        slot), unless a newer one is kept already."""
        line = b"%d %s" % (number, orjson.dumps(snapshot))
        try:
            await self._save_snapshot(
                keys=[_snapshot_key(room_id), _header_key(room_id)], args=[number, line], client=self._node(room_id)
            )
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc

    async def room_ids(self) -> list[str]:
        return []  # rooms are loaded where their players come, not all at start-up

    async def forget(self, room_id: str) -> None:
        """The room is over: its log and lease go; its id stays taken for a while, and a
        tombstone says the room is gone (nobody loads it again). (The room's keys in one
        transaction, its wake apart: they are in different slots of a Redis Cluster. Were the
        second lost, the room's wake would find its tombstone.)"""
        try:
            async with self._node(room_id).pipeline(transaction=True) as pipe:
                pipe.set(_header_key(room_id), TOMBSTONE, ex=FORGET_AFTER_S)
                pipe.delete(
                    _log_key(room_id),
                    _sync_key(room_id),
                    _owner_key(room_id),
                    _epoch_key(room_id),
                    _snapshot_key(room_id),
                )
                await pipe.execute()
            await self.redis.zrem(self._wake_key(room_id), room_id)
            self._leases.pop(room_id, None)
            self._renewed.pop(room_id, None)
            await self.redis.srem(_owned_key(self.instance), room_id)
        except _FAILURES as exc:
            self._lost_node()
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc

    def _wake_key(self, room_id: str) -> str:
        """The wake set's bucket of the room (one bucket on a single Redis node)."""
        if len(self._wake_keys) == 1:
            return self._wake_keys[0]
        return self._wake_keys[zlib.crc32(room_id.encode()) % len(self._wake_keys)]

    async def due(self, now: int) -> list[str]:
        """Rooms whose look is due and that no instance owns (no live lease); each is claimed for a few
        seconds (its wake moved on), so instances do not all take the same one. Every bucket of
        the wake set is read."""
        orphans: list[str] = []
        try:
            for key in self._wake_keys:
                rooms = await self.redis.zrangebyscore(key, "-inf", now, start=0, num=50)
                for raw in rooms:
                    room_id = raw.decode() if isinstance(raw, bytes) else str(raw)
                    if await self.redis.exists(_owner_key(room_id)):
                        continue  # its owner looks after it
                    if await self.redis.zadd(key, {room_id: now + LOOK_CLAIM_MS}, xx=True, ch=True):
                        orphans.append(room_id)
                if len(orphans) >= 50:
                    break
        except _FAILURES as exc:
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc
        return orphans

    async def wake(self, room_id: str, at: int | None) -> None:
        try:
            if at is None:
                await self.redis.zrem(self._wake_key(room_id), room_id)
            else:
                await self.redis.zadd(self._wake_key(room_id), {room_id: at})
        except _FAILURES as exc:
            raise LogUnavailable(f"Redis: {_reason(exc)}") from exc

    # -- following ------------------------------------------------------------------------------------

    def follow(self, follower: Follower) -> None:
        """Deliver the room's appends here: they are this instance's own (it owns the room, and
        only the owner appends), answered by the append script — nothing is published."""
        self.rooms[follower.id] = follower

    def unfollow(self, room_id: str) -> None:
        self.rooms.pop(room_id, None)
        self._release(room_id)

    async def _heartbeat(self) -> None:
        """Say this instance is alive (and where it is reached), and learn which others are."""
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self._beat_once()
            except asyncio.CancelledError:
                raise
            except _FAILURES as exc:
                if _stopping():
                    raise asyncio.CancelledError from exc
                log.debug("Redis heartbeat failed: %s", exc)
            except Exception:  # (what Redis held could not be read: the next beat tries again)
                log.exception("Redis heartbeat failed")
            if _stopping():  # (a cancellation redis-py swallowed)
                raise asyncio.CancelledError

    async def _beat_once(self) -> None:
        """One heartbeat: this instance's (its advertised URL with it), and every instance's age
        by Redis's clock — which are alive, which are heard from, which are looked at.

        The routes are read *before* the beat: an instance adds its route only after its own beat,
        so every route read belongs to an instance the beat then returns, unless it is long gone
        (out of the set). Read after, a route could belong to an instance that started between the
        two — and, missing from the beat, it would be deleted as forgotten, its rooms unreachable
        through the others until its next beat."""
        routes = {_text(k): _text(v) for k, v in (await self.redis.hgetall(ROUTES)).items()}
        reads = {_text(k): _text(v) for k, v in (await self.redis.hgetall(READS)).items()}
        now, beat = await self._beat(keys=[INSTANCES], args=[self.instance, 10 * DEAD_AFTER_MS], client=self.redis)
        ages = {_text(beat[k]): int(now) - int(float(beat[k + 1])) for k in range(0, len(beat), 2)}
        self._alive = {name for name, age in ages.items() if age < DEAD_AFTER_MS}
        self._fresh = {name for name, age in ages.items() if age < STALE_AFTER_MS}
        self._stale = [name for name, age in ages.items() if age >= ADOPT_AFTER_MS and name != self.instance]
        if self.advertise is not None:
            await self.redis.hset(ROUTES, self.instance, self.advertise)
            routes[self.instance] = self.advertise
        forgotten = [name for name in routes if name not in ages]  # (out of the heartbeat set: long gone)
        if forgotten:
            await self.redis.hdel(ROUTES, *forgotten)
        self._routes = {name: url for name, url in routes.items() if name in ages}
        if reads.get(self.instance) != str(self.reads):
            await self.redis.hset(READS, self.instance, self.reads)
            reads[self.instance] = str(self.reads)
        gone = [name for name in reads if name not in ages]
        if gone:
            await self.redis.hdel(READS, *gone)
        # (every instance still in the set, however long silent: a paused one may come back)
        self._shared_reads = min((_version(reads.get(name)) for name in ages), default=OLDEST_READS)
        self._shared_reads_until = asyncio.get_running_loop().time() + STALE_AFTER_MS / 1000

    def shared_reads(self) -> int | None:
        """The newest room log format every instance heard from reads (one that says nothing of
        it, of a release before it did, reads format 1); 1 too before the first heartbeat, and
        once the heartbeats have failed for :data:`STALE_AFTER_MS` (who runs is not known then)."""
        if asyncio.get_running_loop().time() > self._shared_reads_until:
            return OLDEST_READS
        return min(self._shared_reads, self.reads)

    def alive(self, instance: str) -> bool:
        if instance == self.instance or self._alive is None:
            return True  # not known yet: assume alive
        return instance in self._alive

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for room_id in list(self._leases):  # let go: the next connection claims each at once
            self._release(room_id)
        await asyncio.gather(*self._tasks, *self._background, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.redis.hdel(ROUTES, self.instance)
        with contextlib.suppress(Exception):
            await self.redis.hdel(READS, self.instance)
        if self._refreshing is not None:
            self._refreshing.cancel()
            await asyncio.gather(self._refreshing, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.redis.zrem(INSTANCES, self.instance)
        await self.redis.aclose()
        if not self.cluster:
            await self.redis.connection_pool.disconnect()  # the pool is ours: Redis does not close it
        for client in self._nodes.values():
            await client.aclose()
            await client.connection_pool.disconnect()
