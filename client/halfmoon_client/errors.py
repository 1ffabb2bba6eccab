"""The client's exceptions: one small tree, every message fit for one line on stderr.

ClientError (Exception)
├── AddressError        a server URL or a room id / link that cannot be used
├── UnreachableError    the server cannot be reached (or stayed unreachable while reconnecting)
├── RefusedError        the server refused a message with a wire error code (``code`` holds it)
└── ProtocolError       the server sent something that is not the documented protocol
"""

from __future__ import annotations


class ClientError(Exception):
    """Base class of every error the client raises."""


class AddressError(ClientError):
    """A server URL, room id or room link that cannot be used."""


class UnreachableError(ClientError):
    """The server cannot be reached."""


class RefusedError(ClientError):
    """The server answered a message with ``error``; ``code`` is the wire error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ProtocolError(ClientError):
    """A server message that does not follow ``docs/protocol.md``."""
