"""Ratings as a function of stored games (halfmoon_server.core.ratings): which races count, their
placings and ties, an identity seated twice, provisional ratings, and a race rated late taking its
place in the order — so the ratings kept race by race equal a rebuild."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

from halfmoon_server.core.ratings import (
    DEFAULT_PROVISIONAL_GAMES,
    TWO_SEATS,
    RacedGame,
    Rating,
    RatingChange,
    insert,
    race_of,
    rebuild,
)

ANN, BOB, CAT, DAN = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)
_ids = itertools.count()


def game(
    player: str | None,
    score: int,
    *,
    time_ms: int = 60_000,
    at: int = 1_000,
    room: str = "ROOM01",
    code: str = "HM1-S-AAAA",
    racers: int | None = 2,
    ranked: bool = True,
    mode: str = "race",
    name: str | None = None,
) -> RacedGame:
    number = next(_ids)
    return RacedGame(
        f"g{number:06d}", room, code, mode, name or (player or "anon")[:3], score, time_ms, at, ranked, player, racers
    )


def race(*entries: tuple[str | None, int], room: str = "ROOM01", at: int = 1_000, **kw: object) -> list[RacedGame]:
    """A race's games: (player, score) each, the first finishing first."""
    return [
        game(player, score, room=room, at=at + i, racers=len(entries), **kw)  # type: ignore[arg-type]
        for i, (player, score) in enumerate(entries)
    ]


def test_the_winner_goes_up_the_last_goes_down_and_the_middle_lies_between() -> None:
    ratings, changes = rebuild(race((CAT, 300), (ANN, 520), (BOB, 100)))
    assert ratings[ANN].mu > ratings[CAT].mu > ratings[BOB].mu
    assert ratings[ANN].mu > Rating().mu > ratings[BOB].mu
    assert ratings[ANN].shown() > ratings[CAT].shown() > ratings[BOB].shown()
    assert [(c.player, c.place, c.field) for c in changes] == [(ANN, 1, 3), (CAT, 2, 3), (BOB, 3, 3)]
    assert all(c.after.games == 1 and c.reason is None for c in changes)


def test_places_follow_the_ranking_rule_score_then_time_then_who_finished_first() -> None:
    faster = [game(ANN, 200, time_ms=90_000, at=5), game(BOB, 200, time_ms=80_000, at=6)]
    assert [p.player for p in race_of(faster).placings] == [BOB, ANN]  # type: ignore[union-attr]
    first = [game(ANN, 200, at=7), game(BOB, 200, at=6)]
    assert [(p.player, p.place) for p in race_of(first).placings] == [(BOB, 1), (ANN, 2)]  # type: ignore[union-attr]


def test_equal_results_tie_and_move_nobody() -> None:
    tied = [game(ANN, 200, at=5), game(BOB, 200, at=5)]
    rated = race_of(tied)
    assert rated is not None and [p.place for p in rated.placings] == [1, 1]
    ratings, _ = rebuild(tied)
    assert ratings[ANN].mu == ratings[BOB].mu == Rating().mu
    assert ratings[ANN].sigma < Rating().sigma  # (but both are known a little better)


def test_only_complete_multiplayer_races_with_two_identified_ranked_players_count() -> None:
    two = race((ANN, 300), (BOB, 100))
    assert race_of(two[:1]) is None  # the second game is not stored yet
    three = race((ANN, 300), (BOB, 100), (CAT, 50))
    assert race_of(three[:2]) is None and race_of(three) is not None  # nor the third
    assert race_of([game(ANN, 300, racers=1), ]) is None  # a race alone
    assert race_of([game(ANN, 300, mode="daily", racers=2), game(BOB, 100, mode="daily", racers=2)]) is None
    assert race_of([game(ANN, 300, racers=None), game(BOB, 100, racers=None)]) is None  # stored before ratings
    assert race_of([game(ANN, 300), game(None, 100)]) is None  # no key: one identity, nobody to rate against
    assert race_of([game(ANN, 300), game(BOB, 100, ranked=False)]) is None  # a bot, or too fast


def test_an_unrated_seat_still_takes_its_place_among_the_rated() -> None:
    games = race((None, 520), (ANN, 300), (BOB, 100, ))
    rated = race_of(games)
    assert rated is not None and [(p.player, p.place) for p in rated.placings] == [(ANN, 2), (BOB, 3)]


def test_an_identity_seated_twice_is_not_rated_and_the_race_says_so() -> None:
    games = race((ANN, 520), (ANN, 0), (BOB, 300), (CAT, 100))
    rated = race_of(games)
    assert rated is not None
    assert [p.player for p in rated.placings] == [BOB, CAT]
    assert [(p.player, p.place, p.game) for p in rated.excluded] == [(ANN, 1, games[0].id)]  # their best seat
    ratings, changes = rebuild(games)
    assert ANN not in ratings  # never rated
    flagged = [c for c in changes if c.player == ANN]
    assert [(c.reason, c.before, c.after, c.field) for c in flagged] == [(TWO_SEATS, Rating(), Rating(name="aaa"), 2)]
    assert ratings[BOB].mu > ratings[CAT].mu  # rated among themselves


def test_a_rated_identity_seated_twice_keeps_its_rating_through_that_race() -> None:
    games = race((ANN, 520), (BOB, 100)) + race((ANN, 520), (ANN, 0), (BOB, 300), room="ROOM02", at=9_000)
    ratings, changes = rebuild(games)
    first = next(c for c in changes if c.player == ANN and c.reason is None)
    flagged = next(c for c in changes if c.player == ANN and c.reason == TWO_SEATS)
    assert flagged.after == first.after == ratings[ANN]  # (the same name in both races)
    assert replace(flagged.before, name=ratings[ANN].name) == ratings[ANN]
    assert race_of(games[2:]) is not None and race_of(games[2:]).placings == ()  # type: ignore[union-attr]


def test_a_rating_is_provisional_until_enough_races() -> None:
    assert Rating().shown() == 1000 and Rating().provisional()
    games: list[RacedGame] = []
    for n in range(DEFAULT_PROVISIONAL_GAMES):
        games += race((ANN, 300), (BOB, 100), room=f"R{n:05d}", at=1_000 * (n + 1))
    ratings, _ = rebuild(games[:-2])
    assert ratings[ANN].games == DEFAULT_PROVISIONAL_GAMES - 1 and ratings[ANN].provisional()
    ratings, _ = rebuild(games)
    assert ratings[ANN].games == DEFAULT_PROVISIONAL_GAMES and not ratings[ANN].provisional()
    assert ratings[ANN].provisional(after=DEFAULT_PROVISIONAL_GAMES + 1)


def test_a_rebuild_does_not_depend_on_the_order_the_games_come_in() -> None:
    games = _many_races(random.Random(5), 30)
    shuffled = games[:]
    random.Random(6).shuffle(shuffled)
    assert rebuild(shuffled) == rebuild(games)


def _many_races(rnd: random.Random, count: int) -> list[RacedGame]:
    players = [ANN, BOB, CAT, DAN, "e" * 64]
    games: list[RacedGame] = []
    for n in range(count):
        field = rnd.sample(players, rnd.randint(2, 4))
        if rnd.random() < 0.1:
            field.append(field[0])  # two seats of one key
        end = rnd.randint(0, 50) * 1_000  # (some races end at the same ms)
        games += [
            game(p, rnd.choice((0, 100, 300, 520)), room=f"R{n:05d}", at=end, racers=len(field), time_ms=60_000)
            for p in field
        ]
    return games


def _by_race(games: list[RacedGame]) -> list[list[RacedGame]]:
    races: dict[str, list[RacedGame]] = {}
    for g in games:
        races.setdefault(g.room, []).append(g)
    return list(races.values())


def test_races_rated_as_they_complete_in_any_order_equal_a_rebuild() -> None:
    """Each race rated when its last game arrives — in a shuffled order, so many arrive after a
    later race — through insert(), as storage does: the same ratings and changes as a rebuild."""
    rnd = random.Random(11)
    games = _many_races(rnd, 40)
    races = _by_race(games)
    rnd.shuffle(races)
    ratings: dict[str, Rating] = {}
    changes: dict[tuple[str, str], RatingChange] = {}
    for games_of_race in races:
        rated = race_of(games_of_race)
        if rated is None:
            continue
        later = [c for c in changes.values() if c.key > rated.key]
        players = {p.player for p in (*rated.placings, *rated.excluded)} | {c.player for c in later}
        new, made = insert({p: ratings[p] for p in players if p in ratings}, later, rated)
        for c in later:
            del changes[(c.race, c.player)]
        changes.update({(c.race, c.player): c for c in made})
        for player, rating in new.items():
            if rating.games:
                ratings[player] = rating
    expected_ratings, expected_changes = rebuild(games)
    assert ratings == expected_ratings
    assert sorted(changes.values(), key=lambda c: (c.key, c.player)) == sorted(
        expected_changes, key=lambda c: (c.key, c.player)
    )


def test_a_race_that_ended_at_the_same_moment_is_ordered_by_its_id() -> None:
    one = race((ANN, 300), (BOB, 100), room="R1", at=5_000)
    two = race((ANN, 100), (BOB, 300), room="R2", at=5_000)
    first, second = sorted((race_of(one), race_of(two)), key=lambda r: r.race)  # type: ignore[union-attr,return-value]
    assert first is not None and second is not None and first.ended_at_ms == second.ended_at_ms
    _, changes = rebuild(two + one)
    assert [c.race for c in changes][::2] == [first.race, second.race]
