"""The live list's summary of a room (``core/live.py``) and the visibility policy behind it: only a
listed, watchable race in play is on the list, and what it says of one is the policy's fields —
never a code, a seed, a commitment, a card or a token."""

from __future__ import annotations

import pytest

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode, Phase
from halfmoon_server.core.commands import is_listed, race_of, room_header
from halfmoon_server.core.live import live_summary
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.core.visibility import LIVE_FIELDS, RoomFacts, may_list

CODE = "HM1-N-AAAAAAB"


def race_of_two(*, sealed: bool = False) -> Race:
    config = RaceConfig(countdown_ms=1000)
    if sealed:
        race = Race("K7WQ2M", Mode.RACE, None, config, now=0, seed="5e" * 32)
    else:
        race = Race("K7WQ2M", Mode.RACE, DealCode.parse(CODE), config, now=0)
    race.join("Ada", 0)
    race.join("Bob", 0)
    return race


@pytest.mark.parametrize(
    ("facts", "listed", "in_play", "expected"),
    [
        (RoomFacts(Mode.RACE, sealed=True, over=False), True, True, True),
        (RoomFacts(Mode.RACE, sealed=False, over=False), True, True, True),
        (RoomFacts(Mode.RACE, sealed=True, over=False), False, True, False),  # private: never
        (RoomFacts(Mode.RACE, sealed=True, over=False), True, False, False),  # in its lobby
        (RoomFacts(Mode.RACE, sealed=True, over=True), True, False, False),  # over
        (RoomFacts(Mode.DAILY, sealed=False, over=False, opens_at=10**13), True, True, False),  # not watchable
        (RoomFacts(Mode.SOLO, sealed=False, over=False), True, True, True),
    ],
)
def test_only_a_listed_watchable_room_in_play_is_on_the_live_list(
    facts: RoomFacts, listed: bool, in_play: bool, expected: bool
) -> None:
    assert may_list(facts, listed=listed, in_play=in_play) is expected


def test_a_listed_race_is_on_the_list_from_its_countdown_to_its_end_and_says_only_the_policys_fields() -> None:
    race = race_of_two(sealed=True)
    assert live_summary(race, listed=True) is None  # its lobby: not yet
    race.start("p1", 300, 1000)
    counting = live_summary(race, listed=True)
    assert counting is not None and counting["phase"] == "countdown" and counting["starts_at"] == 2000
    race.tick(2000)
    assert race.phase is Phase.RUNNING and race.code is not None
    race.watch()
    summary = live_summary(race, listed=True)
    assert summary == {
        "room": "K7WQ2M", "mode": "race", "phase": "running", "sealed": True, "players": ["Ada", "Bob"],
        "racing": 2, "finished": 0, "spectators": 1, "starts_at": 2000, "started_at": 2000, "time_limit_s": 300,
    }  # fmt: skip
    assert set(summary) <= LIVE_FIELDS
    text = repr(summary)
    assert str(race.code) not in text and str(race.seed) not in text and str(race.commitment) not in text
    race.give_up("p1", 3000)
    after = live_summary(race, listed=True)
    assert after is not None and (after["racing"], after["finished"]) == (1, 1)
    race.give_up("p2", 4000)
    assert race.phase is Phase.FINISHED and live_summary(race, listed=True) is None  # over: off the list


def test_a_private_race_in_play_has_no_summary() -> None:
    race = race_of_two()
    race.start("p1", 300, 0)
    race.tick(1000)
    assert race.phase is Phase.RUNNING
    assert live_summary(race, listed=False) is None


def test_a_room_is_listed_only_by_its_header_and_a_private_header_is_as_before() -> None:
    private = room_header("K7WQ2M", Mode.RACE, None, created_at=0, nonce="00", daily_day=None)
    listed = room_header("K7WQ2M", Mode.RACE, None, created_at=0, nonce="00", daily_day=None, listed=True)
    assert "listed" not in private and not is_listed(private)
    assert listed == {**private, "listed": True} and is_listed(listed)
    assert not is_listed({**private, "listed": "yes"}) and not is_listed({**private, "listed": 1})
    # an optional key: the log format's version stays, and the race is the same
    listed["config"] = private["config"] = {}
    assert race_of(listed).id == race_of(private).id == "K7WQ2M"
