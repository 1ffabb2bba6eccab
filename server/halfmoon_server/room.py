"""The room shell: one :class:`~halfmoon_server.race.Race` and the I/O around it.

A command arrives from the transport (:mod:`halfmoon_server.ws`) with the player's id and
outbox. The :class:`Room` reads the clock, settles what is due (``race.tick(now)``), runs the
command on the race, and publishes the events it returns: each is numbered (``seq``), encoded
once per audience (:class:`~halfmoon_server.audience.Audience`), kept in the event log for
resumes, and handed to every member's :class:`~halfmoon_server.ports.Outbox` (which never
waits). A :class:`~halfmoon_server.events.GameEnded` starts the game's recording
(:class:`~halfmoon_server.results.Recorder`); the race's next deadline gets a timer.

A move's walk: ws → ``Room.move`` → ``Race.move`` (engine) → events → ``Audience.frames`` →
log + outboxes.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from halfmoon import protocol as wire
from halfmoon.game import Move
from halfmoon_server.audience import Audience, Frames
from halfmoon_server.clock import Clock, utc_datetime
from halfmoon_server.errors import Refusal
from halfmoon_server.events import Event, GameEnded, SpectatorsChanged
from halfmoon_server.ports import FinishedGame, LiveState, Outbox, Seat
from halfmoon_server.race import Race
from halfmoon_server.results import Recorder

log = logging.getLogger("halfmoon_server.room")

#: How long a timer may wait before the race is asked again (deadlines further off are re-armed).
_MAX_TIMER_S = 3600.0


class BackgroundTasks:
    """The tasks rooms start (recording finished games), kept so none is lost or unlogged."""

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

    async def settle(self) -> None:
        """Wait for every task (and the tasks they start); used at shutdown and in tests."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


@dataclass(frozen=True, slots=True)
class RoomServices:
    """What every room's shell uses: the ports and the event log's length."""

    clock: Clock
    live: LiveState
    recorder: Recorder
    tasks: BackgroundTasks
    event_log: int = 512


class Room:
    """One live room: its race, its members' outboxes, its versioned event log."""

    def __init__(self, race: Race, services: RoomServices) -> None:
        self.race = race
        self.id = race.id
        self.services = services
        self.clock = services.clock
        self.audience = Audience(race)
        self.outboxes: dict[str, Outbox] = {}  # connected players
        self.tokens: dict[str, str] = {}  # player id → token
        self.spectators: set[Outbox] = set()
        self.seq = 0
        self.log: deque[Frames] = deque(maxlen=services.event_log)
        #: games handed to the recorder and not recorded yet
        self.recording = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None

    # -- publishing ---------------------------------------------------------------------------------

    def publish(
        self, events: list[Event], *, msg_id: int | None = None, departing: Outbox | None = None
    ) -> list[Frames]:
        """Number, encode, log and send each event; start recording the games that ended.
        Returns the frames sent.

        ``msg_id`` is echoed to the mover in ``moved``; ``departing`` is the outbox of a player
        who is leaving, which still gets their ``game_over``."""
        sent: list[Frames] = []
        for event in events:
            if isinstance(event, GameEnded):
                notify = self.outboxes.get(event.player) or departing
                self.recording += 1
                self.services.tasks.spawn(self._record(event.player, notify))
                continue
            self.seq += 1
            frames = self.audience.frames(event, self.seq, watched=bool(self.spectators), msg_id=msg_id)
            if frames is None:
                self.seq -= 1
                continue
            self.log.append(frames)
            sent.append(frames)
            overrides, shared = frames.overrides, frames.players
            for player_id, outbox in self.outboxes.items():
                frame = overrides.get(player_id, shared)  # an override of None: not for them
                if frame is not None:
                    outbox.send(frame)
            if frames.spectators is not None:
                for outbox in self.spectators:
                    outbox.send(frames.spectators)
        self._arm_timer()
        return sent

    def _arm_timer(self) -> None:
        """A timer for the race's next deadline (the countdown's end, the time limit)."""
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
        try:
            self.tick()
        except Exception:
            log.exception("the timer of room %s failed", self.id)

    def close_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, None

    def _now(self) -> int:
        """The time of a command, after settling whatever came due before it."""
        now = self.clock.now_ms()
        # the timer's deadline is the race's next one (re-armed after every publish), so the
        # race has nothing due before it
        if self._timer_at is not None and now >= self._timer_at:
            self.publish(self.race.tick(now))
        return now

    # -- entering and leaving --------------------------------------------------------------------------

    def welcome(self, outbox: Outbox, player_id: str | None, *, since: int | None = None) -> None:
        """Send ``welcome``: a full snapshot, or (resume with a ``since`` the log still covers)
        ``room: null`` followed by the events after ``since``."""
        token = self.tokens.get(player_id) if player_id is not None else None
        role = "player" if player_id is not None else "spectator"
        if player_id is not None and since is not None and since <= self.seq:
            oldest = self.log[0].seq if self.log else self.seq + 1
            if since + 1 >= oldest or since == self.seq:
                outbox.send(wire.encode(wire.Welcome(role, player_id, token, None, since)))
                for frames in self.log:
                    if frames.seq > since and (frame := frames.for_player(player_id)) is not None:
                        outbox.send(frame)
                return
        snapshot = self.race.snapshot(
            player_id, self.clock.now_ms(), spectators=len(self.spectators), watcher=player_id is None
        )
        outbox.send(wire.encode(wire.Welcome(role, player_id, token, snapshot, self.seq)))

    def join(self, outbox: Outbox, name: str) -> str:
        """A new player (lobby only) gets a seat and a ``welcome``; returns their id.
        Raises :class:`Refusal` (``name_taken``, ``room_full``, ``race_started``)."""
        now = self._now()
        racer, events = self.race.join(name, now)
        self._seat(racer.id)
        self.publish(events)
        self.outboxes[racer.id] = outbox
        self.welcome(outbox, racer.id)
        return racer.id

    def start_single(self, outbox: Outbox, name: str, *, ranked: bool) -> str:
        """A room of one (solo, daily) started at once; its ``welcome`` shows the running game."""
        now = self._now()
        racer, events = self.race.join(name, now)
        racer.ranked = ranked
        self._seat(racer.id)
        self.publish(events + self.race.begin(now))
        self.outboxes[racer.id] = outbox
        self.welcome(outbox, racer.id)
        return racer.id

    def _seat(self, player_id: str) -> None:
        token = secrets.token_urlsafe(24)
        self.tokens[player_id] = token
        self.services.live.add_seat(token, Seat(self.id, player_id))

    def watch(self, outbox: Outbox) -> None:
        """A spectator comes in. Raises :class:`Refusal` ``private_room`` for a daily attempt."""
        if self.race.mode is wire.Mode.DAILY:
            raise Refusal("private_room", f"room {self.id} is a daily-challenge attempt and cannot be watched")
        self._now()
        self.publish([SpectatorsChanged(len(self.spectators) + 1)])
        if not self.spectators:
            self.audience.start_watching()
        self.spectators.add(outbox)
        self.welcome(outbox, None)

    def resume(self, player_id: str, outbox: Outbox, since: int | None) -> None:
        """A player comes back with their token; a connection they still held is closed."""
        now = self._now()
        old = self.outboxes.pop(player_id, None)
        if old is not None and old is not outbox:
            old.close(4001, "resumed on another connection")
        self.publish(self.race.connect(player_id, now))
        self.outboxes[player_id] = outbox
        self.welcome(outbox, player_id, since=since)

    def holds(self, player_id: str | None, outbox: Outbox) -> bool:
        """This outbox is a member: the player's current connection, or a spectator."""
        if player_id is None:
            return outbox in self.spectators
        return self.outboxes.get(player_id) is outbox

    def disconnect(self, player_id: str | None, outbox: Outbox) -> None:
        """The connection closed (not a ``leave``): a player keeps their place, the clock runs."""
        if player_id is None:
            self._remove_spectator(outbox)
            return
        if self.outboxes.get(player_id) is not outbox:
            return
        del self.outboxes[player_id]
        self.publish(self.race.disconnect(player_id, self.clock.now_ms()))

    def leave(self, player_id: str | None, outbox: Outbox) -> None:
        """``leave``: a spectator goes; a player in the lobby goes; a player still playing is ``left``."""
        if player_id is None:
            self._remove_spectator(outbox)
            return
        now = self._now()
        self.outboxes.pop(player_id, None)
        events = self.race.leave(player_id, now)
        if player_id not in self.race.players:  # left the lobby: the seat is gone
            self.services.live.forget_seat(self.tokens.pop(player_id, ""))
        self.publish(events, departing=outbox)

    def _remove_spectator(self, outbox: Outbox) -> None:
        if outbox in self.spectators:
            self.spectators.discard(outbox)
            self.publish([SpectatorsChanged(len(self.spectators))])

    # -- playing -----------------------------------------------------------------------------------------

    def start(self, player_id: str | None, time_limit_s: int | None) -> None:
        self.publish(self.race.start(player_id, time_limit_s, self._now()))

    def move(self, player_id: str | None, move: Move, msg_id: int | None) -> None:
        self.publish(self.race.move(player_id, move, self._now()), msg_id=msg_id)

    def undo(self, player_id: str | None, msg_id: int | None) -> None:
        self.publish(self.race.undo(player_id, self._now()), msg_id=msg_id)

    def give_up(self, player_id: str | None) -> None:
        self.publish(self.race.give_up(player_id, self._now()))

    def tick(self) -> None:
        """Settle what is due now (the ticker and the deadline timer call this)."""
        self.publish(self.race.tick(self.clock.now_ms()))

    # -- housekeeping --------------------------------------------------------------------------------------

    def is_stale(self, now: int) -> bool:
        return self.race.is_stale(now, watched=bool(self.spectators))

    def abandon(self, now: int) -> None:
        self.publish(self.race.abandon(now))

    async def _record(self, player_id: str, notify: Outbox | None) -> None:
        """Record a finished game (store, analyse), then send that player ``game_over``."""
        race = self.race
        racer = race.players[player_id]
        game = racer.game
        assert game is not None
        finished = FinishedGame(
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
            daily_date=race.daily_day,
            finished_at=utc_datetime(self.clock.now_ms()),
        )
        game_id: str | None = None
        analysis: dict[str, Any] | None = None
        try:
            game_id, analysis = await self.services.recorder.record(finished)
        except Exception:  # the race must still end: the game goes unrecorded (game: null)
            log.exception("recording the game of %s in room %s failed", racer.name, self.id)
        finally:
            self.recording -= 1
        game_over = self.publish(race.recorded(player_id, game_id, analysis))[0]
        frame = game_over.for_player(player_id)
        departed = notify is not None and notify is not self.outboxes.get(player_id)
        if departed and notify is not None and notify.room is None and frame is not None:
            notify.send(frame)  # a player who left still hears how their game ended (unless in another room now)
