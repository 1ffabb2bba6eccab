"""Who gets what: each domain event of the race core as the wire frame of each audience — the
mover, the other players, the spectators (docs/protocol.md, "Who sees what").

Players see their own board only; the other players' moves reach them as summaries (no
positions: a move's positions tell the cards it removed). Spectators see every board, but a pile
card only once every racer still playing has seen it, and a player's move only once every card
it removed is public (:meth:`halfmoon_server.core.race.Race.spectator_view`): :class:`Audience`
remembers what they were last shown, sends a move's ``positions`` and ``changes`` only when the
move is on their copy of the board, and tells them, in ``reveals``, every position whose shown
card or count changed since (a top that came into sight, a held-back move let through). That
work is done only while someone watches.
"""

from __future__ import annotations

from dataclasses import dataclass

from halfmoon import protocol as wire
from halfmoon.positions import POSITION_NAMES
from halfmoon_server.core import events
from halfmoon_server.core.race import Race


def right_sized(frame: bytes) -> bytes:
    """A copy of ``frame`` that holds its own length and no more. ``orjson.dumps`` returns bytes
    that keep the whole buffer they were written in (about 4 KiB of memory for a 200-byte
    frame): harmless for a frame sent and dropped, but a room's event log keeps hundreds, and
    a server thousands of rooms."""
    return bytes(memoryview(frame))


@dataclass(slots=True)
class Frames:
    """One versioned event and its frame for each audience (None: not sent to that audience):
    the players' frame, but ``own`` for the player ``owner`` (a move's mover, who sees its
    positions and changes; a game's end), and each player's own in ``overrides`` (the start:
    their board). A room's event log keeps the last few dozen of these per room, by the
    thousand: one player's frame is two slots, not a dict (184 bytes each)."""

    seq: int
    players: bytes | None
    spectators: bytes | None
    owner: str | None = None
    own: bytes | None = None
    overrides: dict[str, bytes | None] | None = None

    def for_player(self, player_id: str) -> bytes | None:
        if player_id == self.owner:
            return self.own
        overrides = self.overrides
        if overrides is not None and player_id in overrides:
            return overrides[player_id]
        return self.players


class Audience:
    """Encodes a race's events for players and spectators, and keeps what spectators were shown."""

    def __init__(self, race: Race) -> None:
        self.race = race
        #: each board's ``(top, count)`` per position as spectators were last told
        self.shown: dict[str, list[tuple[str | None, int]]] = {}

    def start_watching(self) -> None:
        """The first spectator comes in: nobody was kept up to date, their snapshot is the start."""
        self.shown = self.race.spectator_view()

    def frames(self, event: events.Event, seq: int, *, watched: bool, msg_id: int | None = None) -> Frames | None:
        """The frames of ``event`` as event number ``seq`` (None for an event nobody is sent).
        ``watched``: spectators are in the room; ``msg_id``: the mover's message id to echo."""
        match event:
            case events.Moved():
                return self._moved(event, seq, watched, msg_id)
            case events.RaceStarted():
                return self._started(event, seq, watched)
            case events.GameOver():
                frame = right_sized(wire.encode_event(event, seq))
                return Frames(seq, None, None, event.player, frame)
            case events.GameEnded():
                return None
            case (
                events.PlayerJoined()
                | events.PlayerLeft()
                | events.PlayerChanged()
                | events.SpectatorsChanged()
                | events.CountdownStarted()
                | events.RaceOver()
                | events.Rematched()
            ):  # each is its wire message, told to all alike
                return self._to_all(event, seq, watched)

    def _to_all(self, message: wire.RoomEvent, seq: int, watched: bool) -> Frames:
        frame = right_sized(wire.encode_event(message, seq))
        reveals = self._reveals() if watched and self.race.started_at is not None else []
        return Frames(seq, frame, wire.encode_event(message, seq, reveals) if reveals else frame)

    def _started(self, event: events.RaceStarted, seq: int, watched: bool) -> Frames:
        sealing = (event.commitment, event.contributions)
        overrides: dict[str, bytes | None] = {
            pid: right_sized(
                wire.encode_event(wire.Started(event.code, event.started_at, board.to_json(), None, *sealing), seq)
            )
            for pid, board in event.boards.items()
        }
        players = right_sized(wire.encode_event(wire.Started(event.code, event.started_at, None, None, *sealing), seq))
        if not watched:  # the first spectator gets a snapshot (:meth:`start_watching`)
            self.shown = {}
            return Frames(seq, players, None, overrides=overrides)
        self.shown = self.race.spectator_view()  # the same deal for all: everything in sight is shown
        spectators = wire.encode_event(
            wire.Started(event.code, event.started_at, None, self.race.spectator_boards(), *sealing),
            seq,
        )
        return Frames(seq, players, spectators, overrides=overrides)

    def _moved(self, event: events.Moved, seq: int, watched: bool, msg_id: int | None) -> Frames:
        # the hot path: every move of every player. The bodies are built as dicts directly (no
        # intermediate message objects). The other players get the summary only: the positions
        # would tell them the cards the move removed (a pile card paired with a reserve card
        # has a known rank), which lie in the same piles of their own deal.
        fields = (event.score, event.moves, event.cards_left, event.status, event.elapsed_ms)
        common = wire.moved_summary(event.player, event.action, None, *fields)
        names = event.move.names()
        changes = [
            {"pos": POSITION_NAMES[position], "card": None if card is None else card.name, "count": count}
            for position, card, count in event.changes
        ]
        mine = {**wire.moved_summary(event.player, event.action, names, *fields), "changes": changes}
        mine["can_undo"] = event.can_undo
        if msg_id is not None:
            mine["id"] = msg_id
        spectators = None
        if watched:
            now = self.race.spectator_view()
            covered: frozenset[int] = frozenset()
            body = common
            if self.race.is_shown(event.player):  # the move is on the spectators' board now
                covered = frozenset(event.move.positions)
                shown = now[event.player]
                body = wire.moved_summary(event.player, event.action, names, *fields)
                body["changes"] = [
                    {"pos": POSITION_NAMES[p], "card": shown[p][0], "count": shown[p][1]} for p in event.move.positions
                ]
            reveals = self._reveals(now, event.player, covered)
            spectators = wire.encode_body("moved", body, seq, reveals)
        return Frames(
            seq,
            right_sized(wire.encode_body("moved", common, seq)),
            spectators,
            event.player,
            right_sized(wire.encode_body("moved", mine, seq)),
        )

    def _reveals(
        self,
        now: dict[str, list[tuple[str | None, int]]] | None = None,
        mover: str | None = None,
        covered: frozenset[int] = frozenset(),
    ) -> list[wire.Change]:
        """Every position whose shown card or count changed since spectators were last told
        (but the ``covered`` positions of the ``mover``, which are in the move's own
        ``changes``); remembers the new view."""
        now = self.race.spectator_view() if now is None else now
        before = self.shown
        self.shown = now
        reveals: list[wire.Change] = []
        for pid, shown in now.items():
            old = before.get(pid)
            for position, (card, count) in enumerate(shown):
                if pid == mover and position in covered:
                    continue
                if old is None or old[position] != (card, count):
                    reveals.append(wire.Change(POSITION_NAMES[position], card, count, player=pid))
        return reveals
