"""The source of ``tests/vectors/taps.json``: tap sequences with their expected outcomes, by hand.

Each step below was worked out from the seed's tap rules and the cards the deal shows (noted in
the comments), not by running the tap machine. This script adds what is mechanical — the card
under each tap and the «Aiuto al posizionamento» set after each step, by brute force over the
table — and writes the JSON file. ``tests/engine/test_taps.py`` then runs every vector through
:class:`halfmoon.taps.Tapper` and checks that this script still writes the committed file.

Regenerate with ``python -m tests.engine.build_tap_vectors`` (from the repository root).
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Final

from halfmoon.cards import is_pair, is_triple
from halfmoon.game import Game, Move
from halfmoon.positions import parse_position, position_name
from halfmoon.taps import MOVE_ERROR_MESSAGES
from tests.conftest import VECTORS

PATH: Final = VECTORS / "taps.json"

FORMAT: Final = """\
Tap-sequence vectors shared by the Python engine (halfmoon.taps.Tapper) and the browser client.
Top level: {"format": this text, "vectors": [vector, ...]}.
A vector: {"name": what it shows, "code": a deal code, "setup": moves applied first (each a list
of position names, as in game records), "move_errors": the «Errori di mossa» setting,
"steps": [step, ...]}. The selection starts empty.
A step: {"tap": the position tapped ("1".."12", "R1".."R8"), "card": the card there before the tap
(null if the position is empty), "event": "selected" | "deselected" | "replaced" | "cancelled" |
"removed" | "error", "selection": the selected positions after the tap, in tap order, "removed":
the positions whose cards the tap removed (selection order, the tapped one last) or null,
"message": {"it": ..., "en": ...} shown for a cancelled selection when move_errors is on, else
null, "error": null or the engine's error code ("not_playable") when the tap is refused — a
refused tap changes nothing, "matching": «Aiuto al posizionamento» after the tap — with an empty
selection every playable position, otherwise the positions (outside the selection) whose card
can still complete a legal move with the selection, sorted 1..12 then R1..R8; everything else
playable is dimmed.
"""

SUM: Final = "sum"
TRIPLE: Final = "triple"

# (tap, event, selection after, removed or None, message key or None)
Step = tuple[str, str, list[str], list[str] | None, str | None]

# HM1-N-AAAAAAB shows 1:10H 2:3S 3:8C 4:2C 5:QC 6:9C 7:8H 8:KS 9:7S 10:8C 11:9H 12:JC
#                     R1:2C R2:6D R3:JH R4:AS R5:QD R6:AH R7:8D R8:9D
# pile 1 (bottom to top) KD QC KH 8S 5S 2H 4S 10H: removing 10H uncovers 4S.
SEED_CODE: Final = "HM1-N-AAAAAAB"

VECTORS_SPEC: Final[list[dict[str, Any]]] = [
    {
        "name": "a first tap selects; tapping the selected card again deselects it",
        "code": SEED_CODE,
        "steps": [
            ("1", "selected", ["1"], None, None),  # 10H: matches the aces R4, R6
            ("1", "deselected", [], None, None),
            ("R2", "selected", ["R2"], None, None),  # 6D: no 5 on the table, nothing matches
            ("R2", "deselected", [], None, None),
        ],
    },
    {
        "name": "a second card summing to 11 removes the pair (pile + reserve), uncovering the next card",
        "code": SEED_CODE,
        "steps": [
            ("1", "selected", ["1"], None, None),
            ("R4", "removed", [], ["1", "R4"], None),  # 10H + AS; pile 1 now shows 4S
            ("1", "selected", ["1"], None, None),  # 4S matches the 7S on pile 9
            ("9", "removed", [], ["1", "9"], None),
        ],
    },
    {
        "name": "pairs from two reserve slots and from two piles, in either order",
        "code": SEED_CODE,
        "steps": [
            ("R8", "selected", ["R8"], None, None),  # 9D: matches the 2C of pile 4 and of R1
            ("R1", "removed", [], ["R8", "R1"], None),
            ("3", "selected", ["3"], None, None),  # 8C: matches 3S on pile 2
            ("2", "removed", [], ["3", "2"], None),
        ],
    },
    {
        "name": "two number cards not summing to 11 cancel the selection (move errors off: no message)",
        "code": SEED_CODE,
        "move_errors": False,
        "steps": [
            ("2", "selected", ["2"], None, None),  # 3S
            ("4", "cancelled", [], None, None),  # 2C: 3 + 2 = 5
            ("4", "selected", ["4"], None, None),  # the cancelling card was not selected
        ],
    },
    {
        "name": "two number cards not summing to 11 cancel the selection (move errors on: the sum message)",
        "code": SEED_CODE,
        "move_errors": True,
        "steps": [
            ("2", "selected", ["2"], None, None),
            ("4", "cancelled", [], None, SUM),
            ("R6", "selected", ["R6"], None, None),  # AH
            ("R4", "cancelled", [], None, SUM),  # AS: 1 + 1 = 2
        ],
    },
    {
        "name": "a number card then a face card cancel; the sum message (the selection began with a number)",
        "code": SEED_CODE,
        "move_errors": True,
        "steps": [
            ("1", "selected", ["1"], None, None),  # 10H
            ("8", "cancelled", [], None, SUM),  # KS
        ],
    },
    {
        "name": "a face card then a number card cancel; the triple message (the selection began with a face)",
        "code": SEED_CODE,
        "move_errors": True,
        "steps": [
            ("8", "selected", ["8"], None, None),  # KS: completes with a J (12, R3) and a Q (5, R5)
            ("1", "cancelled", [], None, TRIPLE),  # 10H
            ("12", "selected", ["12"], None, None),  # JC
            ("5", "selected", ["12", "5"], None, None),  # QC: only the K on pile 8 can complete
            ("R2", "cancelled", [], None, TRIPLE),  # 6D
        ],
    },
    {
        "name": "face then number with move errors off: cancelled, no message",
        "code": SEED_CODE,
        "move_errors": False,
        "steps": [
            ("R3", "selected", ["R3"], None, None),  # JH
            ("R7", "cancelled", [], None, None),  # 8D
        ],
    },
    *[
        {
            "name": f"a triple tapped in the order {' '.join(order)}: removed on the third tap",
            "code": SEED_CODE,
            "steps": [
                (taps[0], "selected", [taps[0]], None, None),
                (taps[1], "selected", [taps[0], taps[1]], None, None),
                (taps[2], "removed", [], list(taps), None),
            ],
        }
        for order in itertools.permutations("JQK")
        for taps in [tuple({"J": "12", "Q": "5", "K": "8"}[rank] for rank in order)]
    ],
    {
        "name": "the third card is never picked for the player: J and Q stay selected until the K is tapped",
        "code": SEED_CODE,
        "steps": [
            ("R3", "selected", ["R3"], None, None),  # JH
            ("R5", "selected", ["R3", "R5"], None, None),  # QD: the only K is on pile 8
            ("R5", "deselected", ["R3"], None, None),  # one face deselected, the other stays
            ("R5", "selected", ["R3", "R5"], None, None),
            ("8", "removed", [], ["R3", "R5", "8"], None),
        ],
    },
    {
        "name": "a face card of a rank already selected replaces that card",
        "code": SEED_CODE,
        "steps": [
            ("12", "selected", ["12"], None, None),  # JC
            ("R3", "replaced", ["R3"], None, None),  # JH replaces JC
            ("5", "selected", ["R3", "5"], None, None),  # QC
            ("R5", "replaced", ["R3", "R5"], None, None),  # QD replaces QC
            ("12", "replaced", ["R5", "12"], None, None),  # JC replaces JH; the order is tap order
            ("8", "removed", [], ["R5", "12", "8"], None),
        ],
    },
    # HM1-N-AAAAAEK shows both copies of K♥ (piles 8 and 12), KD on 3, KS in R2, QD on 6, JS in R8.
    {
        "name": "the seed's two K♥: they do not add up, the second becomes the selected card",
        "code": "HM1-N-AAAAAEK",
        "move_errors": True,
        "steps": [
            ("8", "selected", ["8"], None, None),  # KH
            ("12", "replaced", ["12"], None, None),  # the other KH: no message, nothing removed
            ("6", "selected", ["12", "6"], None, None),  # QD
            ("R8", "removed", [], ["12", "6", "R8"], None),  # JS
        ],
    },
    # HM1-N-AAAAAAE shows J on 2, 6, 7, 8, QC on 1 and no King at all.
    {
        "name": "J and Q with no King anywhere: nothing can complete them, nothing is picked",
        "code": "HM1-N-AAAAAAE",
        "move_errors": True,
        "steps": [
            ("2", "selected", ["2"], None, None),  # JD: no K, so no card can complete it
            ("1", "selected", ["2", "1"], None, None),  # QC
            ("3", "cancelled", [], None, TRIPLE),  # 4D
        ],
    },
    {
        "name": "tapping an empty reserve slot is refused and changes nothing",
        "code": SEED_CODE,
        "setup": [["1", "R4"]],  # 10H + AS: R4 is empty, pile 1 shows 4S
        "steps": [
            ("R4", "error", [], None, None),
            ("2", "selected", ["2"], None, None),  # 3S
            ("R4", "error", ["2"], None, None),  # the selection is kept
            ("R7", "removed", [], ["2", "R7"], None),  # 8D
        ],
    },
    # After the first 24 moves of the won record of HM1-N-AAAAAAB: pile 6 and R1-R4, R8 are empty;
    # showing 1:QC 2:KC 3:KS 4:AC 5:JS 7:8D 8:2S 9:KH 10:5H 11:KC 12:4C R5:QD R6:AH R7:8D.
    {
        "name": "tapping an empty pile is refused and changes nothing; a triple late in a game",
        "code": SEED_CODE,
        "setup": "won:HM1-N-AAAAAAB:24",
        "move_errors": True,
        "steps": [
            ("6", "error", [], None, None),
            ("1", "selected", ["1"], None, None),  # QC: J on 5; K on 2, 3, 9, 11
            ("6", "error", ["1"], None, None),
            ("R1", "error", ["1"], None, None),
            ("5", "selected", ["1", "5"], None, None),  # JS
            ("9", "removed", [], ["1", "5", "9"], None),  # KH
        ],
    },
]


def reference_matching(game: Game, selection: list[int]) -> list[int]:
    """«Aiuto al posizionamento» by brute force over every pair and triple on the table."""
    playable = game.playable()
    if not selection:
        return sorted(playable)
    moves: list[tuple[int, ...]] = []
    moves += [m for m in itertools.combinations(playable, 2) if is_pair(*(playable[p] for p in m))]
    moves += [m for m in itertools.combinations(playable, 3) if is_triple(*(playable[p] for p in m))]
    return sorted({p for m in moves if set(selection) <= set(m) for p in m if p not in selection})


def won_prefix(spec: str) -> list[list[str]]:
    _, code, count = spec.split(":")
    records = json.loads((VECTORS / "won_records.json").read_text(encoding="utf-8"))["records"]
    moves: list[list[str]] = next(r["moves"] for r in records if r["code"] == code)
    return moves[: int(count)]


def build() -> dict[str, Any]:
    vectors = []
    for spec in VECTORS_SPEC:
        setup = spec.get("setup", [])
        if isinstance(setup, str):
            setup = won_prefix(setup)
        game = Game.from_code(spec["code"])
        for move in setup:
            game.push(Move.from_names(move))
        move_errors = bool(spec.get("move_errors", False))
        steps = []
        for tap, event, selection, removed, message in spec["steps"]:
            card = game.card_at(parse_position(tap))
            if removed is not None:
                game.push(Move.from_names(removed))
            chosen = [parse_position(name) for name in selection]
            steps.append(
                {
                    "tap": tap,
                    "card": None if card is None else card.name,
                    "event": event,
                    "selection": selection,
                    "removed": removed,
                    "message": MOVE_ERROR_MESSAGES[message] if message and move_errors else None,
                    "error": "not_playable" if event == "error" else None,
                    "matching": [position_name(p) for p in reference_matching(game, chosen)],
                }
            )
        vectors.append(
            {"name": spec["name"], "code": spec["code"], "setup": setup, "move_errors": move_errors, "steps": steps}
        )
    return {"format": FORMAT, "vectors": vectors}


def dumps(document: dict[str, Any]) -> str:
    """One step per line: readable in a diff, and still plain JSON."""
    lines = ["{", f'  "format": {json.dumps(document["format"], ensure_ascii=False)},', '  "vectors": [']
    for i, vector in enumerate(document["vectors"]):
        head = {key: value for key, value in vector.items() if key != "steps"}
        lines.append("    " + json.dumps(head, ensure_ascii=False)[:-1] + ', "steps": [')
        steps = vector["steps"]
        for k, step in enumerate(steps):
            lines.append("      " + json.dumps(step, ensure_ascii=False) + ("," if k < len(steps) - 1 else ""))
        lines.append("    ]}" + ("," if i < len(document["vectors"]) - 1 else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(dumps(build()), encoding="utf-8")
    print(f"wrote {PATH}")
