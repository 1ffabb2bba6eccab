"""The tap state machine: how taps on cards select, cancel and remove, exactly as the seed says.

- A first tap selects a card. Tapping the selected card again deselects it.
- A second number card summing to 11 with the first removes the pair.
- Face cards: tap a Jack, a Queen and a King one after another (any order); the third tap
  removes them. The machine never picks the third card for the player.
- Two number cards not summing to 11, or a number card and a face card, cancel the selection
  (nothing is removed). A face card of a rank already selected replaces that card: two K♥, the
  second becomes the selected card.
- With «Errori di mossa» on, a cancelled selection carries the seed's explanation: «La somma deve
  essere uguale a 11» when the selection began with a number card, «Servono un Fante, una Donna
  e un Re» when it began with a face card.
- «Aiuto al posizionamento»: :func:`matching_positions` tells which playable cards can still
  complete a move with the selection; a client dims the others.

The browser client implements the same machine and is tested against the same vectors
(``tests/vectors/taps.json``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from halfmoon.cards import Card
from halfmoon.errors import InvalidPositionError, NotPlayableError
from halfmoon.game import Game, Move
from halfmoon.positions import POSITION_COUNT, parse_position, position_name

#: The seed's two explanations, in the seed's Italian and in English.
MOVE_ERROR_MESSAGES: Final = {
    "sum": {"it": "La somma deve essere uguale a 11", "en": "The sum must equal 11"},
    "triple": {
        "it": "Servono un Fante, una Donna e un Re",
        "en": "A Jack, a Queen and a King are needed",
    },
}


class TapEvent(enum.StrEnum):
    SELECTED = "selected"  # the card joined the selection
    DESELECTED = "deselected"  # the tapped card was selected and no longer is
    REPLACED = "replaced"  # a face card took the place of a selected card of its rank
    CANCELLED = "cancelled"  # the cards do not fit: the selection is emptied, nothing removed
    REMOVED = "removed"  # a pair or a triple: ``move`` says which


@dataclass(frozen=True, slots=True)
class TapResult:
    event: TapEvent
    selection: tuple[int, ...]  # after the tap, in tap order
    move: Move | None = None  # set when event is REMOVED
    reason: str | None = None  # "sum" or "triple" when event is CANCELLED

    def message(self, lang: str = "it") -> str | None:
        """The seed's explanation of a cancelled selection, or None."""
        return MOVE_ERROR_MESSAGES[self.reason][lang] if self.reason else None


def tap(game: Game, selection: tuple[int, ...], position: int) -> TapResult:
    """What tapping ``position`` does to ``selection``; pure: the game is not changed.

    Raises :class:`InvalidPositionError` for an index outside 0-19 and :class:`NotPlayableError`
    when the position holds no playable card; either way nothing changes.
    """
    if not (isinstance(position, int) and 0 <= position < POSITION_COUNT):
        raise InvalidPositionError(f"no such position: {position!r} (position indexes are 0-19)")
    card = game.card_at(position)
    if card is None:
        raise NotPlayableError(f"position {position_name(position)} has no playable card")
    if position in selection:
        return TapResult(TapEvent.DESELECTED, tuple(p for p in selection if p != position))
    if not selection:
        return TapResult(TapEvent.SELECTED, (position,))
    selected = [_card(game, p) for p in selection]
    if not selected[0].is_face:  # a number card is selected (only ever one)
        if not card.is_face and selected[0].rank + card.rank == 11:
            return TapResult(TapEvent.REMOVED, (), Move((selection[0], position)))
        return TapResult(TapEvent.CANCELLED, (), reason="sum")
    if not card.is_face:
        return TapResult(TapEvent.CANCELLED, (), reason="triple")
    same_rank = [p for p, c in zip(selection, selected, strict=False) if c.rank == card.rank]
    if same_rank:
        kept = tuple(p for p in selection if p not in same_rank)
        return TapResult(TapEvent.REPLACED, (*kept, position))
    grown = (*selection, position)
    if len(grown) == 3:
        return TapResult(TapEvent.REMOVED, (), Move(grown))
    return TapResult(TapEvent.SELECTED, grown)


def _card(game: Game, position: int) -> Card:
    card = game.card_at(position)
    if card is None:
        raise NotPlayableError(f"selected position {position_name(position)} has no playable card")
    return card


def matching_positions(game: Game, selection: tuple[int, ...]) -> frozenset[int]:
    """Playable positions whose card can still complete a legal move with the selection.

    With nothing selected, every playable position. The selected positions themselves are not
    included; «Aiuto al posizionamento» dims every playable card outside this set and the selection.
    """
    playable = game.playable()
    if not selection:
        return frozenset(playable)
    chosen = set(selection)
    return frozenset(
        p
        for move in game.legal_moves()
        if chosen.issubset(move.positions)
        for p in move.positions
        if p not in chosen
    )


class Tapper:
    """A game plus a selection: what a client holds while a player taps.

    ``tapper.tap("5")`` returns the :class:`TapResult` and, on a removal, pushes the move on
    the game. ``move_errors`` is the «Errori di mossa» setting (off at first).
    """

    def __init__(self, game: Game, *, move_errors: bool = False) -> None:
        self.game = game
        self.move_errors = move_errors
        self.selection: tuple[int, ...] = ()

    def tap(self, position: int | str) -> TapResult:
        """Tap a position (an index 0-19 or a name such as ``"5"`` or ``"R2"``).

        On a removal the move is pushed on the game. Raises :class:`InvalidPositionError` or
        :class:`NotPlayableError` (an empty position) and then changes neither the selection
        nor the game.
        """
        if isinstance(position, str):
            position = parse_position(position)
        result = tap(self.game, self.selection, position)
        if result.move is not None:
            self.game.push(result.move)
        self.selection = result.selection
        return result

    def message(self, result: TapResult, lang: str = "it") -> str | None:
        """The explanation to show for a tap: only with «Errori di mossa» on."""
        return result.message(lang) if self.move_errors else None

    def matching(self) -> frozenset[int]:
        return matching_positions(self.game, self.selection)

    def undo(self) -> Move:
        """Undo the last move; the selection is dropped (the cards under it may have changed)."""
        move = self.game.undo()
        self.selection = ()
        return move

    def clear(self) -> None:
        self.selection = ()
