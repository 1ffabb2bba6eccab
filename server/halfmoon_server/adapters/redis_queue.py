"""The quick-race queue shared by a cluster's instances, in Redis (:class:`~halfmoon_server.ports.QueueStore`).

Every instance keeps the players connected to it (their sockets) and puts them in one shared
queue; every instance runs the matcher (:func:`halfmoon_server.core.queue.plan`) on the whole
queue to tell its own players how many are in and when their race starts, and one instance at a
time — the holder of a lock with a short time to live — seats the groups: it makes their room and
leaves each matched player a note that their instance hands them.

Keys (one hash tag, so a Redis Cluster keeps them on one node):

- ``hm:{quick}:entries``: a hash, player (the hash of their key) → ``{"name", "since",
  "offer_from", "holder"}`` (``holder``: ``instance:serial``, the connection that queued);
- ``hm:{quick}:lock``: the matching instance's name, with a time to live;
- ``hm:{quick}:matched:{player}``: a matched player's note (``{"room", "players", "name"}``),
  kept a minute;
- ``hm:{quick}:alive:{instance}``: an instance that holds places is alive, renewed as it looks
  at the queue (:meth:`RedisQueue.beat`); a place whose instance has none is a dead instance's,
  taken out when the queue is read, and taken over by a new ``join`` of its player.
"""

from __future__ import annotations

from typing import Any

import orjson
from redis.exceptions import RedisError

from halfmoon_server.core.queue import Waiting
from halfmoon_server.errors import LogUnavailable

ENTRIES = "hm:{quick}:entries"
LOCK = "hm:{quick}:lock"
#: A matched player's note waits this long for their instance to hand it over.
MATCHED_TTL_MS = 60_000

# Renew the lock if this instance holds it, else take it if nobody does.
_CLAIM = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""


def _value(entry: Waiting, holder: str) -> bytes:
    return orjson.dumps({"name": entry.name, "since": entry.since, "offer_from": entry.offer_from, "holder": holder})


def _alive_key(instance: str) -> str:
    return f"hm:{{quick}}:alive:{instance}"


def _matched_key(player: str) -> str:
    return f"hm:{{quick}}:matched:{player}"


class RedisQueue:
    """The queue in Redis, through the room log's client (``RedisLog.redis``: one node or a
    Redis Cluster). Every call raises :class:`LogUnavailable` when Redis does not answer."""

    def __init__(self, client: Any) -> None:
        self.redis = client

    async def _call(self, what: str, work: Any) -> Any:
        try:
            return await work
        except (RedisError, OSError) as exc:
            raise LogUnavailable(f"the quick-race queue in Redis could not {what}: {type(exc).__name__}") from None

    async def beat(self, instance: str, ttl_ms: int) -> None:
        """``instance`` is alive for the next ``ttl_ms``: its places count."""
        await self._call("say this instance is alive", self.redis.set(_alive_key(instance), b"1", px=ttl_ms))

    async def _alive(self, holders: set[str]) -> set[str]:
        instances = sorted({holder.split(":", 1)[0] for holder in holders})
        if not instances:
            return set()
        found = []
        for instance in instances:  # (one key at a time: a Redis Cluster's MGET wants one slot)
            found.append(await self._call("read who is alive", self.redis.exists(_alive_key(instance))))
        return {instance for instance, here in zip(instances, found, strict=True) if here}

    async def join(self, entry: Waiting, holder: str) -> str | None:
        """Put ``entry`` in under ``holder``: None, or the holder already holding that player (a
        place of an instance that is no longer alive is taken over)."""
        value = _value(entry, holder)
        if await self._call("add a player", self.redis.hsetnx(ENTRIES, entry.player, value)):
            return None
        held = await self._call("read a player", self.redis.hget(ENTRIES, entry.player))
        if held is not None:
            other = str(orjson.loads(held)["holder"])
            if other.split(":", 1)[0] in await self._alive({other}):
                return other
        await self._call("take over a place", self.redis.hset(ENTRIES, entry.player, value))
        return None

    async def keep(self, entry: Waiting, holder: str) -> None:
        """The player keeps waiting: their entry as given (its ``offer_from`` moved on)."""
        value = _value(entry, holder)
        await self._call("keep a player", self.redis.hset(ENTRIES, entry.player, value))

    async def leave(self, player: str, holder: str) -> None:
        """Take the player out, if ``holder`` still holds their place."""
        held = await self._call("read a player", self.redis.hget(ENTRIES, player))
        if held is not None and orjson.loads(held)["holder"] == holder:
            await self._call("remove a player", self.redis.hdel(ENTRIES, player))

    async def waiting(self) -> list[tuple[Waiting, str]]:
        """Everyone in the queue, with their holders (the places of instances no longer alive are
        taken out)."""
        raw = await self._call("read the queue", self.redis.hgetall(ENTRIES))
        places = []
        for player, value in raw.items():
            data = orjson.loads(value)
            name = player.decode() if isinstance(player, bytes) else str(player)
            entry = Waiting(name, data["name"], int(data["since"]), data.get("offer_from"))
            places.append((entry, str(data["holder"])))
        alive = await self._alive({holder for _, holder in places})
        dead = [entry.player for entry, holder in places if holder.split(":", 1)[0] not in alive]
        if dead:
            await self._call("drop a dead instance's places", self.redis.hdel(ENTRIES, *dead))
        return [(entry, holder) for entry, holder in places if holder.split(":", 1)[0] in alive]

    async def claim(self, owner: str, ttl_ms: int) -> bool:
        """Whether ``owner`` holds the matching lock for the next ``ttl_ms`` (taken or renewed)."""
        held = await self._call("take the lock", self.redis.eval(_CLAIM, 1, LOCK, owner, ttl_ms))
        return bool(held)

    async def seat(self, notes: dict[str, dict[str, Any]]) -> None:
        """The matched players out of the queue, each with their note (player → note)."""
        if not notes:
            return
        await self._call("remove matched players", self.redis.hdel(ENTRIES, *notes))
        for player, note in notes.items():
            note_set = self.redis.set(_matched_key(player), orjson.dumps(note), px=MATCHED_TTL_MS)
            await self._call("note a match", note_set)

    async def matched(self, players: list[str]) -> dict[str, dict[str, Any]]:
        """The notes left for these players (each handed over once)."""
        notes: dict[str, dict[str, Any]] = {}
        for player in players:
            raw = await self._call("read a match", self.redis.getdel(_matched_key(player)))
            if raw is not None:
                notes[player] = orjson.loads(raw)
        return notes
