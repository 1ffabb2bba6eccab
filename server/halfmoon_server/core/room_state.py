"""The room's state machine: what a room decides about its log, with no I/O.

A room (:mod:`halfmoon_server.rooms.room`) is a :class:`~halfmoon_server.core.race.Race` fed by
a log of commands. What the room decides about that log lives here, as data, in the manner of
the race itself (and of websockets' sans-I/O protocol): entries and the time in, decisions out,
no event loop, no socket, no database.

- **Sequencing** (:meth:`RoomState.place`): the log's entries are numbered 1, 2, …; the next one
  is applied, one already applied is ignored, one past a gap asks the shell to catch up from the
  log first. The log's time never goes back (:meth:`RoomState.settle_due`).
- **Entry application** (:meth:`RoomState.settle_due`, then :meth:`RoomState.apply`): whatever
  came due before the command is settled first (a ``tick``), then the command runs on the race
  (:func:`~halfmoon_server.core.commands.apply_entry`), with the room's own bookkeeping around
  it: the seats' tokens (hashed) and holders, the spectators' watches, the results' outbox.
- **Deadlines as data** (:meth:`RoomState.next_deadline`): when the shell must next look (its one
  timer); a look that finds the deadline passed appends a ``tick``.
- **The result outbox as data** (:class:`ResultOutbox`): which finished games are unrecorded,
  recorded but not stored, or parked (from an earlier race of the room), and when each is next
  tried: at once for a game this instance ended, after :data:`UNRECORDED_GRACE_MS` for one another
  instance should have handled, and after a failed write :data:`STORE_RETRY_FIRST_S`, doubling up
  to :data:`STORE_RETRY_MAX_S`. The shell asks :meth:`RoomState.results_due` for the jobs due now,
  runs them, and reports each back (:meth:`RoomState.settle`): one retry path.

The shell owns the rest: the members' connections (whom a frame goes to), the frames kept for
resumes, the timers, the log and the database.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any, Final

from halfmoon_server.clock import utc_datetime
from halfmoon_server.core.commands import RECORDED_AT_END, Entry, apply_entry, log_version
from halfmoon_server.core.events import Event, GameEnded, PlayerJoined
from halfmoon_server.core.race import Race
from halfmoon_server.core.records import FinishedGame

#: A game whose end (or recording) was logged this long ago and is still pending is taken up by
#: any instance that holds the room (the one that should have may have died).
UNRECORDED_GRACE_MS = 10_000
#: A failed write of a finished game is tried again after this, doubling up to the maximum.
STORE_RETRY_FIRST_S = 0.5
STORE_RETRY_MAX_S = 30.0

#: What :meth:`RoomState.place` decides about an entry's number.
APPLY: Final = 0  # the next one: apply it
DUPLICATE: Final = 1  # applied already (delivered twice): ignore it
GAP: Final = 2  # past a gap: fill the gap from the log first

#: The kinds of :class:`ResultJob`.
RECORD: Final = "record"  # log ``recorded`` (game_over goes out; the STORE that follows is due at once)
STORE: Final = "store"  # store a recorded game, then log ``stored``
STORE_PARKED: Final = "store_parked"  # the same for a game of an earlier race (by its game id)

#: the commands the room keeps something of, before and after the race runs them
_BEFORE = frozenset(("disconnect", "present", "unwatch", "rematch"))
_AFTER = frozenset(("join", "single", "connect", "watch", "recorded", "stored", "leave"))
_NO_EVENTS: list[Event] = []  # (never appended to: what settle_due returns when nothing came due)


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


@dataclass(frozen=True, slots=True)
class ResultJob:
    """A finished game's next step, due now: :data:`RECORD` or :data:`STORE` a player's game
    (``key``: the player's id), or :data:`STORE_PARKED` (``key``: the game's id)."""

    kind: str
    key: str


class ResultOutbox:
    """The room's finished games on their way to the database, and when each is next tried.

    A game ends (the race says so: ``Race.unrecorded``), is *recorded* (its id fixed: the player's
    ``game_over`` goes out — by the entry that ended it, or, in a log of format 0 or 1, by a
    ``recorded`` entry of its own) and then *stored* (``stored`` logged) once the database takes
    it, at once or on a later try. (An older log's ``recorded`` may say the game was stored first.) A rematch
    *parks* the recorded games not stored yet, as they were, until their ``stored``. Everything
    here is rebuilt from the log; only the retry times are this instance's own."""

    __slots__ = ("_delay", "_due", "changed", "ended_at", "in_flight", "parked", "recorded_at", "unstored")

    def __init__(self) -> None:
        #: when each game ended (log time)
        self.ended_at: dict[str, int] = {}
        #: players whose game was recorded (its id logged) and not yet stored
        self.unstored: set[str] = set()
        self.recorded_at: dict[str, int] = {}
        #: the games of the room's earlier races not stored yet, each by its game id
        self.parked: dict[str, FinishedGame] = {}
        #: the jobs under way on this instance (by key)
        self.in_flight: set[str] = set()
        #: a game ended, was recorded, stored or parked since the shell last looked (it drives
        #: the jobs then, and on every tick)
        self.changed = False
        self._due: dict[str, int] = {}  # when a key is next tried, when not by the grace rule
        self._delay: dict[str, float] = {}  # the wait after its next failure (s)

    def ended(self, player_id: str, at: int, *, ours: bool) -> None:
        """A player's game ended at ``at``; ``ours``: by a command of this instance (so it records
        it at once; any other instance takes it up after the grace)."""
        self.changed = True
        self.ended_at[player_id] = at
        if ours:
            self._due[player_id] = at

    def recorded(self, player_id: str, at: int, *, stored: bool, ours: bool = False) -> None:
        """A game's id was logged (``stored``: the database had it already, in an older log);
        ``ours``: by this instance, which writes it at once (any other after the grace)."""
        self.changed = True
        self._forget(player_id)
        if not stored:
            self.unstored.add(player_id)
            self.recorded_at[player_id] = at
            if ours:
                self._due[player_id] = at

    def stored(self, player_id: str | None, stored_as: str | None, current: str | None) -> None:
        """``stored`` was logged for ``stored_as`` (``current``: the id of the player's game in
        the current race; an older log's entry has no id)."""
        self.changed = True
        if player_id is not None and stored_as in (None, current):
            self.unstored.discard(player_id)
            self._forget(player_id)
        if stored_as is not None and self.parked.pop(stored_as, None) is not None:
            self._forget(stored_as)

    def park(self, games: dict[str, FinishedGame]) -> None:
        """A rematch replaces the race's games: keep the unstored ones, as they are, by game id."""
        self.changed = True
        for stored_as in self.unstored:
            self._forget(stored_as)
        self.parked.update(games)
        self.unstored.clear()

    def due(self, now: int, unrecorded: set[str]) -> list[ResultJob]:
        """The jobs due at ``now`` and not under way (``unrecorded``: the race's ended games not
        recorded yet)."""
        jobs: list[ResultJob] = []
        due, busy = self._due, self.in_flight
        for player_id in unrecorded:
            if player_id not in busy and now >= due.get(
                player_id, self.ended_at.get(player_id, 0) + UNRECORDED_GRACE_MS
            ):
                jobs.append(ResultJob(RECORD, player_id))
        for player_id in self.unstored:
            if player_id not in busy and now >= due.get(
                player_id, self.recorded_at.get(player_id, 0) + UNRECORDED_GRACE_MS
            ):
                jobs.append(ResultJob(STORE, player_id))
        for stored_as in self.parked:
            if stored_as not in busy and now >= due.get(stored_as, 0):
                jobs.append(ResultJob(STORE_PARKED, stored_as))
        jobs.sort(key=lambda job: job.key)  # (one order on every run: sets are not ordered)
        return jobs

    def next_due(self, unrecorded: set[str]) -> int | None:
        """When the next job not under way falls due (None: nothing pending)."""
        times = [
            self._due.get(p, self.ended_at.get(p, 0) + UNRECORDED_GRACE_MS)
            for p in unrecorded
            if p not in self.in_flight
        ]
        times += [
            self._due.get(p, self.recorded_at.get(p, 0) + UNRECORDED_GRACE_MS)
            for p in self.unstored
            if p not in self.in_flight
        ]
        times += [self._due.get(g, 0) for g in self.parked if g not in self.in_flight]
        return min(times, default=None)

    def start(self, job: ResultJob) -> None:
        self.in_flight.add(job.key)

    def failed(self, key: str, now: int) -> None:
        """A job failed at ``now``: it is due again after the backoff (which doubles)."""
        self.in_flight.discard(key)
        delay = self._delay.get(key, STORE_RETRY_FIRST_S)
        self._due[key] = now + int(delay * 1000)
        self._delay[key] = min(STORE_RETRY_MAX_S, delay * 2)

    def done(self, key: str) -> None:
        """A job finished (what it logged has been applied)."""
        self.in_flight.discard(key)

    def hurry(self, now: int) -> None:
        """The database is back: every retry waiting on the backoff is due now (its backoff stays)."""
        for key, at in self._due.items():
            if at > now:
                self._due[key] = now

    @property
    def busy(self) -> bool:
        """Games are under way or not stored yet: the room (their outbox) must stay."""
        return bool(self.in_flight or self.unstored or self.parked)

    def _forget(self, key: str) -> None:
        self._due.pop(key, None)
        self._delay.pop(key, None)


class RoomState:
    """A room's race and what its log decided besides: the seats' tokens and holders, the
    spectators' watches, the results' outbox, and how far the log has been applied.

    ``instance``: this instance's name (a command's origin starts with it and ``:`` when this
    instance appended it). Apply the log's entries in order: :meth:`place` each entry's number,
    then (on :data:`APPLY`) :meth:`settle_due` and :meth:`apply`."""

    def __init__(self, header: Entry, race: Race, instance: str) -> None:
        self.header = header
        self.race = race
        self.mine = instance + ":"
        self.applied = 0  # log entries applied
        self.highest_seen = 0  # the highest entry number announced (a gap is filled up to it)
        self.last_time = 0  # the log's time never goes back: each entry's is at least the last one's
        #: replaying a log (a rebuild): no game of it counts as this instance's to record at once
        self.replaying = False
        self.tokens: dict[str, str] = {}  # player id → their token's hash (token_hash)
        #: player id → the hash of their player key (``pk`` of their join), kept with their game
        self.player_keys: dict[str, str] = {}
        #: who holds each player's seat: the origin of their last join or resume
        self.holders: dict[str, str] = {}
        #: the spectators of every instance: the origin of each one's watch
        self.watchers: set[str] = set()
        self.results = ResultOutbox()
        #: a game is recorded by the entry that ends it (a log of version
        #: :data:`~halfmoon_server.core.commands.RECORDED_AT_END` or later); an older log's games
        #: wait for a ``recorded`` entry of their own (a :data:`RECORD` job appends it)
        self.records_at_end = log_version(header) >= RECORDED_AT_END
        #: the player the last applied entry was about (a join's: the new seat's)
        self.player: str | None = None
        #: the room's events numbered so far (the shell numbers them as it publishes them:
        #: ``Room.publish``); kept here so a room restored from a snapshot
        #: (:mod:`halfmoon_server.core.snapshots`) numbers its next events on from there
        self.seq = 0

    # -- sequencing -------------------------------------------------------------------------------

    def place(self, number: int) -> int:
        """What to do with the log's entry ``number``: :data:`APPLY` (it is the next one; it
        counts as applied from now), :data:`DUPLICATE` or :data:`GAP`."""
        applied = self.applied
        if number <= applied:
            return DUPLICATE
        if number > applied + 1:
            if number > self.highest_seen:
                self.highest_seen = number
            return GAP
        self.applied = number
        return APPLY

    @property
    def behind(self) -> bool:
        """Entries were announced past the ones applied (a gap to fill)."""
        return self.highest_seen > self.applied

    def ours(self, entry: Entry) -> bool:
        """``entry`` was appended by this instance."""
        return str(entry.get("o", "")).startswith(self.mine)

    # -- application ------------------------------------------------------------------------------

    def settle_due(self, entry: Entry) -> list[Event]:
        """Before an entry is applied: its time, never before the last one's (on every instance
        alike), and whatever came due before it settled first (the events to publish first)."""
        now = entry["t"] = max(int(entry["t"]), self.last_time)
        self.last_time = now
        if entry["k"] != "tick":
            deadline = self.race.next_deadline()
            if deadline is not None and now >= deadline:
                return self._ended(self.race.tick(now), entry)
        return _NO_EVENTS

    def apply(self, entry: Entry) -> list[Event] | None:
        """Apply a command (after :meth:`settle_due`); its events, or None when it no longer
        means anything (about a connection that no longer holds the seat, a spectator counted out
        already). Raises :class:`~halfmoon_server.errors.Refusal` when the race refuses it (the
        room's bookkeeping unchanged). Sets :attr:`player`."""
        race = self.race
        kind = entry["k"]
        player: str | None = entry.get("p")
        self.player = player
        if kind in _BEFORE:
            if kind == "unwatch":
                held = entry.get("h")
                if held not in self.watchers:
                    return None
                self.watchers.discard(str(held))
            elif kind == "rematch":
                race.check_rematch(player)  # refused: nothing parked
                self._park(race.round, entry["t"])
            elif player is None or self.holders.get(player) != entry.get("h"):  # disconnect, present
                return None  # (resumed elsewhere meanwhile)
        events = apply_entry(race, entry)
        if kind in _AFTER:  # (not a move, nor an undo: those leave the room nothing to keep)
            self._keep(kind, entry, events, player)
        if race.unrecorded and events:  # (a game ends only into ``unrecorded``: most moves skip this)
            return self._ended(events, entry)
        return events

    def _keep(self, kind: str, entry: Entry, events: list[Event], player: str | None) -> None:
        """What the room keeps of an applied command: a seat's token and holder, a watch, the
        results outbox's bookkeeping, a seat given up."""
        race = self.race
        if kind in ("join", "single", "connect"):
            if kind != "connect":
                player = self.player = next(e for e in events if isinstance(e, PlayerJoined)).player.id
                # (a log written before tokens were hashed holds them in clear: hashed here)
                self.tokens[player] = str(entry["th"]) if "th" in entry else token_hash(str(entry["tok"]))
                if entry.get("pk"):
                    self.player_keys[player] = str(entry["pk"])
            if player is not None:
                self.holders[player] = str(entry.get("o", ""))
        elif kind == "watch":
            self.watchers.add(str(entry.get("o", "")))
        elif kind == "recorded":
            # (about a player whose game in this race has not ended — one in its lobby, or who
            # left it — it means nothing: an unstored game of nobody would stop the next
            # rematch's parking)
            # (in a log whose games are recorded by the entry that ends them, an entry that records
            # nothing — none is written there — changes nothing)
            racer = None if player is None else race.players.get(player)
            took = bool(events) or not self.records_at_end
            if took and player is not None and entry.get("g") is not None and racer is not None and racer.finished:
                ours = not self.replaying and self.ours(entry)
                self.results.recorded(player, entry["t"], stored=bool(entry.get("s")), ours=ours)
        elif kind == "stored":
            current = None if player is None else self.game_id(player)
            self.results.stored(player, entry.get("g"), current)
        elif kind == "leave" and player is not None and player not in race.players:
            self.tokens.pop(player, None)  # left the lobby: the seat is gone
            self.holders.pop(player, None)

    def _ended(self, events: list[Event], entry: Entry) -> list[Event]:
        """The games ``entry`` ended (its ``events``' :class:`GameEnded`), into the results outbox:
        recorded there and then — their ``game_over`` (and the ``race_over`` once every game is)
        follow in the same events, the write due at once on the instance that appended ``entry``
        — or, in an older log, left for a ``recorded`` entry of their own. Returns the events."""
        ours = not self.replaying and self.ours(entry)
        at = entry["t"]
        recorded: list[Event] = []
        for event in events:
            if isinstance(event, GameEnded):
                player = event.player
                if self.records_at_end:
                    recorded += self.race.recorded(player, self.game_id(player), at)
                    self.results.recorded(player, at, stored=False, ours=ours)
                else:
                    self.results.ended(player, at, ours=ours)
        return events + recorded if recorded else events

    def _park(self, round_: int, now: int) -> None:
        """Before a rematch replaces the race's games: park the recorded games the database has
        not taken yet, as they are, to store them still (the results' outbox holds across races)."""
        nonce = self.header["nonce"]
        self.results.park({game_id(nonce, p, round_): self.finished(p, now) for p in sorted(self.results.unstored)})

    # -- deadlines and results --------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When the race next needs a look (the countdown's end, the time limit)."""
        return self.race.next_deadline()

    @property
    def results_pending(self) -> bool:
        """Finished games are not stored yet (unrecorded, unstored, or parked)."""
        results = self.results
        return bool(self.race.unrecorded or results.unstored or results.parked)

    def results_due(self, now: int) -> list[ResultJob]:
        """The results' jobs due at ``now``, each marked under way (report each with :meth:`settle`)."""
        jobs = self.results.due(now, self.race.unrecorded)
        for job in jobs:
            self.results.start(job)
        return jobs

    def results_next_due(self) -> int | None:
        """When the next results' job falls due (None: none pending, or all under way)."""
        if not self.results_pending:
            return None
        return self.results.next_due(self.race.unrecorded)

    def pending(self, job: ResultJob) -> bool:
        """The job still has something to do (its result was not logged, or not applied)."""
        if job.kind == RECORD:
            return job.key in self.race.unrecorded
        if job.kind == STORE:
            return job.key in self.results.unstored
        return job.key in self.results.parked

    def settle(self, job: ResultJob, now: int, *, failed: bool = False) -> None:
        """A job's attempt is over: done when what it logged took effect, else (or ``failed``)
        tried again after the backoff."""
        if failed or self.pending(job):
            self.results.failed(job.key, now)
        else:
            self.results.done(job.key)

    def game_id(self, player_id: str) -> str:
        """The id of ``player_id``'s game in the room's current race."""
        return game_id(self.header["nonce"], player_id, self.race.round)

    def finished(self, player_id: str, now: int) -> FinishedGame:
        """``player_id``'s finished game, to store (``now``: its end when the race has none)."""
        race = self.race
        racer = race.players[player_id]
        game = racer.game
        assert game is not None
        assert race.code is not None  # (a game over was dealt)
        seal: dict[str, Any] | None = None
        if race.seed is not None:  # what opens a sealed race's commitment (halfmoon verify)
            seal = {"seed": race.seed, "contributions": list(race.contributions or ())}
        return FinishedGame(
            nickname=racer.name,
            code=str(race.code),
            mode=str(race.mode),
            room=race.id,
            score=game.score,
            moves=game.move_count,
            time_ms=racer.time_ms or 0,
            outcome=str(racer.status),
            record=racer.record(race.code).to_json(),
            ranked=racer.ranked,
            unranked_reason=None if racer.unranked_reason is None else str(racer.unranked_reason),
            daily_date=race.daily_day,
            finished_at=utc_datetime(racer.finished_at or now),
            salt=race.salt,
            player=self.player_keys.get(player_id),
            seal=seal,
            seats=len(race.players),
        )
