"""Test support for the client: server messages as the protocol shapes them, and a screen
that keeps what the terminal would show."""

from __future__ import annotations

import re
from typing import Any

from halfmoon.game import Game
from halfmoon.view import BoardView

CODE = "HM1-N-AAAAAAB"
T0 = 1_795_900_000_000


def summary(pid: str, name: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": pid,
        "name": name,
        "status": "waiting",
        "score": 0,
        "moves": 0,
        "cards_left": 104,
        "elapsed_ms": 0,
        "connected": True,
    }
    base.update(fields)
    return base


def snapshot(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "room": "K7WQ2M",
        "mode": "race",
        "phase": "lobby",
        "code": CODE,
        "host": "p1",
        "now": T0,
        "starts_at": None,
        "started_at": None,
        "time_limit_s": None,
        "players": [summary("p1", "Ada")],
        "spectators": 0,
        "board": None,
        "boards": None,
        "can_undo": False,
        "results": None,
    }
    base.update(fields)
    return base


def welcome(seq: int = 1, *, you: str | None = "p1", token: str | None = "t" * 32, **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "welcome",
        "v": 1,
        "role": "player" if you else "spectator",
        "you": you,
        "room": snapshot(**fields),
        "seq": seq,
    }
    if token:
        message["token"] = token
    return message


def board_json(game: Game) -> dict[str, Any]:
    return BoardView.of(game).to_json()


def started(seq: int, game: Game | None, boards: dict[str, Game] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "started", "v": 1, "seq": seq, "code": CODE, "started_at": T0}
    if game is not None:
        message["board"] = board_json(game)
    if boards is not None:
        message["boards"] = {pid: board_json(g) for pid, g in boards.items()}
    return message


def moved(seq: int, pid: str, game: Game, positions: list[str], *, changes: bool, **extra: Any) -> dict[str, Any]:
    """What the server sends after ``game`` (already pushed) played ``positions``."""
    from halfmoon.positions import parse_position

    message: dict[str, Any] = {
        "type": "moved",
        "v": 1,
        "seq": seq,
        "player": pid,
        "action": "move",
        "positions": positions,
        "score": game.score,
        "moves": game.move_count,
        "cards_left": game.cards_left,
        "status": str(game.status),
        "elapsed_ms": 1000,
    }
    if changes:
        message["changes"] = [
            {
                "pos": name,
                "card": None if (c := game.card_at(parse_position(name))) is None else c.name,
                "count": game.count_at(parse_position(name)),
            }
            for name in positions
        ]
    message.update(extra)
    return message


class RecordingScreen:
    """A :class:`~halfmoon_client.terminal.Screen` that keeps every frame."""

    def __init__(self) -> None:
        self.frames: list[str] = []

    def draw(self, text: str, *, full: bool = False) -> None:
        self.frames.append(text)

    @property
    def last(self) -> str:
        return self.frames[-1] if self.frames else ""


_LABEL = re.compile(r"(R?\d{1,2})·(\d)")


def board_from_screen(screen: str) -> dict[str, str | None]:
    """Read the seed's diagram back from a screen: position name → card symbol (None if empty).

    Every label ``pos·count`` stands under its card, in the same five columns.
    """
    lines = screen.split("\n")
    found: dict[str, str | None] = {}
    for i, line in enumerate(lines[1:], 1):
        for match in _LABEL.finditer(line):
            start = match.start() - (5 - len(match.group(0))) // 2
            above = lines[i - 1][max(0, start) : start + 5] if i - 1 < len(lines) else ""
            face = above.strip("[]<>() ")
            found[match.group(1)] = face or None
    return found
