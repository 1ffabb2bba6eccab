"""Where ``halfmoon join`` keeps its seats: each room's player token, on disk.

The state directory also keeps the player's keys (``player-keys.json``, one per server): a
random secret of 256 bits made once, sent with ``join``, by which the server keeps the player's
games for ``halfmoon history`` (docs/protocol.md, "Player keys"). One key per server: a server
learns only its own.

A token lets a player back into their game (``resume``). The connection keeps it while the
command runs; the seat book keeps it across runs, so that running ``halfmoon join`` again after
closing the terminal, a crash or a reboot resumes the same player in the same game instead of
joining as someone new (who, once the race has started, could only watch).

The book is a small JSON file, ``seats.json`` in ``$HALFMOON_STATE_DIR``, else
``$XDG_STATE_HOME/halfmoon``, else ``~/.local/state/halfmoon``, readable by its owner only. A
seat is keyed by server and room and remembers the nickname: joining the same room under
another name is another player, and starts afresh. A seat is dropped when the race is over,
when the player leaves, or when the server no longer knows the token. The book never raises:
a missing, unreadable or corrupt file reads as empty, and a seat that cannot be written is
simply not kept (the game goes on; only a later resume from a new process is lost).
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import Final

#: seats kept at most; the oldest go first (a token is only worth something while its race runs)
MAX_SEATS: Final = 50
FILE_NAME: Final = "seats.json"
KEYS_FILE: Final = "player-keys.json"
_KEY_RE: Final = re.compile(r"[A-Za-z0-9_-]{22,64}")


def default_state_dir() -> Path:
    """``$HALFMOON_STATE_DIR``, else ``$XDG_STATE_HOME/halfmoon``, else ``~/.local/state/halfmoon``."""
    explicit = os.environ.get("HALFMOON_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "halfmoon"


class SeatBook:
    """The tokens of the rooms this user joined, by server and room."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def default(cls) -> SeatBook:
        return cls(default_state_dir() / FILE_NAME)

    @staticmethod
    def _key(server: str, room: str) -> str:
        return f"{server} {room}"

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            key: seat
            for key, seat in data.items()
            if isinstance(seat, dict)
            and isinstance(seat.get("name"), str)
            and isinstance(seat.get("token"), str)
            and seat["token"]
        }

    def _write(self, seats: dict[str, dict[str, str]]) -> bool:
        """Replace the file atomically (owner-only); False when it could not be written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(self.path.name + ".partial")
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(seats, out, indent=1)  # in insertion order: the oldest seat first
            os.replace(partial, self.path)
        except OSError:
            return False
        return True

    def token(self, server: str, room: str, name: str) -> str | None:
        """The token kept for ``name`` in ``room`` on ``server``, if any."""
        seat = self._read().get(self._key(server, room))
        if seat is None or seat["name"] != name:
            return None
        return seat["token"]

    def keep(self, server: str, room: str, name: str, token: str) -> bool:
        """Remember a seat (the newest last); False when it could not be written."""
        seats = self._read()
        key = self._key(server, room)
        seats.pop(key, None)
        seats[key] = {"name": name, "token": token}
        while len(seats) > MAX_SEATS:
            del seats[next(iter(seats))]
        return self._write(seats)

    def player_key(self, server: str, *, create: bool = True) -> str | None:
        """This user's player key for ``server``, kept beside the seats (owner-only); made and
        kept on first use (``create``). None when there is none and it cannot be kept (then the
        games are played without a history, as an old client's)."""
        path = self.path.with_name(KEYS_FILE)
        try:
            keys = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            keys = {}
        keys = keys if isinstance(keys, dict) else {}
        key = keys.get(server)
        if isinstance(key, str) and _KEY_RE.fullmatch(key):
            return key
        if not create:
            return None
        keys[server] = key = secrets.token_urlsafe(32)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(KEYS_FILE + ".partial")
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(keys, out, indent=1)
            os.replace(partial, path)
        except OSError:
            return None
        return key

    def drop(self, server: str, room: str) -> None:
        """Forget a room's seat (nothing happens when there is none)."""
        seats = self._read()
        if seats.pop(self._key(server, room), None) is not None:
            self._write(seats)


__all__ = ["FILE_NAME", "KEYS_FILE", "MAX_SEATS", "SeatBook", "default_state_dir"]
