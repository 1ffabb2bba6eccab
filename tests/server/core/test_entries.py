"""The room log's entry classes: every kind has one, every entry of the golden logs (this release's
and the previous one's) reads into its class and back to the same keys and values, a malformed
entry is refused clearly, and a header's version is read (0 without ``v``)."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode
from halfmoon_server.core.commands import (
    COMMANDS,
    KINDS,
    LOG_VERSION,
    apply_entry,
    log_version,
    parse_entry,
    room_header,
)
from halfmoon_server.core.entries import ENTRY_CLASSES, Join, LogEntry, Move, Rematch, Start
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.errors import Refusal

GOLDEN = Path(__file__).parents[2] / "vectors" / "room_logs"
FILES = ("journal.json", "redis.json", "journal-v1.json", "redis-v1.json", "journal-v0.json", "redis-v0.json")


def stored(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A golden file's headers and entries, as the log holds them."""
    golden = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    headers, entries = [], []
    for room in golden["rooms"].values():
        log = room["stored"]
        if "header" in log:  # the journal: [n, entry]
            headers.append(log["header"])
            entries += [entry for _n, entry in log["entries"]]
        else:  # Redis: {"hm:{ROOM}:h": header, "hm:{ROOM}:log": [[ms, entry], …]}
            headers.append(log[f"hm:{{{room['room']}}}:h"])
            entries += [entry for _ms, entry in log[f"hm:{{{room['room']}}}:log"]]
    return headers, entries


@pytest.mark.parametrize("name", FILES)
def test_every_entry_of_a_golden_log_reads_into_its_class_and_back_to_the_same_keys_and_values(name: str) -> None:
    _headers, entries = stored(name)
    assert len(entries) > 50
    for entry in entries:
        typed = parse_entry(entry)
        assert type(typed) is ENTRY_CLASSES[entry["k"]]
        assert typed.to_json() == entry  # as dicts: the key order may differ
        assert parse_entry(typed.to_json()) == typed


def test_the_golden_logs_hold_most_kinds_and_both_token_and_time_limit_forms() -> None:
    kinds = {entry["k"] for name in FILES for entry in stored(name)[1]}
    assert KINDS - kinds == {"present"}  # (the other: checked by hand below)
    assert parse_entry({"k": "present", "p": "p1", "h": "i:1", "o": "i:9", "t": 4}).to_json()["h"] == "i:1"


@pytest.mark.parametrize(
    "entry",
    [
        {"k": "join", "n": "Ada", "tok": "secret", "t": 1},  # a token in clear (logs before hashing)
        {"k": "single", "n": "Ada", "tok": "t", "r": False, "lim": 600, "bot": True, "t": 1},
        {"k": "rematch", "p": "p1", "c": "HM1-N-AAAAAAB", "salt": "s", "t": 1},  # the previous release's
        {"k": "recorded", "p": "p1", "g": "x", "a": {"best": 3}, "t": 1},  # an old analysis, ignored
        {"k": "start", "p": "p1", "lim": None, "ser": 3, "t": 1},  # no time limit: null, kept
        {"k": "disconnect", "p": "p1", "h": None, "t": 1},
        {"k": "connect", "p": "p1", "since": 0, "e": "ab", "t": 1},
    ],
)
def test_legacy_keys_and_nulls_come_back_as_they_were(entry: dict[str, Any]) -> None:
    assert parse_entry(entry).to_json() == entry


def test_every_kind_has_an_entry_class_and_every_class_a_kind() -> None:
    assert set(ENTRY_CLASSES) == KINDS
    for kind, command in COMMANDS.items():
        assert command.entry is ENTRY_CLASSES[kind] and command.entry.kind == kind
        assert dataclasses.is_dataclass(command.entry) and issubclass(command.entry, LogEntry)
        assert "__slots__" in vars(command.entry) and command.entry.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_the_fields_have_names() -> None:
    move = parse_entry({"k": "move", "p": "p1", "m": ["8", "12"], "o": "i:3", "id": 7, "t": 5})
    assert move == Move(time=5, player="p1", origin="i:3", message_id=7, positions=("8", "12"))
    join = parse_entry({"k": "join", "n": "Ada", "th": "h", "pk": "k", "e": "ee", "t": 2})
    assert isinstance(join, Join)
    assert (join.name, join.token_hash, join.player_key, join.entropy, join.token) == ("Ada", "h", "k", "ee", None)
    assert Start(time=1, player="p1", time_limit_s=60).to_json() == {"k": "start", "t": 1, "p": "p1", "lim": 60}
    with pytest.raises(dataclasses.FrozenInstanceError):
        move.time = 6  # type: ignore[misc]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"k": "teleport", "t": 1}, "no room command 'teleport'"),
        ({"t": 1}, "no room command None"),
        ({"k": 7, "t": 1}, "no room command 7"),
        (["move"], "an object, not list"),
        ({"k": "move", "p": "p1", "t": 1}, "'m' is missing"),
        ({"k": "move", "p": "p1", "m": None, "t": 1}, "'m' is null"),
        ({"k": "move", "p": "p1", "m": "8 12", "t": 1}, "'m' must be list, not str"),
        ({"k": "move", "p": "p1", "m": [8, 12], "t": 1}, "positions (strings)"),
        ({"k": "tick"}, "'t' is missing"),
        ({"k": "tick", "t": "5"}, "'t' must be int, not str"),
        ({"k": "tick", "t": True}, "'t' must be int, not bool"),
        ({"k": "join", "n": "Ada", "t": 1}, "needs 'th' or 'tok'"),
        ({"k": "join", "th": "h", "t": 1}, "'n' is missing"),
        ({"k": "rematch", "p": "p1", "c": "HM1-N-AAAAAAB", "t": 1}, "needs 'seed' or 'c'+'salt'"),
        ({"k": "recorded", "p": "p1", "s": 1, "t": 1}, "'s' must be bool, not int"),
        ({"k": "undo", "p": "p1", "m": ["1", "2"], "t": 1}, "unknown key 'm'"),
    ],
)
def test_a_malformed_entry_is_refused_clearly_and_left_as_it_was(entry: Any, why: str) -> None:
    before = copy.deepcopy(entry)
    with pytest.raises(Refusal) as refused:
        parse_entry(entry)
    assert refused.value.code == "bad_message" and why in refused.value.message
    assert entry == before


def test_a_typed_entry_runs_on_a_race_through_its_dict() -> None:
    race = Race("K7WQ2M", Mode.SOLO, DealCode.parse("HM1-N-AAAAAAA"), RaceConfig(), now=0)
    single = parse_entry({"k": "single", "n": "Ada", "th": "h", "r": True, "t": 0})
    assert [type(e).__name__ for e in apply_entry(race, single.to_json())] == ["PlayerJoined", "RaceStarted"]


def test_a_header_without_a_version_is_version_0_and_one_written_now_is_the_current_one() -> None:
    header = room_header("K7WQ2M", Mode.RACE, None, created_at=5, nonce="n", daily_day=None)
    assert log_version(header) == LOG_VERSION
    for name in FILES:
        headers, _entries = stored(name)
        assert {log_version(h) for h in headers} == ({0} if "-v0" in name else {1} if "-v1" in name else {LOG_VERSION})


@pytest.mark.parametrize("version", ["1", True, -1, LOG_VERSION + 1, None])
def test_a_header_of_an_unknown_version_is_refused(version: Any) -> None:
    with pytest.raises(Refusal) as refused:
        log_version({"v": version, "room": "K7WQ2M"})
    assert refused.value.code == "bad_message" and repr(version) in refused.value.message


def test_a_rematch_of_either_release_reads() -> None:
    new = parse_entry({"k": "rematch", "p": "p1", "seed": "s", "e": "ab", "t": 1})
    old = parse_entry({"k": "rematch", "p": "p1", "c": "HM1-N-AAAAAAB", "salt": "x", "t": 1})
    assert isinstance(new, Rematch) and isinstance(old, Rematch)
    assert (new.seed, old.code, old.salt) == ("s", "HM1-N-AAAAAAB", "x")
