"""The terminal client's :class:`Session` driven by sessions recorded from a real server
(``tests/vectors/sessions.json``, made by ``tests/server/build_session_vectors.py``): every page's
messages fed to :meth:`Session.receive`, the messages it builds compared with what was really
sent, and its view model compared with the facts the recording expects — the same recordings and
facts the browser's reducer is checked against (``tests/web/session.test.mjs``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from halfmoon_client.session import Board, Session
from tests.conftest import VECTORS

SCENARIOS: dict[str, Any] = json.loads((VECTORS / "sessions.json").read_text(encoding="utf-8"))["scenarios"]
PAGES = [(name, label) for name, scenario in SCENARIOS.items() for label in scenario["pages"]]
HIDDEN = "??"
RESULT_KEYS = ("rank", "player", "name", "outcome", "score", "moves")


def board_facts(board: Board | None) -> dict[str, list[Any]] | None:
    if board is None:
        return None
    return {
        "tops": [HIDDEN if i in board.hidden else card and card.name for i, card in enumerate(board.tops)],
        "counts": list(board.counts),
    }


def facts(session: Session) -> dict[str, Any]:
    """The facts a recording's ``check`` names, read from the session's view model."""
    outcome, results = session.outcome, session.results
    return {
        "role": session.role,
        "you": session.you,
        "phase": session.phase,
        "mode": session.mode,
        "code": session.code,
        "host": session.host,
        "seq": session.seq,
        "spectators": session.spectators,
        "offset_ms": session.offset_ms,
        "token": session.token,
        "failed": session.error[0] if session.error and session.role is None else None,
        "players": {
            pid: {
                "name": p.name,
                "status": p.status,
                "score": p.score,
                "moves": p.moves,
                "cards_left": p.cards_left,
                "connected": p.connected,
            }
            for pid, p in session.players.items()
        },
        "board": board_facts(session.board),
        "boards": {pid: board_facts(board) for pid, board in session.boards.items()},
        "outcome": outcome and {"outcome": outcome.outcome, "score": outcome.score, "moves": outcome.moves},
        "results": None if results is None else [{key: r.get(key) for key in RESULT_KEYS} for r in results],
    }


def hello(session: Session, page: dict[str, Any], sent: dict[str, Any]) -> dict[str, Any] | None:
    """What the terminal client says on a new socket for this page (None: it has no such message).
    A join carries the session's fresh contribution: the recording's stands for the one it draws."""
    intent = page["intent"]
    if session.token is not None:
        return session.resume_message()
    if intent["kind"] == "race":
        session.entropy = sent.get("entropy")
        return Session.join_message(intent["room"], page["name"], None, session.entropy)
    if intent["kind"] == "watch":
        return Session.watch_message(intent["room"])
    return None  # solo games are played locally by the terminal client (halfmoon play)


def command(session: Session, sent: dict[str, Any]) -> dict[str, Any]:
    """The session's own message for what the page sent."""
    kind = sent["type"]
    if kind == "move":
        return session.move_message(sent["positions"])
    if kind == "undo":
        return session.undo_message()
    if kind == "start":
        return Session.start_message(sent.get("time_limit_s"))
    messages = {"give_up": Session.give_up_message, "leave": Session.leave_message, "ping": Session.ping_message}
    return messages[kind]()


@pytest.mark.parametrize(("scenario", "label"), PAGES)
def test_the_session_builds_and_sees_what_the_recorded_page_did(scenario: str, label: str) -> None:
    page = SCENARIOS[scenario]["pages"][label]
    session = Session()
    if page["seat"] is not None:  # a token kept from an earlier run (the seat book)
        session.room, session.token = page["seat"]["room"], page["seat"]["token"]
    hello_due = True
    checked = 0
    for i, entry in enumerate(page["timeline"]):
        where = f"{scenario}, {label}, entry {i}"
        if "send" in entry:
            sent = entry["send"]
            expected = hello(session, page, sent) if hello_due else command(session, sent)
            if expected is not None:
                assert expected == sent, where
            hello_due = False
        elif "recv" in entry:
            session.receive(entry["recv"], entry["at"])
        elif "drop" in entry:
            hello_due = True
        else:
            got = facts(session)
            for key, value in entry["check"].items():
                assert got[key] == value, f"{where}: {key}"
            checked += 1
    assert checked, "the page checks something"
    if scenario in ("sealed", "daily") and session.code:  # the reveal opens the commitment the page was given
        assert session.verified is True, f"{scenario}, {label}: the deal checked"


def test_every_recorded_message_type_is_one_the_session_knows() -> None:
    kinds = {
        entry["recv"]["type"]
        for scenario in SCENARIOS.values()
        for page in scenario["pages"].values()
        for entry in page["timeline"]
        if "recv" in entry
    }
    assert kinds == {
        "welcome",
        "player_joined",
        "player_left",
        "countdown",
        "started",
        "moved",
        "progress",
        "game_over",
        "race_over",
        "spectators",
        "error",
        "pong",
    }
