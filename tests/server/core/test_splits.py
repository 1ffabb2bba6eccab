"""A race's splits: each racer's time when their game first held 12, 24, 36 and 48
moves, in ``race_over``'s results and the room snapshot after the end — driven through the
sans-I/O race core with the time passed in, so every figure is exact."""

from __future__ import annotations

import orjson

from halfmoon.codes import DealCode
from halfmoon.game import Move
from halfmoon.protocol import SPLIT_MOVES, Mode, RaceOver, Result
from halfmoon_server.core import events
from halfmoon_server.core.race import Race, RaceConfig
from tests.server.support import won_record

CODE = DealCode.parse("HM1-N-AAAAAAA")
T0 = 1_795_900_000_000
START = T0 + 3000


def winning_line() -> list[Move]:
    record = won_record()
    assert str(record.code) == str(CODE)
    return [step for step in record.moves if isinstance(step, Move)]


def race_over(evs: list[events.Event]) -> events.RaceOver:
    found = [e for e in evs if isinstance(e, events.RaceOver)]
    assert len(found) == 1, evs
    return found[0]


def test_splits_are_the_times_of_moves_12_24_36_48_and_an_undo_takes_none_back() -> None:
    assert SPLIT_MOVES == (12, 24, 36, 48)
    r = Race("K7WQ2M", Mode.RACE, CODE, RaceConfig(countdown_ms=3000, default_time_limit_s=600), now=T0)
    r.join("Ada", T0)
    r.join("Bob", T0)
    r.start("p1", None, T0)
    r.tick(START)
    line = winning_line()
    # Bob plays 13 moves, one a second, takes back two and gives up: one split, at his 12th move
    for i, move in enumerate(line[:13], 1):
        r.move("p2", move, START + 1000 * i)
    r.undo("p2", START + 20_000)
    r.undo("p2", START + 21_000)
    r.move("p2", line[11], START + 22_000)  # his 12th move again: the split stays the first one
    r.give_up("p2", START + 23_000)
    # Ada plays move n at n × 2 s, and the last one 500 ms later
    out: list[events.Event] = []
    for i, move in enumerate(line, 1):
        out += r.move("p1", move, START + 2000 * i + (500 if i == 48 else 0))
    for pid in ("p1", "p2"):
        out += r.recorded(pid, f"game-{pid}", START + 200_000)
    results = {line.player: line for line in race_over(out).results}
    assert results["p1"].splits == (24_000, 48_000, 72_000, 96_500)
    assert results["p1"].splits[-1] == results["p1"].time_ms  # a win's last split is its time
    assert results["p2"].splits == (12_000, None, None, None)
    expected = [[24_000, 48_000, 72_000, 96_500], [12_000, None, None, None]]
    wire = orjson.loads(orjson.dumps(RaceOver(race_over(out).results).to_json()))
    assert [entry["splits"] for entry in wire["results"]] == expected
    # a reload after the end gets them in the snapshot's results too
    snapshot = r.snapshot("p2", START + 300_000, watcher=False).to_json()
    assert [entry["splits"] for entry in snapshot["results"]] == expected


def test_a_solo_game_splits_on_its_own_clock_and_a_leaderboard_line_has_none() -> None:
    r = Race("K7WQ2M", Mode.SOLO, CODE, RaceConfig(), now=T0)
    r.join("Ada", T0)
    r.begin(T0)
    out: list[events.Event] = []
    for i, move in enumerate(winning_line()):  # the solo clock starts at the first move
        out += r.move("p1", move, T0 + 10_000 + 1000 * i)
    out += r.recorded("p1", "g1", T0 + 100_000)
    assert race_over(out).results[0].splits == (11_000, 23_000, 35_000, 47_000)
    # leaderboards list stored games: no splits there (docs/protocol.md)
    assert "splits" not in Result(1, None, "Ada", 520, 48, 47_000, race_over(out).results[0].outcome, "g1").to_json()
