"""The server's one exception tree (halfmoon_server/errors.py), as its docstring draws it, and the
one wire error shape it shares with the engine: a :class:`Refusal` and the engine's
:class:`~halfmoon.errors.BadMessageError` are both :class:`~halfmoon.errors.WireError`, made the
same way and answered with the same ``error`` message."""

from __future__ import annotations

import re

import pytest

from halfmoon import errors as engine_errors
from halfmoon import protocol
from halfmoon.errors import BadMessageError, HalfMoonError, WireError
from halfmoon_server import errors
from halfmoon_server.errors import Refusal, ServerError


def drawn_children(doc: str, root: str) -> set[str]:
    """The classes drawn one level under ``root`` in a docstring's tree (``├──``/``└──`` lines
    right below it, at its indentation)."""
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(root + " "))
    indent = len(lines[start]) - len(lines[start].lstrip())
    children = set()
    for line in lines[start + 1 :]:
        match = re.match(r"^( *)[├└]── (\w[\w.]*)", line)
        if match is None:
            if line.strip().startswith("│") or not line.strip():
                continue
            break
        if len(match.group(1)) == indent:
            children.add(match.group(2).rsplit(".", 1)[-1])
    return children


def test_the_server_tree_in_the_docstring_is_the_tree() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, ServerError) and value is not ServerError
    }
    assert drawn_children(errors.__doc__ or "", "ServerError") == defined
    for name in defined:
        assert getattr(errors, name).__bases__[0] is ServerError, name


def test_the_wire_errors_drawn_in_the_engine_are_the_wire_errors() -> None:
    assert drawn_children(engine_errors.__doc__ or "", "WireError") == {"BadMessageError", "Refusal"}
    assert issubclass(Refusal, WireError) and issubclass(BadMessageError, WireError)
    assert issubclass(BadMessageError, HalfMoonError) and issubclass(BadMessageError, ValueError)
    assert not issubclass(Refusal, HalfMoonError), "a refusal is the server's, not a fault of the input's form"


@pytest.mark.parametrize("kind", [Refusal, BadMessageError])
def test_a_wire_error_carries_its_code_message_id_and_reason(kind: type[WireError]) -> None:
    assert kind.__init__ is WireError.__init__, "one constructor for both"
    error = kind("illegal_move", "8 and 12 do not make 11", msg_id=7, reason="not_a_match")
    assert (error.code, error.message, error.msg_id, error.reason) == (
        "illegal_move",
        "8 and 12 do not make 11",
        7,
        "not_a_match",
    )
    assert str(error) == "8 and 12 do not make 11"
    plain = kind("not_host", "only the host can start the race")
    assert (plain.msg_id, plain.reason) == (None, None)
    wire = protocol.Error(error.code, error.message, error.msg_id, error.reason).to_json()
    assert wire == {
        "type": "error",
        "code": "illegal_move",
        "message": "8 and 12 do not make 11",
        "id": 7,
        "reason": "not_a_match",
    }
