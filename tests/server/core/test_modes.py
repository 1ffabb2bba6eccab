"""The game modes' rules objects (server/halfmoon_server/core/modes.py): one per mode of the
protocol, agreeing with the browser's on the rules both state (tests/vectors/modes.json), and
what the race core and the ranking do in a mode follows its rules object, not its name."""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path

import pytest

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode, Unranked
from halfmoon_server.core import modes
from halfmoon_server.core.commands import apply_entry
from halfmoon_server.core.modes import RULES, ModeRules, Ranked, rules_for
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.core.ranking import unranked_reason
from halfmoon_server.errors import Refusal

VECTORS = json.loads((Path(__file__).parents[2] / "vectors" / "modes.json").read_text(encoding="utf-8"))["modes"]
CODE = DealCode.parse("HM1-N-AAAAAAA")
T0 = 1_795_900_000_000
CONFIG = RaceConfig(countdown_ms=0, default_time_limit_s=600)
FIELDS = {f.name for f in dataclasses.fields(ModeRules)}


def test_the_module_examples_run() -> None:
    import doctest

    assert doctest.testmod(modes).failed == 0


def test_every_mode_of_the_protocol_has_one_rules_object_and_no_other_mode_has_one() -> None:
    assert set(RULES) == set(Mode)
    for mode, rules in RULES.items():
        assert rules.mode is mode and rules_for(mode) is rules and rules_for(mode.value) is rules


def test_the_shared_vectors_name_exactly_the_protocols_modes() -> None:
    assert set(VECTORS) == {m.value for m in Mode}


@pytest.mark.parametrize("mode", list(Mode), ids=str)
def test_the_server_states_every_shared_rule_as_the_vectors_do(mode: Mode) -> None:
    expected = VECTORS[mode.value]
    assert set(expected) <= FIELDS, f"rules the server does not state: {set(expected) - FIELDS}"
    stated = {name: getattr(rules_for(mode), name) for name in expected}
    assert stated == expected


def test_a_value_that_names_no_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"'blitz' is not a game mode \(one of race, solo, daily\)"):
        rules_for("blitz")


def test_a_rules_object_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules_for(Mode.SOLO).watchable = False  # type: ignore[misc]


# -- the core asks the rules object: a mode's rules changed, its rooms change with them --------------


def _with_rules(monkeypatch: pytest.MonkeyPatch, mode: Mode, **changes: object) -> None:
    monkeypatch.setitem(RULES, mode, dataclasses.replace(RULES[mode], **changes))  # type: ignore[arg-type]


def _single(mode: Mode) -> Race:
    daily_day = date(2026, 11, 28) if rules_for(mode).daily else None
    race = Race("K7WQ2M", mode, CODE, CONFIG, now=T0, daily_day=daily_day)
    apply_entry(race, {"k": "single", "n": "Ada", "tok": "t", "r": True, "t": T0})
    return race


def test_spectators_come_in_where_the_modes_rules_let_them(monkeypatch: pytest.MonkeyPatch) -> None:
    _single(Mode.SOLO).check_watch()
    with pytest.raises(Refusal) as private:
        _single(Mode.DAILY).check_watch()
    assert private.value.code == "private_room"
    _with_rules(monkeypatch, Mode.SOLO, watchable=False)
    _with_rules(monkeypatch, Mode.DAILY, watchable=True)
    with pytest.raises(Refusal) as now_private:
        _single(Mode.SOLO).check_watch()
    assert now_private.value.code == "private_room"
    _single(Mode.DAILY).check_watch()


def test_a_players_own_clock_runs_where_the_modes_rules_say(monkeypatch: pytest.MonkeyPatch) -> None:
    solo = _single(Mode.SOLO)
    assert solo.elapsed(solo.players["p1"], T0 + 5000) == 0, "a solo clock waits for the first move"
    _with_rules(monkeypatch, Mode.SOLO, own_clock=False)
    solo = _single(Mode.SOLO)
    assert solo.elapsed(solo.players["p1"], T0 + 5000) == 5000, "every clock runs from the start"


def _finished(mode: Mode) -> Race:
    race = _single(mode)
    race.give_up("p1", T0 + 1000)
    race.recorded("p1", "g1", T0 + 1000)
    assert race.results is not None
    return race


def test_a_rematch_follows_only_where_the_modes_rules_allow_one(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(Refusal) as refused:
        _finished(Mode.SOLO).check_rematch("p1")
    assert refused.value.code == "no_rematch"
    _with_rules(monkeypatch, Mode.SOLO, rematch=True)
    solo = _finished(Mode.SOLO)
    solo.check_rematch("p1")
    assert solo.game_over(solo.players["p1"], T0 + 1000) is not None


def test_the_code_is_kept_to_the_day_where_the_modes_rules_make_it_a_daily(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _single(Mode.SOLO).code_for(None, T0) == str(CODE)
    _with_rules(monkeypatch, Mode.SOLO, daily=True)
    assert _single(Mode.SOLO).code_for(None, T0) is None


def test_results_are_ranked_when_the_modes_rules_say(monkeypatch: pytest.MonkeyPatch) -> None:
    def reason(mode: Mode, *, sealed: bool, daily_first: bool) -> Unranked | None:
        return unranked_reason(
            mode, sealed=sealed, daily_first=daily_first, bot=False, taps=0, time_ms=None, tap_floor_ms=90
        )

    assert reason(Mode.SOLO, sealed=True, daily_first=True) is Unranked.CASUAL
    _with_rules(monkeypatch, Mode.SOLO, ranked=Ranked.IF_SEALED)
    assert reason(Mode.SOLO, sealed=True, daily_first=True) is None
    assert reason(Mode.SOLO, sealed=False, daily_first=True) is Unranked.CASUAL
    _with_rules(monkeypatch, Mode.SOLO, ranked=Ranked.FIRST_OF_DAY)
    assert reason(Mode.SOLO, sealed=False, daily_first=False) is Unranked.DAILY_RETRY
