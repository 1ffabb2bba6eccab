"""The quick-race queue's shell: the I/O around the matcher (:mod:`halfmoon_server.core.queue`).

Players come in with ``queue`` over their WebSocket (``Outbox``) and go with ``unqueue`` or by
closing it. :meth:`QuickQueue.step` runs the matcher on who waits now: each group it matches
becomes a sealed race made through the lobby (:meth:`Lobby.create_quick`: the server draws the
deal, its seats held for the group's player keys), and its players are told the room
(``matched``) and join it as a race link would; everyone still waiting is told how many are in
their group and when it starts (``queued``) whenever that changes, and a player alone long enough
is offered a ghost of a recent quick race (one whose race is over, so its deal is out) or a solo
game. :meth:`QuickQueue.run` steps whenever the queue changes or the plan says it next will.

One identity — the hash of a player key — is in the queue once: a second ``queue`` from another
connection is refused (``already_queued``); from the same connection it is "keep waiting" (the
lone player's offer comes again ``lone_ms`` later). Each ``queue`` spends one of the address's
room credits (:meth:`Lobby.charge`), as every new game does.

Embedded, the queue lives in this process. In a cluster (``shared``: a
:class:`~halfmoon_server.ports.QueueStore`, Redis) every instance puts its players in one shared
queue and runs the matcher on all of it — to tell its own players their count and countdown —
but one instance at a time (a lock with a short time to live) seats the matched groups: it makes
the room and leaves each matched player a note, which their own instance hands them. Players of
an instance that stopped saying it is alive are left out of the plan, and their places go; a
place this instance no longer holds (its removal failed) is taken out on its next look.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from halfmoon.protocol import NAME_MAX, Error, Json, Matched, Queued, encode
from halfmoon_server.core.names import name_key
from halfmoon_server.core.queue import Plan, QueueRules, RatingOf, Status, Waiting, plan
from halfmoon_server.errors import LogUnavailable, Refusal, StorageError
from halfmoon_server.ports import Outbox, QueueStore, Storage
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.settings import Settings

log = logging.getLogger("halfmoon_server.quick")
#: A shared queue (Redis) that does not answer is said in the log at most this often.
WARN_EVERY_MS = 60_000
T = TypeVar("T")

#: Quick races remembered to offer a lone player as a ghost (the latest first).
RECENT_RACES = 20
#: In a cluster: how often an instance looks at the shared queue (others' players come and go
#: unseen), and how long the matching lock lasts unless renewed.
SHARED_POLL_S = 0.25
LOCK_TTL_MS = 2_000
#: An instance's places count while it says it is alive (each look renews it for this long).
ALIVE_TTL_MS = 5_000


def rules_of(settings: Settings) -> QueueRules:
    """The matcher's rules from the server's settings."""
    return QueueRules(
        max_players=settings.quick_max_players,
        fill_ms=int(settings.quick_fill_s * 1000),
        lone_ms=int(settings.quick_lone_s * 1000),
    )


@dataclass(slots=True)
class _Place:
    """One player's place in the queue: their entry, their connection, what they were last told."""

    entry: Waiting
    outbox: Outbox
    holder: str
    told: Status | None = None


def distinct_names(names: list[str]) -> list[str]:
    """The names a matched group joins its race under: each as queued, but a name that is the same
    as an earlier one (or looks the same: :func:`~halfmoon_server.core.names.name_key`) gets a
    number — the race refuses two of one name (``name_taken``).

    >>> distinct_names(["Ada", "ada", "Bea", "ADA"])
    ['Ada', 'ada 2', 'Bea', 'ADA 3']
    """
    taken: set[str] = set()
    out: list[str] = []
    for name in names:
        chosen, number = name, 1
        while name_key(chosen) in taken:
            number += 1
            suffix = f" {number}"
            chosen = name[: NAME_MAX - len(suffix)].rstrip() + suffix
        taken.add(name_key(chosen))
        out.append(chosen)
    return out


class QuickQueue:
    """This process's quick-race queue. See the module docstring. ``rating_of``: each waiting
    player's rating (by the hash of their key), or None for none — players are then matched
    within a band that widens the longer they wait (no function: no band)."""

    def __init__(
        self,
        lobby: Lobby,
        settings: Settings,
        *,
        rating_of: RatingOf | None = None,
        shared: QueueStore | None = None,
        ratings: Storage | None = None,
    ) -> None:
        self.lobby = lobby
        self.shared = shared
        self.instance = lobby.log.instance
        self._serial = itertools.count(1)
        self._leaving: set[asyncio.Task[None]] = set()
        self._joining: set[str] = set()  # players being put in the shared queue (not in places yet)
        self.clock = settings.clock
        self.rules = rules_of(settings)
        self.join_ms = int(settings.quick_join_s * 1000)
        self.rating_of = rating_of
        #: where a player's rating is read as they queue (the ratings job's table): a settled
        #: rating puts them in a band; a provisional one, none, or a database that does not answer
        #: leaves them unbanded (``rating_of``, when given, is asked instead)
        self.ratings = ratings
        self._known: dict[str, float] = {}  # the settled ratings of the players waiting here
        self._arrivals = asyncio.Lock()
        self._warned_at: int | None = None  # when the shared queue's failure was last logged
        self.places: dict[str, _Place] = {}  # by identity, in order of arrival
        self.recent: deque[str] = deque(maxlen=RECENT_RACES)  # quick rooms made here, the latest last
        self._changed = asyncio.Event()

    # -- who waits -------------------------------------------------------------------------------------

    def holds(self, outbox: Outbox) -> bool:
        """Whether this connection waits in the queue."""
        return any(place.outbox is outbox for place in self.places.values())

    def count(self) -> int:
        return len(self.places)

    async def queue(self, outbox: Outbox, name: str, player: str, client: str) -> None:
        """``player`` (the hash of their key) comes in under ``name``, or — already in from this
        connection — keeps waiting. Raises :class:`Refusal` (``already_queued`` for an identity
        another connection holds a place for, ``rate_limited``, ``server_full``,
        ``shutting_down``)."""
        # one arrival at a time, in the order they came: awaiting a rating (or the shared queue)
        # must not let a later arrival take its place first
        async with self._arrivals:
            now = self.clock.now_ms()
            place = self.places.get(player)
            if place is not None and place.outbox is not outbox:
                raise Refusal("already_queued", "you are in the quick-race queue already (another tab or device?)")
            if place is None and self.holds(outbox):
                raise Refusal(
                    "already_queued", "this connection waits in the quick-race queue already under another key"
                )
            if place is not None:  # keep waiting: the offer comes again lone_ms from now
                place.entry = Waiting(player, name, place.entry.since, offer_from=now)
                place.told = None
                if self.shared is not None:
                    await self._shared("keep a player", self.shared.keep(place.entry, place.holder))
            else:
                self.lobby.ensure_capacity()
                await self._learn_rating(player)
                entry, holder = Waiting(player, name, now), f"{self.instance}:{next(self._serial)}"
                if self.shared is not None:
                    await self._shared("say this instance is alive", self.shared.beat(self.instance, ALIVE_TTL_MS))
                    self._joining.add(player)
                    try:
                        held = await self._shared("add a player", self.shared.join(entry, holder))
                    finally:
                        self._joining.discard(player)
                    if held is not None:
                        raise Refusal(
                            "already_queued", "you are in the quick-race queue already (another tab or device?)"
                        )
                try:
                    self.lobby.charge(client)
                except Refusal:
                    if self.shared is not None:
                        await self._shared("remove a player", self.shared.leave(player, holder))
                    raise
                self.places[player] = _Place(entry, outbox, holder)
        await self.step()  # (told at once: queued, or matched)
        self._changed.set()  # the run loop's next wake-up may be sooner now

    def unqueue(self, outbox: Outbox) -> None:
        """This connection's player leaves the queue. Raises :class:`Refusal` ``not_queued``."""
        if not self.drop(outbox):
            raise Refusal("not_queued", "you are not in the quick-race queue")

    def drop(self, outbox: Outbox) -> bool:
        """Take this connection's place out (it left, or closed); whether it had one."""
        gone = [player for player, place in self.places.items() if place.outbox is outbox]
        for player in gone:
            self._forget(player)
        if gone:
            self._changed.set()
        return bool(gone)

    def _forget(self, player: str) -> None:
        """Take a place out here, and from the shared queue (in the background: a close cannot wait)."""
        place = self.places.pop(player)
        if self.shared is not None:
            task = asyncio.get_running_loop().create_task(self._leave_shared(player, place.holder))
            self._leaving.add(task)
            task.add_done_callback(self._leaving.discard)

    async def _leave_shared(self, player: str, holder: str) -> None:
        assert self.shared is not None
        try:
            await self.shared.leave(player, holder)
        except LogUnavailable:  # left in Redis: this instance's next look takes it out
            log.warning("a player who left the quick-race queue could not be taken out of Redis")

    async def _shared(self, what: str, work: Awaitable[T]) -> T:
        """A call to the shared queue; Redis down is ``unavailable`` (nothing changed)."""
        try:
            return await work
        except LogUnavailable:
            raise Refusal("unavailable", f"the quick-race queue cannot {what} right now; try again") from None

    # -- matching ---------------------------------------------------------------------------------------

    async def step(self) -> int | None:
        """Run the matcher once: seat the groups it matched, tell everyone else what changed.
        Returns when the plan next changes by itself (ms; None: when the queue does)."""
        now = self.clock.now_ms()
        for player in [p for p, place in self.places.items() if place.outbox.closed]:
            self._forget(player)
        if self.shared is None:
            result = plan([place.entry for place in self.places.values()], now, self.rules, self._ratings())
            for group in result.matches:
                await self._seat(group, now)
        else:
            try:
                result = await self._step_shared(now)
            except LogUnavailable as exc:  # tried again at every step; said once a minute through an outage
                if self._warned_at is None or now - self._warned_at >= WARN_EVERY_MS:
                    self._warned_at = now
                    log.warning("the quick-race queue in Redis: %s (tried again at every step)", exc)
                return now + 1000
        ghost: Json | None = None
        waiting = {p: status for p, status in result.waiting.items() if p in self.places}
        offers = [p for p, status in waiting.items() if status.offer and self.places[p].told != status]
        if offers:
            ghost = await self.ghost()
        for player, status in waiting.items():
            place = self.places[player]
            if place.told == status:
                continue
            place.told = status
            starts_in = None if status.starts_at is None else max(0, status.starts_at - now)
            place.outbox.send(encode(Queued(status.count, status.starts_at, starts_in, status.offer, ghost)))
        return result.next_at

    def _ratings(self) -> RatingOf:
        rating_of = self.rating_of
        if rating_of is None:
            return self._known.get
        return rating_of

    async def _learn_rating(self, player: str) -> None:
        """Read a newcomer's rating (settled ones only) for the band; forget the ratings of those
        no longer waiting here."""
        for gone in [p for p in self._known if p not in self.places]:
            del self._known[gone]
        if self.ratings is None or self.rating_of is not None:
            return
        try:
            rated, _ = await self.ratings.player_rating(player, 0)
        except StorageError:
            log.warning("a quick-race player's rating could not be read: matched without a band")
            return
        if rated is not None and not rated.skill.provisional:
            self._known[player] = float(rated.skill.shown)

    async def _step_shared(self, now: int) -> Plan:
        """The cluster's step: the plan of the whole shared queue (players of an instance that
        stopped saying it is alive left out); the groups seated if this instance holds the lock; this instance's matched
        players told their room."""
        assert self.shared is not None
        await self.shared.beat(self.instance, ALIVE_TTL_MS)
        entries = []
        for entry, holder in await self.shared.waiting():
            place = self.places.get(entry.player)
            mine = holder.split(":", 1)[0] == self.instance and entry.player not in self._joining
            if mine and (place is None or place.holder != holder):
                await self.shared.leave(entry.player, holder)  # gone from here: its removal had failed
                continue
            entries.append(entry)
        result = plan(entries, now, self.rules, self._ratings())
        if result.matches and await self.shared.claim(self.instance, LOCK_TTL_MS):
            for group in result.matches:
                try:
                    room = await self.lobby.create_quick([e.player for e in group], start_by=now + self.join_ms)
                except Refusal as refusal:  # they stay in the queue: tried again on the next step
                    log.warning("no quick race could be made: %s", refusal.message)
                    continue
                self.recent.append(room.id)
                names = distinct_names([entry.name for entry in group])
                notes = {
                    e.player: {"room": room.id, "players": len(group), "name": n}
                    for e, n in zip(group, names, strict=True)
                }
                await self.shared.seat(notes)
        for player, note in (await self.shared.matched(list(self.places))).items():
            place = self.places.pop(player, None)
            if place is not None:
                place.outbox.send(encode(Matched(str(note["room"]), int(note["players"]), str(note["name"]))))
        return result

    async def _seat(self, group: list[Waiting], now: int) -> None:
        """Make the group's sealed race and tell its players the room (or why there is none)."""
        places = [self.places.pop(entry.player) for entry in group]
        try:
            room = await self.lobby.create_quick([entry.player for entry in group], start_by=now + self.join_ms)
        except Refusal as refusal:
            for place in places:
                place.outbox.send(encode(Error(refusal.code, f"no quick race could be made: {refusal.message}")))
            return
        self.recent.append(room.id)
        log.debug("quick race %s for %d players", room.id, len(group))
        for place, name in zip(places, distinct_names([entry.name for entry in group]), strict=True):
            place.outbox.send(encode(Matched(room.id, len(group), name)))

    async def ghost(self) -> Json | None:
        """A recent quick race's best game to race as a ghost — one whose race is over (so its
        deal and record are out: docs/security.md) and that has its times — or None."""
        for room_id in reversed(self.recent):
            try:
                room = await self.lobby.find(room_id, hold=False)
                if room is not None and (room.race.results is None or room.race.running_since() is not None):
                    continue  # still raced (or a rematch of it is): its deal is not out
                games = await self.lobby.storage.games_of_room(room_id, 8)
            except Exception:  # a ghost is a nicety: the offer goes without one
                log.warning("no ghost from quick race %s: its games could not be read", room_id)
                continue
            for game in games:
                if game.record.get("times") and game.mode == "race":
                    return {"game": game.id, "code": game.code, "name": game.nickname}
        return None

    async def run(self) -> None:
        """Step whenever the queue changes, or when the plan says it next changes by itself."""
        while True:
            self._changed.clear()
            try:
                next_at = await self.step()
            except Exception:
                log.exception("the quick-race queue failed a step")
                next_at = self.clock.now_ms() + 1000
            timeout = None if next_at is None else max(0.0, (next_at - self.clock.now_ms()) / 1000)
            if self.shared is not None:  # others' players come and go unseen here: look again soon
                timeout = SHARED_POLL_S if timeout is None else min(timeout, SHARED_POLL_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
