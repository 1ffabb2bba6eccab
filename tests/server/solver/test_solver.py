"""The solver (the server's, an operator's tool): its winning lines replay to ``won``, its proofs
agree with a brute-force search, and it keeps to its budgets. ``halfmoon solve``: test_solver_cli.py."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator
from datetime import date

import pytest

from halfmoon import Game, GameRecord, Move, Status, daily_code, replay
from halfmoon.codes import DealCode
from halfmoon.errors import IllegalMoveError, InvalidRecordError
from halfmoon.game import WINNING_MOVES, WINNING_SCORE
from halfmoon.positions import PILE_COUNT
from halfmoon.record import UNDO, Step
from halfmoon_server.solver.search import (
    NoWinnableDealError,
    Verdict,
    analyse,
    final_line,
    first_winnable_daily,
    solve,
)
from tests.conftest import VECTORS

#: Deals the solver decides quickly (checked by the tests below, not assumed).
EASY_CODES = ("HM1-N-AAAAAAB", "HM1-N-BRBOULL", "HM1-D-QWERTYU")
BUDGET = 200_000
#: a deal the solver takes far more than 5,000 nodes to decide (unwinnable, about 150,000 nodes)
HARD_CODE = "HM1-N-XYFWJBG"


def brute_force_winnable(game: Game) -> bool:
    """Try every legal move in every position (positions remembered): the slow, obvious answer."""
    game = game.copy()
    seen: dict[tuple[int, ...], bool] = {}

    def search() -> bool:
        if game.is_won:
            return True
        key = tuple(game.count_at(p) for p in range(20))
        known = seen.get(key)
        if known is not None:
            return known
        result = False
        for move in list(game.legal_moves()):
            game.push(move)
            try:
                result = search()
            finally:
                game.undo()
            if result:
                break
        seen[key] = result
        return result

    return search()


def fake_clock(step: float) -> Callable[[], float]:
    """A clock that advances ``step`` seconds each time it is read."""
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    return clock


def play(code: str | DealCode, moves: list[Move]) -> Game:
    game = Game.from_code(code)
    for move in moves:
        game.push(move)
    return game


def winning_line(code: str | DealCode) -> list[Move]:
    result = solve(Game.from_code(code), node_budget=BUDGET)
    assert result.verdict is Verdict.WINNABLE, f"{code} was expected to be solved quickly: {result}"
    assert result.moves is not None
    return result.moves


# -- winning lines -------------------------------------------------------------------------


@pytest.mark.parametrize("code", EASY_CODES)
def test_a_winning_line_replays_to_won(code: str) -> None:
    moves = winning_line(code)
    outcome = replay(GameRecord(DealCode.parse(code), list(moves)))
    assert outcome.ok
    assert outcome.game.status is Status.WON
    assert outcome.game.move_count == WINNING_MOVES
    assert outcome.game.score == WINNING_SCORE


def test_solving_leaves_the_game_untouched() -> None:
    game = Game.from_code(EASY_CODES[0])
    game.push(winning_line(EASY_CODES[0])[0])
    before = game.snapshot()
    history = game.history()
    solve(game, node_budget=BUDGET)
    assert game.snapshot() == before
    assert game.history() == history


def test_solving_part_way_gives_the_rest_of_a_win() -> None:
    code = EASY_CODES[1]
    game = play(code, winning_line(code)[:20])
    result = solve(game, node_budget=BUDGET)
    assert result.verdict is Verdict.WINNABLE and result.moves is not None
    assert len(result.moves) == WINNING_MOVES - 20
    for move in result.moves:
        game.push(move)
    assert game.status is Status.WON


def test_a_deal_hard_for_depth_first_search_is_won_quickly_by_the_beam() -> None:
    # HM1-N-KIVHYUK: the restarted depth-first searches alone (on the deal and on its reversal)
    # need about 72,000 nodes; with the beam searches between restarts, about 6,500.
    code = "HM1-N-KIVHYUK"
    result = solve(Game.from_code(code), node_budget=8_000)
    assert result.verdict is Verdict.WINNABLE and result.moves is not None
    assert result.nodes <= 8_000
    outcome = replay(GameRecord(DealCode.parse(code), list(result.moves)))
    assert outcome.ok and outcome.game.status is Status.WON


def test_a_deal_with_unreachable_cards_is_proved_unwinnable_at_once() -> None:
    # HM1-N-YZRPDJC: every Jack lies under a Queen, a King or a 4 that can never come off
    # (no Jack and no 7 can reach the top first). The depth-first search alone needed about
    # 123,000 nodes to prove it; the reachability test at the root needs none.
    result = solve(Game.from_code("HM1-N-YZRPDJC"), node_budget=100)
    assert result.verdict is Verdict.UNWINNABLE
    assert result.moves is None


def test_a_won_game_and_a_stalled_game_need_no_search() -> None:
    code = EASY_CODES[0]
    won = play(code, winning_line(code))
    result = solve(won)
    assert (result.verdict, result.moves) == (Verdict.WINNABLE, [])
    stalled = next(stalled_games())
    assert stalled.status is Status.STALLED
    assert solve(stalled).verdict is Verdict.UNWINNABLE


def test_the_won_games_vectors_replay_to_won() -> None:
    records = json.loads((VECTORS / "won_games.json").read_text())
    assert len(records) >= 10
    assert len({record["code"] for record in records}) == len(records)
    for data in records:
        outcome = replay(GameRecord.from_json(data))
        assert outcome.ok, data["code"]
        assert outcome.game.status is Status.WON, data["code"]
        assert len(data["moves"]) == WINNING_MOVES


# -- proofs checked by brute force ----------------------------------------------------------


def late_positions(seed: int) -> Iterator[Game]:
    """Positions with at most 30 cards left: a winning line's first moves, then random play."""
    rng = random.Random(seed)
    for code in EASY_CODES:
        line = winning_line(code)
        for start in (30, 34, 38):
            game = play(code, line[:start])
            while game.status is Status.PLAYING:
                if game.cards_left <= 30:
                    yield game.copy()
                game.push(rng.choice(list(game.legal_moves())))


def stalled_games() -> Iterator[Game]:
    rng = random.Random(7)
    for code in EASY_CODES:
        game = Game.from_code(code)
        while game.status is Status.PLAYING:
            game.push(rng.choice(list(game.legal_moves())))
        if game.status is Status.STALLED:
            yield game


def test_verdicts_agree_with_brute_force_on_late_positions() -> None:
    checked = {Verdict.WINNABLE: 0, Verdict.UNWINNABLE: 0}
    for game in late_positions(seed=11):
        result = solve(game, node_budget=BUDGET)
        expected = brute_force_winnable(game)
        assert result.verdict is (Verdict.WINNABLE if expected else Verdict.UNWINNABLE), (
            f"{game.code} after {game.move_count} moves: solver {result.verdict}, brute force {expected}"
        )
        checked[result.verdict] += 1
        if result.moves is not None:
            for move in result.moves:
                game.push(move)
            assert game.status is Status.WON
    # both kinds of verdict were put to the test
    assert checked[Verdict.WINNABLE] >= 5
    assert checked[Verdict.UNWINNABLE] >= 5


# -- the reversed position -----------------------------------------------------------------


def layout_winnable(piles: list[list[int]], reserve: list[int]) -> bool:
    """Brute force on ranks alone (piles bottom to top): can every card be removed?"""
    seen: dict[tuple[tuple[int, ...], int], bool] = {}

    def search(heights: tuple[int, ...], used: int) -> bool:
        if not any(heights) and used == (1 << len(reserve)) - 1:
            return True
        if (heights, used) in seen:
            return seen[heights, used]
        cards = [(p, piles[p][h - 1]) for p, h in enumerate(heights) if h]
        cards += [(-1 - r, rank) for r, rank in enumerate(reserve) if not used >> r & 1]
        result = False
        for size in (2, 3):
            for group in itertools.combinations(cards, size):
                ranks = sorted(rank for _, rank in group)
                if ranks != [11, 12, 13] and not (size == 2 and ranks[0] + ranks[1] == 11):
                    continue
                after, now_used = list(heights), used
                for where, _ in group:
                    if where >= 0:
                        after[where] -= 1
                    else:
                        now_used |= 1 << (-1 - where)
                if search(tuple(after), now_used):
                    result = True
                    break
            if result:
                break
        seen[heights, used] = result
        return result

    return search(tuple(len(pile) for pile in piles), 0)


def test_a_position_and_its_reversal_are_won_alike() -> None:
    # the fact the solver's second search rests on, checked by brute force on both sides
    checked = {True: 0, False: 0}
    for game in itertools.islice(late_positions(seed=3), 0, None, 3):
        piles = [[card.rank for card in pile] for pile in game.piles()]
        reserve = [card.rank for card in game.reserve() if card is not None]
        winnable = layout_winnable(piles, reserve)
        assert layout_winnable([pile[::-1] for pile in piles], reserve) == winnable
        checked[winnable] += 1
    assert checked[True] >= 3 and checked[False] >= 3


def test_an_unwinnable_deal_is_confirmed_by_brute_force_on_its_face_cards_alone() -> None:
    # HM1-N-JBIQGLM: the solver proves it lost. Deleting every card but the Jacks, Queens and
    # Kings only removes obstacles, so if those 24 cards cannot be cleared on their own (brute
    # force, none of the solver's code), the deal cannot be won either.
    game = Game.from_code("HM1-N-JBIQGLM")
    assert solve(game, node_budget=BUDGET).verdict is Verdict.UNWINNABLE
    faces = [[card.rank for card in pile if card.rank > 10] for pile in game.piles()]
    reserve_faces = [card.rank for card in game.reserve() if card is not None and card.rank > 10]
    assert not layout_winnable(faces, reserve_faces)
    # and the same brute force clears the face cards of a deal the solver wins
    won = Game.from_code(EASY_CODES[0])
    assert layout_winnable(
        [[card.rank for card in pile if card.rank > 10] for pile in won.piles()],
        [card.rank for card in won.reserve() if card is not None and card.rank > 10],
    )


def test_a_deal_lost_through_two_classes_is_proved_by_its_reduced_position() -> None:
    # HM1-N-YCMQZOG: the depth-first searches alone need about 90,000 nodes to prove it lost.
    # Reduced to its 3s, 8s and face cards (every other card deleted), it cannot be cleared, so
    # the solver proves it within a few thousand nodes; brute force confirms the reduced position.
    game = Game.from_code("HM1-N-YCMQZOG")
    result = solve(game, node_budget=10_000)
    assert result.verdict is Verdict.UNWINNABLE and result.nodes <= 10_000
    kept = {3, 8, 11, 12, 13}
    piles = [[card.rank for card in pile if card.rank in kept] for pile in game.piles()]
    reserve = [card.rank for card in game.reserve() if card is not None and card.rank in kept]
    assert not layout_winnable(piles, reserve)


def test_a_line_found_on_the_reversed_deal_wins_and_spends_the_reserve_lowest_slot_first() -> None:
    # HM1-N-UTIEZPB: the search on the deal needs millions of nodes, the reversed one a few
    # thousand, so the line comes from the reversed search
    result = solve(Game.from_code("HM1-N-UTIEZPB"), node_budget=50_000)
    assert result.verdict is Verdict.WINNABLE and result.moves is not None
    game = Game.from_code("HM1-N-UTIEZPB")
    spent: dict[int, list[int]] = {}
    for move in result.moves:
        for position in move.positions:
            if position >= PILE_COUNT:
                card = game.card_at(position)
                assert card is not None
                spent.setdefault(card.rank, []).append(position)
        game.push(move)
    assert game.status is Status.WON
    assert all(slots == sorted(slots) for slots in spent.values())


# -- budgets -------------------------------------------------------------------------------


def test_a_tiny_node_budget_gives_unknown_within_the_budget() -> None:
    for budget in (0, 1, 10, 40):
        result = solve(Game.from_code(EASY_CODES[0]), node_budget=budget)
        assert result.verdict is Verdict.UNKNOWN
        assert result.moves is None
        assert result.nodes <= budget


def test_the_node_budget_holds_on_a_hard_deal() -> None:
    result = solve(Game.from_code(HARD_CODE), node_budget=5_000)
    assert result.verdict is Verdict.UNKNOWN
    assert 4_900 <= result.nodes <= 5_000


def test_the_time_budget_is_read_from_the_clock_passed_in() -> None:
    clock = fake_clock(0.001)  # every reading is a millisecond later
    result = solve(Game.from_code(HARD_CODE), time_budget_ms=50, clock=clock)
    assert result.verdict is Verdict.UNKNOWN
    assert 50 <= result.ms <= 60
    untimed = solve(Game.from_code(EASY_CODES[0]), node_budget=BUDGET)
    assert untimed.ms == 0.0
    timed = solve(Game.from_code(EASY_CODES[0]), node_budget=BUDGET, clock=fake_clock(0.5))
    assert timed.ms > 0.0 and timed.verdict is Verdict.WINNABLE


# -- analysis ------------------------------------------------------------------------------


def test_analysis_of_a_won_record() -> None:
    code = EASY_CODES[0]
    analysis = analyse(GameRecord(DealCode.parse(code), list(winning_line(code))))
    assert analysis.winnable is Verdict.WINNABLE
    assert analysis.last_winnable_move == WINNING_MOVES


def test_analysis_of_a_stalled_record_finds_the_losing_move() -> None:
    code = EASY_CODES[1]
    line = winning_line(code)[:34]
    game = play(code, line)
    rng = random.Random(3)
    played = list(line)
    while game.status is Status.PLAYING:
        move = rng.choice(list(game.legal_moves()))
        game.push(move)
        played.append(move)
    if game.status is Status.WON:  # pragma: no cover - the seed is chosen to stall
        pytest.fail("the random continuation won; pick another seed")
    # an undone detour does not count: the final line is what was played
    detour = next(play(code, played[:34]).legal_moves())
    steps: list[Step] = [*played[:34], detour, UNDO, *played[34:]]
    record = GameRecord(DealCode.parse(code), steps)
    assert final_line(record) == played
    analysis = analyse(record)
    assert analysis.winnable is Verdict.WINNABLE
    last = analysis.last_winnable_move
    assert last is not None and 34 <= last < len(played)
    assert brute_force_winnable(play(code, played[:last]))
    assert not brute_force_winnable(play(code, played[: last + 1]))


def test_analysis_refuses_a_record_that_does_not_replay() -> None:
    record = GameRecord(DealCode.parse(EASY_CODES[0]), [Move((0, 1))])
    with pytest.raises(IllegalMoveError):
        analyse(record)


def test_analysis_says_unknown_when_the_budget_is_too_small() -> None:
    record = GameRecord(DealCode.parse(EASY_CODES[0]), list(winning_line(EASY_CODES[0])[:3]))
    analysis = analyse(record, node_budget=5)
    assert analysis.winnable is Verdict.UNKNOWN
    assert analysis.last_winnable_move is None
    assert analysis.nodes <= 5


def test_analysis_keeps_to_its_node_budget_across_its_solves() -> None:
    # a stalled game: the start is solved, then the final line is bisected, all in one budget
    stalled = next(stalled_games())
    record = GameRecord(stalled.code, stalled.history())
    full = analyse(record, node_budget=BUDGET)
    assert full.winnable is Verdict.WINNABLE and full.nodes > 20
    for budget in (0, 1, full.nodes // 2, full.nodes - 1):
        assert analyse(record, node_budget=budget).nodes <= budget


# -- daily deals ---------------------------------------------------------------------------


def test_first_winnable_daily_is_deterministic_and_proved_winnable() -> None:
    day, secret = date(2026, 3, 14), b"a server secret"
    code = first_winnable_daily(day, secret, node_budget=BUDGET)
    assert first_winnable_daily(day, secret, node_budget=BUDGET) == code
    assert code.kind == "D" and code.long  # a new day's daily is a long code
    candidates = [daily_code(day, secret, attempt=k, long=True) for k in range(50)]
    attempt = candidates.index(code)
    assert solve(Game.from_code(code), node_budget=BUDGET).verdict is Verdict.WINNABLE
    for earlier in candidates[:attempt]:
        assert solve(Game.from_code(earlier), node_budget=BUDGET).verdict is not Verdict.WINNABLE
    assert first_winnable_daily(date(2026, 3, 15), secret, node_budget=BUDGET) != code


def test_first_winnable_daily_says_so_when_nothing_is_proved() -> None:
    with pytest.raises(NoWinnableDealError, match="2026-03-14"):
        first_winnable_daily(date(2026, 3, 14), b"s", node_budget=3, max_attempts=4)


def test_final_line_refuses_an_undo_with_nothing_to_undo() -> None:
    with pytest.raises(InvalidRecordError):
        GameRecord.from_json({"code": EASY_CODES[0], "moves": [17]})
    record = GameRecord(DealCode.parse(EASY_CODES[0]), [UNDO])
    with pytest.raises(Exception, match="nothing to undo"):
        final_line(record)
