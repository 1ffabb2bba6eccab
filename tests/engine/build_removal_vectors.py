"""The source of ``tests/vectors/removals.json``: which cards the seed lets a player remove.

The seed's «Le rimozioni consentite» (the Italian original wins, ``../shared/seed/``):

- «Coppia: due carte dall'Asso (che vale 1) al 10 la cui somma è 11. Ne esistono cinque tipi:
  l'Asso e il 10, il 2 e il 9, il 3 e il 8, il 4 e il 7, il 5 e il 6. Il seme non conta.»
- «Terzetto: un Fante, una Donna e un Re, di qualsiasi seme. Le figure non formano mai una coppia.»

Every verdict here comes from those sentences, typed below by hand (:data:`VALUES`,
:data:`PAIR_KINDS`, :data:`TRIPLE`), never from the engine's ``is_pair``/``is_triple``: the file
must be able to catch the engine. The pair table is checked against the seed's two statements of
the rule (the five kinds, and "number cards summing to 11") before it is written.

The move vectors are attempts on real deals, each verdict and error code worked out by hand from
the cards the deal shows (noted in the comments). The script adds what is mechanical: the cards
at the positions (read from the deal) and the setup moves of a won record; it also checks each
hand verdict against the seed's rule above, so a typing slip cannot reach the file.

``tests/engine/test_removals.py`` runs every vector through the Python engine (``is_pair``,
``is_triple``, ``Game`` legality, legal moves, the tap machine) and checks that this script
still writes the committed file; ``tests/web/removals.test.mjs`` runs them through the browser's
``taps.js`` and ``replay.js``.

Regenerate with ``python -m tests.engine.build_removal_vectors`` (from the repository root).
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Final

from halfmoon.game import Game, Move
from halfmoon.positions import parse_position
from tests.conftest import VECTORS

PATH: Final = VECTORS / "removals.json"

FORMAT: Final = """\
Which cards a player may remove, shared by the Python engine and the browser client.
Top level: {"format": this text, "pairs": [...], "triples": [...], "moves": [...]}.
"pairs": every unordered pair of ranks A 2..10 J Q K, equal ranks included (91):
{"ranks": [r1, r2], "sum": the values' sum (A = 1 ... 10 = 10) or null when a face card is
in it (face cards have no value), "pair": whether two such cards form a pair}.
"triples": every multiset of three ranks (455): {"ranks": [r1, r2, r3], "triple": whether
three such cards form a triple}.
Suits: the seed says suits never matter («Il seme non conta», «di qualsiasi seme»), so a
verdict holds for every choice of suits a two-deck game can show (each card exists twice,
so the same card may appear twice, never three times); runners try all of them.
"moves": attempts on real deals: {"code": a deal code, "setup": moves applied first (lists of
position names, as in game records), "attempts": [{"move": the positions named, "cards": the
card at each (null: empty or no such position), "legal": whether the engine accepts it,
"error": null or the engine's error code: "not_a_match" (neither a pair nor a triple),
"same_position", "not_playable" (an empty pile or slot), "illegal_move" (not 2 or 3
positions), "bad_position" (no such name)}]}. A refused move changes nothing; an accepted
one removes the cards and adds 10 points (a pair) or 15 (a triple).
"""

#: The ranks in order, by their machine names.
RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
#: «dall'Asso (che vale 1) al 10»: the number cards and their values. J, Q, K have none.
VALUES: Final = {"A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "10": 10}
#: «Ne esistono cinque tipi: l'Asso e il 10, il 2 e il 9, il 3 e il 8, il 4 e il 7, il 5 e il 6.»
PAIR_KINDS: Final = frozenset(
    {frozenset({"A", "10"}), frozenset({"2", "9"}), frozenset({"3", "8"}), frozenset({"4", "7"}), frozenset({"5", "6"})}
)
#: «un Fante, una Donna e un Re»
TRIPLE: Final = ("J", "Q", "K")


def rank_of(card: str) -> str:
    """The rank part of a machine name: ``"10H"`` → ``"10"``."""
    return card[:-1]


def pair_verdict(a: str, b: str) -> bool:
    return frozenset({a, b}) in PAIR_KINDS


def triple_verdict(a: str, b: str, c: str) -> bool:
    return sorted((a, b, c), key=RANKS.index) == list(TRIPLE)


def check_pair_table() -> None:
    """The five kinds are exactly the number-card pairs whose values sum to 11: the seed says
    the rule twice, and the two must agree."""
    by_sum = {frozenset({a, b}) for a in VALUES for b in VALUES if VALUES[a] + VALUES[b] == 11}
    assert by_sum == PAIR_KINDS, by_sum ^ PAIR_KINDS


# Each attempt: (positions named, legal, error code or None). The cards a deal shows are noted.
Attempt = tuple[str, bool, str | None]

# HM1-N-AAAAAAB shows 1:10H 2:3S 3:8C 4:2C 5:QC 6:9C 7:8H 8:KS 9:7S 10:8C 11:9H 12:JC
#                     R1:2C R2:6D R3:JH R4:AS R5:QD R6:AH R7:8D R8:9D
# pile 1 (bottom to top) KD QC KH 8S 5S 2H 4S 10H: removing 10H uncovers 4S.
MOVES_SPEC: Final[list[dict[str, Any]]] = [
    {
        "code": "HM1-N-AAAAAAB",
        "attempts": [
            ("1 R4", True, None),  # 10H + AS = 11: a pile and a slot
            ("R4 1", True, None),  # the same pair named in the other order
            ("R8 R1", True, None),  # 9D + 2C: two slots
            ("3 2", True, None),  # 8C + 3S: two piles
            ("6 4", True, None),  # 9C + 2C
            ("12 5 8", True, None),  # JC QC KS
            ("8 R3 R5", True, None),  # KS JH QD, named K J Q
            ("2 6", False, "not_a_match"),  # 3S + 9C = 12
            ("R8 2", False, "not_a_match"),  # 9D + 3S = 12, a slot and a pile
            ("4 3", False, "not_a_match"),  # 2C + 8C = 10
            ("R4 R6", False, "not_a_match"),  # AS + AH = 2
            ("1 11", False, "not_a_match"),  # 10H + 9H = 19
            ("R4 12", False, "not_a_match"),  # AS + JC: a Jack is not worth 10, nor 11
            ("R6 R3", False, "not_a_match"),  # AH + JH
            ("R4 5", False, "not_a_match"),  # AS + QC
            ("8 R6", False, "not_a_match"),  # KS + AH
            ("1 5", False, "not_a_match"),  # 10H + QC
            ("12 5", False, "not_a_match"),  # JC + QC: face cards never pair
            ("8 12", False, "not_a_match"),  # KS + JC
            ("12 R3 5", False, "not_a_match"),  # JC JH QC: two Jacks
            ("12 5 1", False, "not_a_match"),  # JC QC 10H: a number card for the King
            ("4 R1 9", False, "not_a_match"),  # 2C 2C 7S: three number cards summing to 11
            ("1 1", False, "same_position"),
            ("12 5 12", False, "same_position"),
            ("1", False, "illegal_move"),  # one position
            ("12 5 8 1", False, "illegal_move"),  # four positions
            ("1 R9", False, "bad_position"),  # there are 8 slots
        ],
    },
    {
        "code": "HM1-N-AAAAAAB",
        "setup": [["1", "R4"]],  # 10H + AS: pile 1 shows 4S, R4 is empty
        "attempts": [
            ("1 9", True, None),  # 4S (uncovered) + 7S
            ("R4 1", False, "not_playable"),  # R4 is empty
            ("R6 R4", False, "not_playable"),
            ("1 R2", False, "not_a_match"),  # 4S + 6D = 10
        ],
    },
    # HM1-N-AAAAAEK shows 1:8D 2:6C 3:KD 4:4D 5:10D 6:QD 7:4C 8:KH 9:6H 10:6C 11:3H 12:KH
    #                     R1:7C R2:KS R3:8C R4:3C R5:8H R6:8D R7:2C R8:JS
    {
        "code": "HM1-N-AAAAAEK",
        "attempts": [
            ("R1 4", True, None),  # 7C + 4D
            ("11 R5", True, None),  # 3H + 8H
            ("12 6 R8", True, None),  # KH QD JS
            ("8 12", False, "not_a_match"),  # the seed's two K♥: they do not add up
            ("3 R2", False, "not_a_match"),  # KD + KS
            ("8 12 6", False, "not_a_match"),  # KH KH QD
            ("2 10", False, "not_a_match"),  # 6C + 6C (both copies of the card) = 12
            ("2 9", False, "not_a_match"),  # 6C + 6H = 12
            ("1 R6", False, "not_a_match"),  # 8D + 8D = 16
            ("R7 R5", False, "not_a_match"),  # 2C + 8H = 10
            ("5 R8", False, "not_a_match"),  # 10D + JS
        ],
    },
    # HM1-N-AAAAAAE shows 1:QC 2:JD 3:4D 4:6C 5:9D 6:JD 7:JC 8:JH 9:AD 10:4C 11:2S 12:9S
    #                     R1:5H R2:5C R3:10S R4:10H R5:5D R6:9D R7:10C R8:9C (no King)
    {
        "code": "HM1-N-AAAAAAE",
        "attempts": [
            ("9 R3", True, None),  # AD + 10S
            ("R1 4", True, None),  # 5H + 6C
            ("11 12", True, None),  # 2S + 9S
            ("R1 R2", False, "not_a_match"),  # 5H + 5C = 10
            ("R3 R4", False, "not_a_match"),  # 10S + 10H = 20
            ("9 2", False, "not_a_match"),  # AD + JD
            ("R3 1", False, "not_a_match"),  # 10S + QC
            ("2 6", False, "not_a_match"),  # JD + JD: the two copies
            ("1 2 6", False, "not_a_match"),  # QC JD JD: no King
            ("1 2 7", False, "not_a_match"),  # QC JD JC
        ],
    },
    # After the first 24 moves of the won record of HM1-N-AAAAAAB: pile 6 and R1-R4, R8 are empty;
    # showing 1:QC 2:KC 3:KS 4:AC 5:JS 7:8D 8:2S 9:KH 10:5H 11:KC 12:4C R5:QD R6:AH R7:8D.
    {
        "code": "HM1-N-AAAAAAB",
        "setup": "won:HM1-N-AAAAAAB:24",
        "attempts": [
            ("1 5 9", True, None),  # QC JS KH
            ("R5 5 2", True, None),  # QD JS KC
            ("6 R6", False, "not_playable"),  # pile 6 is empty
            ("1 5 6", False, "not_playable"),
            ("6 6", False, "same_position"),  # the same position is reported before the empty one
            ("4 5", False, "not_a_match"),  # AC + JS
            ("2 3 5", False, "not_a_match"),  # KC KS JS
            ("R6 4", False, "not_a_match"),  # AH + AC = 2
        ],
    },
]


def won_prefix(spec: str) -> list[list[str]]:
    _, code, count = spec.split(":")
    records = json.loads((VECTORS / "won_records.json").read_text(encoding="utf-8"))["records"]
    moves: list[list[str]] = next(r["moves"] for r in records if r["code"] == code)
    return moves[: int(count)]


def card_at(game: Game, name: str) -> str | None:
    try:
        position = parse_position(name)
    except ValueError:
        return None
    card = game.card_at(position)
    return None if card is None else card.name


def build_moves() -> list[dict[str, Any]]:
    out = []
    for spec in MOVES_SPEC:
        setup = spec.get("setup", [])
        if isinstance(setup, str):
            setup = won_prefix(setup)
        game = Game.from_code(spec["code"])
        for move in setup:
            game.push(Move.from_names(move))
        attempts = []
        for text, legal, error in spec["attempts"]:
            names = text.split()
            cards = [card_at(game, name) for name in names]
            assert legal == (error is None), text
            if error == "not_a_match" or legal:  # the hand verdict must be the seed's rule
                ranks = [rank_of(card) for card in cards if card is not None]
                assert len(ranks) == len(names) == len(set(names)), text
                rule = pair_verdict(*ranks) if len(ranks) == 2 else triple_verdict(*ranks)
                assert rule == legal, text
            attempts.append({"move": names, "cards": cards, "legal": legal, "error": error})
        out.append({"code": spec["code"], "setup": setup, "attempts": attempts})
    return out


def build() -> dict[str, Any]:
    check_pair_table()
    pairs = [
        {
            "ranks": [a, b],
            "sum": VALUES[a] + VALUES[b] if a in VALUES and b in VALUES else None,
            "pair": pair_verdict(a, b),
        }
        for a, b in itertools.combinations_with_replacement(RANKS, 2)
    ]
    triples = [
        {"ranks": list(ranks), "triple": triple_verdict(*ranks)}
        for ranks in itertools.combinations_with_replacement(RANKS, 3)
    ]
    return {"format": FORMAT, "pairs": pairs, "triples": triples, "moves": build_moves()}


def dumps(document: dict[str, Any]) -> str:
    """One case per line: readable in a diff, and still plain JSON."""

    def block(items: list[Any], indent: str) -> list[str]:
        return [
            indent + json.dumps(item, ensure_ascii=False) + ("," if i < len(items) - 1 else "")
            for i, item in enumerate(items)
        ]

    lines = ["{", f'  "format": {json.dumps(document["format"], ensure_ascii=False)},']
    lines += ['  "pairs": [', *block(document["pairs"], "    "), "  ],"]
    lines += ['  "triples": [', *block(document["triples"], "    "), "  ],"]
    lines.append('  "moves": [')
    for i, group in enumerate(document["moves"]):
        head = {key: value for key, value in group.items() if key != "attempts"}
        lines.append("    " + json.dumps(head, ensure_ascii=False)[:-1] + ', "attempts": [')
        lines += block(group["attempts"], "      ")
        lines.append("    ]}" + ("," if i < len(document["moves"]) - 1 else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(dumps(build()), encoding="utf-8")
    print(f"wrote {PATH}")
