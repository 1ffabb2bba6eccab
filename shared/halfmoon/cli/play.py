"""``halfmoon play [CODE]``: a solo game in the terminal on the engine.

The loop is a plain function of its input lines, its output stream and a clock, so tests drive
it without a terminal. Moves are typed in the seed's labels (``1 8``, ``R3 5 12``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable
from typing import TextIO

from halfmoon.codes import random_code
from halfmoon.diagram import render
from halfmoon.errors import HalfMoonError, NotAMatchError
from halfmoon.game import Game, Move
from halfmoon.taps import MOVE_ERROR_MESSAGES
from halfmoon.text import format_bar, format_time, word
from halfmoon.view import BoardView


def register_play(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "play",
        help="play a solo game in the terminal",
        description="Play Half Moon in the terminal. Type a move as positions ('1 8', 'R3 5 12'), "
        "'u' to undo, 'n' for a new game, 'e' to switch move-error explanations, 'q' to quit.",
    )
    p.add_argument("code", nargs="?", help="deal code (default: a fresh random deal)")
    p.add_argument("--lang", choices=("it", "en"), default=_default_lang(), help="language (default from $LANG)")
    p.add_argument("--move-errors", action="store_true", help="explain why a move is refused («Errori di mossa»)")
    p.set_defaults(func=run_play)


def _default_lang() -> str:
    return "it" if os.environ.get("LANG", "").lower().startswith("it") else "en"


def run_play(args: argparse.Namespace) -> int:
    try:
        game = Game.from_code(args.code) if args.code else _fresh_game()
    except HalfMoonError as exc:
        print(f"halfmoon play: {exc}", file=sys.stderr)
        return 2
    color = sys.stdout.isatty()
    play(game, _input_lines(), sys.stdout, lang=args.lang, move_errors=args.move_errors, color=color)
    return 0


def _fresh_game() -> Game:
    return Game.from_code(random_code(secrets.SystemRandom()))


def _input_lines() -> Iterable[str]:
    while True:
        try:
            yield input("> ")
        except EOFError:
            return


def screen(game: Game, elapsed_ms: int, message: str, *, lang: str, color: bool = False) -> str:
    """One full screen: the bar, the board, a message line."""
    bar = format_bar(time_ms=elapsed_ms, score=game.score, moves=game.move_count, code=str(game.code), lang=lang)
    return f"{bar}\n\n{render(BoardView.of(game), lang=lang, color=color)}\n\n{message}"


def _refusal(game: Game, command: str, exc: NotAMatchError, lang: str) -> str:
    """«Errori di mossa» for a typed move: the seed's explanation, then the engine's details.

    Two number cards get «La somma deve essere uguale a 11»; a move with a face card (or three
    cards) gets «Servono un Fante, una Donna e un Re».
    """
    cards = [game.card_at(p) for p in Move.parse(command).positions]
    numbers = len(cards) == 2 and all(card is not None and not card.is_face for card in cards)
    return f"✗ {MOVE_ERROR_MESSAGES['sum' if numbers else 'triple'][lang]} ({exc})"


def play(
    game: Game,
    lines: Iterable[str],
    out: TextIO,
    *,
    lang: str = "en",
    move_errors: bool = False,
    color: bool = False,
    clock: Callable[[], float] = time.monotonic,
    new_game: Callable[[], Game] = _fresh_game,
) -> Game:
    """Run the game loop until the input ends or the player quits; return the last game."""
    started = clock()
    message = word("help", lang)

    def show() -> None:
        out.write(screen(game, int((clock() - started) * 1000), message, lang=lang, color=color) + "\n")
        out.flush()

    show()
    for raw in lines:
        command = raw.strip().lower()
        if command in ("q", "quit", "exit"):
            break
        if not command:
            message = word("help", lang)
        elif command in ("u", "undo"):
            try:
                game.undo()
                message = ""
            except HalfMoonError:
                message = word("nothing_to_undo", lang)
        elif command in ("n", "new"):
            game = new_game()
            started = clock()
            message = word("help", lang)
        elif command in ("e", "errors"):
            move_errors = not move_errors
            message = word("move_errors_on" if move_errors else "move_errors_off", lang)
        elif command in ("h", "help", "?"):
            message = word("help", lang)
        else:
            try:
                game.push(Move.parse(command))
                message = ""
            except NotAMatchError as exc:
                message = _refusal(game, command, exc, lang) if move_errors else f"✗ {raw.strip()}"
            except HalfMoonError as exc:  # not a move at all: always say why
                message = f"✗ {exc}"
        if game.is_won:
            elapsed = int((clock() - started) * 1000)
            message = word("won", lang, score=game.score, moves=game.move_count, time=format_time(elapsed))
        elif game.is_stalled:
            message = word("stalled", lang)
        show()
    return game
