"""Game records: a deal code and the moves and undos played, and replaying them.

JSON shape: ``{"code": "HM1-N-AAAAAAB", "moves": [["1", "8"], ["8", "5", "3"], "undo", ...]}``, and
optionally ``"times"``: for each step, the milliseconds elapsed on the player's clock when the
server took it (a stored game carries them, so it can be raced as a ghost; replaying ignores them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from halfmoon.codes import DealCode
from halfmoon.errors import HalfMoonError, InvalidRecordError
from halfmoon.game import Game, Move

UNDO: Final = "undo"
Step = Move | Literal["undo"]


@dataclass(slots=True)
class GameRecord:
    """A deal code and the steps played on it: moves and ``"undo"``s, in order; and, when known,
    the clock time (ms) at which each step was played (``times``: as long as ``moves``, never
    decreasing)."""

    code: DealCode
    moves: list[Step] = field(default_factory=list)
    times: list[int] | None = None

    @classmethod
    def from_json(cls, data: Any) -> GameRecord:
        """Read the record JSON (a parsed object). Raises :class:`InvalidRecordError` or
        :class:`InvalidCodeError` / :class:`InvalidPositionError` naming the bad part."""
        if not isinstance(data, dict):
            raise InvalidRecordError(f"a game record is a JSON object, not {type(data).__name__}")
        if "code" not in data:
            raise InvalidRecordError("a game record needs a 'code'")
        if "moves" not in data:
            raise InvalidRecordError("a game record needs 'moves' (a list, possibly empty)")
        code = DealCode.parse(data["code"])
        raw_moves = data["moves"]
        if not isinstance(raw_moves, list):
            raise InvalidRecordError(f"'moves' must be a list, not {type(raw_moves).__name__}")
        moves: list[Step] = []
        for i, raw in enumerate(raw_moves):
            if isinstance(raw, list) and all(isinstance(name, str) for name in raw):
                try:
                    moves.append(Move.from_names(raw))
                except HalfMoonError as exc:
                    raise InvalidRecordError(f"move {i}: {exc}") from None
            elif raw == UNDO:
                moves.append(UNDO)
            else:
                raise InvalidRecordError(
                    f"move {i}: {raw!r} is neither \"undo\" nor a list of 2 or 3 position names"
                )
        return cls(code, moves, _parse_times(data.get("times"), len(moves)))

    @classmethod
    def loads(cls, text: str | bytes) -> GameRecord:
        """Read a record from JSON text.

        Raises :class:`InvalidRecordError` when the text is not JSON or not a record's shape,
        :class:`InvalidCodeError` for a malformed code.
        """
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InvalidRecordError(f"a game record must be JSON: {exc}") from None
        return cls.from_json(data)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": str(self.code),
            "moves": [UNDO if step == UNDO else step.names() for step in self.moves],
        }
        if self.times is not None:
            data["times"] = list(self.times)
        return data

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))


def _parse_times(raw: Any, steps: int) -> list[int] | None:
    """A record's optional ``times``: one non-negative, never decreasing integer (ms) per step."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != steps:
        raise InvalidRecordError(f"'times' must be a list of {steps} numbers, one per step")
    previous = 0
    for i, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, int) or value < previous:
            raise InvalidRecordError(f"time {i}: {value!r} is not a whole number of ms, at least {previous}")
        previous = value
    return list(raw)


@dataclass(slots=True)
class ReplayResult:
    game: Game
    error_index: int | None = None
    error: HalfMoonError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """``{"code", "score", "moves", "status", "cards_left", "error"}`` as ``halfmoon replay --json`` prints."""
        game = self.game
        return {
            "code": str(game.code),
            "score": game.score,
            "moves": game.move_count,
            "status": game.status.value,
            "cards_left": game.cards_left,
            "error": None
            if self.error is None
            else {"index": self.error_index, "reason": str(self.error)},
        }


def replay(record: GameRecord) -> ReplayResult:
    """Play a record's steps on a fresh game; stop at the first illegal move or undo.

    Never raises for an illegal step: the result holds the error and the index of the step.
    """
    game = Game.from_code(record.code)
    push = game.push
    for i, step in enumerate(record.moves):
        try:
            if isinstance(step, Move):
                push(step)
            else:
                game.undo()
        except HalfMoonError as exc:
            return ReplayResult(game, i, exc)
    return ReplayResult(game)
