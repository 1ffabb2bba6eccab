"""The server's logs: readable lines (the default) or JSON, one object a line (``--log-format
json``), each with the room and player it concerns where there is one; and the access log, which
counts the bytes really sent (a static file goes out through ``sendfile``, which aiohttp's own
access log does not count).

The room and player come from the WebSocket connection whose handler (or message) is running:
:func:`bind` puts the connection in a context variable that the tasks it starts inherit. A log
call may also name them itself: ``log.info(..., extra={"room": ..., "player": ...})``.
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: Attributes a record may carry (``extra=``) that the JSON line includes.
#: Loggers that would print a statement's values (a deal code, a salt) at DEBUG (SQLAlchemy's,
#: which also logs every statement at INFO, stays at WARNING).
QUIET_LOGGERS = ("aiosqlite", "asyncpg")
FIELDS = ("room", "player", "peer", "method", "path", "status", "bytes", "duration_ms", "user_agent")


class _Bound(Protocol):
    room: str | None
    player_id: str | None
    peer: str


_CONNECTION: ContextVar[_Bound | None] = ContextVar("halfmoon_connection", default=None)


def bind(connection: _Bound) -> None:
    """Log what happens in this task (and the tasks it starts) as this connection's."""
    _CONNECTION.set(connection)


class _ContextFilter(logging.Filter):
    """Adds ``room``, ``player`` and ``peer`` from the bound connection (unless the call gave them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        conn = _CONNECTION.get()
        if conn is not None:
            for name, value in (("room", conn.room), ("player", conn.player_id), ("peer", conn.peer)):
                if value is not None and not hasattr(record, name):
                    setattr(record, name, value)
        return True


class Throttle:
    """Log lines rate-limited by cause: an outage or a flood repeats the same line on every poll,
    request or connection. The first line of a cause is written at once; the next ones within
    ``every_s`` are only counted, and the next line written says how many were left out.

    ``throttle.log(logging.WARNING, "readiness:database", "the %s failed: %s", part, exc)``
    """

    #: Causes remembered at most (their names are ours, few: a bound against a surprise).
    MAX_CAUSES = 256

    def __init__(self, logger: logging.Logger, every_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.logger = logger
        self.every_s = every_s
        self.clock = clock
        self._causes: dict[str, tuple[float, int]] = {}  # cause -> (when last written, left out since)

    def log(self, level: int, cause: str, msg: str, *args: object) -> bool:
        """Write the line unless ``cause`` wrote one less than ``every_s`` ago; whether it was written."""
        now = self.clock()
        held = self._causes.get(cause)
        if held is not None and now - held[0] < self.every_s:
            self._causes[cause] = (held[0], held[1] + 1)
            return False
        if len(self._causes) >= self.MAX_CAUSES and cause not in self._causes:
            self._causes.clear()
        left_out = held[1] if held is not None else 0
        self._causes[cause] = (now, 0)
        if left_out:
            msg += " (%d more like it in the last %g s)"
            args = (*args, left_out, self.every_s)
        self.logger.log(level, msg, *args)
        return True

    def forget(self, cause: str) -> None:
        """The cause is over (the part answers again): its next line is written at once."""
        self._causes.pop(cause, None)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message, the context fields,
    and the traceback as one string."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode("utf-8")


class MalformedRequestFilter(logging.Filter):
    """aiohttp logs a request its parser rejects (a bad request line, header or chunk: the client
    gets a 400) at ERROR with a traceback, though nothing failed on the server's side. This makes
    it one INFO line naming the client's mistake, without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            reason = " ".join(str(exc.message).split())[:200]
            record.msg = "malformed request refused (%d): %s"
            record.args = (exc.code, reason)
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info = None
            record.exc_text = None
        return True


class LostCancelFilter(logging.Filter):
    """A database call abandoned at its timeout (:class:`~halfmoon_server.adapters.storage.SqlStorage`)
    makes asyncpg open a side connection to cancel the statement; when PostgreSQL is down that one
    is lost too, and asyncpg fails a future nobody awaits (MagicStack/asyncpg#1310): asyncio then
    logs ``Future exception was never retrieved`` at ERROR, once per abandoned call, for an outage
    the storage already reports as warnings. This makes it one INFO line; any other unretrieved
    future stays an ERROR."""

    LOST = "unexpected connection_lost() call"  # asyncpg.connect_utils.TLSUpgradeProto's own words

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if (
            type(exc) is ConnectionError
            and str(exc) == self.LOST
            and str(record.msg).startswith("Future exception was never retrieved")
        ):
            record.msg = "a database connection was lost while cancelling an abandoned call (%s)"
            record.args = (self.LOST,)
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info = None
            record.exc_text = None
        return True


class PoolCloseFilter(logging.Filter):
    """SQLAlchemy's pool logs a connection it could not close (``Exception closing connection``)
    at ERROR with a traceback. During a database outage that is expected — the socket is gone, or
    the close is cut short — and the pool has dropped the connection all the same; the outage is
    already reported (warnings, ``/readyz``). This makes it one WARNING line naming the error.
    On the handler: the record comes from the pool's own logger, below ``sqlalchemy.pool``."""

    PREFIXES = ("Exception closing connection", "Exception terminating connection")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("sqlalchemy.pool") and str(record.msg).startswith(self.PREFIXES):
            exc = record.exc_info[1] if record.exc_info else None
            why = f"{type(exc).__name__}: {exc}" if exc is not None else "no reason given"
            record.msg = "a database connection could not be closed cleanly (%s); the pool dropped it"
            record.args = (" ".join(why.split())[:200],)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info = None
            record.exc_text = None
        return True


def configure(level: str = "INFO", fmt: str = "text") -> None:
    """Send every log to stderr, readable (``text``) or as JSON lines (``json``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(_ContextFilter())
    handler.addFilter(PoolCloseFilter())
    # Database drivers log statements with their values at DEBUG (aiosqlite: every query and its
    # parameters, a stored daily code among them): never below INFO, even with --log-level DEBUG.
    floor = logging.getLevelName(level.upper())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.INFO, floor))
    logging.getLogger("sqlalchemy").setLevel(max(logging.WARNING, floor))  # SQLAlchemy's own default
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, MalformedRequestFilter) for f in server_log.filters):
        server_log.addFilter(MalformedRequestFilter())
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, LostCancelFilter) for f in asyncio_log.filters):
        asyncio_log.addFilter(LostCancelFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


def bytes_sent(request: web.BaseRequest, response: web.StreamResponse) -> int:
    """Bytes written for this response, head and body. A :class:`~aiohttp.web.FileResponse` sent
    with ``sendfile`` has only its head counted by aiohttp; its body is the content length."""
    sent = response.body_length
    if isinstance(response, web.FileResponse) and request.method != "HEAD" and response.content_length:
        version = request.version
        head = len(f"HTTP/{version.major}.{version.minor} {response.status} {response.reason}\r\n\r\n")
        head += sum(len(name) + len(value) + 4 for name, value in response.headers.items())
        if sent <= head:  # the body went by sendfile
            sent += response.content_length
    return sent


class AccessLogger(AbstractAccessLogger):
    """One line per request: address, request line, status, bytes really sent, time, user agent."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        sent = bytes_sent(request, response)
        agent = request.headers.get("User-Agent", "-")
        self.logger.info(
            '%s "%s %s HTTP/%d.%d" %d %d %.1fms "%s"',
            request.remote, request.method, request.path_qs, request.version.major, request.version.minor,
            response.status, sent, time * 1000, agent,
            extra={
                "peer": request.remote, "method": request.method, "path": request.path, "status": response.status,
                "bytes": sent, "duration_ms": round(time * 1000, 2), "user_agent": agent,
            },
        )  # fmt: skip
