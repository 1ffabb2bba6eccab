"""The engine's exceptions: one small tree, every message quoting the bad input.

    HalfMoonError (ValueError)
    ├── InvalidCardError        a card name that is not rank + suit (``"5S"``, ``"10H"``, ``"QD"``)
    ├── InvalidPositionError    a position that is not ``"1"``…``"12"`` or ``"R1"``…``"R8"``
    ├── InvalidCodeError        a malformed deal code (``HM1-N-AAAAAAB``)
    ├── InvalidRecordError      a game record that is not the documented JSON shape
    ├── IllegalMoveError        a well-formed move the rules refuse
    │   ├── NotPlayableError        a position with no playable card (empty pile or slot)
    │   ├── DuplicatePositionError  the same position twice in one move
    │   └── NotAMatchError          cards that are neither a pair summing to 11 nor J+Q+K
    ├── UndoError               undo with nothing to undo (or past the 100-move bound)
    └── BadMessageError         a wire message that breaks the protocol (:mod:`halfmoon.protocol`)

    WireError (Exception)       what the server answers with an ``error`` message: its code,
    │                           message, the ``id`` to echo and a reason refining the code
    ├── BadMessageError         (above: a HalfMoonError too)
    └── halfmoon_server.errors.Refusal   a command the server refuses

Every class carries a stable ``code`` string: the server maps it onto its wire error codes,
the command line prints the message.
"""

from __future__ import annotations


class HalfMoonError(ValueError):
    """Base class of every error the engine raises."""

    code = "error"


class InvalidCardError(HalfMoonError):
    """A card name that is not a rank (A 2-10 J Q K) followed by a suit (S H D C)."""

    code = "bad_card"


class InvalidPositionError(HalfMoonError):
    """A position name that is neither a pile ("1"…"12") nor a reserve slot ("R1"…"R8")."""

    code = "bad_position"


class InvalidCodeError(HalfMoonError):
    """A deal code that is not of the form ``HM1-<kind>-<7 or 28 letters A-Z>``, or a bad seal part."""

    code = "bad_code"


class InvalidRecordError(HalfMoonError):
    """A game record that does not have the documented JSON shape."""

    code = "bad_record"


class IllegalMoveError(HalfMoonError):
    """A move that is well formed but not allowed in the current position."""

    code = "illegal_move"


class NotPlayableError(IllegalMoveError):
    """A move names a position that holds no playable card."""

    code = "not_playable"


class DuplicatePositionError(IllegalMoveError):
    """A move names the same position more than once."""

    code = "same_position"


class NotAMatchError(IllegalMoveError):
    """The cards of a move are neither a pair summing to 11 nor a Jack, a Queen and a King."""

    code = "not_a_match"


class UndoError(HalfMoonError):
    """Undo was asked for with no move left to undo."""

    code = "nothing_to_undo"


class WireError(Exception):
    """An error the server answers with an ``error`` message (docs/protocol.md): ``code`` is the
    wire error code, ``message`` says why, ``msg_id`` is the refused message's ``id`` to echo
    (when it had a valid one), ``reason`` refines the code (the engine's code for a refused move).
    Nothing changed. The engine's :class:`BadMessageError` and the server's ``Refusal`` are its kinds.
    """

    code: str

    def __init__(self, code: str, message: str, *, msg_id: int | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.msg_id = msg_id
        self.reason = reason


class BadMessageError(WireError, HalfMoonError):
    """A client message that breaks the wire protocol (docs/protocol.md).

    Unlike the other engine errors its ``code`` is per instance (a :class:`WireError`): the wire
    error code (``bad_json``, ``bad_version``, ``unknown_type``, ``bad_message``, ``bad_name``,
    ``illegal_move``, ``no_such_room``); ``msg_id`` is the message's ``id`` when it had a valid
    one, ``reason`` the engine's code for a malformed move.
    """
