"""The room log's commands: one registry of entry kinds, the header's format version, a kind no
log holds refused without a change."""

from __future__ import annotations

import pytest

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode
from halfmoon_server.core.commands import (
    CLIENT_KINDS,
    COMMANDS,
    KINDS,
    LOG_VERSION,
    apply_entry,
    check_entry,
    race_of,
    room_header,
)
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.errors import Refusal


def race_with_two() -> Race:
    race = Race("K7WQ2M", Mode.RACE, DealCode.parse("HM1-N-AAAAAAB"), RaceConfig(countdown_ms=0), now=0)
    for name in ("Ada", "Bob"):
        apply_entry(race, {"k": "join", "n": name, "th": "x", "t": 0})
    return race


def test_the_registry_is_the_list_of_kinds_and_says_which_are_checked_before_the_log() -> None:
    assert set(COMMANDS) == KINDS
    assert {"move", "undo", "tick", "join", "single", "recorded", "stored", "rematch", "accept"} <= KINDS
    # the commands checked before they are logged (a refused one never is): those clients send,
    # and a seat's own (a seat a rematch left out has none)
    clients = {"move", "undo", "give_up", "start", "join", "watch", "rematch", "accept"}
    assert clients | {"connect", "present", "disconnect", "leave"} == CLIENT_KINDS


def test_a_new_room_header_carries_the_log_format_version() -> None:
    header = room_header("K7WQ2M", Mode.RACE, None, created_at=5, nonce="n", daily_day=None)
    assert header["v"] == LOG_VERSION == 1


@pytest.mark.parametrize("kind", ["teleport", "", "MOVE"])
def test_a_kind_no_log_holds_is_refused_and_changes_nothing(kind: str) -> None:
    race = race_with_two()
    before = race.snapshot("p1", 0, watcher=True)
    with pytest.raises(Refusal) as refused:
        apply_entry(race, {"k": kind, "p": "p1", "t": 0})
    assert refused.value.code == "bad_message" and repr(kind) in refused.value.message
    assert race.snapshot("p1", 0, watcher=True) == before
    check_entry(race, {"k": kind, "p": "p1"})  # not a client command: nothing to check before logging


def test_a_client_command_is_checked_through_the_registry_before_it_is_logged() -> None:
    race = race_with_two()
    with pytest.raises(Refusal) as refused:
        check_entry(race, {"k": "start", "p": "p2"})  # only the host starts
    assert refused.value.code == "not_host"
    check_entry(race, {"k": "start", "p": "p1"})
    assert race.phase.value == "lobby"  # a check changes nothing


def test_a_header_of_a_newer_log_format_is_refused_and_an_older_one_read() -> None:
    header = room_header("K7WQ2M", Mode.RACE, "HM1-N-AAAAAAB", created_at=5, nonce="n", daily_day=None)
    header["config"] = {}
    assert race_of(header).code is not None
    assert race_of({k: v for k, v in header.items() if k != "v"}).code is not None  # version 0
    with pytest.raises(Refusal) as refused:
        race_of({**header, "v": LOG_VERSION + 1})
    assert refused.value.code == "bad_message" and f"reads 0 to {LOG_VERSION}" in refused.value.message
