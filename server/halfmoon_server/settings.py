"""The server's settings: one frozen dataclass, filled from command-line flags and ``HALFMOON_*``
environment variables (flags win), and the daily-challenge secret kept in the data directory.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import os
import re
import secrets
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

from halfmoon_server.clock import Clock, SystemClock
from halfmoon_server.core.commands import LOG_VERSION
from halfmoon_server.core.ranking import DEFAULT_TAP_FLOOR_MS
from halfmoon_server.errors import SettingsError

log = logging.getLogger("halfmoon_server")

SECRET_FILE = "daily-secret"
#: The range of a room owner's lease (ms): under a few hundred ms a busy event loop's pause would
#: lose rooms; past a minute a dead owner's players wait too long.
MIN_LEASE_MS, MAX_LEASE_MS = 300, 60_000
#: The daily secret's shortest allowed length: 32 bytes (256 bits) of a random token.
MIN_SECRET_BYTES = 32
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


#: The longest any timing setting may be: ten years (a larger one overflows as milliseconds).
MAX_SECONDS = 315_360_000
#: The largest young-generation threshold (``gc.set_threshold`` takes a C int; far past any use).
MAX_GC_YOUNG = 100_000_000


#: A host name as a relying party id may be: labels of letters, digits and hyphens, lower case.
_HOST_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*")


#: The embedded journal's SQLite ``synchronous`` (``--journal-sync``) and where it commits
#: (``--journal-commit``; halfmoon_server.adapters.journal checks it too).
JOURNAL_SYNCS = ("normal", "full")
JOURNAL_COMMITS = ("auto", "thread")


class Option(NamedTuple):
    """A setting an operator may give: its field, its ``HALFMOON_*`` variable and its flag."""

    field: str
    env: str
    kind: type
    flag: str
    help: str


#: Every setting with a variable and a flag beyond the few `halfmoon serve` spells by hand (host,
#: port, db, ...): the limits and the tuning. docs/server.md lists each with its default (a test
#: checks it does).
OPTIONS: tuple[Option, ...] = (
    Option("max_rooms", "HALFMOON_MAX_ROOMS", int, "--max-rooms", "rooms held in memory at once; more are refused"),
    Option("max_players", "HALFMOON_MAX_PLAYERS", int, "--max-players", "players in one race"),
    Option(
        "snapshot_every", "HALFMOON_SNAPSHOT_EVERY", int, "--snapshot-every",
        "a room's snapshot is stored beside its log every this many entries (0: never)",
    ),
    Option(
        "max_room_entries", "HALFMOON_MAX_ROOM_ENTRIES", int, "--max-room-entries",
        "entries one room's log takes; past them new commands are refused (room_log_full)",
    ),
    Option(
        "quick_fill_s", "HALFMOON_QUICK_FILL_S", float, "--quick-fill",
        "seconds a quick race waits for more players after its second one came",
    ),
    Option(
        "quick_lone_s", "HALFMOON_QUICK_LONE_S", float, "--quick-lone",
        "seconds a player waits alone in the quick-race queue before being offered a ghost or a solo game",
    ),
    Option(
        "quick_join_s", "HALFMOON_QUICK_JOIN_S", float, "--quick-join",
        "seconds a matched quick race waits for its players to come in before it starts with whoever came",
    ),
    Option(
        "max_connections_per_address", "HALFMOON_MAX_CONNECTIONS_PER_ADDRESS", int,
        "--max-connections-per-address", "open WebSockets from one client address (0: no limit)",
    ),
    Option("max_msg_size", "HALFMOON_MAX_MSG_SIZE", int, "--max-msg-size", "largest client frame, bytes"),
    Option(
        "max_send_buffer", "HALFMOON_MAX_SEND_BUFFER", int, "--max-send-buffer",
        "bytes waiting on one connection before it counts as too slow and is dropped",
    ),
    Option("rate_burst", "HALFMOON_RATE_BURST", float, "--rate-burst", "each connection's message burst"),
    Option("rate_per_s", "HALFMOON_RATE_PER_S", float, "--rate-per-s", "each connection's messages a second"),
    Option(
        "rate_max_refused", "HALFMOON_RATE_MAX_REFUSED", int, "--rate-max-refused",
        "refused messages in a row before a connection is closed (1008)",
    ),
    Option("room_burst", "HALFMOON_ROOM_BURST", float, "--room-burst", "new rooms an address may create at once"),
    Option("room_per_min", "HALFMOON_ROOM_PER_MIN", float, "--room-per-min", "new rooms an address may make a minute"),
    Option(
        "account_burst", "HALFMOON_ACCOUNT_BURST", float, "--account-burst",
        "passkey ceremonies and device-link uses an address may start at once",
    ),
    Option(
        "account_per_min", "HALFMOON_ACCOUNT_PER_MIN", float, "--account-per-min",
        "passkey ceremonies and device-link uses an address may start a minute",
    ),
    Option("event_log", "HALFMOON_EVENT_LOG", int, "--event-log", "room events kept for a resume"),
    Option(
        "default_time_limit_s", "HALFMOON_TIME_LIMIT_S", int, "--time-limit",
        "a race's time limit (s) if the host sets none",
    ),
    Option(
        "abandon_after_s", "HALFMOON_ABANDON_AFTER_S", float, "--abandon-after",
        "seconds before a room nobody is connected to is closed",
    ),
    Option(
        "finished_ttl_s", "HALFMOON_FINISHED_TTL_S", float, "--finished-ttl", "seconds a finished room stays readable"
    ),
    Option(
        "finished_hold_s", "HALFMOON_FINISHED_HOLD_S", float, "--finished-hold",
        "seconds a finished room nobody is in stays in memory (then it is read back from the room log when asked for)",
    ),
    Option("tick_s", "HALFMOON_TICK_S", float, "--tick", "seconds between the ticker's rounds"),
    Option(
        "live_ttl_s", "HALFMOON_LIVE_TTL_S", float, "--live-ttl",
        "seconds a public race stays on the live list unless its instance lists it again (it does every third of it)",
    ),
    Option(
        "shutdown_timeout_s", "HALFMOON_SHUTDOWN_TIMEOUT_S", float, "--shutdown-timeout",
        "seconds a shutdown may take before what still runs is logged and it is cut short",
    ),
    Option(
        "solver_node_budget", "HALFMOON_SOLVER_NODE_BUDGET", int, "--solver-node-budget", "the solver's nodes per deal"
    ),
    Option("redis_timeout_s", "HALFMOON_REDIS_TIMEOUT_S", float, "--redis-timeout", "seconds a Redis call may take"),
    Option(
        "redis_replicas", "HALFMOON_REDIS_REPLICAS", int, "--redis-replicas",
        "Redis replicas that must hold a command before it is acknowledged (WAIT; 0: do not wait)",
    ),
    Option(
        "redis_wait_ms", "HALFMOON_REDIS_WAIT_MS", int, "--redis-wait-ms",
        "ms to wait for those replicas; past it the command is refused as not confirmed",
    ),
    Option(
        "owner_lease_ms", "HALFMOON_OWNER_LEASE_MS", int, "--owner-lease-ms",
        "a cluster: ms a room's owner keeps it without renewing; a dead owner's rooms are taken over after it",
    ),
    Option(
        "daily_ranked_per_address", "HALFMOON_DAILY_RANKED_PER_ADDRESS", int, "--daily-ranked-per-address",
        "ranked daily attempts one client address may start a day (0: no limit)",
    ),
    Option(
        "tap_floor_ms", "HALFMOON_TAP_FLOOR_MS", int, "--tap-floor-ms",
        "a result faster than this many ms per tap its moves needed is not ranked (0: no such rule)",
    ),
    Option(
        "daily_time_limit_s", "HALFMOON_DAILY_TIME_LIMIT_S", int, "--daily-time-limit",
        "a daily attempt's time limit (s); the day's code opens this long after the day",
    ),
    Option(
        "room_log_version", "HALFMOON_ROOM_LOG_VERSION", int, "--room-log-version",
        f"the newest format new rooms' logs are written in (1-{LOG_VERSION}); a cluster writes no newer one than "
        "every instance heard from reads (1: before rolling back to a release that reads no newer)",
    ),
    Option(
        "gc_freeze_s", "HALFMOON_GC_FREEZE_S", float, "--gc-freeze",
        "seconds between moves of the surviving heap out of the garbage collector's sight (0: at start only)",
    ),
    Option(
        "gc_freeze_light_s", "HALFMOON_GC_FREEZE_LIGHT_S", float, "--gc-freeze-light",
        "seconds between freezes while the process uses under 0.9 of a core (0: always --gc-freeze)",
    ),
    Option(
        "gc_collect_s", "HALFMOON_GC_COLLECT_S", float, "--gc-collect",
        "seconds between full collections of the whole heap, frozen part included (0: never)",
    ),
    Option(
        "gc_young", "HALFMOON_GC_YOUNG", int, "--gc-young",
        "objects allocated and not yet freed that start a young garbage collection (Python's own: 700)",
    ),
    Option(
        "db_timeout_s", "HALFMOON_DB_TIMEOUT_S", float, "--db-timeout",
        "seconds a database call may take before it fails (the API answers 503)",
    ),
    Option(
        "body_timeout_s", "HALFMOON_BODY_TIMEOUT_S", float, "--body-timeout",
        "seconds a client may take to send a request's body (then 408)",
    ),
    Option(
        "head_timeout_s", "HALFMOON_HEAD_TIMEOUT_S", float, "--head-timeout",
        "seconds a new connection may take to send its first request head before it is closed",
    ),
    Option(
        "join_timeout_s", "HALFMOON_JOIN_TIMEOUT_S", float, "--join-timeout",
        "seconds a WebSocket may stay outside every room before it is closed (4002)",
    ),
    Option(
        "metrics_port", "HALFMOON_METRICS_PORT", int, "--metrics-port",
        "serve /metrics on a listener of its own on this port (0: none), on --metrics-host",
    ),
    Option(
        "ping_after_s", "HALFMOON_PING_AFTER_S", float, "--ping-after",
        "seconds of silence after which a WebSocket is pinged; one that does not answer within half that is dropped",
    ),
)

#: Settings whose value may come from a file instead (``HALFMOON_SECRET_FILE``, ``--secret-file``):
#: the file's content, stripped, so the value never shows in ``ps`` or the environment.
SECRET_VARIABLES = {"secret": "HALFMOON_SECRET", "db_url": "HALFMOON_DB", "redis_url": "HALFMOON_REDIS"}


def parse_bool(var: str, raw: str) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case). Raises :class:`SettingsError` otherwise."""
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise SettingsError(f"{var}={raw!r} is not a boolean: use one of {', '.join(TRUE)} or {', '.join(FALSE)}")


def read_secret_file(name: str, path: str | Path) -> str:
    """A secret's value from a file (stripped). Raises :class:`SettingsError` naming the file."""
    try:
        value = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeError) as exc:
        raise SettingsError(f"{name}: cannot read {path}: {exc}") from None
    if not value:
        raise SettingsError(f"{name}: {path} is empty")
    return value


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
    #: The passkeys' WebAuthn relying party id: a host name (never an IP address), the public
    #: URL's own or one it ends in. None: the public URL's host; with neither, accounts are off
    #: (``accounts_off``). With an RP id and no public URL, a ceremony's expected origin is the
    #: request's (``Host``, the scheme from ``X-Forwarded-Proto`` behind a trusted proxy), and
    #: only when its host is the RP id or ends in ``.`` + it (docs/security.md, "Accounts").
    rp_id: str | None = None
    countdown_s: float = 3.0
    default_time_limit_s: int = 1800
    #: A daily attempt's time limit; the day's code is public once the day is over and this
    #: long has passed (every attempt of the day has ended by then).
    daily_time_limit_s: int = 1800
    #: Ranked daily attempts one client address may start a day (later ones are not ranked): a
    #: throwaway name to scout the deal costs a ranked attempt. 0: no limit.
    daily_ranked_per_address: int = 3
    #: A result faster than this many ms per tap its moves needed (2 a pair, 3 a triple, undone
    #: moves included) is not ranked: no person plays that fast (docs/security.md gives the
    #: published figures). 0: no such rule.
    tap_floor_ms: int = DEFAULT_TAP_FLOOR_MS
    max_players: int = 8
    #: the quick-race queue (rooms/quick.py): players in one race, seconds it waits for more after
    #: the second came, before a lone player's offer, and for the matched players to come in
    quick_max_players: int = 6
    quick_fill_s: float = 10.0
    quick_lone_s: float = 30.0
    quick_join_s: float = 15.0
    #: Rooms held in memory at once; creating one more is refused (``server_full`` / 503).
    max_rooms: int = 10_000
    #: A room's snapshot is stored beside its log every this many entries, so a restart, a
    #: takeover or a REST read replays at most about this many (0: no snapshots; docs/server.md).
    snapshot_every: int = 200
    #: The newest format new rooms' logs are written in (the header's ``v``): this release's
    #: (:data:`~halfmoon_server.core.commands.LOG_VERSION`) by default. In a cluster new rooms are
    #: written in no newer one than every instance heard from reads (``RoomLog.shared_reads``: a
    #: rolling upgrade needs no setting); 1 before rolling back to a release that reads no newer
    #: (deploy/RUNBOOK.md). Rooms of every format are read and played as their log began.
    room_log_version: int = LOG_VERSION
    #: Entries one room's log takes: past them a room refuses every command but those that end
    #: it (``room_log_full``; docs/server.md gives the reasoning behind the default).
    max_room_entries: int = 50_000
    max_msg_size: int = 4096
    rate_burst: float = 20.0
    rate_per_s: float = 10.0
    rate_max_refused: int = 50
    #: Rooms (races, solo games, daily attempts) one client address may create: a burst, then
    #: a steady rate per minute. Without it one client could fill ``max_rooms`` for everyone.
    room_burst: float = 30.0
    room_per_min: float = 10.0
    #: Passkey ceremonies (each keeps a challenge in the database) and device-link uses one client
    #: address may start: a burst, then a steady rate per minute (429 ``rate_limited`` beyond).
    account_burst: float = 20.0
    account_per_min: float = 10.0
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
    event_log: int = 16
    #: How often the background task checks time limits and abandoned rooms.
    tick_s: float = 0.5
    #: A room whose players are all disconnected (or a lobby nobody is in) is closed after this.
    abandon_after_s: float = 3600.0
    #: A finished room stays readable (resume, GET /api/rooms/…) this long.
    finished_ttl_s: float = 1800.0
    #: A finished room with nobody connected to it leaves memory after this; it stays readable
    #: (until ``finished_ttl_s``) from the room log, rebuilt when a player or a reader asks for it.
    finished_hold_s: float = 60.0
    #: A public race in play stays on the live list this long unless an instance holding it puts
    #: it there again (each does every third of it, and at every change): a dead instance's races
    #: leave the list within it.
    live_ttl_s: float = 30.0
    #: A stop (SIGTERM) waits this long for the drain and every resource's closing; past it, what
    #: is still running is logged and the process exits (systemd's TimeoutStopSec is 20).
    shutdown_timeout_s: float = 15.0
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
    #: How many Redis replicas must hold a command (``WAIT``) before it is acknowledged: with 1,
    #: an acknowledged move survives its master dying and a replica taking over. 0: no wait.
    redis_replicas: int = 0
    #: How long to wait for them (ms); a command not confirmed in time is refused as uncertain.
    redis_wait_ms: int = 500
    #: A cluster: how long (ms) a room's owner keeps it without renewing its lease (renewed every
    #: third of it, and by every append). An owner that dies is replaced within this and ~1 s;
    #: one paused longer loses its rooms and can never append to them again (fencing).
    owner_lease_ms: int = 3000
    #: A cluster: this instance's internal URL, where the others relay the WebSockets of the
    #: rooms it owns (None: ``http://127.0.0.1:<port>``, instances on one machine).
    advertise: str | None = None
    #: How long a database call (connecting included) may take before it counts as failed: the
    #: API answers 503 and a finished game's write is retried from the room's log.
    db_timeout_s: float = 3.0
    #: How long a client may take to send a request's whole body (``POST /api/rooms``): a slower
    #: one is answered 408 and its connection closed, so a declared but unsent body holds nothing.
    body_timeout_s: float = 10.0
    #: How long a new TCP connection may take to send its first request head (nothing at all, or
    #: a header line a minute): then it is closed, so silent sockets cannot hold the server's file
    #: descriptors (``halfmoon serve``; halfmoon_server.web.admission).
    head_timeout_s: float = 10.0
    #: How long a WebSocket may stay outside every room (it never sent join, watch, resume, solo
    #: or daily, or it left): then it is closed with 4002, so idle sockets cannot pile up.
    join_timeout_s: float = 60.0
    #: How long a WebSocket may be silent before the server pings it; a socket that sends nothing
    #: within half that again (no pong) is dropped: a peer that vanished without a close.
    ping_after_s: float = 30.0
    #: The embedded journal's SQLite ``synchronous``: ``normal`` (survives a killed process) or
    #: ``full`` (survives a power cut too, at a higher cost per commit).
    journal_sync: str = "normal"
    #: Where the embedded journal's commits run: ``auto`` (on the event loop's thread while the
    #: disk answers within 50 ms and ``journal_sync`` is ``normal``, else on the journal's thread)
    #: or ``thread`` (always on the journal's thread: a disk that stalls never stalls the loop).
    journal_commit: str = "auto"
    #: Open WebSockets one client address may hold (0: no limit); one more is closed at once with 1013.
    max_connections_per_address: int = 256
    #: The garbage collector: every ``gc_freeze_s`` the objects that survived are frozen
    #: (``gc.freeze()``: out of every collection's sight; freed as usual when their count drops),
    #: so no collection walks the whole heap of rooms and connections — at 10,000 players such a
    #: walk stalled every room for up to a second every few seconds. Every ``gc_collect_s`` the
    #: whole heap is unfrozen and collected once, freeing reference cycles that became garbage
    #: after they were frozen (one pause; 0: never). ``gc_freeze_s`` 0: frozen once, at start.
    gc_freeze_s: float = 2.0
    #: ...and every ``gc_freeze_light_s`` while the process (all its threads) uses under
    #: :data:`~halfmoon_server.web.app.LIGHT_LOAD_SHARE` of a core (0, or not below
    #: ``gc_freeze_s``: always ``gc_freeze_s``). Each young collection before a freeze walks what
    #: became young since the last one — at 10,000 players at a human's pace ~65,000 objects,
    #: ~50 ms, every 2 s: the tail. At 0.25 s each walks ~8× less (ack p99 0.42× there); near
    #: saturation shorter freezes would double the collector's time, so a busy process freezes every
    #: ``gc_freeze_s``. Off by default: a reference cycle that lives 0.25–2 s and is then dropped is
    #: frozen with the live heap until the next full collection (``gc_collect_s``), where at 2 s most
    #: such cycles die before a freeze — not yet measured over more than 10 minutes (docs/benchmarks.md).
    gc_freeze_light_s: float = 0.0
    gc_collect_s: float = 900.0
    #: The young generation's threshold (``gc.set_threshold``): a collection starts once this many
    #: objects were allocated and not freed. Python's 700 is crossed by the objects of moves in
    #: flight alone (a busy server's backlog), ~100 times a second, each collection walking all of
    #: them: at 10,000 players 20-25 % of the process's time went to collections. Objects freed by
    #: their count do not add up, and each freeze (``gc_freeze_s``) starts the count again, so at
    #: 50,000 a young collection by itself is rare; instead the young generations are collected
    #: once before each freeze, so that the cycles made since the last one are freed, not frozen.
    gc_young: int = 50_000
    #: Logging: the level, and ``text`` (readable lines) or ``json`` (one object a line).
    #: /metrics on a listener of its own (``halfmoon serve``), not on the application's port
    #: (the public one, behind nginx or not); 0: none
    metrics_port: int = 0
    metrics_host: str = "127.0.0.1"
    #: /metrics on the application's port too (a single test server, a benchmark): off by
    #: default, since whoever reaches the game reaches it (HALFMOON_METRICS_ON_APP_PORT=1)
    metrics_on_app_port: bool = False
    log_level: str = "INFO"
    log_format: str = "text"
    clock: Clock = field(default_factory=SystemClock)

    @property
    def advertised_url(self) -> str:
        """Where the other instances of a cluster reach this one (``--advertise``)."""
        return (self.advertise or f"http://127.0.0.1:{self.port}").rstrip("/")

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
                    values[name] = parse_bool(var, raw)
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
        take("HALFMOON_RP_ID", "rp_id", str)
        take("HALFMOON_COUNTDOWN_S", "countdown_s", float)
        take("HALFMOON_QUICK_MAX_PLAYERS", "quick_max_players", int)
        take("HALFMOON_DAILY_REQUIRES_WINNABLE", "daily_requires_winnable", bool)
        take("HALFMOON_SOLVER_WORKERS", "solver_workers", int)
        take("HALFMOON_TRUST_FORWARDED", "trust_forwarded", bool)
        take("HALFMOON_ROOM_BURST", "room_burst", float)
        take("HALFMOON_ROOM_PER_MIN", "room_per_min", float)
        take("HALFMOON_REDIS", "redis_url", str)
        take("HALFMOON_ADVERTISE", "advertise", str)
        take("HALFMOON_DAILY_TIME_LIMIT_S", "daily_time_limit_s", int)
        take("HALFMOON_DAILY_RANKED_PER_ADDRESS", "daily_ranked_per_address", int)
        take("HALFMOON_RATE_BURST", "rate_burst", float)
        take("HALFMOON_RATE_PER_S", "rate_per_s", float)
        take("HALFMOON_JOURNAL_SYNC", "journal_sync", str)
        take("HALFMOON_JOURNAL_COMMIT", "journal_commit", str)
        take("HALFMOON_METRICS_HOST", "metrics_host", str)
        take("HALFMOON_METRICS_ON_APP_PORT", "metrics_on_app_port", bool)
        take("HALFMOON_LOG_LEVEL", "log_level", str)
        take("HALFMOON_LOG_FORMAT", "log_format", str)
        for option in OPTIONS:
            take(option.env, option.field, option.kind)
        for name, var in SECRET_VARIABLES.items():
            file_var = f"{var}_FILE"
            if env.get(file_var):
                if env.get(var):
                    raise SettingsError(f"both {var} and {file_var} are set: keep one")
                values[name] = read_secret_file(file_var, env[file_var])
        if env.get("HALFMOON_SECRET"):
            values["secret"] = env["HALFMOON_SECRET"]
        if isinstance(values.get("secret"), str):
            values["secret"] = values["secret"].encode("utf-8")
        if env.get("HALFMOON_ALLOWED_ORIGINS"):
            origins = env["HALFMOON_ALLOWED_ORIGINS"].split(",")
            values["allowed_origins"] = tuple(o.strip() for o in origins if o.strip())
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        settings.validate()
        return settings

    def _validate_rp_id(self) -> None:
        """The relying party id is a host name (a browser refuses an IP address as one), and the
        public URL's host is it or ends in ``.`` + it. Raises :class:`SettingsError`."""
        if self.rp_id is None:
            return
        rp_id = self.rp_id
        try:
            ipaddress.ip_address(rp_id.strip("[]"))
        except ValueError:
            pass
        else:
            raise SettingsError(f"rp_id {rp_id!r} is an IP address: a passkey's relying party is a host name")
        if not _HOST_NAME.fullmatch(rp_id):
            raise SettingsError(f"rp_id {rp_id!r} is not a host name (lower case, no scheme, port or path)")
        if self.public_url:
            host = urllib.parse.urlsplit(self.public_url).hostname or ""
            if host != rp_id and not host.endswith("." + rp_id):
                raise SettingsError(f"rp_id {rp_id!r} does not cover the public URL's host {host!r}")

    def validate(self) -> None:
        """Raises :class:`SettingsError` for values the server cannot run with."""
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"port {self.port} is outside 0-65535")
        self._validate_rp_id()
        if not 0 <= self.metrics_port <= 65535:
            raise SettingsError(f"metrics_port {self.metrics_port} is outside 0-65535")
        if self.max_msg_size < 256:
            raise SettingsError(f"max_msg_size {self.max_msg_size} is too small (at least 256)")
        if self.max_send_buffer < 4096:
            raise SettingsError(f"max_send_buffer {self.max_send_buffer} is too small (at least 4096 bytes)")
        if self.room_burst < 1 or self.room_per_min <= 0:
            raise SettingsError("room_burst must be at least 1 and room_per_min positive")
        if self.account_burst < 1 or self.account_per_min <= 0:
            raise SettingsError("account_burst must be at least 1 and account_per_min positive")
        if self.countdown_s < 0:
            raise SettingsError("countdown_s cannot be negative")
        if not 60 <= self.daily_time_limit_s <= 86_400:
            raise SettingsError(f"daily_time_limit_s must be 60-86400 seconds, not {self.daily_time_limit_s}")
        if self.journal_sync.lower() not in JOURNAL_SYNCS:
            raise SettingsError(f"journal_sync must be 'normal' or 'full', not {self.journal_sync!r}")
        if self.journal_commit.lower() not in JOURNAL_COMMITS:
            raise SettingsError(f"journal_commit must be 'auto' or 'thread', not {self.journal_commit!r}")
        if self.redis_url is not None and not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise SettingsError(f"the Redis URL must start with redis://, rediss:// or unix://, not {self.redis_url!r}")
        if not 1 <= self.redis_wait_ms <= 60_000:  # (WAIT 0 would wait for ever)
            raise SettingsError(f"redis_wait_ms must be 1-60000 ms, not {self.redis_wait_ms}")
        if not MIN_LEASE_MS <= self.owner_lease_ms <= MAX_LEASE_MS:
            raise SettingsError(f"owner_lease_ms must be {MIN_LEASE_MS}-{MAX_LEASE_MS} ms, not {self.owner_lease_ms}")
        for name, url in (("the advertised URL", self.advertise), ("the public URL", self.public_url)):
            if url is not None and not _is_http_url(url):
                raise SettingsError(f"{name} must be http:// or https:// and a host (http://10.0.0.5), not {url!r}")
        if self.secret is not None and len(self.secret) < MIN_SECRET_BYTES:
            raise SettingsError(
                f"the daily secret is {len(self.secret)} bytes: use at least {MIN_SECRET_BYTES} "
                "(python3 -c 'import secrets; print(secrets.token_urlsafe(32))'), or give none and one is generated"
            )
        if self.log_level.upper() not in LOG_LEVELS:
            raise SettingsError(f"the log level must be one of {', '.join(LOG_LEVELS)}, not {self.log_level!r}")
        if self.log_format not in ("text", "json"):
            raise SettingsError(f"the log format must be 'text' or 'json', not {self.log_format!r}")
        positive = ("max_rooms", "max_players", "event_log", "rate_max_refused", "default_time_limit_s", "gc_young")
        for name in positive:
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 1 <= self.room_log_version <= LOG_VERSION:
            raise SettingsError(f"room_log_version must be 1 to {LOG_VERSION}, not {self.room_log_version}")
        if not 0 <= self.snapshot_every <= 100_000:
            raise SettingsError(f"snapshot_every must be 0 (no snapshots) to 100000 entries, not {self.snapshot_every}")
        if not 1_000 <= self.max_room_entries <= 10_000_000:
            raise SettingsError(f"max_room_entries must be 1000 to 10000000, not {self.max_room_entries}")
        if self.max_players < 2:
            raise SettingsError(f"max_players must be at least 2, not {self.max_players}")
        if not 2 <= self.quick_max_players <= min(6, self.max_players):
            raise SettingsError(
                f"quick_max_players must be 2-6 (and at most max_players), not {self.quick_max_players}"
            )
        timings = (
            "tick_s", "abandon_after_s", "finished_ttl_s", "finished_hold_s", "live_ttl_s", "shutdown_timeout_s",
            "redis_timeout_s", "db_timeout_s",
            "body_timeout_s", "join_timeout_s", "head_timeout_s", "ping_after_s",
            "quick_fill_s", "quick_lone_s", "quick_join_s",
        )
        for setting in fields(self):  # nan and inf pass every comparison below
            value = getattr(self, setting.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise SettingsError(f"{setting.name} must be a finite number, not {value}")
        for name in ("rate_burst", "rate_per_s", *timings):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be positive, not {getattr(self, name)}")
        for name in (*timings, "countdown_s", "gc_freeze_s", "gc_freeze_light_s", "gc_collect_s"):
            if getattr(self, name) > MAX_SECONDS:  # (in milliseconds past 64 bits, or infinite)
                raise SettingsError(f"{name} must be at most {MAX_SECONDS} s (ten years), not {getattr(self, name)}")
        if self.gc_young > MAX_GC_YOUNG:  # gc.set_threshold takes a C int
            raise SettingsError(f"gc_young must be at most {MAX_GC_YOUNG:,}, not {self.gc_young}")
        never_negative = ("max_connections_per_address", "solver_workers", "solver_node_budget", "redis_replicas")
        gc_times = ("gc_freeze_s", "gc_freeze_light_s", "gc_collect_s")
        for name in (*never_negative, "daily_ranked_per_address", "tap_floor_ms", *gc_times):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name} cannot be negative, not {getattr(self, name)}")


def _is_http_url(url: str) -> bool:
    """An ``http://`` or ``https://`` URL with a host (and a port, if any, that parses)."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not one)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


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
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        text = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text + "\n")
        log.info("created a new daily-challenge secret in %s", path)
        return text.encode("ascii")
    except (OSError, UnicodeError) as exc:
        raise SettingsError(f"cannot read or create the daily secret {path}: {exc}") from None
