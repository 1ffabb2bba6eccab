"""The race core: one room's rules of the race, sans I/O.

A :class:`Race` owns the phases (lobby → countdown → running → finished), the membership and
the host hand-over, every player's :class:`halfmoon.Game` (moves and undos checked by the
engine), finishing and the results, the deadlines (countdown, time limit, abandonment), and
each viewer's view of it (who may see which card and the code: the visibility policy decides,
:mod:`halfmoon_server.core.visibility`). It takes commands with the time passed in — ``join``,
``start``, ``move``, ``undo``, ``give_up``, ``leave``, ``connect``, ``disconnect``, ``tick(now)``,
``recorded``, ``rematch``, ``accept`` — and returns domain events (:mod:`halfmoon_server.core.events`);
:meth:`Race.next_deadline` says when it next needs a ``tick``. It imports no asyncio, no
aiohttp, no storage and reads no clock: its tests drive whole races in microseconds
(tests/server/core/test_race_core.py).

A refused command raises :class:`~halfmoon_server.errors.Refusal` and changes nothing.

>>> from halfmoon.codes import DealCode
>>> race = Race("K7WQ2M", Mode.RACE, DealCode.parse("HM1-N-AAAAAAA"), RaceConfig(countdown_ms=0), now=0)
>>> ada, _ = race.join("Ada", now=0)
>>> [type(e).__name__ for e in race.start(ada.id, None, now=0) + race.tick(now=0)]
['CountdownStarted', 'RaceStarted']
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field, replace
from datetime import date

from halfmoon.codes import DealCode, seal_commitment, sealed_code
from halfmoon.deal import Deal
from halfmoon.errors import IllegalMoveError, UndoError
from halfmoon.game import Game, Move, Status
from halfmoon.positions import PILE_COUNT, PILES, POSITIONS
from halfmoon.protocol import (
    ACTIVE,
    FINISHED,
    SPLIT_EVERY,
    SPLIT_MOVES,
    Json,
    Mode,
    Phase,
    PlayerStatus,
    PlayerSummary,
    Result,
    RoomSnapshot,
    Unranked,
    commitment_of,
    ranking_key,
)
from halfmoon.record import UNDO, GameRecord, Step
from halfmoon.view import HIDDEN_TOP, BoardView
from halfmoon_server.core import visibility
from halfmoon_server.core.events import (
    CountdownStarted,
    Event,
    GameEnded,
    GameOver,
    Moved,
    PlayerChanged,
    PlayerJoined,
    PlayerLeft,
    RaceOver,
    RaceStarted,
    Rematched,
    SpectatorsChanged,
)
from halfmoon_server.core.modes import rules_for
from halfmoon_server.core.names import name_key
from halfmoon_server.core.ranking import DEFAULT_TAP_FLOOR_MS, taps_of, unranked_reason
from halfmoon_server.core.step_text import UnreadSteps
from halfmoon_server.core.visibility import Boards, RoomFacts, Viewer
from halfmoon_server.errors import Refusal

DAY_MS = visibility.DAY_MS  # (tests of the core read it here)
#: Spectators one room lets in over its life: each comes and goes through the room's log.
MAX_WATCHES = 2000
_GAME_STATUS = {status: PlayerStatus(status.value) for status in Status}  # playing, stalled, won
# Read on every move: a module global is ~0.1 µs cheaper than an Enum class attribute.
_NOT_STARTED = frozenset({Phase.LOBBY, Phase.COUNTDOWN})
_WON = Status.WON


@dataclass(frozen=True, slots=True)
class RaceConfig:
    """The rules a race runs by (from the server's settings)."""

    max_players: int = 8
    countdown_ms: int = 3000
    default_time_limit_s: int = 1800
    #: a room whose players are all away (or a lobby nobody is in) is closed after this
    abandon_after_ms: int = 3_600_000
    #: a finished room stays readable (resume, GET /api/rooms/…) this long
    finished_ttl_ms: int = 1_800_000
    #: a result faster than this per tap the game needed is not ranked (0: no such rule; see
    #: :mod:`halfmoon_server.core.ranking`)
    tap_floor_ms: int = DEFAULT_TAP_FLOOR_MS
    #: a daily attempt's time limit as configured (``--daily-time-limit``): its day's code opens
    #: this long after the day ends, whatever this attempt's own limit (the lobby shortens a late
    #: one's). None in a room logged by an earlier release: its attempt's own limit then
    daily_time_limit_s: int | None = None


@dataclass(slots=True)
class Racer:
    """One player of a race and their game."""

    id: str
    name: str
    status: PlayerStatus = PlayerStatus.WAITING
    game: Game | None = None
    #: the steps taken after :attr:`unread` (all of them, but in a read copy restored from a
    #: snapshot): read through :attr:`steps`, added with :meth:`add_step`
    _steps: list[Step] = field(default_factory=list)
    #: the player's clock (ms) when each of ``steps`` was taken: stored with the record, so the
    #: game can be raced as a ghost
    times: array[int] = field(default_factory=lambda: array("q"))  # 8 bytes a step, not an int object
    connected: bool = True
    away_since: int | None = None
    time_ms: int | None = None  # the final time, once the game is over
    finished_at: int | None = None
    #: whether this player's result is ranked, and why not (:meth:`Race.judge`: once they join,
    #: and again when their game ends)
    ranked: bool = True
    unranked_reason: Unranked | None = None
    #: the player said it is a bot (``join`` with ``bot``)
    bot: bool = False
    #: a daily attempt that is the name's ranked one (false: a retry of the day)
    daily_first: bool = True
    game_id: str | None = None
    #: a solo game's clock (docs/protocol.md): the time counted so far, and since when it runs
    #: (None: not started yet — it starts at the first move — or standing still while stalled)
    clock_ms: int = 0
    running_since: int | None = None
    #: the lowest height each pile has had in this player's game: every card from there up has
    #: been on top, so this player has seen it (an undo does not unsee it)
    lowest: list[int] | None = None
    #: this player's board as spectators may know it: the game replayed up to ``public_steps`` of
    #: ``steps``, the first step held back being a move that removes a card not every racer still
    #: playing has seen (:meth:`Race.spectator_view`); None until a spectator first needs it
    public: Game | None = None
    public_steps: int = 0
    #: the race's splits: this player's time when their game first held 12, 24, 36 and 48 moves
    #: (an undo does not take a split back; None: not reached)
    splits: list[int | None] = field(default_factory=lambda: [None] * len(SPLIT_MOVES))
    #: the first steps, as a snapshot wrote them and not parsed yet (a read copy's: its REST
    #: view shows no board, :func:`halfmoon_server.core.snapshots.restore_snapshot` ``lazy``);
    #: parsed the first time :attr:`steps` is read
    unread: UnreadSteps | None = None
    #: the moves still in effect when the game ended (its undo stack, forgotten then): what a
    #: snapshot writes as its board, without going through its steps
    ended_with: list[Move] | None = None

    @property
    def steps(self) -> list[Step]:
        """Every step of the game (moves and undos), in order."""
        if self.unread is not None:
            self._steps[:0] = self.unread.parse()
            self.unread = None
        return self._steps

    def add_step(self, step: Step) -> None:
        """One more step (the unread ones stay unread)."""
        self._steps.append(step)

    @property
    def step_count(self) -> int:
        return len(self._steps) + (0 if self.unread is None else len(self.unread))

    @property
    def taps(self) -> int:
        """The taps the game needed so far (:func:`halfmoon_server.core.ranking.taps_of`)."""
        return taps_of(self._steps) + (0 if self.unread is None else self.unread.taps)

    @property
    def playing(self) -> bool:
        return self.status in ACTIVE

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def record(self, code: DealCode) -> GameRecord:
        return GameRecord(code, list(self.steps), list(self.times))


@dataclass(slots=True)
class Standing:
    """A player's line in a series' points table: the sums over the races they ran in it."""

    name: str
    points: int = 0
    score: int = 0
    time_ms: int = 0
    races: int = 0


@dataclass(frozen=True, slots=True)
class QuickSeats:
    """A quick race's seats (the queue matched its players, :mod:`halfmoon_server.core.queue`):
    held for those players' identities (the hashes of their player keys) and nobody else's, and
    ``start_by`` (ms): the race starts once every seat is taken, or then with whoever came."""

    seats: frozenset[str]
    start_by: int

    @classmethod
    def from_json(cls, data: Json) -> QuickSeats:
        return cls(frozenset(data["seats"]), int(data["start_by"]))

    def to_json(self) -> Json:
        return {"seats": sorted(self.seats), "start_by": self.start_by}


def _standing_json(standing: Standing) -> Json:
    return {"points": standing.points, "score": standing.score, "time_ms": standing.time_ms, "races": standing.races}


class Race:
    """One deal and its players: a race, a solo game or a daily attempt. See the module docstring."""

    def __init__(
        self,
        room_id: str,
        mode: Mode,
        code: DealCode | None,
        config: RaceConfig,
        *,
        now: int,
        daily_day: date | None = None,
        salt: str | None = None,
        seed: str | None = None,
        quick: QuickSeats | None = None,
    ) -> None:
        self.id = room_id
        self.mode = mode
        #: what this mode does differently (:mod:`halfmoon_server.core.modes`)
        self.rules = rules_for(mode)
        self.config = config
        self.daily_day = daily_day
        #: a sealed race (the server chose the deal): nobody sees the code before the race is
        #: over. Its deal does not exist before the start: the code is derived then from the
        #: server's ``seed``, committed to before anyone joined (``seal_commitment(seed)``), and
        #: the ``entropy`` every starting racer contributed (docs/protocol.md, "Sealed races").
        #: A room of the previous release was dealt from a code of its own, committed to as
        #: ``sha256(CODE:SALT)``; a daily attempt's ``salt`` opens the day's commitment.
        self.code = code
        self.deal = None if code is None else Deal.from_code(code)
        self.salt = salt
        self.seed = seed
        self.sealed = self.rules.may_seal and (salt is not None or seed is not None)
        #: each racer's contribution to a sealed deal (player id → hex), while in the lobby
        self.entropy: dict[str, str] = {}
        #: the contributions the deal was derived from (sorted), from the start on
        self.contributions: tuple[str, ...] | None = None
        self.commitment = self._commitment()
        self.phase = Phase.LOBBY
        self.host: str | None = None
        self.players: dict[str, Racer] = {}
        self.created_at = now
        self.starts_at: int | None = None
        self.started_at: int | None = None
        self.finished_at: int | None = None
        self.time_limit_s: int | None = None
        self.results: tuple[Result, ...] | None = None
        #: players whose game is over but not recorded yet: the race is over once none is left
        self.unrecorded: set[str] = set()
        #: how many watch (on every instance serving the room), and how many ever came in
        self.spectators = 0
        self.watches = 0
        self._next_player = 1
        self._deadline: int | None = None  # see next_deadline
        #: the room's race number: a rematch (:meth:`rematch`) starts the next on a new deal
        self.round = 1
        #: the room's players who have not taken their place in this race (:meth:`accept`)
        self.seated: dict[str, Racer] = {}
        #: a series under way (its length, its first race's round) and its points table
        self.series: int | None = None
        self.series_first = 1
        self.table: dict[str, Standing] = {}
        #: a quick race's seats (None: a room anyone with its link may join), and which identity
        #: took which (identity → player id): its first race starts by itself, never by its host
        self.quick = quick
        self.quick_taken: dict[str, str] = {}
        if quick is not None:
            self._deadline = quick.start_by

    def _commitment(self) -> str | None:
        if self.seed is not None:
            return seal_commitment(self.seed)
        if self.salt is not None and self.code is not None:
            return commitment_of(str(self.code), self.salt)
        return None

    @property
    def code_text(self) -> str:
        """The deal code (once dealt: a sealed race's from its start)."""
        assert self.code is not None, "a sealed race's deal does not exist before its start"
        return str(self.code)

    def contribute(self, player_id: str, entropy: str | None) -> None:
        """Keep (or replace) a racer's contribution to a sealed race's deal, in the lobby; any
        other race takes none (its deal is fixed already)."""
        if entropy is not None and self.seed is not None and self.phase is Phase.LOBBY:
            self.entropy[player_id] = entropy

    # -- what each viewer may see -----------------------------------------------------------------

    def elapsed(self, racer: Racer, now: int) -> int:
        if racer.time_ms is not None:
            return racer.time_ms
        if self.started_at is None or racer.status is PlayerStatus.WAITING:
            return 0
        if self.rules.own_clock:
            since = racer.running_since
            return racer.clock_ms + (0 if since is None else max(0, now - since))
        return max(0, now - self.started_at)

    def _run_solo_clock(self, racer: Racer, now: int) -> None:
        """A solo game's clock after an action: it runs while the game is being played (from
        the first move) and stands still while stalled (an undo sets it going again)."""
        if racer.status is PlayerStatus.PLAYING:
            if racer.running_since is None:
                racer.running_since = now
        elif racer.running_since is not None:
            racer.clock_ms += max(0, now - racer.running_since)
            racer.running_since = None

    def summary(self, racer: Racer, now: int) -> PlayerSummary:
        game = racer.game
        return PlayerSummary(
            racer.id,
            racer.name,
            racer.status,
            game.score if game else 0,
            game.move_count if game else 0,
            game.cards_left if game else 104,
            self.elapsed(racer, now),
            racer.connected,
            racer.bot,
        )

    def judge(self, racer: Racer) -> None:
        """Decide whether ``racer``'s result is ranked (:func:`halfmoon_server.core.ranking.unranked_reason`):
        from the start what the room and the player are, and at the end of their game its pace."""
        reason = unranked_reason(
            self.mode,
            sealed=self.sealed,
            daily_first=racer.daily_first,
            bot=racer.bot,
            taps=racer.taps,
            time_ms=racer.time_ms if racer.finished else None,
            tap_floor_ms=self.config.tap_floor_ms,
        )
        racer.ranked, racer.unranked_reason = reason is None, reason

    def facts(self) -> RoomFacts:
        """The room's deal as the visibility policy needs to know it (:mod:`halfmoon_server.core.visibility`)."""
        opens_at = None if self.daily_day is None else self.reveal_at()
        return RoomFacts(self.mode, self.sealed, self.phase is Phase.FINISHED, opens_at)

    def code_for(self, viewer: Racer | None, now: int) -> str | None:
        """The deal code a viewer (a player, or None: a spectator, a REST reader) may see now, as
        :func:`halfmoon_server.core.visibility.code_visible` decides (a sealed race's once it is
        over, a daily's once every attempt of its day has ended, any other's from the start)."""
        who = Viewer.READER if viewer is None else Viewer.PLAYER
        return self.code_text if visibility.code_visible(self.facts(), who, now) else None

    def opening_for(self, viewer: Racer | None, now: int) -> tuple[str | None, str | None]:
        """What opens the deal's commitment that a viewer may see now: ``(salt, seed)``
        (:func:`halfmoon_server.core.visibility.opening_visible`: with the code)."""
        who = Viewer.READER if viewer is None else Viewer.PLAYER
        if not visibility.opening_visible(self.facts(), who, now):
            return None, None
        return self.salt, self.seed

    def reveal_at(self) -> int:
        """When a daily attempt's code is public (:func:`halfmoon_server.core.visibility.daily_opens_at`)."""
        assert self.daily_day is not None
        limit_s = self.config.daily_time_limit_s
        return visibility.daily_opens_at(self.daily_day, (self.time_limit_s or 0) if limit_s is None else limit_s)

    def spectator_view(self) -> dict[str, list[tuple[str | None, int]]]:
        """Each player's board as spectators may see it: ``(top, count)`` per position
        (docs/protocol.md, "Who sees what"; docs/security.md).

        Everyone plays the same deal, so a card one racer has uncovered lies under the same
        pile of every other racer's game: shown to spectators (and so to a racer watching from
        another tab) it would tell a racer still playing what is coming. A pile card is *public*
        once every racer still playing has seen it, i.e. when it is at least as high as the lowest
        its pile has been in each of their games; reserve cards are public from the start, and
        once nobody is playing, all are. A top that is not public is shown as ``HIDDEN_TOP``.

        A move tells the cards it removes (it pairs them to 11, or they are a J, Q and K: a pile
        card paired with a reserve card has a known rank), so spectators see a player's board as
        it was before their first move that removed a card not public yet: that move and every
        later step of that player wait until its cards are public (see :meth:`_catch_up`). An
        undo at the head of that queue never waits: it puts back cards its move removed, which
        were public when that move was shown (cards only ever become public, never the reverse).
        """
        # per position, the height from which its cards are public (visibility.public_bar)
        bar = visibility.public_bar(r.lowest for r in self.players.values() if r.playing and r.lowest is not None)
        view: dict[str, list[tuple[str | None, int]]] = {}
        for racer in self.players.values():
            game = self._catch_up(racer, bar)
            if game is None:
                continue
            shown: list[tuple[str | None, int]] = []
            for position in POSITIONS:
                card, count = game.card_at(position), game.count_at(position)
                if card is None:
                    shown.append((None, count))
                elif count < bar[position]:  # not public (visibility.is_public)
                    shown.append((HIDDEN_TOP, count))
                else:
                    shown.append((card.name, count))
            view[racer.id] = shown
        return view

    @staticmethod
    def _catch_up(racer: Racer, bar: list[int]) -> Game | None:
        """``racer.public`` moved on through every step of theirs that spectators may see now, in
        order: up to the first move that removes a pile card lower than ``bar`` (not public)."""
        public = racer.public
        if public is None:
            if racer.game is None:
                return None  # not in this race's games
            # nobody watched so far: the copy starts now, from the deal, through the same steps
            # (the bar only ever goes down, so catching up late stops where catching up move by
            # move would have)
            public = racer.public = Game(racer.game.deal)
        steps = racer.steps
        while racer.public_steps < len(steps):
            step = steps[racer.public_steps]
            if step == UNDO:
                public.undo()
            else:
                assert isinstance(step, Move)
                if any(public.count_at(p) < bar[p] for p in step.positions):
                    break  # the move removes a card not public yet (visibility.is_public): it tells that card
                public.push(step)
            racer.public_steps += 1
        if racer.finished and racer.public_steps == len(steps):
            public.forget_undos()  # no step of theirs will come: the spectators' copy needs no undo
        return public

    def is_shown(self, player_id: str) -> bool:
        """Whether spectators' copy of the player's board is up to date (no step of theirs held
        back); as of the last :meth:`spectator_view`."""
        racer = self.players[player_id]
        return racer.public_steps == len(racer.steps)

    def spectator_boards(self) -> dict[str, dict[str, object]]:
        """Every board as spectators may see it: ``{player id: {"tops", "counts"}}``."""
        return {
            pid: {"tops": [top for top, _ in shown], "counts": [count for _, count in shown]}
            for pid, shown in self.spectator_view().items()
        }

    def snapshot(self, viewer: str | None, now: int, *, watcher: bool) -> RoomSnapshot:
        """The room as ``viewer`` (a player id, or None) may see it; a ``watcher`` (a spectator)
        also gets every board as spectators may see it."""
        racer = self.players.get(viewer) if viewer is not None else None
        who = Viewer.PLAYER if racer is not None else Viewer.SPECTATOR if watcher else Viewer.READER
        seen = visibility.boards_seen(who)
        game = racer.game if racer is not None and seen is Boards.OWN else None
        boards = None
        if seen is Boards.PUBLIC and self.phase is not Phase.LOBBY and self.started_at is not None:
            boards = self.spectator_boards()
        code = self.code_for(racer, now)
        salt, seed = self.opening_for(racer, now)
        return RoomSnapshot(
            self.id,
            self.mode,
            self.phase,
            code,
            self.host,
            now,
            self.starts_at,
            self.started_at,
            self.time_limit_s,
            tuple(self.summary(r, now) for r in self.players.values()),
            self.spectators,
            None if game is None else BoardView.of(game).to_json(),
            boards,
            bool(game is not None and game.can_undo),
            self.results,
            self.sealed,
            self.commitment,
            None if racer is None else self._game_over_json(racer, now),
            salt,
            self.round,
            self.series_json(),
            tuple(self.summary(r, now) for r in self.seated.values()),
            self.contributions,
            seed,
            self.quick is not None and self.round == 1,
        )

    def _game_over_json(self, racer: Racer, now: int) -> Json | None:
        over = self.game_over(racer, now)
        if over is None:
            return None
        return over.to_json()

    # -- membership ---------------------------------------------------------------------------------

    # Each check_* raises the :class:`Refusal` its command would, changing nothing: the room
    # shell runs it before logging a command, so a refused command is never logged.

    def check_join(self, name: str, player: str | None = None) -> None:
        """Raises :class:`Refusal` (``race_started``, ``name_taken``, ``room_full``, and
        ``seat_reserved`` in a quick race for an identity — ``player``, the hash of the player's
        key — it holds no seat for, or one already seated)."""
        if self.phase is not Phase.LOBBY:
            raise Refusal("race_started", f"room {self.id} has already started")
        if self._quick_lobby:
            assert self.quick is not None
            if player is None or player not in self.quick.seats:
                raise Refusal(
                    "seat_reserved", f"room {self.id} is a quick race: its seats are held for the players it matched"
                )
            if self.quick_taken.get(player) in self.players:
                raise Refusal("seat_reserved", f"your seat in quick race {self.id} is taken already (another device?)")
        key = name_key(name)  # look-alikes (Cyrillic А, fullwidth Ａ, 𝐀) are the same name
        if any(name_key(r.name) == key for r in [*self.players.values(), *self.seated.values()]):
            raise Refusal("name_taken", f"the name {name!r} is already used in room {self.id}")
        if len(self.players) >= self.config.max_players:
            raise Refusal("room_full", f"room {self.id} already has {self.config.max_players} players")

    def join(
        self,
        name: str,
        now: int,
        entropy: str | None = None,
        *,
        bot: bool = False,
        daily_first: bool = True,
        player: str | None = None,
    ) -> tuple[Racer, list[Event]]:
        """A new player in the lobby (connected), with their contribution to a sealed deal
        (``entropy``, optional); ``bot``: it says it is a program; ``daily_first``: a daily
        attempt that is the name's ranked one; ``player``: the hash of their key (a quick race's
        seats are held by it). A quick race's countdown starts once its last seat is taken.
        Raises :class:`Refusal` (see :meth:`check_join`)."""
        self.check_join(name, player)
        racer = Racer(f"p{self._next_player}", name, bot=bot, daily_first=daily_first)
        self.judge(racer)
        self.contribute(racer.id, entropy)
        self._next_player += 1
        if self._host_away():  # no host, or one who dropped and has not come back
            self.host = racer.id
        self.players[racer.id] = racer
        events: list[Event] = [PlayerJoined(self.summary(racer, now), self.host)]
        if self._quick_lobby:
            assert self.quick is not None and player is not None
            self.quick_taken[player] = racer.id
            if all(self.quick_taken.get(seat) in self.players for seat in self.quick.seats):
                events += self._countdown(None, now)
        return racer, events

    @property
    def _quick_lobby(self) -> bool:
        """A quick race's first lobby: its seats are held, and it starts by itself."""
        return self.quick is not None and self.round == 1 and self.phase is Phase.LOBBY

    def connect(self, player_id: str, now: int, entropy: str | None = None) -> list[Event]:
        """A player is back (a resume), in a sealed race's lobby with a new contribution
        (``entropy``) in place of their last one. Nothing to say when they were still connected
        elsewhere."""
        if entropy is not None and player_id in self.players:
            self.contribute(player_id, entropy)
        if player_id in self.seated:  # not in this race: nobody needs to hear it
            self.seated[player_id].connected, self.seated[player_id].away_since = True, None
            return []
        racer = self._racer(player_id)
        racer.away_since = None
        if racer.connected:
            return []
        racer.connected = True
        if self.phase is Phase.LOBBY:
            if self._host_away():  # the lobby needs a host who can start
                self.host = racer.id
            return [PlayerChanged(self.summary(racer, now), self.host, with_host=True)]
        return [PlayerChanged(self.summary(racer, now))]

    def disconnect(self, player_id: str, now: int) -> list[Event]:
        """The player's connection closed (not a ``leave``): they keep their place, the clock runs."""
        if player_id in self.seated:
            self.seated[player_id].connected, self.seated[player_id].away_since = False, now
            return []
        racer = self._racer(player_id)
        if not racer.connected:
            return []
        racer.connected = False
        racer.away_since = now
        if self.phase is Phase.LOBBY:
            if self.host == racer.id:
                # a host who dropped may never come back: a connected player can start instead
                self.host = next((r.id for r in self.players.values() if r.connected), self.host)
            return [PlayerChanged(self.summary(racer, now), self.host, with_host=True)]
        return [PlayerChanged(self.summary(racer, now))]

    def leave(self, player_id: str, now: int) -> list[Event]:
        """``leave``: a player in the lobby goes (their seat too); a player still playing is ``left``."""
        if player_id in self.seated:  # a seat not in this race goes
            gone = self.seated.pop(player_id)
            gone.connected, gone.status = False, PlayerStatus.LEFT
            return [PlayerLeft(self.summary(gone, now), self.host, removed=True)]
        racer = self._racer(player_id)
        if self.phase in (Phase.LOBBY, Phase.COUNTDOWN) and racer.status is PlayerStatus.WAITING:
            del self.players[racer.id]
            self.entropy.pop(racer.id, None)  # who does not start has no say in the deal
            if self.host == racer.id:  # to a connected player if there is one: they can start
                connected = [r.id for r in self.players.values() if r.connected]
                self.host = connected[0] if connected else next(iter(self.players), None)
            racer.connected = False
            racer.status = PlayerStatus.LEFT
            return [PlayerLeft(self.summary(racer, now), self.host, removed=True)]
        events: list[Event] = []
        if racer.playing:
            events += self._finish(racer, PlayerStatus.LEFT, now, announce=False)
        racer.connected = False
        racer.away_since = now
        events.append(PlayerLeft(self.summary(racer, now), self.host, removed=False))
        events += self._check_race_end(now)
        return events

    def check_watch(self) -> None:
        """Raises :class:`Refusal` ``private_room`` for a daily attempt, ``room_full`` once
        :data:`MAX_WATCHES` spectators have come in (a bound on what one room's log holds)."""
        if not visibility.may_watch(self.facts()):
            raise Refusal("private_room", f"room {self.id} is a daily-challenge attempt and cannot be watched")
        if self.watches >= MAX_WATCHES:
            raise Refusal("room_full", f"room {self.id} has had as many spectators come and go as it takes")

    def watch(self) -> list[Event]:
        """A spectator comes in. Raises :class:`Refusal` (see :meth:`check_watch`)."""
        self.check_watch()
        self.watches += 1
        self.spectators += 1
        return [SpectatorsChanged(self.spectators)]

    def unwatch(self) -> list[Event]:
        """A spectator goes."""
        self.spectators = max(0, self.spectators - 1)
        return [SpectatorsChanged(self.spectators)]

    def _host_away(self) -> bool:
        host = self.players.get(self.host) if self.host is not None else None
        return host is None or not host.connected

    def running_since(self) -> int | None:
        """When the race started (ms) if someone still plays it; None when nobody does — the
        fact the visibility policy needs of a room to judge its stored games
        (:func:`halfmoon_server.core.visibility.on_a_deal_in_play`)."""
        if not any(racer.playing for racer in self.players.values()):
            return None
        return int(self.started_at or 0)

    def check_member(self, player_id: str | None) -> None:
        """Raises the :class:`Refusal` that a seat's own commands (``connect``, ``present``,
        ``disconnect``, ``leave``) get from a player who has no seat here any more (one a rematch
        left out), changing nothing."""
        if player_id is None or (player_id not in self.seated and player_id not in self.players):
            raise Refusal("not_in_room", f"player {player_id!r} is not in room {self.id}")

    def _racer(self, player_id: str) -> Racer:
        racer = self.players.get(player_id)
        if racer is None:
            raise Refusal("not_in_room", f"player {player_id!r} is not in room {self.id}")
        return racer

    # -- the race -------------------------------------------------------------------------------------

    def check_start(self, player_id: str | None, series: int | None = None) -> None:
        """Raises :class:`Refusal` (``race_started``, ``not_host``, ``bad_message`` for a
        series asked for while one is under way)."""
        if self.phase is not Phase.LOBBY:
            raise Refusal("race_started", f"room {self.id} has already started")
        if self._quick_lobby:
            raise Refusal("not_host", "a quick race starts by itself once its players are in")
        if player_id is None or player_id != self.host:
            raise Refusal("not_host", "only the host may start the race")
        if series is not None and self.series is not None:
            raise Refusal("bad_message", f"a series of {self.series} races is under way in room {self.id}")

    def start(
        self, player_id: str | None, time_limit_s: int | None, now: int, series: int | None = None
    ) -> list[Event]:
        """The host starts the countdown (``begin`` follows at :meth:`next_deadline`); with
        ``series``, this race is the first of a series of that many.

        Raises :class:`Refusal` (see :meth:`check_start`)."""
        self.check_start(player_id, series)
        if series is not None:
            self.series, self.series_first, self.table = series, self.round, {}
        return self._countdown(time_limit_s, now)

    def _countdown(self, time_limit_s: int | None, now: int) -> list[Event]:
        self.phase = Phase.COUNTDOWN
        self.time_limit_s = time_limit_s or self.config.default_time_limit_s
        self.starts_at = self._deadline = now + self.config.countdown_ms
        return [CountdownStarted(self.starts_at, now, self.time_limit_s)]

    def begin(self, now: int) -> list[Event]:
        """Everyone starts on the same deal at the same instant (after the countdown, or at once
        for a solo game or a daily attempt)."""
        if self.phase not in (Phase.LOBBY, Phase.COUNTDOWN):
            return []
        self.phase = Phase.RUNNING
        self.started_at = now
        self.starts_at = now if self.starts_at is None else self.starts_at
        self._deadline = None if self.time_limit_s is None else now + self.time_limit_s * 1000
        if self.seed is not None:  # a sealed race is dealt now, from the seed and who starts
            self.contributions = tuple(sorted(self.entropy[pid] for pid in self.players if pid in self.entropy))
            self.code = sealed_code(self.seed, self.contributions)
            self.deal = Deal.from_code(self.code)
        deal = self.deal
        assert deal is not None
        boards: dict[str, BoardView] = {}
        for racer in self.players.values():
            racer.game = Game(deal)
            racer.status = PlayerStatus.PLAYING
            racer.lowest = [racer.game.count_at(pile) for pile in PILES]
            racer.public, racer.public_steps = None, 0  # built when a spectator first needs it
            boards[racer.id] = BoardView.of(racer.game)
        # everyone in the race sees the same: a solo game's or an open race's code (a sealed race's
        # or a daily's: not now)
        code = self.code_text if visibility.code_visible(self.facts(), Viewer.PLAYER, now) else None
        events: list[Event] = [RaceStarted(now, code, boards, self.commitment, self.contributions)]
        return events + self._check_race_end(now)

    def move(self, player_id: str | None, move: Move, now: int) -> list[Event]:
        """A move on the player's own game. Raises :class:`Refusal` (``illegal_move`` with the
        engine's reason, ``not_started``, ``not_playing``)."""
        racer = self._playing(player_id)
        game = racer.game
        assert game is not None
        try:
            game.push(move)
        except IllegalMoveError as exc:
            raise Refusal("illegal_move", str(exc), reason=exc.code) from None
        racer.add_step(move)
        return self._after_action(racer, "move", move, now)

    def check_move(self, player_id: str | None, move: Move, now: int) -> None:
        """Whether :meth:`move` would take this move now; changes nothing. Raises :class:`Refusal`
        as :meth:`move` would (a deadline due at ``now`` is not settled here: the move itself is)."""
        racer = self._playing(player_id)
        assert racer.game is not None
        try:
            racer.game.check(move)
        except IllegalMoveError as exc:
            raise Refusal("illegal_move", str(exc), reason=exc.code) from None

    def undo(self, player_id: str | None, now: int) -> list[Event]:
        """Take back the player's last move. Raises :class:`Refusal` (``nothing_to_undo``, …)."""
        racer = self._playing(player_id)
        game = racer.game
        assert game is not None
        try:
            move = game.undo()
        except UndoError as exc:
            raise Refusal("nothing_to_undo", str(exc)) from None
        racer.add_step(UNDO)
        return self._after_action(racer, "undo", move, now)

    def check_undo(self, player_id: str | None) -> None:
        """Raises :class:`Refusal` (``nothing_to_undo``, ``not_playing``, ``not_started``)."""
        game = self._playing(player_id).game
        assert game is not None
        if not game.can_undo:
            raise Refusal("nothing_to_undo", "nothing to undo: no move has been made, or none left to take back")

    def check_give_up(self, player_id: str | None) -> None:
        """Raises :class:`Refusal` (``not_playing``, ``not_started``)."""
        self._playing(player_id)

    def give_up(self, player_id: str | None, now: int) -> list[Event]:
        racer = self._playing(player_id)
        return self._finish(racer, PlayerStatus.GAVE_UP, now, announce=True) + self._check_race_end(now)

    def _playing(self, player_id: str | None) -> Racer:
        """The player whose game is on. Raises :class:`Refusal` (``not_playing``, ``not_started``)."""
        if player_id is None:
            raise Refusal("not_playing", "spectators cannot play")
        racer = self._racer(player_id)
        if self.phase in _NOT_STARTED:
            raise Refusal("not_started", "the race has not started yet")
        if not racer.playing or racer.game is None:
            raise Refusal("not_playing", f"your game is over ({racer.status})")
        return racer

    def _after_action(self, racer: Racer, action: str, move: Move, now: int) -> list[Event]:
        game = racer.game
        assert game is not None and racer.lowest is not None
        for position in move.positions:
            if position < PILE_COUNT:
                racer.lowest[position] = min(racer.lowest[position], game.count_at(position))
        status = game.status
        racer.status = _GAME_STATUS[status]
        if self.rules.own_clock:
            self._run_solo_clock(racer, now)
        won = status is _WON
        if won:
            racer.time_ms = self.elapsed(racer, now)
        racer.times.append(max(self.elapsed(racer, now), racer.times[-1] if racer.times else 0))
        count = game.move_count
        if action == "move" and count % SPLIT_EVERY == 0 and racer.splits[count // SPLIT_EVERY - 1] is None:
            racer.splits[count // SPLIT_EVERY - 1] = self.elapsed(racer, now)
        moved = Moved(
            racer.id,
            action,
            move,
            [(p, game.card_at(p), game.count_at(p)) for p in move.positions],
            game.score,
            game.move_count,
            game.cards_left,
            racer.status,
            self.elapsed(racer, now),
            game.can_undo,
        )
        if not won:
            return [moved]
        return [moved, *self._finish(racer, PlayerStatus.WON, now, announce=False), *self._check_race_end(now)]

    # -- deadlines --------------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When the race next needs a :meth:`tick`: a quick race's ``start_by`` in its lobby, the
        end of the countdown, or the time limit (kept up to date by the transitions that change it)."""
        return self._deadline

    def tick(self, now: int) -> list[Event]:
        """Settle whatever is due at ``now``: the countdown's end, the time limit."""
        deadline = self._deadline
        if deadline is None or now < deadline:
            return []
        if self.phase is Phase.COUNTDOWN:
            return self.begin(now)
        if self.phase is Phase.LOBBY:  # a quick race's start_by: it starts with whoever came
            self._deadline = None
            return self._countdown(None, now) if self.players else []
        events: list[Event] = []
        assert self.time_limit_s is not None
        for racer in self.players.values():
            if racer.playing:
                racer.time_ms = self.time_limit_s * 1000
                events += self._finish(racer, PlayerStatus.TIMED_OUT, now, announce=True)
        return events + self._check_race_end(now)

    def is_stale(self, now: int) -> bool:
        """Nobody is left to care: finished (and recorded) long ago, or everyone away for too long."""
        if self.phase is Phase.FINISHED:
            assert self.finished_at is not None
            return not self.unrecorded and now - self.finished_at > self.config.finished_ttl_ms
        if self.spectators:
            return False
        for racers in (self.players, self.seated):  # (asked of every room twice a second: no generators)
            for racer in racers.values():
                if racer.connected:
                    return False
        away = [r.away_since or self.created_at for r in self.players.values()]
        return now - max(away, default=self.created_at) > self.config.abandon_after_ms

    def abandon(self, now: int) -> list[Event]:
        """Close an abandoned room: players still playing count as ``left``."""
        events: list[Event] = []
        for racer in self.players.values():
            if racer.playing:
                events += self._finish(racer, PlayerStatus.LEFT, now, announce=False)
        return events + self._check_race_end(now)

    # -- the end ------------------------------------------------------------------------------------------

    def _finish(self, racer: Racer, outcome: PlayerStatus, now: int, *, announce: bool) -> list[Event]:
        if racer.time_ms is None:
            racer.time_ms = self.elapsed(racer, now)
        racer.status = outcome
        racer.finished_at = now
        self.judge(racer)
        if racer.game is not None:
            racer.ended_with = racer.game.history()  # (every move still in effect: at most 52)
            racer.game.forget_undos()  # a finished game takes no undo: its stack is memory only
        self.unrecorded.add(racer.id)
        events: list[Event] = [PlayerChanged(self.summary(racer, now))] if announce else []
        events.append(GameEnded(racer.id))
        return events

    def _check_race_end(self, now: int) -> list[Event]:
        if self.phase is not Phase.RUNNING:
            return []
        if all(r.finished for r in self.players.values()):
            self.phase = Phase.FINISHED
            self.finished_at = now
            self._deadline = None
            return self._race_over(now)
        return []

    def recorded(self, player_id: str, game_id: str | None, now: int = 0) -> list[Event]:
        """A finished game is recorded (its id logged; the database write follows): the player's
        :class:`GameOver`, and the :class:`RaceOver` once every game is recorded."""
        racer = self._racer(player_id)
        self.unrecorded.discard(player_id)
        racer.game_id = game_id
        over = self.game_over(racer, now)
        assert over is not None
        return [over, *self._race_over(now)]

    def game_over(self, racer: Racer, now: int) -> GameOver | None:
        """``racer``'s :class:`GameOver` as it stands at ``now`` (the code and salt once they
        may know them); None while their game is not over and recorded. A resume after the
        end carries it in the snapshot, so the end box comes back with the board."""
        game = racer.game
        if game is None or racer.time_ms is None or not racer.finished or racer.id in self.unrecorded:
            return None
        code = self.code_for(racer, now)
        salt, seed = self.opening_for(racer, now)
        return GameOver(
            racer.status,
            game.score,
            game.move_count,
            racer.time_ms,
            code,
            racer.game_id,
            racer.ranked,
            salt,
            seed,
            racer.unranked_reason,
            player=racer.id,
        )

    def _race_over(self, now: int) -> list[Event]:
        if self.phase is not Phase.FINISHED or self.unrecorded or self.results is not None:
            return []

        def result(rank: int, r: Racer) -> Result:
            score, moves = (r.game.score, r.game.move_count) if r.game else (0, 0)
            splits = tuple(r.splits)
            time_ms = r.time_ms or 0
            return Result(
                rank, r.id, r.name, score, moves, time_ms, r.status, r.game_id, splits, r.ranked, r.unranked_reason
            )

        lines = [result(0, r) for r in self.players.values()]
        finished_at = {r.id: r.finished_at or 0 for r in self.players.values()}
        lines.sort(key=lambda line: ranking_key(line.score, line.time_ms, finished_at[line.player or ""]))
        self.results = tuple(replace(line, rank=rank) for rank, line in enumerate(lines, 1))
        if not self.rules.rematch:  # no round, series or deal to tell
            return [RaceOver(self.results)]
        if self.series is not None:  # points by placing: of n racers the first gets n - 1, the last 0
            for line in self.results:
                standing = self.table.setdefault(line.player or "", Standing(line.name))
                standing.points += len(self.results) - line.rank
                standing.score += line.score
                standing.time_ms += line.time_ms
                standing.races += 1
        code = self.code_for(None, now)  # the race is over: out for everyone
        salt, seed = self.opening_for(None, now)
        assert code is not None
        over = RaceOver(self.results, code, salt, self.sealed, self.round, self.series_json())
        over.seed, over.contributions = seed, self.contributions
        return [over]

    # -- rematches and series ----------------------------------------------------------------------------

    def series_json(self) -> Json | None:
        """The series under way (None: none): ``races`` in all, this ``race``'s number in it,
        whether it is ``over``, and its points ``table``, best first (points, then the summed
        score, then the summed time)."""
        if self.series is None:
            return None
        race = self.round - self.series_first + 1
        lines = sorted(self.table.items(), key=lambda item: (-item[1].points, -item[1].score, item[1].time_ms))
        table = [{"player": pid, "name": s.name, **_standing_json(s)} for pid, s in lines]
        over = race >= self.series and self.results is not None
        return {"races": self.series, "race": race, "over": over, "table": table}

    def check_rematch(self, player_id: str | None) -> None:
        """Raises :class:`Refusal` (``no_rematch`` before a race's results are out or in a room
        that is not a race, ``not_in_room`` for a spectator)."""
        if not self.rules.rematch or self.phase is not Phase.FINISHED or self.results is None:
            raise Refusal("no_rematch", "a rematch can be proposed once the race is over and its results are out")
        if player_id is None or (player_id not in self.players and player_id not in self.seated):
            raise Refusal("not_in_room", "only a player of the room can propose a rematch")
        if player_id in self.players and self.players[player_id].status is PlayerStatus.LEFT:
            raise Refusal("not_in_room", "a player who left the room cannot propose its rematch")

    def rematch(
        self,
        player_id: str | None,
        now: int,
        *,
        seed: str | None = None,
        entropy: str | None = None,
        code: DealCode | None = None,
        salt: str | None = None,
    ) -> list[Event]:
        """A rematch: the room's next race, a sealed race like any the server deals, is a lobby
        again: its deal will be derived at its start from ``seed`` (the server drew it) and the
        contributions of who starts — the proposer's ``entropy`` first. (A log of the previous
        release gives the next deal's ``code`` and its ``salt`` instead.) Its proposer is in and
        hosts it; the room's other players are seated and may :meth:`accept`. A series goes on
        (one that is over gives way to no series). Raises :class:`Refusal` (see
        :meth:`check_rematch`)."""
        self.check_rematch(player_id)
        assert player_id is not None and (seed is not None or (code is not None and salt is not None))
        if self.series is not None and self.round - self.series_first + 1 >= self.series:
            self.series, self.table = None, {}
        self.round += 1
        self.code, self.deal = code, None if code is None else Deal.from_code(code)
        self.seed, self.salt, self.sealed = seed, None if seed is not None else salt, True
        self.entropy, self.contributions = {}, None
        self.commitment = self._commitment()
        self.phase = Phase.LOBBY
        self.starts_at = self.started_at = self.finished_at = self.time_limit_s = self._deadline = None
        self.results = None
        # who left the room mid-race is not asked back (their name is free to join again)
        stayed = [r for r in self.players.values() if r.status is not PlayerStatus.LEFT]
        everyone = sorted([*stayed, *self.seated.values()], key=lambda r: int(r.id[1:]))
        fresh = {r.id: Racer(r.id, r.name, connected=r.connected, away_since=r.away_since, bot=r.bot) for r in everyone}
        for racer in fresh.values():
            self.judge(racer)  # the rematch is sealed: ranked again, unless a bot
        self.players = {player_id: fresh.pop(player_id)}
        self.contribute(player_id, entropy)
        self.seated = fresh
        self.host = player_id
        summaries = tuple(self.summary(r, now) for r in self.seated.values())
        mine = (self.summary(self.players[player_id], now),)
        code_now = self.code_for(None, now)
        return [Rematched(self.round, self.host, mine, summaries, code_now, True, self.commitment, self.series_json())]

    def check_accept(self, player_id: str | None) -> None:
        """Raises :class:`Refusal` (``no_rematch``: not seated for a proposed rematch;
        ``race_started``, ``room_full``)."""
        if player_id is None or player_id not in self.seated:
            raise Refusal("no_rematch", "there is no rematch for you to accept in this room")
        if self.phase is not Phase.LOBBY:
            raise Refusal("race_started", f"room {self.id} has already started")
        if len(self.players) >= self.config.max_players:
            raise Refusal("room_full", f"room {self.id} already has {self.config.max_players} players")

    def accept(self, player_id: str | None, now: int, entropy: str | None = None) -> list[Event]:
        """A seated player takes their place in the rematch (the host if the host is away), with
        their contribution to its deal (``entropy``, optional). Raises :class:`Refusal` (see
        :meth:`check_accept`)."""
        self.check_accept(player_id)
        assert player_id is not None
        racer = self.players[player_id] = self.seated.pop(player_id)
        self.contribute(player_id, entropy)
        if self._host_away():
            self.host = racer.id
        return [PlayerJoined(self.summary(racer, now), self.host)]
