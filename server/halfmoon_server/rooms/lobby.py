"""Where rooms come from and go: races made for a link (``POST /api/rooms``), solo games and
daily attempts (started at once), the server's capacity and each address's room credits, the
rooms this instance holds (made here, or loaded from the room log when a player of a room made
elsewhere comes here), and the ticker that settles deadlines, stores games nobody stored,
notices players whose instance died, and closes abandoned rooms.

The transport (:mod:`halfmoon_server.web.ws`, :mod:`halfmoon_server.web.rest`) asks the :class:`Lobby`
for a room and hands it the connection; it never builds one itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import zlib
from collections import OrderedDict
from dataclasses import asdict
from datetime import date
from typing import Any

from halfmoon.codes import DealCode, new_seal_seed, random_code
from halfmoon.errors import InvalidCodeError
from halfmoon.protocol import ROOM_ALPHABET, ROOM_ID_LENGTH, Mode, Phase
from halfmoon_server.adapters.live_list import MemoryLiveList
from halfmoon_server.clock import utc_datetime
from halfmoon_server.core.commands import room_header
from halfmoon_server.core.events import PlayerJoined
from halfmoon_server.core.limits import CreatorLimits
from halfmoon_server.core.live import live_summary
from halfmoon_server.core.modes import ModeRules, TimeLimit, rules_for
from halfmoon_server.core.names import name_key
from halfmoon_server.core.race import QuickSeats, RaceConfig
from halfmoon_server.core.snapshots import SnapshotError
from halfmoon_server.errors import LogUnavailable, Refusal, StorageError
from halfmoon_server.ports import LiveList, LoadedRoom, Outbox, RoomLog, Storage
from halfmoon_server.rooms.daily import DailyService
from halfmoon_server.rooms.room import CLOSE_MOVED, Room, RoomServices
from halfmoon_server.settings import Settings

log = logging.getLogger("halfmoon_server.lobby")

_SYSTEM_RANDOM = secrets.SystemRandom()
#: The ticker looks after this many rooms, then lets the event loop run: at 10,000 players
#: (2,500 rooms) a whole round took ~22 ms, a stall every tick for every room's moves.
TICK_SLICE = 200
#: The ticker's round looks at a held room with nothing pressing once every this many rounds
#: (every 2 s at the default 0.5 s tick); one with a deadline passed, results to record or store,
#: or a copy gone wrong is looked at in every round. Deadlines have the room's own timer; what
#: the look finds besides (staleness, a finished room to put to sleep, seats held by an instance
#: that died, its next look to write) is minutes apart or may wait a round or two. At 10,000
#: idle connected players (2,500 rooms) this took their cost from 0.077 to 0.057 of a core
#: (docs/benchmarks.md); at a human's pace it is inside the noise.
QUIET_LOOK_ROUNDS = 4
#: A live list that does not answer is said in the log at most this often (it is tried every round).
LIVE_WARN_EVERY_MS = 60_000
#: How long a read of the live list answers ``GET /api/live`` here: every visitor's home page
#: asks every 15 s, and in a cluster each read is a Redis call of up to :data:`LIVE_READ` entries.
#: This instance's own changes are seen at once (they clear it).
LIVE_CACHE_MS = 1000
#: How many listed races a read takes (the list's bound; the answer picks the most watched).
LIVE_READ = 1000
#: How many times a connection waits for a silent owner's lease to run out before it gives up
#: (``unavailable``): each wait is the lease's time left, at most one lease.
CLAIM_TRIES = 4
#: A room the log woke that could not be loaded (the log did not answer, or a header this
#: server cannot read) is looked at again after this: at most a log line a minute for it.
RETRY_LOOK_MS = 60_000
#: How many read copies (a REST read of a room not held here) are kept to answer the next reads
#: while their room's log is unchanged: rebuilding a room whose race holds tens of thousands of
#: steps takes ~13 ms of the loop, and a client could ask for it again and again.
READ_COPIES = 32
#: How many read copies are built at once (a REST read of a room not held here: the log's read,
#: the snapshot's restore, the entries after it replayed in slices); the next reads wait their
#: turn. Each build lets the loop run between slices, but a client asking for many long rooms at
#: once would have as many builds take turns with the players' moves: a move then waited behind
#: a slice of every one of them.
READS_AT_ONCE = 4
#: How many daily claims the database did not answer for are remembered (each one's name, address
#: and account get it back when they ask again: :meth:`Lobby.daily`), and how many dropped rooms
#: each keeps (one a retry that failed in its turn). Past them a retry is unranked, as it was.
UNSURE_CLAIMS = 4096
UNSURE_ROOMS_A_CLAIM = 8


class OwnedElsewhere(Exception):
    """The room is owned by another live instance (a cluster): its connections are relayed there
    (:mod:`halfmoon_server.web.relay`) — never a room held here too."""

    def __init__(self, room_id: str, instance: str, url: str) -> None:
        super().__init__(f"room {room_id} is owned by instance {instance} at {url}")
        self.room_id = room_id
        self.instance = instance
        self.url = url


def race_code(text: str | None) -> DealCode:
    """The deal a player or host asks for (None: a fresh random short one). Raises :class:`Refusal`
    ``bad_code`` for a malformed code or a daily-challenge code (played only as the daily). A
    sealed race's code (kind S, out once its race is over) recreates its deal like any other."""
    if text is None:
        return random_code(_SYSTEM_RANDOM)
    try:
        code = DealCode.parse(text)
    except InvalidCodeError as exc:
        raise Refusal("bad_code", str(exc)) from None
    if code.kind == "D":
        raise Refusal("bad_code", f"{code} is a daily-challenge deal; play it with 'daily' on its day")
    return code


def new_token() -> str:
    """A player's secret for resuming (32 url-safe characters)."""
    return secrets.token_urlsafe(24)


class Lobby:
    """The rooms of this instance: made, found, looked after, dropped. See the module docstring."""

    def __init__(
        self,
        settings: Settings,
        room_log: RoomLog,
        services: RoomServices,
        storage: Storage,
        daily: DailyService,
        live: LiveList | None = None,
    ) -> None:
        self.settings = settings
        #: the public races in play (``GET /api/live``): this instance lists the ones it holds
        self.live = live if live is not None else MemoryLiveList(settings.clock, int(settings.live_ttl_s * 1000))
        #: what this instance last put on the live list, by room: the summary and when
        self._listed: dict[str, tuple[dict[str, object], int]] = {}
        self._live_warned_at = -LIVE_WARN_EVERY_MS
        self._live_read: tuple[int, list[dict[str, object]]] | None = None  # (when, what)
        self.clock = settings.clock
        self.log = room_log
        self.services = services
        self.storage = storage
        self.daily_service = daily
        self.rooms: dict[str, Room] = {}
        self._held_since: dict[str, int] = {}  # when each room held here was made or loaded
        #: the next look last written to the log's wake set for each room held here (:func:`_look_worth_writing`)
        self._looks_written: dict[str, int] = {}
        self._looked_at: dict[str, int] = {}  # when the ticker last looked after each room held here
        self.draining = False
        self.daily_limit_s = settings.daily_time_limit_s
        self._claiming = 0  # daily attempts being set up (their room may not be held yet)
        #: daily claims the database may have recorded but did not answer for, by (day, name key,
        #: address key, account): the rooms made for them and dropped unseen (:meth:`daily`)
        self._unsure_claims: OrderedDict[tuple[date, str, str, str | None], tuple[str, ...]] = OrderedDict()
        self._loading: dict[str, asyncio.Future[Room | None]] = {}
        #: read copies (``find(hold=False)``) by room, each with the length, last entry and header of the log
        #: it was rebuilt from: reused while the log is the same (:data:`READ_COPIES`)
        self._read_copies: OrderedDict[str, tuple[tuple[int, object], dict[str, Any], Room]] = OrderedDict()
        self._reads = asyncio.Semaphore(READS_AT_ONCE)  # read copies being built (READS_AT_ONCE)
        self.creators = CreatorLimits(settings.room_burst, settings.room_per_min / 60.0)
        self.config = RaceConfig(
            max_players=settings.max_players,
            countdown_ms=int(settings.countdown_s * 1000),
            default_time_limit_s=settings.default_time_limit_s,
            abandon_after_ms=int(settings.abandon_after_s * 1000),
            finished_ttl_ms=int(settings.finished_ttl_s * 1000),
            tap_floor_ms=settings.tap_floor_ms,
            daily_time_limit_s=settings.daily_time_limit_s,
        )
        self.hold_ms = int(settings.finished_hold_s * 1000)
        #: the ticker's rounds look at a room with nothing pressing this often (:data:`QUIET_LOOK_ROUNDS`)
        self.quiet_look_ms = int(QUIET_LOOK_ROUNDS * settings.tick_s * 1000)
        self._writes_version: int | None = None  # the log format new rooms were last written in

    def _log_version(self) -> int:
        """The log format a new room is written in: ``--room-log-version``, and no newer than
        every instance sharing the room log reads (a rolling upgrade: an instance of the earlier
        release may have to take the room over). Said in the log whenever it changes."""
        version = self.settings.room_log_version
        shared = self.log.shared_reads()
        if shared is not None:
            version = max(1, min(version, shared))
        if version != self._writes_version:
            capped = version != self.settings.room_log_version
            why = " (an instance sharing the room log reads no newer)" if capped else ""
            log.info("new rooms' logs are written in format %d%s", version, why)
            self._writes_version = version
        return version

    # -- rooms held here ---------------------------------------------------------------------------

    def _hold(self, room: Room) -> Room:
        self.rooms[room.id] = room
        self._held_since[room.id] = self.clock.now_ms()
        self.log.follow(room)
        return room

    def _release(self, room: Room) -> None:
        room.close_timer()
        if self.rooms.get(room.id) is room:  # (not a copy that was replaced meanwhile)
            del self.rooms[room.id]
            self._held_since.pop(room.id, None)
            self._looks_written.pop(room.id, None)
            self._looked_at.pop(room.id, None)
            self.log.unfollow(room.id)

    def seal_seed(self, room_id: str, round_: int) -> str:
        """A new secret seed for a sealed race (the room's race number ``round_``): 256 bits from
        the server's secret and 16 fresh random bytes (docs/security.md, "Nobody picks the deal")."""
        return new_seal_seed(self.daily_service.secret, secrets.token_bytes(16), f"{room_id}:{round_}")

    async def _new_room(
        self,
        mode: Mode,
        code: DealCode | None,
        daily_day: date | None = None,
        *,
        salt: str | None = None,
        listed: bool = False,
        quick: QuickSeats | None = None,
        for_others: bool = False,
    ) -> Room:
        """A new room, its id claimed in the room log (unique across instances and restarts).
        ``code`` None: a sealed race, dealt at its start from a seed drawn here (its commitment is
        out from now on, see ``Race``), in a mode that may seal its deal. ``daily_day`` and
        ``salt``: a daily attempt's day and the salt that opens the day's commitment, in the
        daily mode (its rules object's ``daily``). ``listed``: public, on the live list while
        its race is in play (in a mode that may be watched); else private to whoever has its link.
        ``quick``: a quick race's held seats (a quick race is always listed among the public races).
        ``for_others``: made for players not connected here (a race's link, a quick race's matched
        players): in a cluster nobody owns it yet — it waits asleep in the log, and the instance
        their connections reach (``/ws?room=ID``, routed by room) claims it, so none is relayed."""
        listed = listed or quick is not None
        if listed and not rules_for(mode).watchable:
            raise ValueError(f"a {mode} room cannot be watched: it cannot be listed")
        rules = rules_for(mode)
        if code is None and not rules.may_seal:
            raise ValueError(f"a {mode} room is dealt from a code: it cannot be sealed")
        if rules.daily != (daily_day is not None):
            raise ValueError(f"a {mode} room {'needs' if rules.daily else 'has no'} daily day")
        for _ in range(50):
            room_id = "".join(secrets.choice(ROOM_ALPHABET) for _ in range(ROOM_ID_LENGTH))
            header = room_header(
                room_id,
                mode,
                None if code is None else str(code),
                created_at=self.clock.now_ms(),
                nonce=secrets.token_hex(8),
                daily_day=daily_day.isoformat() if daily_day else None,
                listed=listed,
                version=self._log_version(),
            )
            header["config"] = asdict(self.config)
            if code is None:
                header["seed"] = self.seal_seed(room_id, 1)
            if salt is not None:
                header["salt"] = salt
            if quick is not None:
                header["quick"] = quick.to_json()
            unowned = for_others and self.settings.redis_url is not None
            try:
                created = await self.log.create(header, own=not unowned)
            except LogUnavailable as exc:
                raise Refusal("unavailable", f"no new room can be made right now ({exc}); try again") from None
            if created:
                room = Room(header, self.services)
                if unowned and await self._leave_asleep(room):
                    return room
                return self._hold(room)
        raise Refusal("server_full", "no free room id was found; try again")

    async def _leave_asleep(self, room: Room) -> bool:
        """Leave a new room nobody owns asleep in the log, due for a look when it may be abandoned
        (a free instance looks if none of its players ever comes); False when the log does not
        take the wake-up — then this instance owns and holds it (its players are relayed here)."""
        try:
            await self.log.wake(room.id, _next_look(room, self.clock.now_ms()))
            return True
        except LogUnavailable:
            with contextlib.suppress(LogUnavailable):
                await self.log.claim(room.id)
            return False

    async def find(self, room_id: str, *, hold: bool = True) -> Room | None:
        """The room with this id: held here, or loaded from the room log (a room made on another
        instance, or before a restart) and held from now on. ``hold=False`` (a REST read): a copy
        rebuilt to be read and dropped, taking no place here. None when there is no such live room.

        In a cluster a room is held by its owner only: holding claims it (:meth:`_claim`), and
        raises :class:`OwnedElsewhere` when another live instance owns it.

        Raises :class:`Refusal` ``unavailable`` when the log does not answer."""
        room = self.rooms.get(room_id)
        if room is not None and room.lost:  # fenced, or its log went back: let this copy go
            self._let_go(room)
            room = None
        if room is not None:
            return room
        if not hold:
            async with self._reads:  # (at most READS_AT_ONCE builds take turns with the moves)
                return await self._load(room_id, hold=False)
        loading = self._loading.get(room_id)
        if loading is not None:
            loaded = await asyncio.shield(loading)
            if loaded is None or self.rooms.get(room_id) is loaded:
                return loaded
            return await self.find(room_id)  # dropped again before this turn came: load it anew
        future: asyncio.Future[Room | None] = asyncio.get_running_loop().create_future()
        self._loading[room_id] = future
        try:
            room = await self._load(room_id)
            future.set_result(room)
            return room
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()
            raise
        finally:
            del self._loading[room_id]

    async def owned_elsewhere(self, room_id: str) -> OwnedElsewhere | None:
        """Whether another live instance owns the room (a cluster), without claiming it: where a
        connection whose URL names the room is relayed. None when the log does not answer."""
        if room_id in self.rooms:
            return None
        try:
            owner = await self.log.owner(room_id)
        except LogUnavailable:
            return None
        url = None if owner is None else self.log.route(owner)
        return None if owner is None or url is None else OwnedElsewhere(room_id, owner, url)

    async def _claim(self, room_id: str) -> bool:
        """Own the room before holding it: False when there is no such live room. An owner that
        is heard from gets the connection (:class:`OwnedElsewhere`); one that is not (dead, or
        paused) is waited for until its lease runs out, then the room is taken over here — logged
        as the survivors' own takeovers are (:meth:`_adopt`), one line per room."""
        waited = False
        for _ in range(CLAIM_TRIES):
            try:
                claim = await self.log.claim(room_id)
            except LogUnavailable as exc:
                raise Refusal("unavailable", f"room {room_id} cannot be reached right now ({exc}); try again") from None
            if claim.mine:
                if waited:
                    log.info("room %s taken over from an owner that stopped answering", room_id)
                return True
            if claim.owner is None:
                return False
            url = self.log.route(claim.owner)
            if url is not None:
                raise OwnedElsewhere(room_id, claim.owner, url)
            waited = True
            await asyncio.sleep(min(claim.ttl_ms, self.settings.owner_lease_ms) / 1000 + 0.01)
        raise Refusal("unavailable", f"room {room_id} is held by a server that does not answer; try again")

    async def _load(self, room_id: str, *, hold: bool = True) -> Room | None:
        if hold and not await self._claim(room_id):
            return None
        try:
            loaded = await self.log.load(room_id)
        except LogUnavailable as exc:
            raise Refusal("unavailable", f"room {room_id} cannot be reached right now ({exc}); try again") from None
        if loaded is None:
            self._read_copies.pop(room_id, None)
            return None
        if not hold:
            kept = self._read_copies.get(room_id)
            if kept is not None and kept[0] == _log_mark(loaded) and kept[1] == loaded.header:
                self._read_copies.move_to_end(room_id)
                return kept[2]  # its log is unchanged: the copy is what a rebuild would give
        held = self.rooms.get(room_id)
        if hold and held is not None:
            return held  # held meanwhile (a drop whose wake-up failed took it back): one copy only
        try:
            room = Room(loaded.header, self.services)
        except Exception as exc:  # a header this version cannot read: a newer server's, or damaged
            if hold:  # (claimed above: let it go, so an instance that reads it can take it)
                self.log.unfollow(room_id)
            # (the kind of failure, not its text: a damaged header's deal code or seed is quoted there)
            why = exc.message if isinstance(exc, Refusal) else type(exc).__name__
            log.error("room %s cannot be rebuilt from its log: %s", room_id, why)
            message = f"room {room_id} cannot be rebuilt on this server; the games already over in it are kept"
            raise Refusal("unavailable", message) from None
        entries = loaded.entries
        if loaded.snapshot is not None:
            try:  # the latest snapshot, then only the entries after it (a copy to read: lazily)
                room.restore(loaded.snapshot, lazy=not hold)
            except SnapshotError as exc:  # another release's, or damaged: replayed from the first entry
                log.warning("room %s: its snapshot is not used (%s); its whole log is replayed", room_id, exc)
                return await self._load_whole(room_id, hold=hold)
        if hold:
            self._hold(room)  # follow first: entries appended while it replays are caught up
            room.rebuild(entries, live=True)
        else:
            await asyncio.sleep(0)  # (the log's read and the restore, then the loop runs)
            await room.replay(entries)  # a copy to read: the loop runs between slices
            self._keep_copy(room_id, loaded, room)
        room.compact()  # a room whose snapshot is far behind (a log of an earlier release) gets one now
        return room

    def _keep_copy(self, room_id: str, loaded: LoadedRoom, room: Room) -> None:
        """Keep a read copy for the next reads of the room while its log is unchanged (the
        :data:`READ_COPIES` latest read)."""
        self._read_copies[room_id] = (_log_mark(loaded), loaded.header, room)
        self._read_copies.move_to_end(room_id)
        while len(self._read_copies) > READ_COPIES:
            self._read_copies.popitem(last=False)

    async def _load_whole(self, room_id: str, *, hold: bool) -> Room | None:
        """Load a room replaying its whole log (its snapshot could not be used)."""
        try:
            loaded = await self.log.load(room_id, snapshot=False)
        except LogUnavailable as exc:
            raise Refusal("unavailable", f"room {room_id} cannot be reached right now ({exc}); try again") from None
        if loaded is None:
            return None
        held = self.rooms.get(room_id)
        if hold and held is not None:
            return held
        room = Room(loaded.header, self.services)  # (its header was read once already)
        if hold:
            self._hold(room)
            room.rebuild(loaded.entries, live=True)
        else:
            await room.replay(loaded.entries)
        return room

    async def restore(self) -> int:
        """At start-up: rebuild every room the log holds (the embedded server after a restart);
        their players resume with their tokens. A room that cannot be rebuilt is logged and left
        out — one damaged room does not keep the server from starting — and answers
        ``unavailable`` when asked for (never ``finished``). Returns how many were rebuilt."""
        restored = 0
        for room_id in await self.log.room_ids():
            if room_id not in self.rooms:
                try:
                    room = await self.find(room_id)
                except Refusal as refusal:
                    log.warning("room %s is left out at start-up: %s", room_id, refusal.message)
                    continue
                except OwnedElsewhere:
                    continue
                if room is None:
                    continue
                restored += 1
                now = self.clock.now_ms()
                if self._may_sleep(room, now, restoring=True):
                    # a finished room nobody is in yet: back to sleep at once (woken at its expiry),
                    # so a journal of more rooms than --max-rooms (asleep, they take no place) is
                    # never all held at once
                    await self._put_to_sleep(room, now)
        return restored

    # -- making rooms --------------------------------------------------------------------------------

    def ensure_capacity(self) -> None:
        """Raises :class:`Refusal` ``server_full`` when no room can be added (daily attempts
        being claimed hold a place), ``shutting_down`` while this instance drains."""
        if self.draining:
            raise Refusal("shutting_down", "this server is restarting; connect again to carry on")
        if len(self.rooms) + self._claiming >= self.settings.max_rooms:
            raise Refusal("server_full", "the server holds as many rooms as it can; try again later")

    def charge(self, client: str) -> None:
        """Spend one of the client's room credits. Raises :class:`Refusal` ``rate_limited``."""
        if not self.creators.allow(client, self.clock.now_ms() / 1000.0):
            raise Refusal("rate_limited", "too many new games from your address in a short time; try again in a minute")

    async def create_race(self, code: DealCode | None, client: str, *, listed: bool = False) -> Room:
        """A race lobby for a link: on ``code`` (the host chose it: an open race), or on a deal
        the server draws (None: a sealed race). ``listed``: the host made it public (on the live
        list while it is in play); else it is private to whoever has the link. Raises
        :class:`Refusal` (``server_full``, ``rate_limited``, ``unavailable``)."""
        self.ensure_capacity()
        self.charge(client)
        return await self._new_room(Mode.RACE, code, listed=listed, for_others=True)

    async def create_quick(self, players: list[str], *, start_by: int) -> Room:
        """A quick race for the players the queue matched (the hashes of their keys): sealed (the
        server draws the deal), its seats held for them, started once they are all in or at
        ``start_by`` with whoever came. Their room credits were spent when they queued. Raises
        :class:`Refusal` (``server_full``, ``shutting_down``, ``unavailable``)."""
        self.ensure_capacity()
        quick = QuickSeats(frozenset(players), start_by)
        return await self._new_room(Mode.RACE, None, quick=quick, for_others=True)

    async def solo(
        self, outbox: Outbox, name: str, code: DealCode, client: str, *, player: str | None = None, bot: bool = False
    ) -> tuple[Room, str]:
        """A solo game on ``code``, started at once: the room and the player's id. ``player``:
        the hash of the player's key (:func:`halfmoon.protocol.player_key_hash`), kept with the game;
        ``bot``: the player said it is a program.
        Raises :class:`Refusal` (``server_full``, ``rate_limited``, ``unavailable``)."""
        self.ensure_capacity()
        self.charge(client)
        room = await self._new_room(Mode.SOLO, code)
        return room, await self._start_single(room, outbox, name, ranked=True, player=player, bot=bot)

    async def _start_single(
        self,
        room: Room,
        outbox: Outbox,
        name: str,
        *,
        ranked: bool,
        day: date | None = None,
        player: str | None = None,
        bot: bool = False,
    ) -> str:
        """Start a room of a mode with no lobby with its one player (the time limit as the
        mode's rules say; ``day``: a daily attempt's); returns the player's id."""
        time_limit_s = self._single_time_limit(room.race.rules, day)
        entry: dict[str, object] = {"k": "single", "n": name, "tok": new_token(), "r": ranked}
        if bot:
            entry["bot"] = True  # shown as a bot, never ranked
        if time_limit_s is not None:
            entry["lim"] = time_limit_s
        if player is not None:
            entry["pk"] = player
        events = await room.submit(entry, outbox)
        return next(e.player.id for e in events if isinstance(e, PlayerJoined))

    async def resume_daily(self, outbox: Outbox, account: str) -> Room | None:
        """Seat ``outbox`` in ``account``'s attempt of today, when it has one still being played
        (another signed-in device of the account started it): the same seat, board and clock, as
        a ``resume`` would (the device it was on is told ``resumed on another connection``). The
        welcome carries no token: the seat's token stays with the device that started it. None
        when the account has no attempt today, or it is over.

        Raises :class:`Refusal` (``unavailable`` when the database or the room log does not
        answer), :class:`OwnedElsewhere` (a cluster: relayed to the owner)."""
        day = self.daily_service.today()
        try:
            room_id = await self.storage.daily_attempt_room(day, account)
        except StorageError as exc:
            log.warning("an account's daily attempt could not be read: %s", exc)
            raise Refusal("unavailable", "the daily challenge cannot be read right now; try again") from None
        if room_id is None:
            return None
        room = await self.find(room_id)
        if room is None:
            return None
        seat = next(iter(room.race.players.values()), None)
        if seat is None or not seat.playing or room.race.rules.mode is not Mode.DAILY:
            return None
        await room.submit({"k": "connect", "p": seat.id}, outbox)
        return room

    async def daily(
        self,
        outbox: Outbox,
        name: str,
        client: str,
        *,
        player: str | None = None,
        bot: bool = False,
        account: str | None = None,
    ) -> tuple[Room, str]:
        """Today's daily challenge for ``name``, started at once: ranked if it is their first
        attempt of the day — and, with ``account`` (the account the player key or the signed-in
        device belongs to), the account's first, whichever of its devices started it — and not a
        program's (``bot``). The room is made before the attempt is claimed, so a room that
        cannot be made spends nothing. Raises :class:`Refusal` (``server_full``,
        ``rate_limited``, ``unavailable`` when the database or the room log does not answer)."""
        self.ensure_capacity()  # before the ranked attempt is spent
        self.charge(client)
        day = self.daily_service.today()
        address = self.daily_service.address_key(client)
        claim = (day, name_key(name), address, account)
        self._claiming += 1
        room: Room | None = None
        try:
            code = DealCode.parse(await self.daily_service.code_for(day))
            room = await self._new_room(Mode.DAILY, code, daily_day=day, salt=self.daily_service.salt_for(day))
            ranked = await self.storage.claim_daily_attempt(
                day,
                claim[1],
                utc_datetime(self.clock.now_ms()),
                address=address,
                per_address=self.settings.daily_ranked_per_address,
                account=account,
                room=room.id,
                retrying=self._unsure_claims.get(claim, ()),
            )
        except StorageError as exc:
            log.warning("a daily attempt could not be set up: %s", exc)
            if room is not None:  # the claim was asked for: the database may have recorded it
                self._remember_unsure_claim(claim, room.id)  # (before the await: a retry may come)
                await self._discard(room)  # nobody saw a card of it
            raise Refusal("unavailable", "the daily challenge cannot be set up right now; try again") from None
        finally:
            self._claiming -= 1
        self._unsure_claims.pop(claim, None)
        if self.daily_service.revealed(day):
            # set up across the day's reveal (a database slow at the stroke of the reveal): the day's
            # code is public now, and an attempt on it would be ranked on a deal anyone can read
            await self._discard(room)
            raise Refusal("unavailable", "the daily challenge changed while your attempt was set up; ask for it again")
        return room, await self._start_single(room, outbox, name, ranked=ranked, day=day, player=player, bot=bot)

    def _remember_unsure_claim(self, claim: tuple[date, str, str, str | None], room: str) -> None:
        """Keep the room of a daily claim the database did not answer for, so that the same name,
        address and account asking again get that claim back (ranked as it was) rather than a
        second, unranked one — unless a claim sharing its name, address or account was made
        since, on any instance (the database says: its cards may have been seen). Bounded:
        today's claims only, the newest :data:`UNSURE_CLAIMS`."""
        for stale in [c for c in self._unsure_claims if c[0] != claim[0]]:
            del self._unsure_claims[stale]
        rooms = self._unsure_claims.pop(claim, ())
        self._unsure_claims[claim] = (*rooms, room)[-UNSURE_ROOMS_A_CLAIM:]
        while len(self._unsure_claims) > UNSURE_CLAIMS:
            self._unsure_claims.popitem(last=False)

    async def _discard(self, room: Room) -> None:
        """Drop a room made for nobody (no entry in its log yet) and clear its log."""
        self._release(room)
        with contextlib.suppress(LogUnavailable):
            await self.log.forget(room.id)

    def _single_time_limit(self, rules: ModeRules, day: date | None) -> int | None:
        """The time limit (s) of a game started at once, as its mode's rules say: none, or the
        daily's. Raises :class:`ValueError` for a mode whose host chooses it (a race starts from
        its lobby)."""
        match rules.time_limit:
            case TimeLimit.NONE:
                return None
            case TimeLimit.DAILY:
                assert day is not None
                # an attempt that starts after midnight (the day was taken before the awaits)
                # must still end by the time the day's code is published
                left_s = (self.daily_service.reveal_at(day) - self.clock.now_ms()) // 1000
                return max(1, min(self.daily_limit_s, left_s))
            case TimeLimit.HOST:
                raise ValueError(f"a {rules.mode} room starts from its lobby, at its host's time limit")

    # -- housekeeping ----------------------------------------------------------------------------------

    async def tick(self, *, every_room: bool = True) -> None:
        """Deadlines due, games left unrecorded, players and spectators whose instance died,
        abandoned rooms; then the rooms the log says need a look that no live instance holds.
        The ticker's rounds (``every_room`` False) look at a room with nothing pressing only
        every :data:`QUIET_LOOK_ROUNDS` rounds."""
        now = self.clock.now_ms()
        quiet_ms = self.quiet_look_ms
        looked = 0
        for room in list(self.rooms.values()):
            if self.rooms.get(room.id) is not room:  # (dropped meanwhile)
                continue
            if every_room or self._look_due(room, now, quiet_ms):
                looked += 1
                if looked % TICK_SLICE == 0:
                    await asyncio.sleep(0)  # let the rooms' moves through between slices
                    if self.rooms.get(room.id) is not room:
                        continue
                await self._look_after(room, now)
        await self.list_live(now)
        await self._adopt(now)
        try:
            due = await self.log.due(now)
        except LogUnavailable:
            return
        for room_id in due:
            if room_id in self.rooms:
                continue  # held here: looked after by the rounds above
            try:
                found = await self.find(room_id)
            except Refusal:  # the log did not answer: its look is tried again a little later
                with contextlib.suppress(LogUnavailable):
                    await self.log.wake(room_id, now + RETRY_LOOK_MS)
                continue
            except OwnedElsewhere:
                continue  # its owner looks after it
            if found is None:
                await self.log.wake(room_id, None)
                continue
            await self._look_after(found, now)
            if self.rooms.get(found.id) is found and found.idle:
                await self._put_to_sleep(found, now)  # looked at for nobody here: its next look is due elsewhere too

    async def live_races(self, now: int) -> list[dict[str, object]]:
        """The races on the live list (every instance's, in a cluster), as last read: read again
        once :data:`LIVE_CACHE_MS` old, or after this instance changed the list. Raises
        :class:`LogUnavailable` when the list does not answer."""
        if self._live_read is None or now - self._live_read[0] >= LIVE_CACHE_MS:
            self._live_read = (now, await self.live.races(LIVE_READ))
        return self._live_read[1]

    async def list_live(self, now: int) -> None:
        """Keep the live list up to date with the listed rooms held here (called by the ticker):
        a room in play put there when its summary changed (its start, a player finished, a
        spectator came or went) and at least every third of the list's ``ttl_ms``; a room no
        longer in play (over, back in its lobby for a rematch) or no longer held here dropped.
        Every instance holding a room does the same (the same summary: the log is the same); a
        Redis that does not answer is tried again at the next round."""
        refresh_ms = self.live.ttl_ms // 3
        try:
            for room_id in [room_id for room_id in self._listed if room_id not in self.rooms]:
                self._live_read = None
                await self.live.drop(room_id)
                del self._listed[room_id]
            for room in list(self.rooms.values()):
                if not room.listed:
                    continue  # (a private room: never on the list; the policy says so too)
                summary = live_summary(room.race, listed=room.listed)
                held = self._listed.get(room.id)
                if summary is None:
                    if held is not None:
                        self._live_read = None
                        await self.live.drop(room.id)
                        del self._listed[room.id]
                elif held is None or held[0] != summary or now - held[1] >= refresh_ms:
                    self._live_read = None
                    await self.live.put(room.id, summary)
                    self._listed[room.id] = (summary, now)
        except LogUnavailable as exc:
            if now - self._live_warned_at >= LIVE_WARN_EVERY_MS:  # (one line a minute through an outage)
                self._live_warned_at = now
                log.warning("the live list could not be updated (tried again at each round): %s", exc)

    async def _adopt(self, now: int) -> None:
        """Take over the rooms of an owner that stopped being heard from, once their leases ran
        out (a cluster): each is claimed, rebuilt from its log and held here; its players and
        spectators resume here (or through a relay) with their tokens."""
        try:
            orphans = await self.log.adopt()
        except LogUnavailable:
            return
        for room_id in orphans:
            if room_id in self.rooms:
                continue
            try:
                room = await self.find(room_id)
            except (Refusal, OwnedElsewhere):  # another survivor was first, or the log failed
                continue
            if room is not None:
                log.info("room %s taken over from an owner that stopped answering", room_id)
                await self._look_after(room, now)

    def _let_go(self, room: Room) -> None:
        """A copy that must not be held any longer (fenced: another instance owns the room; or
        its log went back): released, its members told to connect again (they resume on the
        room's owner, or on a copy loaded afresh)."""
        self._release(room)
        for outbox in [*room.outboxes.values(), *room.spectators]:
            outbox.close(CLOSE_MOVED, "the room is being reloaded: connect again")

    def _look_due(self, room: Room, now: int, quiet_ms: int) -> bool:
        """Whether the ticker's round looks after ``room`` now: not looked at for ``quiet_ms``, or
        something pressing (a copy gone wrong, results to record or store, a deadline passed).
        A look "in the future" (the wall clock was set back) is due too."""
        looked = self._looked_at.get(room.id)
        if looked is None or not 0 <= now - looked < quiet_ms or room.lost or room.state.results_pending:
            return True
        deadline = room.race.next_deadline()
        return deadline is not None and deadline <= now

    async def _look_after(self, room: Room, now: int) -> None:
        if room.id in self._looked_at:
            self._looked_at[room.id] = now
        else:  # its first look: taken as made earlier by a part of the quiet time that its id says,
            # so that rooms held at once (restored at start-up, adopted) are not all looked at in one round
            self._looked_at[room.id] = now - zlib.crc32(room.id.encode()) % max(1, self.quiet_look_ms)
        if room.lost:  # fenced, or its log went back: what this copy holds is wrong
            self._let_go(room)
            return
        await room.tick()
        room.forget_orphans(now)
        race = room.race
        for player_id, holder in list(room.state.holders.items()):
            racer = race.players.get(player_id) or race.seated.get(player_id)  # (seated: not in this race)
            if racer is None:
                continue
            # only the room's owner holds its members: a seat held elsewhere (an owner that died
            # or lost the room) is away until its player resumes here
            if racer.connected and player_id not in room.outboxes and _instance(holder) != self.log.instance:
                await room.append_quietly({"k": "disconnect", "p": player_id, "h": holder})
            elif not racer.connected and player_id in room.outboxes and _instance(holder) == self.log.instance:
                # taken for away (a late heartbeat) while still connected here: present again
                await room.append_quietly({"k": "present", "p": player_id, "h": holder})
        for watch in list(room.state.watchers):
            if _instance(watch) != self.log.instance:
                await room.append_quietly({"k": "unwatch", "h": watch})
        if room.is_stale(now):
            if race.phase is not Phase.FINISHED:
                await room.append_quietly({"k": "abandon"})
            if not race.unrecorded and not room.busy:
                self._release(room)
                try:
                    await self.log.forget(room.id)
                except LogUnavailable:
                    log.warning("room %s is dropped here but its log could not be cleared", room.id)
                return
        if self._may_sleep(room, now):
            await self._put_to_sleep(room, now)
            return
        at = _next_look(room, now)
        if _look_worth_writing(self._looks_written.get(room.id), at, now, room.race.config.abandon_after_ms):
            with contextlib.suppress(LogUnavailable):
                await self.log.wake(room.id, at)
                self._looks_written[room.id] = at

    def _may_sleep(self, room: Room, now: int, *, restoring: bool = False) -> bool:
        """A finished room nobody is in, its games recorded and stored, finished — and held here —
        ``finished_hold_s`` ago (``restoring``: at start-up, however recently): it need not take
        memory here. It stays in the room log until its ``finished_ttl``, and a resume, a watch or
        a REST read rebuilds it from there (:meth:`find`)."""
        race = room.race
        if race.phase is not Phase.FINISHED or race.finished_at is None or race.unrecorded or not room.idle:
            return False
        return restoring or now - max(race.finished_at, self._held_since.get(room.id, 0)) >= self.hold_ms

    async def _put_to_sleep(self, room: Room, now: int) -> None:
        """Drop the room from memory; the room log wakes it for its next look (its expiry)."""
        self._release(room)
        try:
            await self.log.wake(room.id, _next_look(room, now))
        except LogUnavailable:
            if room.id not in self.rooms:  # (nobody loaded it meanwhile) held until the log answers
                self._hold(room)

    async def run_ticker(self) -> None:
        while True:
            await asyncio.sleep(self.settings.tick_s)
            try:
                await self.tick(every_room=False)
            except Exception:
                log.exception("the room ticker failed")


def _log_mark(loaded: LoadedRoom) -> tuple[int, object]:
    """How many entries the room's log held when it was read (its snapshot's and those after),
    and its last entry's origin and time (the snapshot's time when none is after it): a log of
    the same length that holds other entries — Redis lost its last ones in a failover and the
    room's next owner appended others — is not the log a kept read copy was rebuilt from (that
    copy could show a race over, and its deal code, while the race is played again)."""
    if loaded.entries:
        last = loaded.entries[-1]
        tail: object = (last.get("o"), last.get("t"))
    else:
        tail = None if loaded.snapshot is None else loaded.snapshot.get("last_time")
    return loaded.base + len(loaded.entries), tail


def _instance(origin: str) -> str:
    """The instance an origin (``instance:serial``) names."""
    return origin.split(":", 1)[0]


def _look_worth_writing(written: int | None, at: int, now: int, abandon_after_ms: int) -> bool:
    """Whether a held room's next look ``at`` must be written to the log's wake set, ``written``
    being what this instance last wrote there while holding it: when nothing was, when ``at`` is
    sooner (a deadline), when what was written is due already, or when ``at`` is half the room's
    abandon time later. Between, the written look is earlier than needed, which is harmless — and
    the ticker does not write each held room's look at every round (in Redis a ``ZADD`` a room
    every half second: thousands of round trips a second at thousands of rooms)."""
    return written is None or at < written or written <= now or at - written >= abandon_after_ms // 2


def _next_look(room: Room, now: int) -> int:
    """When a room next needs a look by some instance: its deadline, or when it may go stale."""
    race = room.race
    if race.phase is Phase.FINISHED and race.finished_at is not None:
        later = race.finished_at + race.config.finished_ttl_ms + 1
    else:
        later = now + race.config.abandon_after_ms + 1
    deadline = race.next_deadline()
    return later if deadline is None else min(deadline, later)
