"""The sans-I/O protocol core: one connection's view of a room, fed with decoded messages.

A :class:`Session` imports no asyncio and opens no socket. The I/O layer hands it every server
message (:meth:`Session.receive`, a decoded JSON object) and sends what its ``*_message``
methods return; the screens and the bots read its attributes, the view model:

- the room (id, mode, phase, code, host, clock offset, time limit, spectator count);
- every player's summary (:class:`Player`: status, score, moves, cards left, time);
- the boards it may see (:class:`Board`: tops and counts only, updated from ``changes``):
  its own as a player, everyone's as a spectator;
- the outcome of its game (``game_over``) and the race's results (``race_over``);
- ``notice``: the last thing worth telling the user (a stall, a win, someone joined…) as a key
  of :mod:`halfmoon_client.words` with its values; ``error``: the last refusal.

It keeps the highest ``seq`` it has seen, ignores events it has already applied (a resume may
replay them) and builds the ``resume`` message from it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Final

from halfmoon.cards import Card
from halfmoon.errors import HalfMoonError
from halfmoon.positions import POSITION_COUNT, parse_position
from halfmoon.protocol import (
    FINISHED,
    VERSION,
    Accept,
    GiveUp,
    Join,
    Leave,
    Ping,
    Rematch,
    Resume,
    Start,
    Undo,
    Watch,
)
from halfmoon.view import HIDDEN_TOP, BoardView
from halfmoon_client.errors import ProtocolError
from halfmoon_client.verify import check_reveal

#: Wire errors that end an attempt to enter a room: no point in waiting for a ``welcome``.
ENTRY_ERRORS: Final = frozenset(
    {
        "no_such_room",
        "bad_name",
        "name_taken",
        "name_reserved",
        "room_full",
        "room_log_full",
        "bad_token",
        "bad_code",
        "already_in_room",
        "bad_message",
        "private_room",
    }
)

Message = dict[str, Any]


class Board:
    """A board as a player may see it: the top card and the card count of the 20 positions.

    A spectator's board may hold tops it is not shown yet: their positions are in ``hidden``
    (their ``tops`` entry is None, their count is true).
    """

    __slots__ = ("counts", "hidden", "tops")

    def __init__(self, tops: list[Card | None], counts: list[int], hidden: set[int] | None = None) -> None:
        self.tops = tops
        self.counts = counts
        self.hidden: set[int] = hidden or set()

    @classmethod
    def from_json(cls, data: Any) -> Board:
        """Read ``{"tops": [...20], "counts": [...20]}`` (a top may be ``"??"``); raises :class:`ProtocolError`."""
        try:
            tops = data["tops"]
            hidden = {i for i, top in enumerate(tops) if top == HIDDEN_TOP}
            shown = {**data, "tops": [None if i in hidden else top for i, top in enumerate(tops)]}
            view = BoardView.from_json(shown)
        except (HalfMoonError, KeyError, TypeError) as exc:
            raise ProtocolError(f"bad board from the server: {exc}") from None
        return cls(list(view.tops), list(view.counts), hidden)

    def apply(self, changes: Any) -> None:
        """Apply ``changes`` (or ``reveals``): ``[{"pos": "8", "card": "JC" | "??" | null, "count": 7}, …]``.

        Raises :class:`ProtocolError` on a malformed change (the board is then unchanged).
        """
        parsed: list[tuple[int, Card | None, bool, int]] = []
        try:
            for change in changes:
                pos = parse_position(change["pos"])
                hidden = change["card"] == HIDDEN_TOP
                card = None if change["card"] is None or hidden else Card.parse(change["card"])
                count = int(change["count"])
                parsed.append((pos, card, hidden, count))
        except (HalfMoonError, KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"bad changes from the server: {changes!r:.120} ({exc})") from None
        for pos, card, hidden, count in parsed:
            self.tops[pos] = card
            self.counts[pos] = count
            if hidden:
                self.hidden.add(pos)
            else:
                self.hidden.discard(pos)

    def view(self) -> BoardView:
        return BoardView(tuple(self.tops), tuple(self.counts))

    @property
    def cards_left(self) -> int:
        return sum(self.counts)

    def __repr__(self) -> str:
        return f"Board({self.view().to_json()!r})"


@dataclass(slots=True)
class Player:
    """A player's summary, as the server sends it."""

    id: str
    name: str
    status: str = "waiting"
    score: int = 0
    moves: int = 0
    cards_left: int = 104
    elapsed_ms: int = 0
    connected: bool = True
    #: the player declared itself a bot (its result is never ranked)
    bot: bool = False

    def update(self, data: Message) -> None:
        for key in ("name", "status", "score", "moves", "cards_left", "elapsed_ms", "connected", "bot"):
            if key in data and data[key] is not None:
                setattr(self, key, data[key])

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


@dataclass(slots=True)
class Outcome:
    """``game_over``: how your own game ended."""

    outcome: str
    score: int
    moves: int
    time_ms: int
    code: str | None
    #: whether the result is ranked, and why not (docs/security.md: casual, daily_retry, bot, too_fast)
    ranked: bool | None = None
    unranked_reason: str | None = None


@dataclass(slots=True)
class Session:
    """One connection's state in one room. See the module docstring."""

    room: str | None = None
    role: str | None = None  # "player" / "spectator"
    you: str | None = None
    token: str | None = None
    mode: str | None = None
    phase: str | None = None  # lobby / countdown / running / finished
    code: str | None = None
    host: str | None = None
    seq: int = 0
    offset_ms: int = 0  # server clock minus local clock
    starts_at: int | None = None
    started_at: int | None = None
    time_limit_s: int | None = None
    players: dict[str, Player] = field(default_factory=dict)
    spectators: int = 0
    board: Board | None = None  # your own (players)
    boards: dict[str, Board] = field(default_factory=dict)  # everyone's (spectators)
    outcome: Outcome | None = None
    results: list[dict[str, Any]] | None = None
    notice: tuple[str, dict[str, Any]] | None = None  # a key of halfmoon_client.words and its values
    error: tuple[str, str] | None = None  # the last refusal: (code, message)
    last_move_id: int = 0
    welcomed: bool = False
    #: a sealed race's (or a daily's) commitment from the start, and whether what is revealed at
    #: the end opens it (None: not revealed yet, or nothing to check): a sealed race's seed and
    #: contributions must give the code, and the code the opening board this session was shown
    commitment: str | None = None
    verified: bool | None = None
    #: a later message of the same race named another commitment than the first this session was
    #: given (a server that drew its seed after seeing the contributions): the reveal cannot hold
    commitment_changed: bool = False
    #: this session's own contribution to the sealed deal (sent on join, accept, rematch), the
    #: contributions the race started with (``started``), and the opening board it was shown
    entropy: str | None = None
    #: every contribution this session sent for the race to come (a ``rematch`` or ``accept`` sent
    #: twice before the server's answer: the server takes the first and refuses the next)
    sent: list[str] = field(default_factory=list)
    contributions: list[str] | None = None
    opening: dict[str, Any] | None = None
    #: the room's race number (a rematch makes the next), its series (``race_over.series``) and
    #: the room's players not in this race (in a rematch's lobby: who may still accept)
    round: int = 1
    series: dict[str, Any] | None = None
    seated: dict[str, Player] = field(default_factory=dict)
    #: a quick race's first race (the queue matched its players): it starts by itself
    quick: bool = False

    # -- messages to send ---------------------------------------------------------------------

    @staticmethod
    def join_message(
        room: str, name: str, player_key: str | None = None, entropy: str | None = None, *, bot: bool = False
    ) -> Message:
        """``join``; with the player's key (:meth:`halfmoon_client.seats.SeatBook.player_key`)
        the game joins their history on the server; with ``entropy`` (:meth:`contribute`) a
        contribution to a sealed race's deal; ``bot``: a program plays (``halfmoon bot`` says so:
        it is shown as a bot and never ranked)."""
        return Join(room, name, player_key, entropy, bot=bot).to_json()

    def contribute(self) -> str:
        """A fresh random contribution to a sealed race's deal (16 random bytes in hex), kept to
        check at the end that it was in (docs/protocol.md, "Sealed races")."""
        self.entropy = secrets.token_hex(16)
        self.sent.append(self.entropy)
        return self.entropy

    @staticmethod
    def watch_message(room: str) -> Message:
        return Watch(room).to_json()

    def resume_message(self) -> Message:
        """``resume`` with the token and the highest ``seq`` seen; raises :class:`ProtocolError` without a token.

        A session that holds no room state yet (a token kept from an earlier run) sends no
        ``since``, so the server answers with the whole room snapshot.
        """
        if self.room is None or self.token is None:
            raise ProtocolError("cannot resume: no room and token yet")
        return Resume(self.room, self.token, self.seq if self.welcomed else None).to_json()

    @staticmethod
    def start_message(time_limit_s: int | None = None, series: int | None = None) -> Message:
        return Start(time_limit_s, series).to_json()

    def rematch_message(self) -> Message:
        return Rematch(self.contribute()).to_json()

    def accept_message(self) -> Message:
        return Accept(self.contribute()).to_json()

    def move_message(self, positions: list[str]) -> Message:
        self.last_move_id += 1
        return {"type": "move", "v": VERSION, "positions": positions, "id": self.last_move_id}

    def undo_message(self) -> Message:
        self.last_move_id += 1
        return Undo(self.last_move_id).to_json()

    @staticmethod
    def give_up_message() -> Message:
        return GiveUp().to_json()

    @staticmethod
    def leave_message() -> Message:
        return Leave().to_json()

    @staticmethod
    def ping_message() -> Message:
        return Ping().to_json()

    # -- the view model -------------------------------------------------------------------------

    @property
    def me(self) -> Player | None:
        return None if self.you is None else self.players.get(self.you)

    @property
    def is_host(self) -> bool:
        return self.you is not None and self.you == self.host

    @property
    def race_over(self) -> bool:
        return self.results is not None

    @property
    def may_accept(self) -> bool:
        """A rematch's lobby that you are seated for (not in it yet): ``accept`` takes your place."""
        return self.phase == "lobby" and self.you is not None and self.you in self.seated

    @property
    def playing(self) -> bool:
        """A player whose own game is on: moves may be sent."""
        me = self.me
        return self.phase == "running" and me is not None and me.status in ("playing", "stalled")

    def server_now(self, local_ms: int) -> int:
        return local_ms + self.offset_ms

    def elapsed_ms(self, player: Player, local_ms: int) -> int:
        """A player's time: the running clock while they play, the server's frozen time after."""
        if player.finished or self.started_at is None or self.phase not in ("running", "finished"):
            return player.elapsed_ms
        if self.phase == "finished":
            return player.elapsed_ms
        return max(player.elapsed_ms, self.server_now(local_ms) - self.started_at)

    def countdown_ms(self, local_ms: int) -> int | None:
        if self.phase != "countdown" or self.starts_at is None:
            return None
        return max(0, self.starts_at - self.server_now(local_ms))

    def opponents(self) -> list[Player]:
        return [p for pid, p in self.players.items() if pid != self.you]

    def leaders(self) -> set[str]:
        """Who leads the race: the highest score — 5 points a card removed, so the furthest on
        the track — then, as results rank, the shorter time of a finished game. Ties lead
        together; nobody leads before a card is removed."""

        def key(player: Player) -> tuple[int, float]:
            return (-player.score, player.elapsed_ms if player.finished else float("inf"))

        best = min((key(p) for p in self.players.values()), default=(0, 0.0))
        return {pid for pid, p in self.players.items() if best[0] < 0 and key(p) == best}

    # -- feeding the machine --------------------------------------------------------------------

    def receive(self, message: Any, local_ms: int) -> str:
        """Apply one decoded server message; return its type.

        ``local_ms`` is the local clock (ms), used with the snapshot's ``now`` to compute the
        offset to the server's clock. An event already applied (``seq`` not above the highest
        seen) is ignored. Raises :class:`ProtocolError` on a message the protocol does not know
        or a malformed one; the state is then unchanged as far as that message goes.
        """
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolError(f"not a protocol message: {message!r:.120}")
        kind: str = message["type"]
        handler = _HANDLERS.get(kind)
        if handler is None:
            raise ProtocolError(f"unknown message type from the server: {kind!r}")
        seq = message.get("seq")
        if kind != "welcome" and isinstance(seq, int) and seq <= self.seq:
            return kind  # already applied (replayed after a resume)
        try:
            handler(self, message, local_ms)
            reveals = message.get("reveals")
            if reveals is not None:  # spectators: tops that came into sight (or went out of it)
                for reveal in reveals:
                    board = self.boards.get(reveal["player"])
                    if board is not None:
                        board.apply([reveal])
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"malformed {kind!r} message from the server: {exc!r}") from None
        if isinstance(seq, int):
            self.seq = max(self.seq, seq) if kind != "welcome" else seq
        return kind

    def _welcome(self, m: Message, local_ms: int) -> None:
        self.role = m["role"]
        self.you = m.get("you")
        if m.get("token"):
            self.token = m["token"]
        self.error = None
        snap = m.get("room")
        if snap is None:
            if not self.welcomed:
                raise ValueError("a first welcome without a room snapshot")
            return  # a resume the server can catch up with: the missed events follow
        round_ = int(snap.get("round") or 1)
        if self.welcomed and self.room == snap["room"] and self.round == round_:
            self._hold_commitment(snap.get("commitment"))
        else:  # a first look at this race
            self.commitment, self.commitment_changed = snap.get("commitment"), False
        self.welcomed = True
        self.room = snap["room"]
        self.mode = snap.get("mode")
        self.phase = snap["phase"]
        self.code = snap.get("code")
        self.contributions = snap.get("contributions") or self.contributions
        if self.code and self.verified is None:  # a resume once the deal is out: check it again
            self._verify({**snap, "seed": snap.get("seed"), "salt": snap.get("salt")})
        self.host = snap.get("host")
        if isinstance(snap.get("now"), int):
            self.offset_ms = snap["now"] - local_ms
        self.starts_at = snap.get("starts_at")
        self.started_at = snap.get("started_at")
        self.time_limit_s = snap.get("time_limit_s")
        self.players = {}
        for data in snap.get("players") or []:
            self._player(data)
        self.spectators = int(snap.get("spectators") or 0)
        self.board = None if snap.get("board") is None else Board.from_json(snap["board"])
        boards = snap.get("boards") or {}
        self.boards = {pid: Board.from_json(b) for pid, b in boards.items()}
        self.results = snap.get("results")
        self.round = int(snap.get("round") or 1)
        self.quick = bool(snap.get("quick"))
        self.series = snap.get("series")
        self.seated = {}
        for data in snap.get("seated") or []:
            self.seated[data["id"]] = Player(str(data["id"]), str(data.get("name") or data["id"]))
            self.seated[data["id"]].update(data)
        over = snap.get("game_over")
        if isinstance(over, dict):  # a resume after the end: how your game ended comes back
            self.outcome = Outcome(over["outcome"], over["score"], over["moves"], over["time_ms"], over.get("code"))
        if self.role == "spectator" and self.token is None:
            self.notice = ("watching", {})

    def _player(self, data: Message) -> Player:
        player = self.players.get(data["id"])
        if player is None:
            player = self.players[data["id"]] = Player(str(data["id"]), str(data.get("name") or data["id"]))
        player.update(data)
        return player

    def _player_joined(self, m: Message, local_ms: int) -> None:
        self.seated.pop(m["player"]["id"], None)  # a seated player who accepted the rematch
        player = self._player(m["player"])
        self.host = m.get("host", self.host)
        if self.you != player.id:
            self.notice = ("joined", {"name": player.name})

    def _player_left(self, m: Message, local_ms: int) -> None:
        data = m["player"]
        self.host = m.get("host", self.host)
        self.seated.pop(data["id"], None)
        # gone before the start: off the list; after it, kept with the status "left"
        player = self.players.pop(data["id"], None) if self.phase in ("lobby", "countdown") else self._player(data)
        if player is not None:
            self.notice = ("left", {"name": player.name})

    def _countdown(self, m: Message, local_ms: int) -> None:
        self.phase = "countdown"
        self.starts_at = m["starts_at"]
        if isinstance(m.get("now"), int):
            self.offset_ms = m["now"] - local_ms
        self.time_limit_s = m.get("time_limit_s", self.time_limit_s)
        self.notice = None

    def _started(self, m: Message, local_ms: int) -> None:
        self.phase = "running"
        self.code = m.get("code")
        self._hold_commitment(m.get("commitment"))
        self.contributions = m.get("contributions")
        self.started_at = m["started_at"]
        if m.get("board") is not None:
            self.board = Board.from_json(m["board"])
            self.opening = m["board"]  # to check the revealed code against
        if m.get("boards") is not None:
            self.boards = {pid: Board.from_json(b) for pid, b in m["boards"].items()}
        for player in self.players.values():
            if player.status == "waiting":
                player.status = "playing"
        self.notice = None

    def _moved(self, m: Message, local_ms: int) -> None:
        pid = m["player"]
        player = self.players.get(pid) or self._player({"id": pid})
        player.update(m)
        changes = m.get("changes")
        if changes is not None:
            board = self.board if pid == self.you else self.boards.get(pid)
            if board is not None:
                board.apply(changes)
        if pid == self.you:
            self.error = None
            self.notice = ("stalled", {}) if player.status == "stalled" else None

    def _progress(self, m: Message, local_ms: int) -> None:
        player = self._player(m["player"])
        self.host = m.get("host", self.host)  # a host who drops in the lobby hands over
        if player.id == self.you and player.status == "stalled":
            self.notice = ("stalled", {})

    def _game_over(self, m: Message, local_ms: int) -> None:
        self.outcome = Outcome(
            outcome=m["outcome"],
            score=m["score"],
            moves=m["moves"],
            time_ms=m["time_ms"],
            code=m.get("code"),
            ranked=m.get("ranked"),
            unranked_reason=m.get("unranked_reason"),
        )
        if m.get("code"):
            self.code = m["code"]
        self._verify(m)
        me = self.me
        if me is not None:
            me.update({"status": m["outcome"], "score": m["score"], "moves": m["moves"], "elapsed_ms": m["time_ms"]})
        self.notice = (
            "outcome_" + str(m["outcome"]),
            {"score": m["score"], "moves": m["moves"], "time_ms": m["time_ms"]},
        )

    def _race_over(self, m: Message, local_ms: int) -> None:
        results = m["results"]
        if not isinstance(results, list):
            raise TypeError("results is not a list")
        self.results = results
        self.phase = "finished"
        self.series = m.get("series", self.series)
        if m.get("code"):
            self.code = m["code"]
            self._verify(m)
        self.sent = []  # what is sent from now on is for the next race

    def _rematch(self, m: Message, local_ms: int) -> None:
        """A rematch: a lobby again, on a new sealed deal; what the last race left is cleared."""
        self.round = int(m["round"])
        self.phase = "lobby"
        self.host = m.get("host")
        self.code = m.get("code")
        self.commitment, self.commitment_changed = m.get("commitment"), False
        self.series = m.get("series")
        self.starts_at = self.started_at = None
        self.board, self.boards = None, {}
        self.outcome, self.results, self.verified = None, None, None
        self.contributions, self.opening = None, None
        self.players = {}
        for data in m["players"]:
            self._player(data)
        self.seated = {}
        for data in m.get("seated") or []:
            self.seated[data["id"]] = Player(str(data["id"]), str(data.get("name") or data["id"]))
        host = self.players.get(self.host or "")
        self.notice = ("rematch", {"name": host.name if host else "?"})

    def _hold_commitment(self, commitment: object) -> None:
        """Keep the first commitment this session was given for the race: a later message of the
        same race (``started``, a resume's snapshot) that names another one marks the race's
        reveal as failed — the commitment proves something only if it came before the
        contributions (docs/security.md, "Nobody picks the deal")."""
        if not isinstance(commitment, str) or not commitment:
            return
        if self.commitment is None:
            self.commitment = commitment
        elif commitment != self.commitment:
            self.commitment_changed = True

    def _verify(self, m: Message) -> None:
        """Check a revealed deal (``game_over``, ``race_over``) against the commitment the race
        started with: a sealed race's seed and contributions must open it as the code, which must
        deal the opening board this session was shown (and hold its own contribution)."""
        code, seed, salt = m.get("code"), m.get("seed"), m.get("salt")
        if not self.commitment or not isinstance(code, str) or not (isinstance(seed, str) or isinstance(salt, str)):
            return
        if self.commitment_changed:  # whatever the reveal opens, it is not what the race began with
            self.verified = False
            return
        contributions = m.get("contributions", self.contributions)
        listed = [str(c) for c in contributions or ()]
        # sent by this session, which started: the one the server took, if any of them is in
        mine = next((e for e in self.sent if e in listed), self.entropy) if self.opening is not None else None
        problems = check_reveal(
            self.commitment,
            code,
            seed=seed if isinstance(seed, str) else None,
            contributions=[str(c) for c in contributions or ()],
            salt=salt if isinstance(salt, str) else None,
            mine=mine,
            board=self.opening,
            racers=len(self.players),  # the race's players (the seated ones are apart): none joins after the start
        )
        self.verified = not problems

    def _spectators(self, m: Message, local_ms: int) -> None:
        self.spectators = int(m["count"])

    def _error(self, m: Message, local_ms: int) -> None:
        self.error = (str(m["code"]), str(m.get("message") or m["code"]))

    def _pong(self, m: Message, local_ms: int) -> None:
        pass


_HANDLERS: Final = {
    "welcome": Session._welcome,
    "player_joined": Session._player_joined,
    "player_left": Session._player_left,
    "countdown": Session._countdown,
    "started": Session._started,
    "moved": Session._moved,
    "progress": Session._progress,
    "game_over": Session._game_over,
    "race_over": Session._race_over,
    "rematch": Session._rematch,
    "spectators": Session._spectators,
    "error": Session._error,
    "pong": Session._pong,
}

__all__ = ["POSITION_COUNT", "Board", "Outcome", "Player", "Session"]
