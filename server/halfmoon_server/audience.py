"""Who gets what: each domain event of the race core as the wire frame of each audience — the
mover, the other players, the spectators (docs/protocol.md, "Who sees what").

Players see their own board only; the other players' moves reach them as summaries. Spectators
see every board, but a pile card only once every racer still playing has seen it
(:meth:`halfmoon_server.race.Race.spectator_tops`): :class:`Audience` remembers what they were
last shown, hides what they may not see yet in a move's ``changes`` and tells them, in
``reveals``, every top that came into sight since. That work is done only while someone watches.
"""

from __future__ import annotations

from dataclasses import dataclass

from halfmoon import protocol as wire
from halfmoon.positions import POSITION_NAMES
from halfmoon_server import events
from halfmoon_server.race import Race


@dataclass(slots=True)
class Frames:
    """One versioned event and its frame for each audience (None: not sent to that audience)."""

    seq: int
    players: bytes | None
    spectators: bytes | None
    overrides: dict[str, bytes | None]

    def for_player(self, player_id: str) -> bytes | None:
        if player_id in self.overrides:
            return self.overrides[player_id]
        return self.players


class Audience:
    """Encodes a race's events for players and spectators, and keeps what spectators were shown."""

    def __init__(self, race: Race) -> None:
        self.race = race
        #: each board's tops as spectators were last told
        self.shown: dict[str, list[str | None]] = {}

    def start_watching(self) -> None:
        """The first spectator comes in: nobody was kept up to date, their snapshot is the start."""
        self.shown = self.race.spectator_tops()

    def frames(self, event: events.Event, seq: int, *, watched: bool, msg_id: int | None = None) -> Frames | None:
        """The frames of ``event`` as event number ``seq`` (None for an event nobody is sent).
        ``watched``: spectators are in the room; ``msg_id``: the mover's message id to echo."""
        match event:
            case events.Moved():
                return self._moved(event, seq, watched, msg_id)
            case events.RaceStarted():
                return self._started(event, seq)
            case events.GameOver():
                body = wire.GameOver(
                    event.outcome,
                    event.score,
                    event.moves,
                    event.time_ms,
                    event.code,
                    event.game,
                    event.ranked,
                    event.salt,
                )
                return Frames(seq, None, None, {event.player: wire.encode_event(body, seq)})
            case events.GameEnded():
                return None
            case events.PlayerJoined():
                return self._to_all(wire.PlayerJoined(event.player, event.host), seq, watched)
            case events.PlayerLeft():
                return self._to_all(wire.PlayerLeft(event.player, event.host), seq, watched)
            case events.PlayerChanged():
                return self._to_all(wire.Progress(event.player, event.host, event.with_host), seq, watched)
            case events.SpectatorsChanged():
                return self._to_all(wire.Spectators(event.count), seq, watched)
            case events.CountdownStarted():
                return self._to_all(wire.Countdown(event.starts_at, event.now, event.time_limit_s), seq, watched)
            case events.RaceOver():
                return self._to_all(wire.RaceOver(event.results, event.code, event.salt, event.sealed), seq, watched)

    def _to_all(self, message: wire.RoomEvent, seq: int, watched: bool) -> Frames:
        frame = wire.encode_event(message, seq)
        reveals = self._reveals() if watched and self.race.started_at is not None else []
        return Frames(seq, frame, wire.encode_event(message, seq, reveals) if reveals else frame, {})

    def _started(self, event: events.RaceStarted, seq: int) -> Frames:
        self.shown = self.race.spectator_tops()  # the same deal for all: everything in sight is shown
        overrides: dict[str, bytes | None] = {
            pid: wire.encode_event(
                wire.Started(event.code, event.started_at, board=board.to_json(), commitment=event.commitment), seq
            )
            for pid, board in event.boards.items()
        }
        players = wire.encode_event(wire.Started(event.code, event.started_at, commitment=event.commitment), seq)
        spectators = wire.encode_event(
            wire.Started(
                event.code, event.started_at, boards=self.race.spectator_boards(), commitment=event.commitment
            ),
            seq,
        )
        return Frames(seq, players, spectators, overrides)

    def _moved(self, event: events.Moved, seq: int, watched: bool, msg_id: int | None) -> Frames:
        # the hot path: every move of every player. The summary is built once as a dict and
        # extended for the mover and the spectators (no intermediate message objects).
        common = wire.moved_summary(
            event.player,
            event.action,
            event.move.names(),
            event.score,
            event.moves,
            event.cards_left,
            event.status,
            event.elapsed_ms,
        )
        changes = [
            {"pos": POSITION_NAMES[position], "card": None if card is None else card.name, "count": count}
            for position, card, count in event.changes
        ]
        mine = {**common, "changes": changes, "can_undo": event.can_undo}
        if msg_id is not None:
            mine["id"] = msg_id
        spectators = None
        if watched:
            now = self.race.spectator_tops()
            tops = now[event.player]
            masked = [dict(change, card=tops[c[0]]) for c, change in zip(event.changes, changes, strict=True)]
            reveals = self._reveals(event, now)
            spectators = wire.encode_body("moved", {**common, "changes": masked}, seq, reveals)
        return Frames(
            seq,
            wire.encode_body("moved", common, seq),
            spectators,
            {event.player: wire.encode_body("moved", mine, seq)},
        )

    def _reveals(
        self, moved: events.Moved | None = None, now: dict[str, list[str | None]] | None = None
    ) -> list[wire.Change]:
        """Every top whose shown card changed since spectators were last told (the mover's moved
        positions are in the move's own ``changes``); remembers the new tops."""
        now = self.race.spectator_tops() if now is None else now
        before = self.shown
        self.shown = now
        covered = {position for position, _, _ in moved.changes} if moved is not None else set()
        reveals: list[wire.Change] = []
        for pid, shown in now.items():
            old = before.get(pid)
            game = self.race.players[pid].game
            assert game is not None
            for position, card in enumerate(shown):
                if moved is not None and pid == moved.player and position in covered:
                    continue
                if old is None or old[position] != card:
                    reveals.append(wire.Change(POSITION_NAMES[position], card, game.count_at(position), player=pid))
        return reveals
