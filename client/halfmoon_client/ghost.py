"""Ghosts in the terminal (issue 17): race a stored game's recorded run, sans I/O.

A stored game (``GET /api/games/{id}``, readable only once its deal is public) carries each
step's time on its player's clock (``times``). A move of 2 or 3 positions removes that many
cards, an undo puts the last move's back: that is all the ghost's lane needs — it moves on the
race's clock and never shows a card. ``halfmoon join ROOM --ghost GAME`` draws it under the
track: a race room on the ghost's deal (``halfmoon race --code CODE``) raced against its run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from halfmoon.errors import HalfMoonError
from halfmoon.game import Move
from halfmoon.record import GameRecord
from halfmoon_client.errors import ProtocolError
from halfmoon_client.screens import progress_bar
from halfmoon_client.words import say, status_word

CARDS = 104


@dataclass(frozen=True, slots=True)
class GhostStep:
    """The ghost after one of its steps: when (ms on its clock), cards removed, moves, score."""

    at: int
    removed: int
    moves: int
    score: int


DEAL = GhostStep(0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Ghost:
    """A stored game as a ghost: its player, deal code, final time and outcome, and its steps."""

    name: str
    code: str
    time_ms: int
    outcome: str
    steps: tuple[GhostStep, ...]

    @classmethod
    def from_game(cls, game: Any) -> Ghost:
        """Read a stored game's JSON; raises :class:`ProtocolError` when it is not one, or has no times."""
        try:
            record = GameRecord.from_json(game)
        except HalfMoonError as exc:
            raise ProtocolError(f"not a stored game: {exc}") from None
        if record.times is None:
            raise ProtocolError("this game was stored without its times: it cannot be raced as a ghost")
        if not isinstance(game.get("time_ms"), int) or not isinstance(game.get("outcome"), str):
            raise ProtocolError("not a stored game: no time_ms or outcome")
        taken: list[int] = []
        removed = score = 0
        steps = []
        for step, at in zip(record.moves, record.times, strict=True):
            if isinstance(step, Move):
                size = len(step.positions)
                taken.append(size)
                removed, score = removed + size, score + (10 if size == 2 else 15)
            elif taken:
                size = taken.pop()
                removed, score = removed - size, score - (10 if size == 2 else 15)
            else:
                raise ProtocolError("not a stored game: an undo with nothing to undo")
            steps.append(GhostStep(at, removed, len(taken), score))
        return cls(str(game.get("name", "")), str(record.code), game["time_ms"], game["outcome"], tuple(steps))

    def at(self, elapsed_ms: int) -> GhostStep:
        """The ghost's last step played by ``elapsed_ms`` on its clock (the deal before its first)."""
        last = DEAL
        for step in self.steps:
            if step.at > elapsed_ms:
                break
            last = step
        return last

    def lane(self, elapsed_ms: int, *, over: bool = False, lang: str = "en", cells: int = 40) -> str:
        """The ghost's lane, shaped as a racer's: its progress by ``elapsed_ms`` on your clock;
        once its time is up (or ``over``: your game is over), its end, outcome and time."""
        done = over or elapsed_ms >= self.time_ms
        step = self.steps[-1] if done and self.steps else self.at(elapsed_ms)
        label = f"{self.name} ({say('ghost', lang)})"
        if done:
            state = say("ghost_end", lang, outcome=status_word(self.outcome, lang), time_ms=self.time_ms)
        else:
            state = progress_bar(CARDS - step.removed, cells)
        return f"  {label:<14.14} {step.score:>3} {step.moves:>2} {state}"
