"""What is rated and how (server/halfmoon_server/core/rating.py): which games take part, which
seats carry weight, the placings, one identity seated twice, and the order races are rated in."""

from __future__ import annotations

import dataclasses
import doctest
from datetime import UTC, datetime, timedelta

from halfmoon.protocol import Mode
from halfmoon_server.core import rating
from halfmoon_server.core.modes import ModeRules, Ranked, TimeLimit, rules_for
from halfmoon_server.core.rating import Seat, Skill, complete_races, rate_race, rateable, shown
from halfmoon_server.core.records import FinishedGame

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
A, B, C = "a" * 64, "b" * 64, "c" * 64


def test_the_module_examples_run() -> None:
    assert doctest.testmod(rating).failed == 0


def game(**changes: object) -> FinishedGame:
    base = FinishedGame(
        nickname="Ada", code="HM1-S-X", mode="race", room="ROOMAA", score=40, moves=4, time_ms=60_000,
        outcome="gave_up", record={}, ranked=True, daily_date=None, finished_at=T0, player=A,
        seal={"seed": "s", "contributions": []}, seats=2,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_sealed_ranked_identified_race_game_is_rateable_and_nothing_else() -> None:
    assert rateable(game())
    assert not rateable(game(seal=None))  # an open race: the host chose the code
    assert not rateable(game(ranked=False, unranked_reason="bot"))
    assert not rateable(game(player=None))  # no player key: no identity to rate
    assert not rateable(game(seats=None))  # stored before ratings
    assert not rateable(game(mode="solo", seal=None)) and not rateable(game(mode="daily"))
    assert not rateable(game(mode="blitz"))  # a mode this release does not know


def test_which_modes_rate_follows_their_rules_and_a_new_mode_of_sealed_races_rates_by_itself() -> None:
    assert [rules_for(m).rated for m in Mode] == [True, False, False]
    quick = ModeRules(
        Mode.RACE, lobby=False, watchable=True, rematch=False, may_seal=True, own_clock=False, daily=False,
        new_game=False, ranked=Ranked.IF_SEALED, time_limit=TimeLimit.HOST,
    )
    assert quick.rated is True  # not said: a mode whose results may be ranked rates
    assert dataclasses.replace(quick, rated=False).rated is False  # unless it says so


def seat(game_id: str, player: str | None, score: int, time_ms: int = 60_000, minute: int = 0) -> Seat:
    at = T0 + timedelta(minutes=minute)
    return Seat(game_id, "ROOMAA", "HM1-S-X", player, (player or "x")[:1], score, time_ms, at, 3)


def test_placings_follow_the_races_ranking_and_equal_results_share_a_place() -> None:
    changes = rate_race([seat("1", A, 40), seat("2", B, 80), seat("3", C, 40)], {})
    assert [(c.player, c.place) for c in changes] == [(B, 1), (A, 2), (C, 2)]
    assert changes[1].after == changes[2].after  # a shared place: the same update
    faster = rate_race([seat("1", A, 40, 50_000), seat("2", C, 40, 60_000)], {})
    assert [(c.player, c.place) for c in faster] == [(A, 1), (C, 2)]  # the same score: the shorter time first


def test_an_identity_seated_twice_counts_once_at_its_worse_place() -> None:
    """A second seat (an account's second device) is never a second try at the race: the
    identity is rated at the worse of its two places, so seating twice gains nothing."""
    changes = rate_race([seat("1", A, 80), seat("2", A, 10), seat("3", B, 40)], {})
    assert [(c.player, c.game_id, c.place) for c in changes] == [(B, "3", 1), (A, "2", 2)]
    # whichever seat joined first
    again = rate_race([seat("1", A, 10), seat("2", A, 80), seat("3", B, 40)], {})
    assert [(c.player, c.game_id, c.place) for c in again] == [(B, "3", 1), (A, "1", 2)]
    assert rate_race([seat("1", A, 80), seat("2", A, 40)], {}) == []  # alone with itself: nothing


def test_a_seat_that_removed_no_card_carries_no_weight() -> None:
    assert rate_race([seat("1", A, 40), seat("2", B, 0)], {}) == []
    with_idle = rate_race([seat("1", A, 40), seat("2", B, 20), seat("3", C, 0)], {})
    without = rate_race([seat("1", A, 40), seat("2", B, 20)], {})
    assert with_idle == without


def test_a_rating_starts_at_1000_moves_from_where_it_stands_and_is_provisional_for_five_races() -> None:
    assert Skill().shown == 1000 and Skill().provisional
    strong = Skill(mu=32.0, sigma=3.0, games=5)
    assert not strong.provisional and strong.shown == shown(32.0, 3.0) == 1920
    changes = rate_race([seat("1", A, 40), seat("2", B, 80)], {A: strong})
    assert changes[1].before == strong and changes[1].after.games == 6
    assert changes[0].after.mu > Skill().mu and changes[1].after.mu < strong.mu  # an upset


def test_only_complete_races_are_rated_in_the_order_their_last_games_ended() -> None:
    late = [Seat(str(i), "LATE", "X", A, "a", 40, 1, T0 + timedelta(minutes=5), 2) for i in range(2)]
    early = [Seat(str(i + 2), "EARLY", "Y", A, "a", 40, 1, T0 + timedelta(minutes=m), 2) for i, m in enumerate((1, 9))]
    waiting = [Seat("9", "OPEN", "Z", A, "a", 40, 1, T0, 3)]
    races = complete_races(late + early + waiting, {("LATE", "X"): 2, ("EARLY", "Y"): 2, ("OPEN", "Z"): 2})
    assert [r[0].room for r in races] == ["LATE", "EARLY"]  # EARLY's last game ended at minute 9
