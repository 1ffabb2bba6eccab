"""Rooms in process: a :class:`Room` owns its players' :class:`halfmoon.Game` objects, checks
every action with the engine, times everything with the injected clock, and sends each recipient
its filtered view of every event (docs/protocol.md, "Who sees what"). The :class:`RoomRegistry`
on the app holds the rooms and the tokens, and runs the background ticker (time limits,
abandoned rooms).

Rooms never await a socket: they hand frames to :meth:`Connection.send`, which only queues.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Final

from halfmoon.codes import DealCode
from halfmoon.deal import Deal
from halfmoon.errors import IllegalMoveError, UndoError
from halfmoon.game import Game, Move, Status
from halfmoon.positions import PILE_COUNT, PILES, POSITION_NAMES, POSITIONS
from halfmoon.record import UNDO, GameRecord, Step
from halfmoon.view import HIDDEN_TOP, BoardView
from halfmoon_server.clock import Clock, day_start_ms
from halfmoon_server.connection import Connection, RateLimit
from halfmoon_server.daily import DailyService
from halfmoon_server.errors import ProtocolError, StorageError
from halfmoon_server.protocol import ROOM_ALPHABET, ROOM_ID_LENGTH, encode
from halfmoon_server.settings import Settings
from halfmoon_server.storage import FinishedGame, Storage

log = logging.getLogger("halfmoon_server.rooms")

FINISHED: Final = frozenset({"won", "gave_up", "left", "timed_out"})
ACTIVE: Final = frozenset({"playing", "stalled"})
DAY_MS: Final = 86_400_000


@dataclass(slots=True)
class Player:
    id: str
    name: str
    token: str
    status: str = "waiting"
    game: Game | None = None
    steps: list[Step] = field(default_factory=list)
    conn: Connection | None = None
    elapsed_final: int | None = None
    game_id: str | None = None
    disconnected_at: int | None = None
    ranked: bool = True
    analysis: dict[str, Any] | None = None
    #: the lowest height each pile has had in this player's game: every card from there up has
    #: been on top, so this player has seen it (an undo does not unsee it)
    lowest: list[int] | None = None


@dataclass(slots=True)
class RoomEvent:
    """One versioned event and its frame for each audience (None: not sent to that audience)."""

    seq: int
    players: bytes | None
    spectators: bytes | None
    overrides: dict[str, bytes | None]

    def for_player(self, player_id: str) -> bytes | None:
        if player_id in self.overrides:
            return self.overrides[player_id]
        return self.players


def _stamp(body: dict[str, Any], kind: str, seq: int) -> bytes:
    body["type"] = kind
    body["seq"] = seq
    return encode(body)


class Room:
    """One deal and its players: a race, a solo game or a daily attempt."""

    def __init__(
        self,
        registry: RoomRegistry,
        room_id: str,
        mode: str,
        code: DealCode,
        *,
        daily_day: date | None = None,
    ) -> None:
        self.registry = registry
        self.clock: Clock = registry.clock
        self.settings: Settings = registry.settings
        self.id = room_id
        self.mode = mode
        self.code = code
        self.deal = Deal.from_code(code)
        self.daily_day = daily_day
        self.phase = "lobby"
        self.host: str | None = None
        self.players: dict[str, Player] = {}
        self.spectators: set[Connection] = set()
        self.seq = 0
        self.log: deque[RoomEvent] = deque(maxlen=self.settings.event_log)
        self.created_ms = self.clock.now_ms()
        self.starts_at: int | None = None
        self.started_at: int | None = None
        self.finished_at: int | None = None
        self.time_limit_s: int | None = None
        self.results: list[dict[str, Any]] | None = None
        self.pending = 0
        self.shown: dict[str, list[str | None]] = {}  # each board's tops as spectators were last told
        self._next_player = 1
        self._start_handle: asyncio.TimerHandle | None = None

    # -- views ------------------------------------------------------------------------------

    def elapsed(self, player: Player, now: int) -> int:
        if player.elapsed_final is not None:
            return player.elapsed_final
        if self.started_at is None or player.status == "waiting":
            return 0
        return max(0, now - self.started_at)

    def summary(self, player: Player, now: int) -> dict[str, Any]:
        game = player.game
        return {
            "id": player.id,
            "name": player.name,
            "status": player.status,
            "score": game.score if game else 0,
            "moves": game.move_count if game else 0,
            "cards_left": game.cards_left if game else 104,
            "elapsed_ms": self.elapsed(player, now),
            "connected": player.conn is not None,
        }

    def code_for(self, viewer: Player | None) -> str | None:
        """The deal code a viewer may see: daily codes only after their attempt or the day."""
        if self.mode != "daily":
            return str(self.code)
        if viewer is not None and viewer.status in FINISHED:
            return str(self.code)
        if self.daily_day is not None and self.clock.now_ms() >= day_start_ms(self.daily_day) + DAY_MS:
            return str(self.code)
        return None

    def snapshot(self, viewer: Player | None, *, spectator: bool) -> dict[str, Any]:
        now = self.clock.now_ms()
        board = None
        boards = None
        if viewer is not None and viewer.game is not None:
            board = BoardView.of(viewer.game).to_json()
        if spectator and self.phase != "lobby" and self.started_at is not None:
            boards = self.spectator_boards()
        return {
            "room": self.id,
            "mode": self.mode,
            "phase": self.phase,
            "code": self.code_for(viewer),
            "host": self.host,
            "now": now,
            "starts_at": self.starts_at,
            "started_at": self.started_at,
            "time_limit_s": self.time_limit_s,
            "players": [self.summary(p, now) for p in self.players.values()],
            "spectators": len(self.spectators),
            "board": board,
            "boards": boards,
            "can_undo": bool(viewer is not None and viewer.game is not None and viewer.game.can_undo),
            "results": self.results,
        }

    def spectator_tops(self) -> dict[str, list[str | None]]:
        """Each player's tops as spectators may see them (docs/protocol.md, "Who sees what").

        Everyone plays the same deal, so a card one racer has uncovered lies under the same
        pile of every other racer's game: shown to spectators (and so to a racer watching from
        another tab) it would tell a racer still playing what is coming. A pile card is shown
        only once every racer still playing has seen it, i.e. when the pile is at least as tall
        as the lowest it has been in each of their games; otherwise it is ``HIDDEN_TOP``. Reserve
        cards are in sight of everyone from the start; once nobody is playing, all is shown.
        """
        active = [p.lowest for p in self.players.values() if p.status in ACTIVE and p.lowest is not None]
        bar = [max((lowest[pile] for lowest in active), default=0) for pile in PILES]
        tops: dict[str, list[str | None]] = {}
        for player in self.players.values():
            game = player.game
            if game is None:
                continue
            shown: list[str | None] = []
            for position in POSITIONS:
                card = game.card_at(position)
                if card is None:
                    shown.append(None)
                elif position < PILE_COUNT and game.count_at(position) < bar[position]:
                    shown.append(HIDDEN_TOP)
                else:
                    shown.append(card.name)
            tops[player.id] = shown
        return tops

    def spectator_boards(self) -> dict[str, dict[str, Any]]:
        tops = self.spectator_tops()
        return {
            pid: {"tops": shown, "counts": [game.count_at(p) for p in POSITIONS]}
            for pid, shown in tops.items()
            if (game := self.players[pid].game) is not None
        }

    def _for_spectators(self, body: dict[str, Any]) -> dict[str, Any]:
        """The spectators' copy of an event: its ``changes`` as spectators may see them, and
        ``reveals`` for every other top whose shown card changed since the last event they got."""
        now = self.spectator_tops()
        before = self.shown
        self.shown = now
        body = dict(body)
        mover = body.get("player") if isinstance(body.get("player"), str) else None
        covered: set[int] = set()
        if mover is not None and "changes" in body:
            changes = []
            for change in body["changes"]:
                position = POSITION_NAMES.index(change["pos"])
                covered.add(position)
                changes.append(dict(change, card=now[mover][position]))
            body["changes"] = changes
        reveals = []
        for pid, tops in now.items():
            old = before.get(pid)
            game = self.players[pid].game
            assert game is not None
            for position, card in enumerate(tops):
                if pid == mover and position in covered:
                    continue
                if old is None or old[position] != card:
                    reveals.append(
                        {"player": pid, "pos": POSITION_NAMES[position], "card": card, "count": game.count_at(position)}
                    )
        if reveals:
            body["reveals"] = reveals
        return body

    # -- sending ----------------------------------------------------------------------------

    def _emit(
        self,
        kind: str,
        players: dict[str, Any] | None,
        spectators: dict[str, Any] | None,
        overrides: dict[str, dict[str, Any] | None] | None = None,
    ) -> RoomEvent:
        """Version an event, log it and queue it to every connected member (never waits)."""
        self.seq += 1
        seq = self.seq
        shared = spectators is players
        if spectators is not None and self.spectators and self.started_at is not None:
            # spectators see the boards only as far as every racer still playing has (and are
            # told what comes into sight); computed only while someone watches
            filtered = self._for_spectators(spectators)
            if filtered != spectators:
                spectators, shared = filtered, False
        frame_players = None if players is None else _stamp(players, kind, seq)
        frame_spectators = frame_players if shared else None
        if spectators is not None and not shared:
            frame_spectators = _stamp(spectators, kind, seq)
        frames: dict[str, bytes | None] = {}
        for pid, body in (overrides or {}).items():
            frames[pid] = None if body is None else _stamp(body, kind, seq)
        event = RoomEvent(seq, frame_players, frame_spectators, frames)
        self.log.append(event)
        for player in self.players.values():
            if player.conn is not None:
                frame = event.for_player(player.id)
                if frame is not None:
                    player.conn.send(frame)
        if frame_spectators is not None:
            for conn in self.spectators:
                conn.send(frame_spectators)
        return event

    def _to_all(self, kind: str, body: dict[str, Any]) -> None:
        self._emit(kind, body, body)

    def welcome(self, conn: Connection, player: Player | None, *, since: int | None = None) -> None:
        """Send ``welcome``: a full snapshot, or (resume with a ``since`` the log still covers)
        ``room: null`` followed by the events after ``since``."""
        body: dict[str, Any] = {
            "type": "welcome",
            "role": "player" if player is not None else "spectator",
            "you": player.id if player is not None else None,
        }
        if player is not None:
            body["token"] = player.token
        missed: list[bytes] | None = None
        if player is not None and since is not None and since <= self.seq:
            oldest = self.log[0].seq if self.log else self.seq + 1
            if since + 1 >= oldest or since == self.seq:
                missed = [
                    frame
                    for event in self.log
                    if event.seq > since and (frame := event.for_player(player.id)) is not None
                ]
        if missed is not None:
            body["room"] = None
            body["seq"] = since
            conn.send(encode(body))
            for frame in missed:
                conn.send(frame)
            return
        body["room"] = self.snapshot(player, spectator=player is None)
        body["seq"] = self.seq
        conn.send(encode(body))

    # -- membership -------------------------------------------------------------------------

    def add_player(self, conn: Connection, name: str) -> Player:
        """A new player in the lobby. Raises :class:`ProtocolError` (``name_taken``, ``room_full``)."""
        key = name.casefold()
        if any(p.name.casefold() == key for p in self.players.values()):
            raise ProtocolError("name_taken", f"the name {name!r} is already used in room {self.id}")
        if len(self.players) >= self.settings.max_players:
            raise ProtocolError("room_full", f"room {self.id} already has {self.settings.max_players} players")
        player = Player(f"p{self._next_player}", name, self.registry.new_token(self, f"p{self._next_player}"))
        self._next_player += 1
        if self._host_away():  # no host, or one who dropped and has not come back
            self.host = player.id
        now = self.clock.now_ms()
        self.players[player.id] = player
        joined = self.summary(player, now)
        joined["connected"] = True
        self._to_all("player_joined", {"player": joined, "host": self.host})
        player.conn = conn
        conn.room = self
        conn.player_id = player.id
        return player

    def add_spectator(self, conn: Connection) -> None:
        self._to_all("spectators", {"count": len(self.spectators) + 1})
        if not self.spectators:
            # nobody was watching, so nobody was kept up to date: the welcome's snapshot is the start
            self.shown = self.spectator_tops()
        self.spectators.add(conn)
        conn.room = self
        conn.player_id = None

    def remove_spectator(self, conn: Connection) -> None:
        if conn in self.spectators:
            self.spectators.discard(conn)
            self._to_all("spectators", {"count": len(self.spectators)})
        conn.room = None

    def resume(self, conn: Connection, player: Player, since: int | None) -> None:
        old = player.conn
        if old is not None and old is not conn:
            old.room = None
            old.player_id = None
            self.registry.spawn(old.flush_and_close(4001, "resumed on another connection"))
        was_connected = old is not None
        player.conn = None
        player.disconnected_at = None
        if not was_connected:
            body: dict[str, Any] = {"player": self._summary_connected(player)}
            if self.phase == "lobby":
                if self._host_away():  # the lobby needs a host who can start
                    self.host = player.id
                body["host"] = self.host
            self._to_all("progress", body)
        player.conn = conn
        conn.room = self
        conn.player_id = player.id
        self.welcome(conn, player, since=since)

    def _host_away(self) -> bool:
        host = self.players.get(self.host) if self.host is not None else None
        return host is None or host.conn is None

    def _summary_connected(self, player: Player) -> dict[str, Any]:
        body = self.summary(player, self.clock.now_ms())
        body["connected"] = True
        return body

    def disconnect(self, conn: Connection) -> None:
        """The socket closed (not a ``leave``): a player keeps their place, the clock runs."""
        if conn.player_id is None:
            self.remove_spectator(conn)
            return
        player = self.players.get(conn.player_id)
        conn.room = None
        if player is None or player.conn is not conn:
            return
        player.conn = None
        player.disconnected_at = self.clock.now_ms()
        body: dict[str, Any] = {"player": self.summary(player, player.disconnected_at)}
        if self.phase == "lobby":
            if self.host == player.id:
                # a host who dropped may never come back: a connected player can start instead
                self.host = next((p.id for p in self.players.values() if p.conn is not None), self.host)
            body["host"] = self.host
        self._to_all("progress", body)

    def leave(self, conn: Connection) -> None:
        """``leave``: a spectator goes; a player in the lobby goes; a player still playing is ``left``."""
        if conn.player_id is None:
            self.remove_spectator(conn)
            return
        player = self.players.get(conn.player_id)
        conn.room = None
        conn.player_id = None
        if player is None:
            return
        now = self.clock.now_ms()
        if self.phase in ("lobby", "countdown") and player.status == "waiting":
            del self.players[player.id]
            self.registry.forget_token(player.token)
            if self.host == player.id:  # to a connected player if there is one: they can start
                connected = [p.id for p in self.players.values() if p.conn is not None]
                self.host = connected[0] if connected else next(iter(self.players), None)
            body = self.summary(player, now)
            body["connected"] = False
            body["status"] = "left"
            self._to_all("player_left", {"player": body, "host": self.host})
            return
        self.check_deadline(now)  # a leave after the time limit (before the ticker saw it) is a time-out
        if player.status in ACTIVE:
            self._finish(player, "left", now, notify=conn, announce=False)
        player.conn = None
        self._to_all("player_left", {"player": self.summary(player, now), "host": self.host})
        self._check_race_end()

    # -- the race ---------------------------------------------------------------------------

    def start(self, conn: Connection, time_limit_s: int | None) -> None:
        """The host starts the countdown. Raises :class:`ProtocolError` (``not_host``, ``race_started``)."""
        if self.phase != "lobby":
            raise ProtocolError("race_started", f"room {self.id} has already started")
        if conn.player_id != self.host:
            raise ProtocolError("not_host", "only the host may start the race")
        now = self.clock.now_ms()
        countdown_ms = int(self.settings.countdown_s * 1000)
        self.phase = "countdown"
        self.time_limit_s = time_limit_s or self.settings.default_time_limit_s
        self.starts_at = now + countdown_ms
        self._to_all("countdown", {"starts_at": self.starts_at, "now": now, "time_limit_s": self.time_limit_s})
        loop = asyncio.get_running_loop()
        self._start_handle = loop.call_later(self.settings.countdown_s, self.begin)

    def begin(self) -> None:
        """The countdown is over: everyone starts on the same deal at the same instant."""
        if self.phase not in ("lobby", "countdown"):
            return
        self._start_handle = None
        now = self.clock.now_ms()
        self.phase = "running"
        self.started_at = now
        self.starts_at = now if self.starts_at is None else self.starts_at
        for player in self.players.values():
            player.game = Game(self.deal)
            player.status = "playing"
            player.lowest = [player.game.count_at(pile) for pile in PILES]
        code = None if self.mode == "daily" else str(self.code)
        boards = {p.id: BoardView.of(p.game).to_json() for p in self.players.values() if p.game is not None}
        overrides: dict[str, dict[str, Any] | None] = {
            pid: {"code": code, "started_at": now, "board": board} for pid, board in boards.items()
        }
        self.shown = self.spectator_tops()  # the same deal for all: everything in sight is shown
        self._emit(
            "started",
            {"code": code, "started_at": now, "board": None},
            {"code": code, "started_at": now, "boards": self.spectator_boards()},
            overrides,
        )
        if not self.players:
            self._check_race_end()

    def _active_player(self, conn: Connection) -> Player:
        if conn.player_id is None:
            raise ProtocolError("not_playing", "spectators cannot play")
        player = self.players[conn.player_id]
        if self.phase in ("lobby", "countdown"):
            raise ProtocolError("not_started", "the race has not started yet")
        self.check_deadline(self.clock.now_ms())
        if player.status not in ACTIVE or player.game is None:
            raise ProtocolError("not_playing", f"your game is over ({player.status})")
        return player

    def move(self, conn: Connection, move: Move, msg_id: int | None) -> None:
        """Raises :class:`ProtocolError` (``illegal_move`` etc.); an error changes nothing."""
        player = self._active_player(conn)
        game = player.game
        assert game is not None
        try:
            game.push(move)
        except IllegalMoveError as exc:
            raise ProtocolError("illegal_move", str(exc), msg_id=msg_id, reason=exc.code) from None
        player.steps.append(move)
        self._after_action(player, "move", move, msg_id)

    def undo(self, conn: Connection, msg_id: int | None) -> None:
        player = self._active_player(conn)
        game = player.game
        assert game is not None
        try:
            move = game.undo()
        except UndoError as exc:
            raise ProtocolError("nothing_to_undo", str(exc), msg_id=msg_id) from None
        player.steps.append(UNDO)
        self._after_action(player, "undo", move, msg_id)

    def _after_action(self, player: Player, action: str, move: Move, msg_id: int | None) -> None:
        game = player.game
        assert game is not None
        if player.lowest is not None:
            for position in move.positions:
                if position < PILE_COUNT:
                    player.lowest[position] = min(player.lowest[position], game.count_at(position))
        now = self.clock.now_ms()
        status = game.status
        player.status = status.value  # "won" | "stalled" | "playing", the wire names
        if status is Status.WON:
            player.elapsed_final = self.elapsed(player, now)
        changes = [
            {
                "pos": POSITION_NAMES[p],
                "card": None if (card := game.card_at(p)) is None else card.name,
                "count": game.count_at(p),
            }
            for p in move.positions
        ]
        common = {
            "player": player.id,
            "action": action,
            "positions": move.names(),
            "score": game.score,
            "moves": game.move_count,
            "cards_left": game.cards_left,
            "status": player.status,
            "elapsed_ms": self.elapsed(player, now),
        }
        mine = dict(common, changes=changes, can_undo=game.can_undo)
        if msg_id is not None:
            mine["id"] = msg_id
        self._emit("moved", common, dict(common, changes=changes), {player.id: mine})
        if status is Status.WON:
            self._finish(player, "won", now, notify=player.conn, announce=False)
            self._check_race_end()

    def give_up(self, conn: Connection) -> None:
        player = self._active_player(conn)
        self._finish(player, "gave_up", self.clock.now_ms(), notify=player.conn, announce=True)
        self._check_race_end()

    def check_deadline(self, now: int) -> None:
        """End the race for everyone still playing once the host's time limit has passed."""
        if self.phase != "running" or self.time_limit_s is None or self.started_at is None:
            return
        deadline = self.started_at + self.time_limit_s * 1000
        if now < deadline:
            return
        for player in self.players.values():
            if player.status in ACTIVE:
                player.elapsed_final = self.time_limit_s * 1000
                self._finish(player, "timed_out", now, notify=player.conn, announce=True)
        self._check_race_end()

    def _finish(self, player: Player, outcome: str, now: int, *, notify: Connection | None, announce: bool) -> None:
        if player.elapsed_final is None:
            player.elapsed_final = self.elapsed(player, now)
        player.status = outcome
        if announce:
            self._to_all("progress", {"player": self.summary(player, now)})
        self.pending += 1
        self.registry.spawn(self._store(player, notify))

    def _check_race_end(self) -> None:
        if self.phase != "running":
            return
        if all(p.status in FINISHED for p in self.players.values()):
            self.phase = "finished"
            self.finished_at = self.clock.now_ms()
            self._maybe_race_over()

    def _maybe_race_over(self) -> None:
        if self.phase != "finished" or self.pending or self.results is not None:
            return
        ranked = sorted(
            self.players.values(),
            key=lambda p: (-(p.game.score if p.game else 0), p.elapsed_final or 0),
        )
        self.results = [
            {
                "rank": rank,
                "player": p.id,
                "name": p.name,
                "score": p.game.score if p.game else 0,
                "moves": p.game.move_count if p.game else 0,
                "time_ms": p.elapsed_final or 0,
                "outcome": p.status,
                "game": p.game_id,
            }
            for rank, p in enumerate(ranked, 1)
        ]
        self._to_all("race_over", {"results": self.results})

    async def _store(self, player: Player, notify: Connection | None) -> None:
        """Store a finished game, analyse it, then send that player ``game_over``."""
        game = player.game
        assert game is not None
        record = GameRecord(self.code, list(player.steps)).to_json()
        try:
            try:
                player.game_id = await self.registry.storage.save_game(
                    FinishedGame(
                        nickname=player.name,
                        code=str(self.code),
                        mode=self.mode,
                        room=self.id,
                        score=game.score,
                        moves=game.move_count,
                        time_ms=player.elapsed_final or 0,
                        outcome=player.status,
                        record=record,
                        ranked=player.ranked,
                        daily_date=self.daily_day,
                        finished_at=datetime.fromtimestamp(self.clock.now_ms() / 1000, tz=UTC),
                    )
                )
            except StorageError:
                log.exception("could not store the game of %s in room %s", player.name, self.id)
            player.analysis = await self.registry.daily.analyse(record)
            body = {
                "outcome": player.status,
                "score": game.score,
                "moves": game.move_count,
                "time_ms": player.elapsed_final,
                "code": str(self.code),
                "game": player.game_id,
                "ranked": player.ranked,
                "analysis": player.analysis,
            }
            event = self._emit("game_over", None, None, {player.id: body})
            if notify is not None and notify is not player.conn:
                frame = event.for_player(player.id)
                if frame is not None:
                    notify.send(frame)
        finally:
            self.pending -= 1
            self._maybe_race_over()

    # -- housekeeping -----------------------------------------------------------------------

    def is_stale(self, now: int) -> bool:
        """Nobody is left to care: finished long ago, or everyone away for too long."""
        if self.phase == "finished":
            assert self.finished_at is not None
            return self.pending == 0 and now - self.finished_at > self.settings.finished_ttl_s * 1000
        if self.spectators or any(p.conn is not None for p in self.players.values()):
            return False
        away = [p.disconnected_at or self.created_ms for p in self.players.values()]
        last = max(away, default=self.created_ms)
        return now - last > self.settings.abandon_after_s * 1000

    def abandon(self, now: int) -> None:
        """Close an abandoned room: players still playing count as ``left``."""
        if self._start_handle is not None:
            self._start_handle.cancel()
        for player in self.players.values():
            if player.status in ACTIVE:
                self._finish(player, "left", now, notify=None, announce=False)
        self._check_race_end()


class CreatorLimits:
    """Room-creation credits per client address (a :class:`RateLimit` each), so one client
    cannot fill the server. Addresses whose credits have refilled are forgotten."""

    MAX_TRACKED = 100_000

    def __init__(self, burst: float, per_s: float) -> None:
        self.burst = burst
        self.per_s = per_s
        self.limits: dict[str, RateLimit] = {}

    def allow(self, client: str, now: float) -> bool:
        limit = self.limits.get(client)
        if limit is None:
            if len(self.limits) >= self.MAX_TRACKED:
                self._forget_refilled(now)
            limit = self.limits[client] = RateLimit(self.burst, self.per_s, now)
        return limit.allow(now)

    def _forget_refilled(self, now: float) -> None:
        full = [c for c, lim in self.limits.items() if lim.credits + (now - lim.last) * lim.per_s >= lim.burst]
        for client in full:
            del self.limits[client]
        if len(self.limits) >= self.MAX_TRACKED:  # everyone is busy: start afresh rather than grow
            self.limits.clear()


class RoomRegistry:
    """Every room of this process, the player tokens, and the tasks rooms spawn."""

    def __init__(self, settings: Settings, storage: Storage, daily: DailyService) -> None:
        self.settings = settings
        self.clock = settings.clock
        self.storage = storage
        self.daily = daily
        self.rooms: dict[str, Room] = {}
        self.tokens: dict[str, tuple[Room, str]] = {}
        self.connections: set[Connection] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.creators = CreatorLimits(settings.room_burst, settings.room_per_min / 60.0)

    def new_room_id(self) -> str:
        while True:
            room_id = "".join(secrets.choice(ROOM_ALPHABET) for _ in range(ROOM_ID_LENGTH))
            if room_id not in self.rooms:
                return room_id

    def create(self, mode: str, code: DealCode, *, client: str | None, daily_day: date | None = None) -> Room:
        """A new room, created for the client at address ``client`` (None: already charged with
        :meth:`check_creator`).

        Raises :class:`ProtocolError` ``server_full`` at ``max_rooms``, ``rate_limited`` when that
        client has created too many rooms lately.
        """
        self.ensure_capacity()
        if client is not None:
            self.check_creator(client)
        room = Room(self, self.new_room_id(), mode, code, daily_day=daily_day)
        self.rooms[room.id] = room
        return room

    def check_creator(self, client: str) -> None:
        """Spend one of the client's room credits. Raises :class:`ProtocolError` ``rate_limited``."""
        if not self.creators.allow(client, self.clock.now_ms() / 1000.0):
            raise ProtocolError(
                "rate_limited", "too many new games from your address in a short time; try again in a minute"
            )

    def ensure_capacity(self) -> None:
        """Raises :class:`ProtocolError` ``server_full`` when no room can be added."""
        if len(self.rooms) >= self.settings.max_rooms:
            raise ProtocolError("server_full", "the server holds as many rooms as it can; try again later")

    def get(self, room_id: str) -> Room:
        """Raises :class:`ProtocolError` ``no_such_room``."""
        room = self.rooms.get(room_id)
        if room is None:
            raise ProtocolError("no_such_room", f"there is no room {room_id!r} (it may have ended)")
        return room

    def new_token(self, room: Room, player_id: str) -> str:
        token = secrets.token_urlsafe(24)
        self.tokens[token] = (room, player_id)
        return token

    def forget_token(self, token: str) -> None:
        self.tokens.pop(token, None)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    async def settle(self) -> None:
        """Wait for the tasks rooms spawned (stores, analyses); used at shutdown and in tests."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def tick(self) -> None:
        """Time limits and abandoned rooms (called by the ticker)."""
        now = self.clock.now_ms()
        for room in list(self.rooms.values()):
            room.check_deadline(now)
            if room.is_stale(now):
                room.abandon(now)
                if room.phase != "finished" or room.pending == 0:
                    self.drop_room(room)

    def drop_room(self, room: Room) -> None:
        self.rooms.pop(room.id, None)
        for player in room.players.values():
            self.tokens.pop(player.token, None)

    async def run_ticker(self) -> None:
        while True:
            await asyncio.sleep(self.settings.tick_s)
            try:
                self.tick()
            except Exception:
                log.exception("the room ticker failed")
