"""A quick race's room in the race core: its seats held for the identities the queue matched, its
start by itself (every seat taken, or ``start_by`` with whoever came), its host unable to start
it, and its header read back through the room log's commands."""

from __future__ import annotations

import doctest
from collections.abc import Sequence

import pytest

from halfmoon.protocol import Mode, Phase
from halfmoon_server.core import queue
from halfmoon_server.core.commands import apply_entry, check_entry, race_of, room_header
from halfmoon_server.core.race import QuickSeats, Race, RaceConfig
from halfmoon_server.errors import Refusal

T0 = 1_795_900_000_000
ADA, BEA, EVE = "a" * 64, "b" * 64, "e" * 64
CONFIG = RaceConfig(countdown_ms=3000, default_time_limit_s=600)


def quick(*seats: str, start_by: int = T0 + 15_000) -> Race:
    return Race("K7WQ2M", Mode.RACE, None, CONFIG, now=T0, seed="ab" * 32, quick=QuickSeats(frozenset(seats), start_by))


def kinds(events: Sequence[object]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_the_queue_module_examples_run() -> None:
    assert doctest.testmod(queue).failed == 0


def test_the_countdown_starts_once_every_seat_is_taken() -> None:
    race = quick(ADA, BEA)
    assert kinds(race.join("Ada", T0, player=ADA)[1]) == ["PlayerJoined"]
    assert race.phase is Phase.LOBBY
    assert kinds(race.join("Bea", T0 + 500, player=BEA)[1]) == ["PlayerJoined", "CountdownStarted"]
    assert (race.phase, race.starts_at) == (Phase.COUNTDOWN, T0 + 500 + 3000)
    assert race.time_limit_s == 600
    assert kinds(race.tick(T0 + 3500)) == ["RaceStarted"]
    assert race.code is not None and race.sealed  # dealt at the start from the server's seed


@pytest.mark.parametrize("player", [EVE, None])
def test_a_stranger_cannot_take_a_held_seat(player: str | None) -> None:
    race = quick(ADA, BEA)
    with pytest.raises(Refusal) as refused:
        race.join("Eve", T0, player=player)
    assert refused.value.code == "seat_reserved"
    assert race.players == {}


def test_one_identity_takes_its_seat_once() -> None:
    race = quick(ADA, BEA)
    race.join("Ada", T0, player=ADA)
    with pytest.raises(Refusal) as refused:
        race.join("Ada two", T0, player=ADA)
    assert refused.value.code == "seat_reserved" and len(race.players) == 1


def test_a_matched_player_who_left_the_lobby_may_come_back() -> None:
    race = quick(ADA, BEA)
    ada, _ = race.join("Ada", T0, player=ADA)
    race.leave(ada.id, T0 + 1)
    race.join("Ada", T0 + 2, player=ADA)
    assert [r.name for r in race.players.values()] == ["Ada"]


def test_the_host_cannot_start_a_quick_race() -> None:
    race = quick(ADA, BEA)
    ada, _ = race.join("Ada", T0, player=ADA)
    with pytest.raises(Refusal) as refused:
        race.start(ada.id, None, T0)
    assert refused.value.code == "not_host" and "by itself" in refused.value.message
    assert race.phase is Phase.LOBBY


def test_at_start_by_it_starts_with_whoever_came() -> None:
    race = quick(ADA, BEA, start_by=T0 + 15_000)
    race.join("Ada", T0, player=ADA)
    assert race.next_deadline() == T0 + 15_000
    assert race.tick(T0 + 14_999) == []
    assert kinds(race.tick(T0 + 15_000)) == ["CountdownStarted"]
    assert [r.name for r in race.players.values()] == ["Ada"]


def test_at_start_by_an_empty_room_stays_a_lobby() -> None:
    race = quick(ADA, BEA, start_by=T0 + 15_000)
    assert race.tick(T0 + 15_000) == [] and race.phase is Phase.LOBBY
    assert race.next_deadline() is None  # left to be closed as abandoned


def test_the_snapshot_says_quick_in_the_first_race_only() -> None:
    race = quick(ADA, BEA)
    assert race.snapshot(None, T0, watcher=True).to_json()["quick"] is True
    plain = Race("K7WQ2M", Mode.RACE, None, CONFIG, now=T0, seed="ab" * 32)
    assert "quick" not in plain.snapshot(None, T0, watcher=True).to_json()


def test_a_quick_header_replays_through_the_room_log() -> None:
    header = room_header("K7WQ2M", Mode.RACE, None, created_at=T0, nonce="00" * 8, daily_day=None)
    header.update(config={"countdown_ms": 3000}, seed="ab" * 32, quick={"seats": [BEA, ADA], "start_by": T0 + 9})
    race = race_of(header)
    stranger = {"k": "join", "n": "Eve", "tok": "t", "pk": EVE, "t": T0}
    with pytest.raises(Refusal):
        check_entry(race, stranger)
    apply_entry(race, {"k": "join", "n": "Ada", "tok": "t", "pk": ADA, "t": T0})
    events = apply_entry(race, {"k": "join", "n": "Bea", "tok": "u", "pk": BEA, "t": T0 + 1})
    assert kinds(events) == ["PlayerJoined", "CountdownStarted"]
    assert QuickSeats.from_json(header["quick"]).to_json() == {"seats": [ADA, BEA], "start_by": T0 + 9}
