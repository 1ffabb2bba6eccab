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
from contextvars import ContextVar
from typing import Any, Protocol

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: Attributes a record may carry (``extra=``) that the JSON line includes.
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


def configure(level: str = "INFO", fmt: str = "text") -> None:
    """Send every log to stderr, readable (``text``) or as JSON lines (``json``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(_ContextFilter())
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
