"""The room shell: one :class:`~halfmoon_server.core.race.Race` and the I/O around it.

What the room decides lives in its state machine (:class:`~halfmoon_server.core.room_state.RoomState`:
sequencing, entry application, deadlines and the results' outbox as data, no I/O). This shell
owns what waits or talks: the log (:class:`~halfmoon_server.ports.RoomLog`), the members'
connections (:class:`~halfmoon_server.ports.Outbox`), the timer for the race's next deadline, and
the database writes of finished games.

Every command a client sends is first appended to the room's log (a local journal, or Redis for
a cluster) and only then applied: the log delivers each entry, in order, to every instance that
follows the room (:meth:`Room.deliver`: a :class:`~halfmoon_server.ports.Follower`), which runs
it on its copy of the race, numbers the events, has
:class:`~halfmoon_server.core.audience.Audience` encode them for each audience, and hands the
frames to its own members' outboxes. So a ``moved`` is sent only once the move is durable,
every instance agrees on everything, and a room is rebuilt anywhere by replaying its log
(:meth:`Room.rebuild`).

A move's walk: ws → ``Room.submit`` → ``RoomLog.append`` (durable) → ``Room.deliver`` →
``RoomState.apply`` → ``Race.move`` (engine) → events → ``Audience.frames`` → event log + outboxes.

Finished games: the state's results outbox says which jobs are due (record a game this instance
ended at once; take up another instance's after a grace; retry a failed write after a backoff);
:meth:`Room.tick` (the lobby's ticker, twice a second) and every applied entry that changes the
outbox run them (:meth:`Room._drive_results`), and each job reports back to the state: one retry
path. The race's next deadline gets a timer, and whichever instance's timer fires appends a
``tick`` (settling it twice does nothing).
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from halfmoon import protocol as wire
from halfmoon_server.clock import Clock
from halfmoon_server.core.audience import Audience, Frames
from halfmoon_server.core.commands import Entry, check_entry, check_room_size, check_step_budget, is_listed, race_of
from halfmoon_server.core.events import Event, GameEnded, GameOver, RaceOver
from halfmoon_server.core.limits import RateLimit
from halfmoon_server.core.room_state import (
    GAP,
    RECORD,
    STORE,
    STORE_PARKED,
    ResultJob,
    RoomState,
    token_hash,
)
from halfmoon_server.core.snapshots import restore_snapshot, take_snapshot
from halfmoon_server.errors import LogUnavailable, Refusal
from halfmoon_server.ports import Outbox, RoomLog
from halfmoon_server.rooms.results import Recorder

__all__ = [
    "CLOSE_MOVED",
    "BackgroundTasks",
    "Room",
    "RoomServices",
]

log = logging.getLogger("halfmoon_server.room")

#: How long a timer may wait before the race is asked again (deadlines further off are re-armed).
_MAX_TIMER_S = 3600.0
#: The commands that seat a connection (a join, a reconnection) and the burst and rate a room
#: takes them at: past it they are refused ``rate_limited``, nothing logged. A room of 8 players
#: all reconnecting after a blip takes 8; one client reconnecting in a loop (each a ``connect``
#: and a ``disconnect`` entry) filled a room's log to its cap within a minute, freezing the race.
ARRIVALS = frozenset({"join", "connect"})
ARRIVAL_BURST = 60.0
ARRIVAL_PER_S = 1.0
#: How long a command whose outcome was unknown is remembered, in case it shows up in the log.
ORPHAN_MS = 120_000
_SERIALS = itertools.count(1)
#: After a snapshot could not be stored, the next try waits this long (ms) — and for the next entry.
SNAPSHOT_RETRY_MS = 5_000
#: A copy rebuilt for a read (:meth:`Room.replay`) lets the event loop run after this many entries
#: (~0.5 ms of the loop on 2 shared vCPUs: a move or an undo replayed costs ~20 µs).
REPLAY_SLICE = 25
_UNSURE = "if it was, it shows when the game state is back; otherwise try again"
_SEATING = frozenset(("join", "single", "connect"))
#: The close of a room's members when another instance takes the room over (docs/protocol.md):
#: the clients connect again and resume, and reach the room's new owner.
CLOSE_MOVED = 1012
MOVED_REASON = "the room moved to another server: connect again"


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
    #: a snapshot of the room is stored beside its log every this many entries (0: never)
    snapshot_every: int = 200
    #: entries one room's log takes (:func:`~halfmoon_server.core.commands.check_room_size`)
    max_entries: int = 50_000
    #: the joins and reconnections a room takes at once, and a second after (:data:`ARRIVALS`)
    arrival_burst: float = ARRIVAL_BURST
    arrival_per_s: float = ARRIVAL_PER_S

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


class Room:
    """One live room on this instance: its state machine, its members' outboxes, its versioned
    events, its timer. A :class:`~halfmoon_server.ports.Follower` of the room's log."""

    def __init__(self, header: Entry, services: RoomServices) -> None:
        self.race = race_of(header)
        self.id = self.race.id
        #: the room is public: on the live list while its race is in play (its header says so)
        self.listed = is_listed(header)
        self.state = RoomState(header, self.race, services.instance)
        self.services = services
        self.clock = services.clock
        #: arrivals (joins and reconnections) this room takes: each logs an entry, and new
        #: connections are not limited per room, so one client could fill the log in a minute
        self._arrivals = RateLimit(services.arrival_burst, services.arrival_per_s, self.clock.now_ms() / 1000)
        self.audience = Audience(self.race)
        self.outboxes: dict[str, Outbox] = {}  # this instance's connected players
        self.spectators: set[Outbox] = set()  # this instance's spectators
        self.departing: dict[str, Outbox] = {}  # players who left, until their game_over
        #: the last ``event_log`` events' frames, for resumes (a list: a deque's block is 624 bytes)
        self.log: list[Frames] = []
        self._waiting: dict[str, _Waiting] = {}
        self._catching_up = False
        #: the log went back (Redis lost entries): this copy is wrong and must be loaded again
        self.lost = False
        self.watch_origins: dict[Outbox, str] = {}  # this instance's spectators' watches
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._recoveries = services.recorder.recoveries  # the database's returns seen so far
        #: how many entries the latest snapshot known stored covers (loaded, or written here)
        self.snapshot_at = 0
        self._snapshotting = False
        self._snapshot_retry_at = 0

    @property
    def applied(self) -> int:
        """Log entries applied (the log's :class:`~halfmoon_server.ports.Follower`)."""
        return self.state.applied

    @property
    def seq(self) -> int:
        """The number of the last event published (the state keeps it: a snapshot holds it)."""
        return self.state.seq

    @seq.setter
    def seq(self, value: int) -> None:
        self.state.seq = value

    # -- commands in --------------------------------------------------------------------------------

    async def submit(self, entry: Entry, outbox: Outbox | None = None, *, msg_id: int | None = None) -> list[Event]:
        """Append a command to the room's log and wait until it is applied; returns its events.

        Raises :class:`Refusal` when the race refuses it (it is checked before it is logged, so a
        refused command is never logged), and ``unavailable`` when the log cannot take it or
        cannot confirm it in time (the client may try again)."""
        # a full log takes only what ends the room (docs/server.md, "Snapshots and the cap")
        check_room_size(entry["k"], self.applied, self.services.max_entries)
        # and one player's moves and undos take at most their share of it in a race
        check_step_budget(self.race, entry, self.services.max_entries, self.applied)
        if entry["k"] in ARRIVALS and not self._arrivals.allow(self.clock.now_ms() / 1000):
            raise Refusal("rate_limited", "too many joins and reconnections in this room just now; try again soon")
        check_entry(self.race, entry)  # (the kinds the registry checks; a refused one is never logged)
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
            await self.services.log.append(self.id, entry)
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

    # -- entries in, in log order (the Follower) ----------------------------------------------------------

    def deliver(self, number: int, entry: Entry) -> None:
        """The log's entry ``number`` (1, 2, …): apply it if it is the next one; a gap is filled
        from the log first."""
        placed = self.state.place(number)
        if placed:  # (not APPLY: a duplicate, or past a gap)
            if placed == GAP:
                self._catch_up()
            return
        origin = str(entry.get("o", ""))
        waiting = self._waiting.pop(origin, None) if origin.startswith(self.state.mine) else None
        every = self.services.snapshot_every
        if every and number - self.snapshot_at >= every and not self._snapshotting and not self.state.replaying:
            self._snapshot(waiting is not None)
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

    # -- snapshots ----------------------------------------------------------------------------------

    def _snapshot(self, ours: bool) -> None:
        """Store the room's snapshot beside its log, off the move's path: in a task of its own,
        which takes it once the loop has turned (the entry that called for it applied and
        answered first), as the state stands then. The instance that appended the entry writes
        it; any other that holds the room only once the snapshot is a whole interval late (its
        writer died, or failed). One write at a time; a failure is logged and tried again after
        :data:`SNAPSHOT_RETRY_MS`, at a later entry (never fatal: a load then replays more)."""
        behind = self.applied - self.snapshot_at
        if (not ours and behind < 2 * self.services.snapshot_every) or self.clock.now_ms() < self._snapshot_retry_at:
            return
        self._snapshotting = True

        async def write() -> None:
            try:
                await asyncio.sleep(0)  # the entry's acknowledgement goes out first
                snapshot = take_snapshot(self.state)
                await self.services.log.save_snapshot(self.id, snapshot["n"], snapshot)
                self.snapshot_at = max(self.snapshot_at, snapshot["n"])
            except Exception as exc:  # (the log is down, or worse: the room goes on, a load replays more)
                self._snapshot_retry_at = self.clock.now_ms() + SNAPSHOT_RETRY_MS
                why = type(exc).__name__
                log.warning("room %s: its snapshot could not be stored (%s); tried again later", self.id, why)
            finally:
                self._snapshotting = False

        self.services.tasks.spawn(write())

    def compact(self) -> None:
        """Store a snapshot now if the latest one is a whole interval behind (a room loaded from
        a log written before snapshots, or whose writer failed), in the background."""
        every = self.services.snapshot_every
        if every and self.applied - self.snapshot_at >= every and not self._snapshotting:
            self._snapshot(True)

    def restore(self, snapshot: dict[str, Any], *, lazy: bool = False) -> None:
        """Start this fresh room from a stored snapshot (:mod:`halfmoon_server.core.snapshots`):
        its state after the entries the snapshot covers; :meth:`rebuild` then replays the entries
        after them. ``lazy`` (a copy to read): the games' steps are parsed only if something asks
        for them — a REST view never does. Raises
        :class:`~halfmoon_server.core.snapshots.SnapshotError` for one this release cannot
        restore (nothing changes)."""
        state = restore_snapshot(self.state.header, snapshot, self.services.instance, lazy=lazy)
        self.state, self.race = state, state.race
        self.audience = Audience(self.race)
        self.snapshot_at = state.applied

    def fenced(self) -> None:
        """Another instance owns the room now (this one's lease ran out): this copy stops (no
        timer, nothing more appended from here) and its members are told to connect again —
        they resume on the new owner. The lobby lets the copy go (:attr:`lost`)."""
        if self.lost:
            return
        self.lost = True
        self.close_timer()
        for outbox in [*self.outboxes.values(), *self.spectators]:
            outbox.close(CLOSE_MOVED, MOVED_REASON)

    def went_back(self) -> None:
        """The log holds fewer entries than this copy applied (Redis lost some): this copy is
        wrong; the lobby loads the room again."""
        self.lost = True

    def _catch_up(self) -> None:
        """Fill a gap from the log, again while entries past it keep arriving meanwhile."""
        if self._catching_up or self.state.replaying:
            return
        self._catching_up = True

        async def fetch() -> None:
            try:
                for _ in range(20):
                    before = self.applied
                    await self.services.log.catch_up(self.id)
                    if not self.state.behind:
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
        """Run the state machine on an entry, and do what it means for this instance's members."""
        state = self.state
        kind = entry["k"]
        outbox = waiting.outbox if waiting is not None else None
        if outbox is not None and outbox.closed and kind in ("join", "single", "connect", "watch"):
            outbox = None  # its connection closed while the command was unconfirmed
            if waiting is not None and kind in _SEATING:
                self._mark_away_later(entry)
        msg_id: int | None = entry.get("id")
        leaving: str | None = None
        if outbox is not None and kind == "leave":
            leaving = entry.get("p")
            if leaving is not None:  # (before what came due: a deadline passed may end their game first)
                self.departing[leaving] = outbox
        # whatever came due before this command is settled first, on every instance alike
        due = state.settle_due(entry)
        if due:
            self.publish(due)
        if kind == "connect":
            player = entry.get("p")
            old = self.outboxes.pop(player, None) if player is not None else None
            if old is not None and old is not outbox:
                old.close(4001, "resumed on another connection")
        try:
            events = state.apply(entry)
        except Refusal:
            self._settled(leaving, due)  # (not leaving after all)
            raise
        if events is None:
            self._settled(leaving, due)
            return []
        player = state.player
        if outbox is not None and kind == "watch" and not self.spectators:
            self.audience.start_watching()  # nobody here was kept up to date: the snapshot is the start
        self.publish(events, msg_id=msg_id)
        if outbox is not None:
            if kind in _SEATING:
                assert player is not None
                self.outboxes[player] = outbox
                outbox.room, outbox.player_id = self.id, player
                self.welcome(outbox, player, since=entry.get("since"), token=waiting.token if waiting else None)
            elif kind == "watch":
                self.spectators.add(outbox)
                self.watch_origins[outbox] = str(entry.get("o", ""))
                outbox.room, outbox.player_id = self.id, None
                self.welcome(outbox, None)
        if leaving is not None and leaving not in state.race.unrecorded:
            self.departing.pop(leaving, None)  # (told already, or nothing to tell: no game ended)
        self._arm_timer()
        if state.results.changed:
            self._drive_results()
        return events

    def _settled(self, leaving: str | None, due: list[Event]) -> None:
        """An entry that was refused, or meant nothing: a leave's connection is not departing;
        whatever came due before it (a deadline that ended games) still gets its timer and jobs."""
        if leaving is not None:
            self.departing.pop(leaving, None)
        if due:
            self._arm_timer()
            if self.state.results.changed:
                self._drive_results()

    def _mark_away_later(self, entry: Entry) -> None:
        """A seat taken by a connection that closed before it was confirmed: mark it away once
        the entry is applied (the seat keeps its token; nobody holds it now)."""

        async def away() -> None:
            player = entry.get("p") or next((p for p, o in self.state.holders.items() if o == entry.get("o")), None)
            if player is not None:
                await self.append_quietly({"k": "disconnect", "p": player, "h": entry.get("o")})

        if not self.state.replaying:
            self.services.tasks.spawn(away())

    # -- publishing ---------------------------------------------------------------------------------

    def publish(self, events: list[Event], *, msg_id: int | None = None) -> list[Frames]:
        """Number, encode, log and send each event to this instance's members (a game's end is
        the state machine's: its results outbox). Returns the frames."""
        sent: list[Frames] = []
        for event in events:
            if isinstance(event, GameEnded):
                continue
            state = self.state  # (the state keeps the count: a snapshot holds it)
            state.seq += 1
            frames = self.audience.frames(event, state.seq, watched=bool(self.spectators), msg_id=msg_id)
            if frames is None:
                state.seq -= 1
                continue
            # the log serves players' resumes: a spectators' copy of its own (reveals) is not kept
            kept = frames.spectators is None or frames.spectators is frames.players
            self.log.append(
                frames if kept else Frames(frames.seq, frames.players, None, frames.owner, frames.own, frames.overrides)
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

    # -- deadlines ------------------------------------------------------------------------------------

    def _arm_timer(self) -> None:
        """A timer for the race's next deadline (the countdown's end, the time limit)."""
        if self.state.replaying:
            return
        deadline = self.race.next_deadline()  # (the state's next_deadline, one call less per move)
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
        deadline = self.state.next_deadline()
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
        return next((pid for pid, held in self.state.tokens.items() if hmac.compare_digest(held, hashed)), None)

    def holds(self, player_id: str | None, outbox: Outbox) -> bool:
        """This outbox is a member here: the player's current connection, or a spectator."""
        if player_id is None:
            return outbox in self.spectators
        return self.outboxes.get(player_id) is outbox

    def detach(self, player_id: str | None, outbox: Outbox) -> str | None:
        """Take a closed or leaving connection out of this instance's members; returns what it
        held — the seat's holder, or a spectator's watch (for ``disconnect`` or ``unwatch``) —
        None when it held nothing."""
        if self.lost:
            return None  # (a copy let go: what it held is another copy's to log now)
        if player_id is None:
            if outbox in self.spectators:
                self.spectators.discard(outbox)
                return self.watch_origins.pop(outbox, None)
            return None
        if self.outboxes.get(player_id) is not outbox:
            return None
        del self.outboxes[player_id]
        return self.state.holders.get(player_id)

    # -- recording: the results outbox's jobs ----------------------------------------------------------

    def _drive_results(self) -> None:
        """Start the results' jobs due now (the one way a finished game is recorded, stored, or
        tried again): the state machine says which; each reports back when it is over."""
        self.state.results.changed = False
        if self.state.replaying or not self.state.results_pending:
            return
        now = self.clock.now_ms()
        recoveries = self.services.recorder.recoveries
        if recoveries != self._recoveries:  # the database is back: no retry waits out its backoff
            self._recoveries = recoveries
            self.state.results.hurry(now)
        for job in self.state.results_due(now):
            self.services.tasks.spawn(self._run(job))

    async def _run(self, job: ResultJob) -> None:
        failed = True
        try:
            if job.kind == RECORD:
                failed = await self._record(job.key)
            else:
                failed = await self._store(job)
        finally:
            self.state.settle(job, self.clock.now_ms(), failed=failed)
        self._drive_results()  # what it made due (a recorded game's write: at once)

    async def _record(self, player_id: str) -> bool:
        """Record a finished game: log its id (fixed up front) — the player's ``game_over`` and
        the race's results go out with it, never waiting for the database. Its write is a job of
        its own, due at once (:meth:`_store`). True: the log did not take it."""
        await self.append_quietly({"k": "recorded", "p": player_id, "g": self.state.game_id(player_id)})
        return player_id in self.state.race.unrecorded

    async def _store(self, job: ResultJob) -> bool:
        """Store a recorded game (the room's log is the result's outbox: it survives the database
        being down, and the process dying), then log ``stored``. The write is idempotent on the
        id. True: the database did not take it."""
        if not self.state.pending(job):  # (stored meanwhile, or parked by a rematch: its own job)
            return False
        if job.kind == STORE:
            game, stored_as = self.state.finished(job.key, self.clock.now_ms()), self.state.game_id(job.key)
            stored: Entry = {"k": "stored", "p": job.key, "g": stored_as}
        else:
            assert job.kind == STORE_PARKED
            game, stored_as = self.state.results.parked[job.key], job.key
            stored = {"k": "stored", "g": stored_as}
        try:
            await self.services.recorder.store(game, stored_as)
        except Exception as exc:  # the database is down (or worse): keep the result, try again
            log.warning("room %s: storing a game failed (%s); it is tried again", self.id, exc)
            return True
        await self.append_quietly(stored)
        return False

    # -- housekeeping --------------------------------------------------------------------------------------

    async def tick(self) -> None:
        """Settle what is due now: a deadline passed (logged as a ``tick``), the results' jobs due."""
        now = self.clock.now_ms()
        deadline = self.state.next_deadline()
        if deadline is not None and now >= deadline:
            await self.append_quietly({"k": "tick"})
        self._drive_results()
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
        return self.state.results.busy

    # -- rebuilding -----------------------------------------------------------------------------------------

    def rebuild(self, entries: list[Entry], *, live: bool = True) -> None:
        """Replay the log's entries (from the first, or from the snapshot :meth:`restore` started
        it from) on this fresh room: the race, the tokens, the event log for resumes — no frame
        sent, no game recorded. ``live``: the room is held here from now on (its deadline gets a
        timer); else it is a copy to read and drop."""
        self.state.replaying = True
        try:
            for number, entry in enumerate(entries, self.applied + 1):
                self.deliver(number, entry)
        finally:
            self.state.replaying = False
        if live:
            self._arm_timer()

    async def replay(self, entries: list[Entry]) -> None:
        """:meth:`rebuild` a copy to read and drop (not held, not followed), letting the event
        loop run after every :data:`REPLAY_SLICE` entries: a read never holds the loop for long,
        whatever the log holds."""
        for start in range(0, len(entries), REPLAY_SLICE):
            self.rebuild(entries[start : start + REPLAY_SLICE], live=False)
            await asyncio.sleep(0)
