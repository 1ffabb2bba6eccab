"""Half Moon, the two-deck solitaire of the Elevens family: the pure rules engine.

Deal codes (:mod:`halfmoon.codes`), deals (:mod:`halfmoon.deal`), the rules
(:mod:`halfmoon.game`), the tap state machine (:mod:`halfmoon.taps`), game records
(:mod:`halfmoon.record`), what players may see (:mod:`halfmoon.view`) and the text diagram
(:mod:`halfmoon.diagram`). No asyncio, no sockets, no clock, no global randomness: the server
and the clients import it and trust it alike.
"""

from halfmoon.cards import Card, card_name, parse_card
from halfmoon.codes import DealCode, daily_code, parse_code, random_code
from halfmoon.deal import Deal
from halfmoon.errors import (
    DuplicatePositionError,
    HalfMoonError,
    IllegalMoveError,
    InvalidCardError,
    InvalidCodeError,
    InvalidPositionError,
    InvalidRecordError,
    NotAMatchError,
    NotPlayableError,
    UndoError,
)
from halfmoon.game import WINNING_MOVES, WINNING_SCORE, Game, Move, Status
from halfmoon.positions import parse_position, position_name
from halfmoon.record import GameRecord, ReplayResult, replay
from halfmoon.taps import MOVE_ERROR_MESSAGES, TapEvent, Tapper, TapResult, matching_positions, tap
from halfmoon.view import BoardView

__version__ = "0.1.0"

__all__ = [
    "MOVE_ERROR_MESSAGES",
    "WINNING_MOVES",
    "WINNING_SCORE",
    "BoardView",
    "Card",
    "Deal",
    "DealCode",
    "DuplicatePositionError",
    "Game",
    "GameRecord",
    "HalfMoonError",
    "IllegalMoveError",
    "InvalidCardError",
    "InvalidCodeError",
    "InvalidPositionError",
    "InvalidRecordError",
    "Move",
    "NotAMatchError",
    "NotPlayableError",
    "ReplayResult",
    "Status",
    "TapEvent",
    "TapResult",
    "Tapper",
    "UndoError",
    "card_name",
    "daily_code",
    "matching_positions",
    "parse_card",
    "parse_code",
    "parse_position",
    "position_name",
    "random_code",
    "replay",
    "tap",
]
