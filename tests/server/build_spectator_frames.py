"""The source of ``tests/vectors/spectator_frames.json``: the frames of every audience — the mover,
the other players, the spectators — for a few scripted races on one deal, recorded from the race
core and its audience (:class:`~halfmoon_server.core.race.Race`,
:class:`~halfmoon_server.core.audience.Audience`) driven as the room drives them: each event
numbered in turn, a finished game recorded at once, a spectator's welcome the room's snapshot.

``tests/server/core/test_spectators.py`` checks that this script still records the committed file byte
for byte (the audience encoding is pinned), and that the recording keeps the rules of
docs/protocol.md ("Who sees what"), checked from each racer's game, not from the server's view.

Regenerate with ``python -m tests.server.build_spectator_frames`` (from the repository root).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from halfmoon.codes import DealCode
from halfmoon.game import Move
from halfmoon.protocol import Mode
from halfmoon_server.core import events
from halfmoon_server.core.audience import Audience, Frames
from halfmoon_server.core.race import Race, RaceConfig
from tests.conftest import VECTORS
from tests.server.support import won_record

PATH: Final = VECTORS / "spectator_frames.json"
T0: Final = 1_796_000_000_000
STEP_MS: Final = 1000
CONFIG: Final = RaceConfig(countdown_ms=3000, default_time_limit_s=600)

FORMAT: Final = """\
Frames of a few scripted races on one deal (tests/server/build_spectator_frames.py), recorded from
the race core and its audience. Top level: {"format": this text, "scenarios": {name: scenario}}.
A scenario: {"about": what it shows, "code": the deal code, "players": {id: name}, "steps": [step]}.
A step: {"do": the command} and what it sent: {"frames": [frame]} and, for a spectator coming in,
{"snapshot": the room as the spectator's welcome carries it}. Commands: {"join": name},
{"watch": true} (a spectator comes in), {"start": player}, {"tick": true} (the countdown ends),
{"move": positions, "player": id} (the i-th move of the deal's won line), {"undo": player},
{"give_up": player}. Every command happens 1 s after the one before. A frame:
{"seq", "players": the frame every player gets, "spectators": the spectators' frame, "own": the
one player's own frame in place of "players" ("to": who), "overrides": {id: frame} (a player's own
start)}; a frame nobody of that audience gets is null. A finished game is recorded at once
(game ids GAME-n).
"""

Command = dict[str, Any]


@dataclass
class Table:
    """A race and its audience, driven as the room drives them (without the room's I/O)."""

    race: Race
    audience: Audience
    now: int = T0
    seq: int = 0
    watching: bool = False
    games: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def open(cls, code: DealCode) -> Table:
        race = Race("K7WQ2M", Mode.RACE, code, CONFIG, now=T0)
        return cls(race, Audience(race))

    def do(self, command: Command) -> None:
        """Apply one command at the next second and record what it sent."""
        self.now += STEP_MS
        race, now = self.race, self.now
        step: dict[str, Any] = {"do": command}
        msg_id = None
        match command:
            case {"join": name}:
                _, evs = race.join(name, now)
            case {"watch": True}:
                if not self.watching:
                    self.audience.start_watching()
                    self.watching = True
                evs = race.watch()
                step["snapshot"] = race.snapshot(None, now, watcher=True).to_json()
            case {"start": player}:
                evs = race.start(player, None, now)
            case {"tick": True}:
                self.now = now = race.next_deadline() or now
                evs = race.tick(now)
            case {"move": names, "player": player}:
                msg_id = len(race.players[player].steps) + 1
                evs = race.move(player, Move.from_names(names), now)
            case {"undo": player}:
                msg_id = len(race.players[player].steps) + 1
                evs = race.undo(player, now)
            case {"give_up": player}:
                evs = race.give_up(player, now)
            case _:
                raise ValueError(f"no such command {command!r}")
        step["frames"] = self.publish(evs, msg_id)
        self.steps.append(step)

    def publish(self, evs: list[events.Event], msg_id: int | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for event in evs:
            if isinstance(event, events.GameEnded):  # recorded at once: its game_over follows
                self.games += 1
                out += self.publish(self.race.recorded(event.player, f"GAME-{self.games}", self.now), None)
                continue
            frames = self.audience.frames(event, self.seq + 1, watched=self.watching, msg_id=msg_id)
            if frames is not None:
                self.seq += 1
                out.append(frames_json(frames))
        return out


def frames_json(frames: Frames) -> dict[str, Any]:
    def body(frame: bytes | None) -> Any:
        return None if frame is None else orjson.loads(frame)

    out: dict[str, Any] = {"seq": frames.seq, "players": body(frames.players), "spectators": body(frames.spectators)}
    if frames.owner is not None:
        out["own"] = {"to": frames.owner, "frame": body(frames.own)}
    if frames.overrides is not None:
        out["overrides"] = {pid: body(frame) for pid, frame in frames.overrides.items()}
    return out


def won_line() -> list[list[str]]:
    return [step.names() for step in won_record().moves if isinstance(step, Move)]


def lobby(*names: str, watch: bool = True) -> list[Command]:
    script: list[Command] = [{"join": name} for name in names]
    if watch:
        script.append({"watch": True})
    return [*script, {"start": "p1"}, {"tick": True}]


def moves(player: str, line: list[list[str]], first: int, last: int) -> list[Command]:
    """Moves ``first``..``last`` (1-based) of ``line`` by ``player``."""
    return [{"move": names, "player": player} for names in line[first - 1 : last]]


def digs_ahead() -> list[Command]:
    line = won_line()
    return [
        *lobby("Ada", "Bob"),
        *moves("p1", line, 1, 6),
        {"watch": True},  # a second spectator, late
        *moves("p2", line, 1, 2),
        {"undo": "p2"},
        {"give_up": "p2"},
        *moves("p1", line, 7, 48),
    ]


def another_tab() -> list[Command]:
    line = won_line()
    return [
        *lobby("Ada", "Bob"),
        *moves("p1", line, 1, 10),
        {"undo": "p1"},
        *moves("p1", line, 10, 20),
        *moves("p2", line, 1, 48),
        *moves("p1", line, 21, 48),
    ]


def three_racers_watched_late() -> list[Command]:
    line = won_line()
    return [
        *lobby("Ada", "Bob", "Cy", watch=False),
        *moves("p1", line, 1, 8),
        *moves("p2", line, 1, 3),
        {"watch": True},  # the first spectator: the snapshot is where the spectators' copy starts
        *moves("p2", line, 4, 5),
        {"undo": "p2"},
        {"undo": "p2"},
        *moves("p3", line, 1, 8),
        {"give_up": "p1"},
        *moves("p2", line, 4, 9),
        {"give_up": "p3"},
        {"give_up": "p2"},
    ]


SCENARIOS: Final = {
    "digs_ahead": (
        digs_ahead,
        "Ada digs six moves ahead (her new cards face down to spectators); a second spectator comes in; Bob "
        "catches up two moves (Ada's cards he has seen come into sight as reveals), undoes one, gives up (only "
        "Ada plays: her board in plain sight); Ada wins",
    ),
    "another_tab": (
        another_tab,
        "Ada plays twenty moves with an undo on the way (her moves that remove cards Bob has not seen wait, "
        "with what follows them, summary only); Bob plays his whole game (Ada's held-back moves go through as "
        "reveals); Ada wins",
    ),
    "three_racers_watched_late": (
        three_racers_watched_late,
        "three racers, nobody watching until Ada is eight moves in and Bob three (the first spectator's "
        "snapshot is the start of the spectators' copy); Bob moves and undoes twice, Cy plays eight, Ada "
        "gives up, Bob plays on, Cy and Bob give up",
    ),
}


def record(name: str) -> dict[str, Any]:
    script, about = SCENARIOS[name]
    code = won_record().code
    table = Table.open(code)
    for command in script():
        table.do(command)
    players = {pid: racer.name for pid, racer in table.race.players.items()}
    return {"about": about, "code": str(code), "players": players, "steps": table.steps}


def build() -> dict[str, Any]:
    return {"format": FORMAT, "scenarios": {name: record(name) for name in SCENARIOS}}


def dumps(data: dict[str, Any]) -> str:
    """One step a line, so a change reads as a small diff."""
    lines = ["{", f'"format": {json.dumps(data["format"])},', '"scenarios": {']
    scenarios = list(data["scenarios"].items())
    for i, (name, scenario) in enumerate(scenarios):
        head = {key: scenario[key] for key in ("about", "code", "players")}
        lines.append(f"{json.dumps(name)}: {json.dumps(head, ensure_ascii=False)[:-1]}, " + '"steps": [')
        steps = [json.dumps(step, ensure_ascii=False) for step in scenario["steps"]]
        lines.extend(step + ("," if k < len(steps) - 1 else "") for k, step in enumerate(steps))
        lines.append("]}" + ("," if i < len(scenarios) - 1 else ""))
    lines.extend(["}", "}"])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(dumps(build()), encoding="utf-8")
    print(f"wrote {PATH}")
