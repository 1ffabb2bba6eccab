"""The source of the Examples page's game (``static/js/examples.js``): a won game built to hold
every example the seed's rules cite — «alla prima mossa, la carta 5♠ della pila 1 e la carta 6♦
della pila 8 vengono rimosse insieme … La pila 8 scopre quindi la carta V♣, che viene rimossa
alla mossa successiva insieme alla carta D♥ della pila 5 e alla carta R♥ della pila 3», and on the
same table 5♠ beside A♥ (not 11) and two K♥.

No deal code deals that table (the seed's layout is made up), so the deal is built from its
winning line: 48 groups of cards (40 pairs, 8 triples, the seed's two first), each given to
places that still have cards; a pile's cards, top first, are those its moves take. Every such
line wins by construction; ``tests/web/test_examples.py`` replays it with the engine.

Regenerate with ``python -m tests.web.build_example_game`` (seeded: the same output each run).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
VALUE = {r: i + 1 for i, r in enumerate(RANKS[:10])}
NAMES = [str(p) for p in range(1, 13)] + [f"R{s}" for s in range(1, 9)]
PATH = Path(__file__).resolve().parents[2] / "client/halfmoon_web/static/js/examples.js"
#: the seed's own cards: the first two moves, A♥ and a second K♥ in the reserve
FIRST = [[("1", "5S"), ("8", "6D")], [("8", "JC"), ("5", "QH"), ("3", "KH")]]
FIXED = {"R2": "AH", "R6": "KH"}


def build(seed: int = 11) -> dict[str, object]:
    rng = random.Random(seed)
    cards = [r + s for r in RANKS for s in "SHDC"] * 2
    for move in FIRST:
        for _, card in move:
            cards.remove(card)
    for card in FIXED.values():
        cards.remove(card)
    room = {name: (8 if not name.startswith("R") else 1) for name in NAMES}
    for name in FIXED:
        room[name] = 0
    taken: dict[str, list[str]] = {name: [] for name in NAMES}
    moves: list[list[str]] = []
    for move in FIRST:
        for name, card in move:
            room[name] -= 1
            taken[name].append(card)
        moves.append([name for name, _ in move])
    pending = dict(FIXED)  # reserve cards still to be taken by some move
    while cards or pending:
        pool = cards + list(pending.values())
        faces = [c for c in pool if c[:-1] in "JQK"]
        if faces and (not [c for c in pool if c[:-1] not in "JQK"] or rng.random() < 0.17):
            group = [rng.choice([c for c in pool if c[:-1] == r]) for r in "JQK"]
        else:
            first = rng.choice([c for c in pool if c[:-1] not in "JQK"])
            mates = [c for c in pool if c != first and c[:-1] in VALUE and VALUE[c[:-1]] + VALUE[first[:-1]] == 11]
            group = [first, rng.choice(mates)]
        places: list[str] = []
        for card in group:
            fixed = next((n for n, c in pending.items() if c == card and n not in places), None)
            if fixed is not None:
                del pending[fixed]
                places.append(fixed)
            else:
                cards.remove(card)
                open_ = [n for n in NAMES if room[n] > 0 and n not in places]
                name = rng.choice(open_)
                room[name] -= 1
                places.append(name)
            taken[places[-1]].append(card)
        moves.append(places)
    assert all(v == 0 for v in room.values()) and len(moves) == 48
    piles = [taken[str(p)][::-1] for p in range(1, 13)]  # bottom to top
    reserve = [taken[f"R{s}"][0] for s in range(1, 9)]
    return {"piles": [" ".join(p) for p in piles], "reserve": " ".join(reserve), "moves": [" ".join(m) for m in moves]}


def source(example: dict[str, object]) -> str:
    return (
        "// The Examples page's game: a won game holding every example the seed's rules cite\n"
        "// (made by tests/web/build_example_game.py; replayed by the engine in tests/web/test_examples.py).\n"
        "// Piles bottom to top, the reserve R1-R8, the 48 moves.\n"
        f"export const EXAMPLE = {json.dumps(example, separators=(',', ':'))};\n"
    )


def read(text: str) -> dict[str, object]:
    """The EXAMPLE object of examples.js."""
    match = re.search(r"export const EXAMPLE = (\{.*\});", text)
    assert match, "examples.js must define EXAMPLE"
    return json.loads(match.group(1))


if __name__ == "__main__":
    example = build()
    PATH.write_text(source(example), encoding="utf-8")
    print(f"wrote {PATH}")
