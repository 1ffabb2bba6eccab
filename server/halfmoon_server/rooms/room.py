"""The room shell: one :class:`~halfmoon_server.core.race.Race` and the I/O around it.

Every command a client sends is first appended to the room's log
(:class:`~halfmoon_server.ports.RoomLog`: a local journal, or Redis for a cluster) and only then
applied: the log delivers each entry, in order, to every instance that holds the room
(:meth:`Room.deliver`), which runs it on its copy of the race (:func:`commands.apply_entry`),
numbers and logs the events, has :class:`~halfmoon_server.core.audience.Audience` encode them for
each audience, and hands the frames to its own members' :class:`~halfmoon_server.ports.Outbox`
es. So a ``moved`` is sent only once the move is durable, every instance agrees on everything,
and a room is rebuilt anywhere by replaying its log (:meth:`Room.rebuild`).

A move's walk: ws → ``Room.submit`` → ``RoomLog.append`` (durable) → ``Room.deliver`` →
``Race.move`` (engine) → events → ``Audience.frames`` → event log + outboxes.

A :class:`~halfmoon_server.core.events.GameEnded` starts the game's recording (on the instance whose
command ended it; any instance picks up a game left unrecorded); the race's next deadline gets a
timer, and whichever instance's timer fires appends a ``tick`` (settling it twice does nothing).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from halfmoon import protocol as wire
from halfmoon.codes import DealCode
from halfmoon.game import Move
from halfmoon.protocol import Mode
from halfmoon_server.clock import Clock, utc_datetime
from halfmoon_server.core.audience import Audience, Frames
from halfmoon_server.core.commands import Entry, apply_entry, check_entry
from halfmoon_server.core.events import Event, GameEnded, GameOver, PlayerJoined, RaceOver
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.errors import LogUnavailable, Refusal
from halfmoon_server.ports import FinishedGame, Outbox, RoomLog
from halfmoon_server.rooms.results import Recorder

log = logging.getLogger("halfmoon_server.room")

#: How long a timer may wait before the race is asked again (deadlines further off are re-armed).
_MAX_TIMER_S = 3600.0
#: A game whose end was logged this long ago and is still unrecorded is recorded by any instance.
UNRECORDED_GRACE_MS = 10_000
#: A failed write of a finished game is tried again after this, doubling up to the maximum.
STORE_RETRY_FIRST_S = 0.5
STORE_RETRY_MAX_S = 30.0
#: How long a finished game's first write may take before game_over goes out without it.
RECORD_WAIT_S = 2.0
#: How long a command whose outcome was unknown is remembered, in case it shows up in the log.
ORPHAN_MS = 120_000
_SERIALS = itertools.count(1)
_UNSURE = "if it was, it shows when the game state is back; otherwise try again"


class BackgroundTasks:
    """The tasks rooms start (recording finished games, ticks), kept so none is lost or unlogged."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    def __len__(self) -> int:
        """Tasks not done yet (``/metrics``: the recording backlog)."""
        return len(self._tasks)

    async def settle(self) -> None:
        """Wait for every task (and the tasks they start); used at shutdown and in tests."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


@dataclass(frozen=True, slots=True)
class RoomServices:
    """What every room's shell uses: the ports, this instance's name and the event log's length."""

    clock: Clock
    log: RoomLog
    recorder: Recorder
    tasks: BackgroundTasks
    event_log: int = 16

    @property
    def instance(self) -> str:
        return self.log.instance


@dataclass(slots=True)
class _Waiting:
    """A command this instance appended, waiting to be applied: who sent it, and the answer.
    ``orphaned_at``: its client was told it could not be confirmed (if it shows up in the log
    after all, what it does for that client is still done: a seat still gets its connection)."""

    outbox: Outbox | None
    done: asyncio.Future[list[Event]]
    orphaned_at: int | None = None
    #: the race refused it when it was applied (``done`` then holds no events)
    refusal: Refusal | None = None
    #: the player's token in clear, for their ``welcome`` (a join's new one, a resume's own): the
    #: log keeps only its hash (:func:`token_hash`)
    token: str | None = None


def token_hash(token: str) -> str:
    """What the room log (Redis, the journal) and the room keep of a player's token: its SHA-256,
    in hex. A token is 24 random bytes, so the hash needs no salt; whoever reads the log cannot
    take the seat with it."""
    return hashlib.sha256(token.encode()).hexdigest()


def game_id(nonce: str, player_id: str, round_: int = 1) -> str:
    """The id of a player's game in a room's race number ``round_``: fixed up front (12 url-safe
    characters), so every instance and every retry stores the same game once, and each race of
    a room (a rematch) stores a game of its own. (The first race's ids are those of old logs.)"""
    key = f"{nonce}:{player_id}" if round_ == 1 else f"{nonce}:{round_}:{player_id}"
    digest = hashlib.sha256(key.encode()).digest()
    return base64.urlsafe_b64encode(digest[:9]).decode("ascii")


def race_of(header: Entry) -> Race:
    """A new race from a room's header (:func:`halfmoon_server.core.commands.room_header`)."""
    day = header.get("day")
    from datetime import date

    return Race(
        header["room"],
        Mode(header["mode"]),
        None if header["code"] is None else DealCode.parse(header["code"]),
        RaceConfig(**header["config"]),
        now=header["created_at"],
        daily_day=date.fromisoformat(day) if day else None,
        salt=header.get("salt"),
        seed=header.get("seed"),
    )


class Room:
    """One live room on this instance: its race, its members' outboxes, its versioned events."""

    def __init__(self, header: Entry, services: RoomServices) -> None:
        self.header = header
        self.race = race_of(header)
        self.id = self.race.id
        self.services = services
        self.clock = services.clock
        self.audience = Audience(self.race)
        self.outboxes: dict[str, Outbox] = {}  # this instance's connected players
        self.spectators: set[Outbox] = set()  # this instance's spectators
        self.tokens: dict[str, str] = {}  # player id → their token's hash (token_hash)
        #: player id → the hash of their player key (``pk`` of their join), kept with their game
        self.player_keys: dict[str, str] = {}
        #: who holds each player's seat: the origin of their last join or resume
        self.holders: dict[str, str] = {}
        self.departing: dict[str, Outbox] = {}  # players who left, until their game_over
        self.seq = 0
        #: the last ``event_log`` events' frames, for resumes (a list: a deque's block is 624 bytes)
        self.log: list[Frames] = []
        self.applied = 0  # log entries applied
        self.replaying = False
        self.recording: set[str] = set()  # games being recorded by this instance
        self.storing: set[str] = set()  # games being stored by this instance
        #: games recorded (their ids logged) and not yet in the database: the results' outbox
        self.unstored: set[str] = set()
        #: the same for the games of the room's earlier races (a rematch came before the database
        #: took them): each as it was recorded, by its game id, until a ``stored`` with ``g``
        self.parked: dict[str, FinishedGame] = {}
        self.recorded_at: dict[str, int] = {}
        self.ended_at: dict[str, int] = {}  # when each unrecorded game ended (log time)
        self._waiting: dict[str, _Waiting] = {}
        self._catching_up = False
        self._highest_seen = 0  # the highest entry number announced (a gap is filled up to it)
        self.last_time = 0  # the log's time never goes back: each entry's is at least the last one's
        #: the log went back (Redis lost entries): this copy is wrong and must be loaded again
        self.lost = False
        #: the spectators of every instance: the origin of each one's watch
        self.watchers: set[str] = set()
        self.watch_origins: dict[Outbox, str] = {}  # this instance's spectators' watches
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None

    # -- commands in --------------------------------------------------------------------------------

    async def submit(self, entry: Entry, outbox: Outbox | None = None, *, msg_id: int | None = None) -> list[Event]:
        """Append a command to the room's log and wait until it is applied; returns its events.

        Raises :class:`Refusal` when the race refuses it (it is checked before it is logged, so a
        refused command is never logged), and ``unavailable`` when the log cannot take it or
        cannot confirm it in time (the client may try again)."""
        if entry["k"] in ("move", "undo", "give_up", "start", "join", "watch", "rematch", "accept"):
            check_entry(self.race, entry)
        # the token in clear goes to its player's welcome, never to the log: a join logs its hash
        token = entry.pop("tok", None)
        if token is not None and entry["k"] in ("join", "single"):
            entry["th"] = token_hash(str(token))
        origin = f"{self.services.instance}:{next(_SERIALS)}"
        entry["o"] = origin
        if msg_id is not None:
            entry["id"] = msg_id
        entry.setdefault("t", self.clock.now_ms())
        done: asyncio.Future[list[Event]] = asyncio.get_running_loop().create_future()
        waiting = self._waiting[origin] = _Waiting(outbox, done, token=None if token is None else str(token))
        try:
            # every log answers within its own time-out (Redis's socket time-out, the journal's
            # commit time-out) and has delivered the entry when it returns: no timer per command
            await self.services.log.append(self, entry)
            if not done.done():  # taken, yet not applied here: the log must have gone back
                waiting.orphaned_at = self.clock.now_ms()
                raise Refusal("unavailable", f"the game state was not confirmed saved: {_UNSURE}")
            if waiting.refusal is not None:
                # raised from here, the refusal's traceback holds this frame: nothing it holds may
                # hold the refusal (a future set with it would), or the two make a reference cycle
                refusal, waiting.refusal = waiting.refusal, None
                try:
                    raise refusal
                finally:
                    del refusal
            return done.result()
        except LogUnavailable as exc:
            if not exc.certain:
                waiting.orphaned_at = self.clock.now_ms()
                message = f"the game state could not be confirmed saved ({exc}): {_UNSURE}"
                raise Refusal("unavailable", message) from None
            raise Refusal(
                "unavailable", f"the game state cannot be saved right now ({exc}); nothing changed: try again"
            ) from None
        finally:
            if waiting.orphaned_at is None:
                self._waiting.pop(origin, None)

    def forget_orphans(self, now: int) -> None:
        """Stop waiting for unconfirmed commands that never showed up in the log."""
        for origin, waiting in list(self._waiting.items()):
            if waiting.orphaned_at is not None and now - waiting.orphaned_at > ORPHAN_MS:
                del self._waiting[origin]

    def precheck_move(self, player_id: str | None, move: Move) -> None:
        """Refuse a move the race would refuse, before it is logged. Raises :class:`Refusal`."""
        self.race.check_move(player_id, move, self.clock.now_ms())

    # -- entries in, in log order -----------------------------------------------------------------------

    def deliver(self, number: int, entry: Entry) -> None:
        """The log's entry ``number`` (1, 2, …): apply it if it is the next one; a gap is filled
        from the log first."""
        if number <= self.applied:
            return  # applied already (delivered twice)
        if number > self.applied + 1:
            self._highest_seen = max(self._highest_seen, number)
            self._catch_up()
            return
        self.applied = number
        origin = str(entry.get("o", ""))
        waiting = self._waiting.pop(origin, None) if origin.startswith(self.services.instance + ":") else None
        try:
            events = self._apply(entry, waiting)
        except Refusal as refusal:
            if waiting is not None and not waiting.done.done():
                waiting.refusal = refusal.with_traceback(None)  # (Room.submit says why)
                waiting.done.set_result([])
            return
        except Exception as exc:  # a bug: never let one entry stop the room
            log.exception("room %s could not apply entry %d (%s)", self.id, number, entry.get("k"))  # no token in logs
            if waiting is not None and not waiting.done.done():
                waiting.done.set_exception(exc)
            return
        if waiting is not None and not waiting.done.done():
            waiting.done.set_result(events)

    def _catch_up(self) -> None:
        """Fill a gap from the log, again while entries past it keep arriving meanwhile."""
        if self._catching_up or self.replaying:
            return
        self._catching_up = True

        async def fetch() -> None:
            try:
                for _ in range(20):
                    before = self.applied
                    await self.services.log.catch_up(self)
                    if self._highest_seen <= self.applied:
                        return
                    if self.applied == before:  # the log holds less than was announced: it went back
                        self.lost = True
                        log.error("room %s: its log holds fewer entries than were seen; reloading it", self.id)
                        return
            except LogUnavailable as exc:
                log.warning("room %s could not catch up: %s", self.id, exc)
            finally:
                self._catching_up = False

        self.services.tasks.spawn(fetch())

    def _apply(self, entry: Entry, waiting: _Waiting | None) -> list[Event]:
        race = self.race
        kind = entry["k"]
        now = entry["t"] = max(int(entry["t"]), self.last_time)  # on every instance alike
        self.last_time = now
        player: str | None = entry.get("p")
        outbox = waiting.outbox if waiting is not None else None
        if outbox is not None and outbox.closed and kind in ("join", "single", "connect", "watch"):
            outbox = None  # its connection closed while the command was unconfirmed
            if waiting is not None and kind in ("join", "single", "connect"):
                self._mark_away_later(entry)
        msg_id: int | None = entry.get("id")
        # whatever came due before this command is settled first, on every instance alike
        if kind != "tick":
            deadline = race.next_deadline()
            if deadline is not None and now >= deadline:
                self.publish(race.tick(now), ended_by=entry)
        origin = str(entry.get("o", ""))
        held = entry.get("h")
        if kind in ("disconnect", "present") and (player is None or self.holders.get(player) != held):
            return []  # about a connection that no longer holds the seat (resumed elsewhere)
        if kind == "unwatch":
            if held not in self.watchers:
                return []  # that spectator was counted out already
            self.watchers.discard(str(held))
        if kind == "connect" and player is not None:
            old = self.outboxes.pop(player, None)
            if old is not None and old is not outbox:
                old.close(4001, "resumed on another connection")
        if kind == "rematch":
            race.check_rematch(player)  # refused: nothing parked
            self._park(race.round)
        events = apply_entry(race, entry)
        if kind in ("join", "single"):
            joined = next(e for e in events if isinstance(e, PlayerJoined))
            player = joined.player.id
            # (a log written before tokens were hashed holds them in clear: hashed here)
            self.tokens[player] = str(entry["th"]) if "th" in entry else token_hash(str(entry["tok"]))
            if entry.get("pk"):
                self.player_keys[player] = str(entry["pk"])
        if kind in ("join", "single", "connect") and player is not None:
            self.holders[player] = origin
        if kind == "watch":
            self.watchers.add(origin)
            if outbox is not None and not self.spectators:
                self.audience.start_watching()  # nobody here was kept up to date: the snapshot is the start
        if kind == "recorded" and player is not None and entry.get("g") is not None and not entry.get("s"):
            self.unstored.add(player)  # stored once the database has it ("stored")
            self.recorded_at[player] = now
        if kind == "stored" and player is not None and entry.get("g") in (None, self._game_id(player)):
            self.unstored.discard(player)  # (a late one of an earlier race's game is for ``parked``)
        if kind == "stored":
            self.parked.pop(str(entry.get("g")), None)
        if kind == "leave" and player is not None:
            if outbox is not None:
                self.departing[player] = outbox
            if player not in race.players:  # left the lobby: the seat is gone
                self.tokens.pop(player, None)
                self.holders.pop(player, None)
        self.publish(events, msg_id=msg_id, ended_by=entry)
        if outbox is not None and kind in ("join", "single", "connect"):
            assert player is not None
            self.outboxes[player] = outbox
            outbox.room, outbox.player_id = self.id, player
            self.welcome(outbox, player, since=entry.get("since"), token=waiting.token if waiting else None)
        elif outbox is not None and kind == "watch":
            self.spectators.add(outbox)
            self.watch_origins[outbox] = origin
            outbox.room, outbox.player_id = self.id, None
            self.welcome(outbox, None)
        self._arm_timer()
        return events

    def _park(self, round_: int) -> None:
        """Before a rematch replaces the race's games: keep the recorded games the database has
        not taken yet, as they are, to store them still (the results' outbox holds across races)."""
        for player_id in sorted(self.unstored):
            self.parked[game_id(self.header["nonce"], player_id, round_)] = self._finished(player_id)
        self.unstored.clear()
        if not self.replaying:
            for stored_as in list(self.parked):
                self.store_parked(stored_as)

    def _mark_away_later(self, entry: Entry) -> None:
        """A seat taken by a connection that closed before it was confirmed: mark it away once
        the entry is applied (the seat keeps its token; nobody holds it now)."""

        async def away() -> None:
            player = entry.get("p") or next((p for p, o in self.holders.items() if o == entry.get("o")), None)
            if player is not None:
                await self.append_quietly({"k": "disconnect", "p": player, "h": entry.get("o")})

        if not self.replaying:
            self.services.tasks.spawn(away())

    # -- publishing ---------------------------------------------------------------------------------

    def publish(
        self, events: list[Event], *, msg_id: int | None = None, ended_by: Entry | None = None
    ) -> list[Frames]:
        """Number, encode, log and send each event to this instance's members; start recording
        the games that ended (``ended_by``: the entry that ended them). Returns the frames."""
        sent: list[Frames] = []
        for event in events:
            if isinstance(event, GameEnded):
                self._game_ended(event.player, ended_by)
                continue
            self.seq += 1
            frames = self.audience.frames(event, self.seq, watched=bool(self.spectators), msg_id=msg_id)
            if frames is None:
                self.seq -= 1
                continue
            # the log serves players' resumes: a spectators' copy of its own (reveals) is not kept
            kept = frames.spectators is None or frames.spectators is frames.players
            self.log.append(
                frames
                if kept
                else Frames(frames.seq, frames.players, None, frames.owner, frames.own, frames.overrides)
            )
            if len(self.log) > self.services.event_log:
                del self.log[0]
            sent.append(frames)
            owner, own, overrides, shared = frames.owner, frames.own, frames.overrides, frames.players
            for player_id, outbox in self.outboxes.items():
                if player_id == owner:
                    frame = own
                elif overrides is not None:
                    frame = overrides.get(player_id, shared)  # an override of None: not for them
                else:
                    frame = shared
                if frame is not None:
                    outbox.send(frame)
            if frames.spectators is not None:
                for outbox in self.spectators:
                    outbox.send(frames.spectators)
            if isinstance(event, GameOver) and event.player in self.departing:
                gone = self.departing.pop(event.player)
                frame = frames.for_player(event.player)
                if frame is not None and event.player not in self.outboxes and gone.room is None:
                    gone.send(frame)  # a player who left hears how their game ended (unless in another room now)
            if isinstance(event, RaceOver):
                # the race's events are of no more use: a resume from now on gets the snapshot,
                # which carries the results and the player's game_over (a finished room is kept
                # for ``finished_ttl_s``: hundreds of frames each, in thousands of rooms)
                self.log.clear()
        return sent

    def _game_ended(self, player_id: str, ended_by: Entry | None) -> None:
        self.ended_at[player_id] = ended_by["t"] if ended_by is not None else self.clock.now_ms()
        origin = str(ended_by.get("o", "")) if ended_by is not None else ""
        if not self.replaying and origin.startswith(self.services.instance + ":"):
            self.record(player_id)

    # -- deadlines ------------------------------------------------------------------------------------

    def _arm_timer(self) -> None:
        """A timer for the race's next deadline (the countdown's end, the time limit)."""
        if self.replaying:
            return
        deadline = self.race.next_deadline()
        if deadline == self._timer_at and (deadline is None or self._timer is not None):
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, deadline
        if deadline is not None:
            delay = min(_MAX_TIMER_S, max(0.0, (deadline - self.clock.now_ms()) / 1000))
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None  # _timer_at stays: the deadline it was armed for
        deadline = self.race.next_deadline()
        if deadline is not None and self.clock.now_ms() >= deadline:
            self.services.tasks.spawn(self.append_quietly({"k": "tick"}))
        else:
            self._arm_timer()

    async def append_quietly(self, entry: Entry) -> None:
        """Append a command of the room's own (a tick, an abandon, a recording); a log that is
        down is tried again later by the ticker."""
        try:
            await self.submit(entry)
        except Refusal as refusal:
            log.info("room %s: %s not applied: %s", self.id, entry["k"], refusal.message)
            self._timer_at = None  # let the next publish or the ticker arm the timer again

    def close_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, None

    # -- entering and leaving --------------------------------------------------------------------------

    def welcome(
        self, outbox: Outbox, player_id: str | None, *, since: int | None = None, token: str | None = None
    ) -> None:
        """Send ``welcome``: a full snapshot, or (resume with a ``since`` the log still covers)
        ``room: null`` followed by the events after ``since``. ``token``: the player's, in clear
        (the room keeps only its hash)."""
        role = "player" if player_id is not None else "spectator"
        racer = self.race.players.get(player_id) if player_id is not None else None
        ranked = racer.ranked if racer is not None else None
        why = racer.unranked_reason if racer is not None else None
        if player_id is not None and since is not None and since <= self.seq:
            oldest = self.log[0].seq if self.log else self.seq + 1
            if since + 1 >= oldest or since == self.seq:
                outbox.send(wire.encode(wire.Welcome(role, player_id, token, None, since, ranked, why)))
                for frames in self.log:
                    if frames.seq > since and (frame := frames.for_player(player_id)) is not None:
                        outbox.send(frame)
                return
        snapshot = self.race.snapshot(player_id, self.clock.now_ms(), watcher=player_id is None)
        outbox.send(wire.encode(wire.Welcome(role, player_id, token, snapshot, self.seq, ranked, why)))

    def player_with_token(self, token: str) -> str | None:
        hashed = token_hash(token)
        return next((pid for pid, held in self.tokens.items() if hmac.compare_digest(held, hashed)), None)

    def holds(self, player_id: str | None, outbox: Outbox) -> bool:
        """This outbox is a member here: the player's current connection, or a spectator."""
        if player_id is None:
            return outbox in self.spectators
        return self.outboxes.get(player_id) is outbox

    def detach(self, player_id: str | None, outbox: Outbox) -> str | None:
        """Take a closed or leaving connection out of this instance's members; returns what it
        held — the seat's holder, or a spectator's watch (for ``disconnect`` or ``unwatch``) —
        None when it held nothing."""
        if player_id is None:
            if outbox in self.spectators:
                self.spectators.discard(outbox)
                return self.watch_origins.pop(outbox, None)
            return None
        if self.outboxes.get(player_id) is not outbox:
            return None
        del self.outboxes[player_id]
        return self.holders.get(player_id)

    # -- recording ------------------------------------------------------------------------------------

    def record(self, player_id: str) -> None:
        """Record a finished game: log its id (fixed up front) at once — the player's
        ``game_over`` and the race's results do not wait for the database — then store it."""
        if player_id in self.recording or player_id not in self.race.unrecorded:
            return
        self.recording.add(player_id)
        self.services.tasks.spawn(self._record(player_id))

    def record_overdue(self, now: int) -> None:
        """Pick up what another instance (that may have died) should have done: games whose end
        was logged a while ago and not recorded, and recorded games not stored."""
        # (the ticker asks every room this twice a second: most have nothing pending)
        if self.race.unrecorded:
            for player_id in list(self.race.unrecorded):
                if now - self.ended_at.get(player_id, 0) >= UNRECORDED_GRACE_MS:
                    self.record(player_id)
        if self.unstored:
            for player_id in list(self.unstored):
                if now - self.recorded_at.get(player_id, 0) >= UNRECORDED_GRACE_MS:
                    self.store(player_id)
        if self.parked:
            for stored_as in list(self.parked):
                self.store_parked(stored_as)

    async def _record(self, player_id: str) -> None:
        stored_as = self._game_id(player_id)
        recorded: Entry = {"k": "recorded", "p": player_id, "g": stored_as}
        try:
            try:  # the usual case: the database takes it at once, before game_over goes out
                async with asyncio.timeout(RECORD_WAIT_S):
                    await self.services.recorder.store(self._finished(player_id), stored_as)
                recorded["s"] = True
            except Exception as exc:  # down or slow: game_over goes out now, the write is retried
                why = str(exc) or f"no answer within {RECORD_WAIT_S:g} s"  # a TimeoutError says nothing
                log.warning("room %s: storing a game failed (%s); it stays in the room's log", self.id, why)
            await self.append_quietly(recorded)
        finally:
            self.recording.discard(player_id)
        self.store(player_id)

    def store(self, player_id: str) -> None:
        """Store a recorded game in the database, retrying with backoff until it takes it: the
        room's log is the result's outbox (it survives the database being down, and the process
        dying: any instance holding the room picks it up). The write is idempotent on the id."""
        if player_id in self.storing or player_id not in self.unstored:
            return
        self.storing.add(player_id)
        self.services.tasks.spawn(self._store(player_id))

    async def _store(self, player_id: str) -> None:
        delay = STORE_RETRY_FIRST_S
        try:
            while player_id in self.unstored:
                try:
                    finished = self._finished(player_id)
                    stored_as = self._game_id(player_id)
                    await self.services.recorder.store(finished, stored_as)
                except Exception as exc:  # the database is down (or worse): keep the result, try again
                    log.warning("room %s: storing a game failed (%s); trying again in %.1f s", self.id, exc, delay)
                else:
                    await self.append_quietly({"k": "stored", "p": player_id, "g": stored_as})
                    if player_id not in self.unstored:
                        return
                await self.services.recorder.wait_to_retry(delay)
                delay = min(STORE_RETRY_MAX_S, delay * 2)
        finally:
            self.storing.discard(player_id)

    def _game_id(self, player_id: str) -> str:
        """The id of ``player_id``'s game in the room's current race."""
        return game_id(self.header["nonce"], player_id, self.race.round)

    def store_parked(self, stored_as: str) -> None:
        """Store a game of an earlier race of the room (see :attr:`parked`), retrying like :meth:`store`."""
        if stored_as in self.storing or stored_as not in self.parked:
            return
        self.storing.add(stored_as)
        self.services.tasks.spawn(self._store_parked(stored_as))

    async def _store_parked(self, stored_as: str) -> None:
        delay = STORE_RETRY_FIRST_S
        try:
            while stored_as in self.parked:
                try:
                    await self.services.recorder.store(self.parked[stored_as], stored_as)
                except Exception as exc:
                    log.warning("room %s: storing a game failed (%s); trying again in %.1f s", self.id, exc, delay)
                else:
                    await self.append_quietly({"k": "stored", "g": stored_as})
                    if stored_as not in self.parked:
                        return
                await self.services.recorder.wait_to_retry(delay)
                delay = min(STORE_RETRY_MAX_S, delay * 2)
        finally:
            self.storing.discard(stored_as)

    def _finished(self, player_id: str) -> FinishedGame:
        race = self.race
        racer = race.players[player_id]
        game = racer.game
        assert game is not None
        assert race.code is not None  # (a game over was dealt)
        seal = None
        if race.seed is not None:  # what opens a sealed race's commitment (halfmoon verify)
            seal = {"seed": race.seed, "contributions": list(race.contributions or ())}
        return FinishedGame(
            nickname=racer.name,
            code=str(race.code),
            mode=str(race.mode),
            room=self.id,
            score=game.score,
            moves=game.move_count,
            time_ms=racer.time_ms or 0,
            outcome=str(racer.status),
            record=racer.record(race.code).to_json(),
            ranked=racer.ranked,
            unranked_reason=None if racer.unranked_reason is None else str(racer.unranked_reason),
            daily_date=race.daily_day,
            finished_at=utc_datetime(racer.finished_at or self.clock.now_ms()),
            salt=race.salt,
            player=self.player_keys.get(player_id),
            seal=seal,
        )

    # -- housekeeping --------------------------------------------------------------------------------------

    async def tick(self) -> None:
        """Settle what is due now: a deadline passed (logged as a ``tick``), games left unrecorded."""
        now = self.clock.now_ms()
        deadline = self.race.next_deadline()
        if deadline is not None and now >= deadline:
            await self.append_quietly({"k": "tick"})
        self.record_overdue(now)
        self._arm_timer()

    def is_stale(self, now: int) -> bool:
        return self.race.is_stale(now)

    @property
    def idle(self) -> bool:
        """Nobody is in the room here, nothing of it is pending: it may be dropped from memory."""
        return not (self.outboxes or self.spectators or self._waiting or self.busy)

    @property
    def busy(self) -> bool:
        """Games are being recorded, or are not stored yet: the room (their outbox) must stay."""
        return bool(self.recording or self.storing or self.unstored or self.parked)

    # -- rebuilding -----------------------------------------------------------------------------------------

    def rebuild(self, entries: list[Entry], *, live: bool = True) -> None:
        """Replay the log's entries (from the first) on this fresh room: the race, the tokens,
        the event log for resumes — no frame sent, no game recorded. ``live``: the room is held
        here from now on (its deadline gets a timer); else it is a copy to read and drop."""
        self.replaying = True
        try:
            for number, entry in enumerate(entries, self.applied + 1):
                self.deliver(number, entry)
        finally:
            self.replaying = False
        if live:
            self._arm_timer()

