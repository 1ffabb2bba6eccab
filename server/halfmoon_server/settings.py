"""The server's settings: one frozen dataclass, filled from command-line flags and ``HALFMOON_*``
environment variables (flags win), and the daily-challenge secret kept in the data directory.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from halfmoon_server.clock import Clock, SystemClock
from halfmoon_server.errors import SettingsError

log = logging.getLogger("halfmoon_server")

SECRET_FILE = "daily-secret"


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything ``create_app`` needs. Defaults give a working server with nothing else installed."""

    host: str = "127.0.0.1"
    port: int = 8080
    #: SQLAlchemy async URL; None means SQLite in ``data_dir`` (``halfmoon.db``).
    db_url: str | None = None
    data_dir: Path = Path("data")
    #: The daily-challenge secret; None means read (or create once) ``data_dir/daily-secret``.
    secret: bytes | None = None
    #: Where the browser client's files are; None means ``halfmoon_web.STATIC_DIR``.
    static_dir: Path | None = None
    #: The public base URL used in links (``POST /api/rooms`` → ``url``); None: from the request.
    public_url: str | None = None
    #: Extra origins allowed to open ``/ws`` from a browser (besides the server's own).
    allowed_origins: tuple[str, ...] = ()
    countdown_s: float = 3.0
    default_time_limit_s: int = 1800
    max_players: int = 8
    #: Rooms held in memory at once; creating one more is refused (``server_full`` / 503).
    max_rooms: int = 10_000
    max_msg_size: int = 4096
    rate_burst: float = 20.0
    rate_per_s: float = 10.0
    rate_max_refused: int = 50
    #: Rooms (races, solo games, daily attempts) one client address may create: a burst, then
    #: a steady rate per minute. Without it one client could fill ``max_rooms`` for everyone.
    room_burst: float = 30.0
    room_per_min: float = 10.0
    #: Behind a proxy (nginx), take the client's address from the last X-Forwarded-For entry
    #: (the one the proxy appended) instead of the socket's peer, which is the proxy itself.
    trust_forwarded: bool = False
    #: Bytes written to a connection but not yet taken by the kernel before it counts as too
    #: slow and is dropped (bounds the memory a non-reading client can pin).
    max_send_buffer: int = 256 * 1024
    #: Kernel send buffer (SO_SNDBUF) of each WebSocket, in bytes; None keeps the system's
    #: autotuned default. A small one bounds the memory a non-reading client can pin.
    ws_send_buffer: int | None = None
    #: Room events kept for resume catch-up.
    event_log: int = 512
    #: How often the background task checks time limits and abandoned rooms.
    tick_s: float = 0.5
    #: A room whose players are all disconnected (or a lobby nobody is in) is closed after this.
    abandon_after_s: float = 3600.0
    #: A finished room stays readable (resume, GET /api/rooms/…) this long.
    finished_ttl_s: float = 1800.0
    daily_requires_winnable: bool = True
    solver_node_budget: int = 200_000
    #: Worker processes for the solver, which chooses the daily deals (the app never says whether
    #: a deal can be won); 0: none, the daily deal is chosen without proof.
    solver_workers: int = 1
    #: Redis URL of a cluster's shared room log (``redis://host:6379/0``); None: the embedded
    #: default, one process with its room log in a SQLite journal in ``data_dir``.
    redis_url: str | None = None
    #: How long a Redis call may take before it counts as failed (the move is refused).
    redis_timeout_s: float = 2.0
    #: The embedded journal's SQLite ``synchronous``: ``normal`` (survives a killed process) or
    #: ``full`` (survives a power cut too, at a higher cost per commit).
    journal_sync: str = "normal"
    clock: Clock = field(default_factory=SystemClock)

    def database_url(self) -> str:
        if self.db_url:
            return self.db_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'halfmoon.db').resolve()}"

    def with_changes(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``HALFMOON_*`` variables, then ``overrides`` (non-None values win).

        Raises :class:`SettingsError` naming the variable when a value does not parse.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}

        def take(var: str, name: str, kind: type) -> None:
            raw = env.get(var)
            if raw is None or raw == "":
                return
            try:
                if kind is bool:
                    values[name] = raw.strip().lower() in ("1", "true", "yes", "on")
                elif kind is Path:
                    values[name] = Path(raw)
                else:
                    values[name] = kind(raw)
            except ValueError:
                raise SettingsError(f"{var}={raw!r} is not a valid {kind.__name__}") from None

        take("HALFMOON_HOST", "host", str)
        take("HALFMOON_PORT", "port", int)
        take("HALFMOON_DB", "db_url", str)
        take("HALFMOON_DATA_DIR", "data_dir", Path)
        take("HALFMOON_STATIC_DIR", "static_dir", Path)
        take("HALFMOON_PUBLIC_URL", "public_url", str)
        take("HALFMOON_COUNTDOWN_S", "countdown_s", float)
        take("HALFMOON_DAILY_REQUIRES_WINNABLE", "daily_requires_winnable", bool)
        take("HALFMOON_SOLVER_WORKERS", "solver_workers", int)
        take("HALFMOON_TRUST_FORWARDED", "trust_forwarded", bool)
        take("HALFMOON_ROOM_BURST", "room_burst", float)
        take("HALFMOON_ROOM_PER_MIN", "room_per_min", float)
        take("HALFMOON_REDIS", "redis_url", str)
        take("HALFMOON_RATE_BURST", "rate_burst", float)
        take("HALFMOON_RATE_PER_S", "rate_per_s", float)
        take("HALFMOON_JOURNAL_SYNC", "journal_sync", str)
        if env.get("HALFMOON_SECRET"):
            values["secret"] = env["HALFMOON_SECRET"].encode("utf-8")
        if env.get("HALFMOON_ALLOWED_ORIGINS"):
            origins = env["HALFMOON_ALLOWED_ORIGINS"].split(",")
            values["allowed_origins"] = tuple(o.strip() for o in origins if o.strip())
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raises :class:`SettingsError` for values the server cannot run with."""
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"port {self.port} is outside 0-65535")
        if self.max_msg_size < 256:
            raise SettingsError(f"max_msg_size {self.max_msg_size} is too small (at least 256)")
        if self.max_send_buffer < 4096:
            raise SettingsError(f"max_send_buffer {self.max_send_buffer} is too small (at least 4096 bytes)")
        if self.room_burst < 1 or self.room_per_min <= 0:
            raise SettingsError("room_burst must be at least 1 and room_per_min positive")
        if self.countdown_s < 0:
            raise SettingsError("countdown_s cannot be negative")
        if self.journal_sync.lower() not in ("normal", "full"):
            raise SettingsError(f"journal_sync must be 'normal' or 'full', not {self.journal_sync!r}")
        if self.redis_url is not None and not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise SettingsError(f"the Redis URL must start with redis://, rediss:// or unix://, not {self.redis_url!r}")


def load_secret(settings: Settings) -> bytes:
    """The daily secret: the setting, else ``data_dir/daily-secret`` (created once, mode 0600).

    Raises :class:`SettingsError` when the file cannot be read or written.
    """
    if settings.secret:
        return settings.secret
    path = settings.data_dir / SECRET_FILE
    try:
        if path.exists():
            text = path.read_text(encoding="ascii").strip()
            if text:
                return text.encode("ascii")
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        text = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text + "\n")
        log.info("created a new daily-challenge secret in %s", path)
        return text.encode("ascii")
    except (OSError, UnicodeError) as exc:
        raise SettingsError(f"cannot read or create the daily secret {path}: {exc}") from None
