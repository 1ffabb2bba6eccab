"""The text diagram: the seed's arc, the reserve in two rows of four, labels under each card."""

from __future__ import annotations

import re

from halfmoon import BoardView, Game, Move
from halfmoon.diagram import render


def label_places(text: str) -> dict[str, tuple[int, int]]:
    """Where each 'position·count' label stands: (line, column of its centre)."""
    places = {}
    for row, line in enumerate(text.splitlines()):
        for match in re.finditer(r"(R?\d+)·(\d)", line):
            places[match.group(1)] = (row, (match.start() + match.end()) // 2)
    return places


def test_the_arc_and_the_reserve() -> None:
    text = render(BoardView.of(Game.from_code("HM1-N-AAAAAAB")))
    at = label_places(text)
    assert len(at) == 20
    left = [at[p] for p in ("1", "2", "3")]
    top = [at[str(p)] for p in range(4, 11)]
    right = [at[p] for p in ("11", "12")]
    # three piles up the left side, pile 1 lowest
    assert len({col for _, col in left}) == 1 and left[0][0] > left[1][0] > left[2][0]
    # seven along the top, left to right, above everything else
    assert len({row for row, _ in top}) == 1 and [c for _, c in top] == sorted(c for _, c in top)
    assert top[0][0] < min(row for row, _ in left + right)
    # two on the right, below the corner: 11 above 12, right of everything
    assert len({col for _, col in right}) == 1 and right[0][0] < right[1][0]
    assert right[0][1] > max(col for _, col in top)
    # the reserve: two rows of four in the middle of the arc, R1-R4 above R5-R8
    upper = [at[f"R{n}"] for n in range(1, 5)]
    lower = [at[f"R{n}"] for n in range(5, 9)]
    assert len({row for row, _ in upper}) == 1 and len({row for row, _ in lower}) == 1
    assert upper[0][0] < lower[0][0]
    assert [c for _, c in upper] == [c for _, c in lower] == sorted(c for _, c in upper)
    assert left[0][1] < min(c for _, c in upper) and max(c for _, c in upper) < right[0][1]


def test_each_card_stands_above_its_label() -> None:
    lines = render(BoardView.of(Game.from_code("HM1-N-AAAAAAB"))).splitlines()
    # pile 1 shows 10♥ (8 cards), R4 holds A♠
    row, col = label_places("\n".join(lines))["1"]
    assert "10♥" in lines[row - 1][max(0, col - 4) : col + 4] and "1·8" in lines[row]
    row, col = label_places("\n".join(lines))["R4"]
    assert "A♠" in lines[row - 1][max(0, col - 4) : col + 4] and "R4·1" in lines[row]


def test_counts_empty_places_selection_and_dimming() -> None:
    game = Game.from_code("HM1-N-AAAAAAB")
    game.push(Move.parse("1 R4"))
    text = render(BoardView.of(game), selection={1}, dimmed={2})
    assert "1·7" in text and "R4·0" in text
    assert "[   ]" in text  # the empty slot R4
    assert "> 3♠<" in text  # pile 2 selected
    assert "( 8♣)" in text  # pile 3 dimmed


def test_italian_letters_and_colour() -> None:
    view = BoardView.of(Game.from_code("HM1-N-AAAAAAB"))
    italian = render(view, lang="it")
    assert "R♠" in italian and "D♣" in italian and "V♣" in italian  # K♠ on 8, Q♣ on 5, J♣ on 12
    assert "\x1b[" not in italian
    coloured = render(view, color=True)
    assert "\x1b[31m" in coloured
    assert re.sub(r"\x1b\[\d+m", "", coloured) == render(view)
