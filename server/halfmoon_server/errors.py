"""The server's exceptions: one small tree.

    ServerError (Exception)
    ├── Refusal           a command the server refuses: a halfmoon.errors.WireError too (the wire
    │                     error code, message, id to echo, reason), as the engine's BadMessageError
    ├── StorageError      the database failed, did not answer in time, or holds something unexpected
    ├── LogUnavailable    a room's log (the journal, Redis) cannot take or give entries now
    └── SettingsError     a bad setting (flag or environment variable)

A :class:`Refusal` (or the engine's :class:`halfmoon.errors.BadMessageError` for a frame that
breaks the protocol) becomes an ``error`` message on the wire; nothing else ever reaches a client
except as the generic ``internal`` error.
"""

from __future__ import annotations

from halfmoon.errors import WireError


class ServerError(Exception):
    """Base class of every error the server raises."""


class Refusal(ServerError, WireError):
    """A refused command: ``code`` is the wire error code, ``message`` says why (with ``msg_id``
    and ``reason``: :class:`halfmoon.errors.WireError`); nothing changed."""


class StorageError(ServerError):
    """The database failed, did not answer within the ``db_timeout_s`` setting, or answered
    something unexpected. The REST API answers it with 503 ``unavailable``."""


class SettingsError(ServerError):
    """A setting (command-line flag or environment variable) is invalid."""


class LogUnavailable(ServerError):
    """A room's log (the local journal, or Redis) cannot take or give entries right now.
    ``certain``: what was being appended was certainly not taken (False: it may have been)."""

    def __init__(self, message: str, *, certain: bool = True) -> None:
        super().__init__(message)
        self.certain = certain
