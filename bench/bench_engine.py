"""Engine benchmark, run by hand: ``python bench/bench_engine.py [--quick]``.

Measures, as medians over repeated runs: a deal from its code, listing the legal moves,
applying and undoing one move, and replaying a whole 48-move won record (reading the JSON and
without). The won records come from ``tests/vectors/won_games.json`` (the solver's) or
``tests/vectors/won_records.json`` when present; otherwise :func:`find_won_record` finds one
with a plain depth-first search. Figures go in docs/benchmarks.md ("Engine").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from halfmoon import DealCode, Game, GameRecord, replay
from halfmoon.deal import Deal
from halfmoon.game import Move

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors"


def find_won_record(code: DealCode, *, node_cap: int = 50_000) -> GameRecord | None:
    """A won record for ``code`` by depth-first search over legal moves, or None within the cap.

    The state after any sequence of moves is fixed by the pile heights and the emptied reserve
    slots, so positions already explored are skipped.
    """
    game = Game.from_code(code)
    seen: set[tuple[int, ...]] = set()
    path: list[Move] = []
    nodes = 0

    def search() -> bool:
        nonlocal nodes
        if game.cards_left == 0:
            return True
        key = tuple(game.count_at(p) for p in range(20))
        if key in seen or nodes >= node_cap:
            return False
        seen.add(key)
        nodes += 1
        for move in list(game.legal_moves()):
            game.push(move)
            path.append(move)
            if search():
                return True
            game.undo()
            path.pop()
        return False

    if not search():
        return None
    return GameRecord(code, list(path))


def won_records(limit: int) -> list[GameRecord]:
    for name in ("won_games.json", "won_records.json"):
        path = VECTORS / name
        if not path.exists():
            continue
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        items = data if isinstance(data, list) else data.get("records") or data.get("games") or []
        records = []
        for item in items:
            try:
                record = GameRecord.from_json({"code": item["code"], "moves": item["moves"]})
            except (KeyError, TypeError, ValueError):
                continue
            if replay(record).game.is_won:
                records.append(record)
        if records:
            return records[:limit]
    found: list[GameRecord] = []
    number = 0
    while len(found) < limit:
        candidate = find_won_record(DealCode("N", number))
        if candidate is not None:
            found.append(candidate)
        number += 1
    return found


def median_us(action: Callable[[], object], *, number: int, repeat: int) -> float:
    """Median CPU time of one call in microseconds over ``repeat`` runs of ``number`` calls.

    CPU time of this process (``time.process_time``), not wall time: the machines are shared,
    and time spent waiting for a core is not the engine's cost.
    """
    runs = timeit.repeat(action, number=number, repeat=repeat, timer=time.process_time)
    return statistics.median(runs) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    repeat = 7

    def n(count: int) -> int:
        return max(1, int(count * scale))

    records = won_records(5)
    codes = [DealCode("N", k * 7_919_113) for k in range(50)]
    texts = [str(code) for code in codes]
    games = [Game.from_code(code) for code in codes]
    first_moves = [next(iter(game.legal_moves()), None) for game in games]
    pairs = [(g, m) for g, m in zip(games, first_moves, strict=True) if m is not None]
    record_texts = [record.dumps() for record in records]

    rows: list[tuple[str, float, str]] = []

    def bench(name: str, action: Callable[[], object], count: int, per: int, unit: str) -> None:
        rows.append((name, median_us(action, number=n(count), repeat=repeat) / per, unit))

    bench("deal from code text (parse, SHA-256, shuffle)", lambda: [Deal.from_code(t) for t in texts], 40, 50, "deal")
    bench("new Game from code text", lambda: [Game.from_code(t) for t in texts], 40, 50, "game")
    bench("list legal moves (start position)", lambda: [list(g.legal_moves()) for g in games], 200, 50, "listing")
    bench("has_legal_move / status (start position)", lambda: [g.status for g in games], 400, 50, "call")

    def apply_undo() -> None:
        for game, move in pairs:
            game.push(move)
            game.undo()

    bench("push + undo of one legal move", apply_undo, 400, len(pairs), "push+undo")

    parsed_moves = [[step for step in r.moves if isinstance(step, Move)] for r in records]

    def replay_parsed() -> None:
        for record in records:
            replay(record)

    def replay_text() -> None:
        for text in record_texts:
            replay(GameRecord.loads(text))

    def pushes_only() -> None:
        for record, moves in zip(records, parsed_moves, strict=True):
            game = Game(deal_cache[str(record.code)])
            for move in moves:
                game.push(move)

    deal_cache = {str(r.code): Deal.from_code(r.code) for r in records}
    bench("replay 48-move won record (parsed: deal + 48 pushes)", replay_parsed, 100, len(records), "record")
    bench("replay 48-move won record from JSON text", replay_text, 100, len(records), "record")
    bench("48 checked pushes on an already dealt game", pushes_only, 100, len(records), "record")

    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    print(f"Python {platform.python_version()}, {machine}, load average {os.getloadavg()[0]:.1f}")
    print(f"median CPU time of {repeat} runs")
    print(f"won records: {', '.join(str(r.code) for r in records)}")
    width = max(len(name) for name, _, _ in rows)
    for name, micros, unit in rows:
        print(f"{name:<{width}}  {micros:9.2f} µs / {unit}")


if __name__ == "__main__":
    main()
