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
    check_step_budget,
    race_of,
    room_header,
    step_budget,
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
    assert header["v"] == LOG_VERSION == 2
    older = room_header("K7WQ2M", Mode.RACE, None, created_at=5, nonce="n", daily_day=None, version=1)
    assert older["v"] == 1  # (while an instance that reads no newer shares the log)
    for version in (0, LOG_VERSION + 1):  # never written: one without ``v`` is 0; one not read yet
        with pytest.raises(ValueError, match=f"format 1 to {LOG_VERSION}, not {version}"):
            room_header("K7WQ2M", Mode.RACE, None, created_at=5, nonce="n", daily_day=None, version=version)


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


def test_the_step_budget_is_each_racers_share_of_four_fifths_of_the_log() -> None:
    assert step_budget(50_000, 8) == 5_000  # the most players: far above an honest game's ~4,700 worst
    assert step_budget(50_000, 3) == 13_333  # three seats of one client: 40,000 steps in all
    assert 3 * step_budget(50_000, 3) < 50_000 - 1_000, "room left for the rest of the race"


def test_a_step_past_the_players_budget_is_refused_before_it_is_logged_and_the_others_play_on() -> None:
    race = race_with_two()
    apply_entry(race, {"k": "join", "n": "Cy", "th": "x", "t": 0})
    apply_entry(race, {"k": "start", "p": "p1", "t": 0})
    apply_entry(race, {"k": "tick", "t": 0})
    logged = 5  # the entries above: three joins, the start, the tick
    budget = step_budget(1_000 - logged, 3)
    ada = race.players["p1"]
    assert ada.game is not None
    move = next(ada.game.legal_moves()).names()
    for step in range(budget):
        entry = {"k": "undo" if step % 2 else "move", "p": "p1", "m": move, "t": 1}
        check_step_budget(race, entry, 1_000, logged)
        apply_entry(race, entry)
        logged += 1
    assert ada.step_count == budget
    for kind in ("move", "undo"):
        with pytest.raises(Refusal) as refused:
            check_step_budget(race, {"k": kind, "p": "p1", "m": move}, 1_000, logged)
        assert refused.value.code == "too_many_steps" and "give up" in refused.value.message
        # the player's own count, then the most one may take
        assert f"taken {ada.step_count:,} moves and undos; the most one player may take in this race is {budget:,}" in (
            refused.value.message
        )
    check_step_budget(race, {"k": "give_up", "p": "p1"}, 1_000, logged)  # what ends the game is taken
    check_step_budget(race, {"k": "move", "p": "p2", "m": move}, 1_000, logged)  # each player has their own
    assert ada.step_count == budget, "nothing changed"


def test_a_rematchs_step_budget_is_a_share_of_what_the_rooms_log_has_left() -> None:
    """The entries of a room's earlier races count: a client that spent its seats' budgets in one
    race gets, in the rematch, a share of what is left of the log — not a fresh four fifths of
    it, which would fill the log and freeze the honest racer's game in the second race."""
    race = race_with_two()
    apply_entry(race, {"k": "start", "p": "p1", "t": 0})
    apply_entry(race, {"k": "tick", "t": 0})
    logged = 4  # two joins, the start, the tick
    fresh = step_budget(1_000 - logged, 2)
    ada = race.players["p1"]
    assert ada.game is not None
    move = next(ada.game.legal_moves()).names()
    for step in range(fresh):  # the spammer's seat spends its whole share
        entry = {"k": "undo" if step % 2 else "move", "p": "p1", "m": move, "t": 1}
        check_step_budget(race, entry, 1_000, logged)
        apply_entry(race, entry)
        logged += 1
    for player in ("p1", "p2"):
        apply_entry(race, {"k": "give_up", "p": player, "t": 2})
        apply_entry(race, {"k": "recorded", "p": player, "g": f"game-{player}", "t": 2})
        logged += 2
    apply_entry(race, {"k": "rematch", "p": "p1", "seed": "5e" * 32, "t": 3})
    apply_entry(race, {"k": "accept", "p": "p2", "t": 3})
    apply_entry(race, {"k": "start", "p": "p1", "t": 3})
    apply_entry(race, {"k": "tick", "t": 4})
    logged += 4
    ada = race.players["p1"]
    assert ada.step_count == 0 and ada.game is not None, "a new race"
    budget = step_budget(1_000 - logged, 2)
    assert logged + 2 * fresh > 1_000, "a fresh budget each would let the two seats fill the log"
    assert logged + 2 * budget < 1_000, "the shares of what is left leave it room"
    move = next(ada.game.legal_moves()).names()
    for step in range(budget):
        entry = {"k": "undo" if step % 2 else "move", "p": "p1", "m": move, "t": 5}
        check_step_budget(race, entry, 1_000, logged)
        apply_entry(race, entry)
        logged += 1
    with pytest.raises(Refusal) as refused:
        check_step_budget(race, {"k": "move", "p": "p1", "m": move}, 1_000, logged)
    assert refused.value.code == "too_many_steps"
    # the honest racer keeps a share as large: both racers' whole budgets fit in the log
    assert race.players["p2"].step_count == 0
    check_step_budget(race, {"k": "move", "p": "p2", "m": move}, 1_000, logged)


def test_a_race_of_one_has_no_step_budget_but_the_cap() -> None:
    race = Race("K7WQ2M", Mode.SOLO, DealCode.parse("HM1-N-AAAAAAB"), RaceConfig(countdown_ms=0), now=0)
    apply_entry(race, {"k": "single", "n": "Ada", "th": "x", "t": 0})
    ada = race.players["p1"]
    assert ada.game is not None
    move = next(ada.game.legal_moves()).names()
    for step in range(step_budget(1_000, 1) + 2):
        entry = {"k": "undo" if step % 2 else "move", "p": "p1", "m": move, "t": 1}
        check_step_budget(race, entry, 1_000, step)
        apply_entry(race, entry)
