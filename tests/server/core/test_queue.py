"""The quick-race queue's matcher (core/queue.py): groups, countdowns, the lone player's offer and
the rating band, driven with the time passed in (no event loop)."""

from __future__ import annotations

import pytest

from halfmoon_server.core.queue import QueueRules, Status, Waiting, plan

RULES = QueueRules(max_players=6, fill_ms=10_000, lone_ms=30_000, band_start=100, band_per_s=10)


def who(n: int) -> str:
    return f"{n:064x}"


def waiting(n: int, since: int) -> Waiting:
    return Waiting(who(n), f"P{n}", since)


def names(groups: list[list[Waiting]]) -> list[list[str]]:
    return [[w.name for w in group] for group in groups]


def test_a_player_alone_waits_with_no_countdown() -> None:
    result = plan([waiting(1, 0)], 1_000, RULES)
    assert result.matches == []
    assert result.waiting == {who(1): Status(1, None, False)}
    assert result.next_at == 30_000  # when the lone player's offer comes


def test_the_countdown_runs_from_the_second_players_arrival() -> None:
    queue = [waiting(1, 0), waiting(2, 4_000)]
    result = plan(queue, 5_000, RULES)
    assert result.waiting[who(1)] == result.waiting[who(2)] == Status(2, 14_000, False)
    assert result.next_at == 14_000
    assert plan(queue, 13_999, RULES).matches == []
    assert names(plan(queue, 14_000, RULES).matches) == [["P1", "P2"]]


def test_a_third_player_does_not_restart_the_countdown() -> None:
    queue = [waiting(1, 0), waiting(2, 4_000), waiting(3, 9_000)]
    assert plan(queue, 9_500, RULES).waiting[who(3)] == Status(3, 14_000, False)


def test_a_full_group_starts_at_once_and_the_next_ones_form_their_own() -> None:
    queue = [waiting(n, n * 10) for n in range(1, 9)]
    result = plan(queue, 100, RULES)
    assert names(result.matches) == [[f"P{n}" for n in range(1, 7)]]
    assert result.waiting[who(7)] == result.waiting[who(8)] == Status(2, 80 + 10_000, False)


def test_the_largest_group_is_settable() -> None:
    rules = QueueRules(max_players=2)
    queue = [waiting(1, 0), waiting(2, 1), waiting(3, 2)]
    result = plan(queue, 2, rules)
    assert names(result.matches) == [["P1", "P2"]]
    assert result.waiting == {who(3): Status(1, None, False)}


@pytest.mark.parametrize("size", [1, 7])
def test_a_group_outside_two_to_six_is_refused(size: int) -> None:
    with pytest.raises(ValueError, match="2 to 6"):
        QueueRules(max_players=size)


def test_one_identity_counts_once() -> None:
    queue = [waiting(1, 0), Waiting(who(1), "Again", 5), waiting(2, 10)]
    result = plan(queue, 10_010, RULES)
    assert names(result.matches) == [["P1", "P2"]]


def test_a_player_leaving_stops_the_countdown() -> None:
    queue = [waiting(1, 0), waiting(2, 4_000)]
    assert plan(queue, 5_000, RULES).waiting[who(1)].starts_at == 14_000
    assert plan(queue[:1], 5_000, RULES).waiting[who(1)] == Status(1, None, False)


def test_a_lone_player_is_offered_after_lone_ms_and_again_after_keeping_on() -> None:
    assert plan([waiting(1, 0)], 29_999, RULES).waiting[who(1)].offer is False
    assert plan([waiting(1, 0)], 30_000, RULES).waiting[who(1)].offer is True
    kept = Waiting(who(1), "P1", 0, offer_from=31_000)
    assert plan([kept], 31_000, RULES).waiting[who(1)].offer is False
    assert plan([kept], 61_000, RULES).waiting[who(1)].offer is True


def test_with_no_ratings_there_is_no_band() -> None:
    queue = [waiting(1, 0), waiting(2, 0)]
    ratings = {who(1): 1500.0}  # the second has none: no band between them
    assert plan(queue, 1, RULES, ratings.get).waiting[who(1)].count == 2


def test_the_band_widens_the_longer_the_anchor_waits() -> None:
    ratings = {who(1): 1500.0, who(2): 1800.0, who(3): 1550.0}
    queue = [waiting(1, 0), waiting(2, 0)]
    # a gap of 300: the band (100 + 10/s) spans it after 20 s
    early = plan(queue, 19_999, RULES, ratings.get)
    assert early.waiting[who(1)] == Status(1, None, False)
    assert early.waiting[who(2)] == Status(1, None, False)
    assert early.next_at == 20_000
    later = plan(queue, 20_000, RULES, ratings.get)
    assert later.waiting[who(1)] == Status(2, 30_000, False)  # the countdown from when the band took them in
    assert names(plan(queue, 30_000, RULES, ratings.get).matches) == [["P1", "P2"]]
    # a close rating is in the band at once
    assert plan([waiting(1, 0), waiting(3, 0)], 0, RULES, ratings.get).waiting[who(3)].count == 2


def test_a_capped_band_never_spans_a_wider_gap() -> None:
    rules = QueueRules(band_start=100, band_per_s=10, band_max=200)
    ratings = {who(1): 1500.0, who(2): 1800.0}
    result = plan([waiting(1, 0), waiting(2, 0)], 3_600_000, rules, ratings.get)
    assert result.matches == [] and result.waiting[who(1)].count == 1
