"""``halfmoon play [CODE]``: a solo game in the terminal on the engine.

The loop is a plain function of its input lines, a screen and a clock, so tests drive it without
a terminal. Moves are typed in the seed's labels (``1 8``, ``R3 5 12``). On a terminal the screen
is redrawn in place (:class:`~halfmoon.cli.screen.AnsiScreen`, as ``halfmoon join`` does) and the
clock ticks every second while the player types: the input gives ``None`` for each tick.
The clock starts at the first move and stands still while the game is stalled or won.
"""

from __future__ import annotations

import argparse
import os
import queue
import secrets
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from halfmoon.cli.screen import AnsiScreen, PlainScreen, Screen
from halfmoon.codes import random_code
from halfmoon.diagram import render
from halfmoon.errors import HalfMoonError
from halfmoon.game import Game, Move
from halfmoon.text import format_bar, format_time, refusal, word
from halfmoon.view import BoardView

TICK_S = 1.0
WIDTH = 80


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
    live = sys.stdin.isatty() and sys.stdout.isatty()
    screen: Screen = AnsiScreen(sys.stdout) if live else PlainScreen(sys.stdout)
    lines = ticking_lines(sys.stdin, TICK_S) if live else _plain_lines(sys.stdin)
    play(game, lines, screen, lang=args.lang, move_errors=args.move_errors, color=live)
    if live:
        print()
    return 0


def _fresh_game() -> Game:
    return Game.from_code(random_code(secrets.SystemRandom()))


def _plain_lines(stream: TextIO) -> Iterator[str]:
    for line in stream:
        yield line.rstrip("\n")


def ticking_lines(stream: TextIO, tick_s: float) -> Iterator[str | None]:
    """The lines read from ``stream``, with ``None`` each time ``tick_s`` seconds pass without
    one (so that the clock can be redrawn); ends with the stream. A daemon thread reads it."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        try:
            for line in stream:
                lines.put(line.rstrip("\n"))
        except (OSError, ValueError):  # the stream was closed under us: the game is over
            pass
        lines.put(None)

    threading.Thread(target=read, name="halfmoon-play-input", daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=tick_s)
        except queue.Empty:
            yield None
            continue
        if line is None:
            return
        yield line


class SoloClock:
    """The solo game's clock: it starts at the first move and stands still while the game is
    stalled or won (it goes on after an undo). ``now`` is a clock in seconds."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.started = False
        self.spent = 0.0
        self.since: float | None = None

    def follow(self, game: Game, *, moved: bool) -> None:
        """Run once a move has been made on ``game``, unless it is stalled or won."""
        self.started = self.started or moved
        running = self.started and not (game.is_won or game.is_stalled)
        now = self.now()
        if running and self.since is None:
            self.since = now
        elif not running and self.since is not None:
            self.spent += now - self.since
            self.since = None

    def ms(self) -> int:
        running = self.now() - self.since if self.since is not None else 0.0
        return int((self.spent + running) * 1000)


def play(
    game: Game,
    lines: Iterable[str | None],
    out: Screen | TextIO,
    *,
    lang: str = "en",
    move_errors: bool = False,
    color: bool = False,
    clock: Callable[[], float] = time.monotonic,
    new_game: Callable[[], Game] = _fresh_game,
) -> Game:
    """Run the game loop until the input ends or the player quits; return the last game.

    Each line is a command; a ``None`` in ``lines`` is a tick of the clock: only the lines that
    changed are redrawn. ``out`` is a :class:`Screen`, or a text stream to write each screen to
    whole (:class:`PlainScreen`).
    """
    shown = out if isinstance(out, Screen) else PlainScreen(out)
    timer = SoloClock(clock)
    message = word("help", lang)

    def show(*, full: bool = True) -> None:
        shown.draw(screen(game, timer.ms(), message, lang=lang, color=color), full=full)

    show()
    for raw in lines:
        if raw is None:
            show(full=False)
            continue
        command = raw.strip().lower()
        if command in ("q", "quit", "exit"):
            break
        moved = False
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
            timer = SoloClock(clock)
            message = word("help", lang)
        elif command in ("e", "errors"):
            move_errors = not move_errors
            message = word("move_errors_on" if move_errors else "move_errors_off", lang)
        elif command in ("h", "help", "?"):
            message = word("help", lang)
        else:
            said = refusal(game, raw, lang=lang, move_errors=move_errors)
            if said is None:
                game.push(Move.parse(command))
                moved = True
            message = said or ""
        timer.follow(game, moved=moved)
        if game.is_won:
            message = word("won", lang, score=game.score, moves=game.move_count, time=format_time(timer.ms()))
        elif game.is_stalled:
            message = word("stalled", lang)
        show()
    return game


def screen(game: Game, elapsed_ms: int, message: str, *, lang: str, color: bool = False, width: int = WIDTH) -> str:
    """One full screen: the bar, the board, the message wrapped to ``width`` columns (a line the
    terminal wrapped itself would shift the rows that the in-place redraw rewrites)."""
    bar = format_bar(time_ms=elapsed_ms, score=game.score, moves=game.move_count, code=str(game.code), lang=lang)
    said = "\n".join(textwrap.wrap(message, width)) if message else ""
    return f"{bar}\n\n{render(BoardView.of(game), lang=lang, color=color)}\n\n{said}"
