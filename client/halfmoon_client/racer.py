"""The racer's side of the terminal client, sans I/O: typed lines in, messages out, a screen.

A :class:`Racer` wraps a :class:`~halfmoon_client.session.Session` with what only a human
racer has: the «Errori di mossa» setting, the language, and the message line. It turns each
typed line into the protocol messages to send (checking a move on the visible board first, as
the server will), turns the server's refusals into plain words, and draws the screen. The
terminal layer (:mod:`halfmoon_client.terminal`) only moves lines, messages and screens.
"""

from __future__ import annotations

from typing import Any

from halfmoon.codes import DealCode
from halfmoon.errors import HalfMoonError
from halfmoon.game import Game
from halfmoon.positions import parse_position
from halfmoon.taps import MOVE_ERROR_MESSAGES
from halfmoon.text import refusal, word
from halfmoon_client.commands import parse_command
from halfmoon_client.ghost import Ghost
from halfmoon_client.screens import race_screen
from halfmoon_client.session import Message, Session
from halfmoon_client.strategy import mirror
from halfmoon_client.words import say


class Racer:
    """One human racer. ``command(line)`` returns the messages to send; ``screen()`` draws."""

    def __init__(
        self,
        session: Session | None = None,
        *,
        lang: str = "en",
        move_errors: bool = False,
        time_limit_s: int | None = None,
        series: int | None = None,
        stay: bool = False,
        ghost: Ghost | None = None,
    ) -> None:
        self.session = session or Session()
        #: a stored game raced as a ghost (``--ghost``): its lane runs on the race's clock
        self.ghost = ghost
        self.time_limit_s = time_limit_s  # what the host's ``s`` asks for (None: the server's default)
        #: the host's ``s`` makes the race the first of a series of this many (None: one race)
        self.series = series
        #: stay in the room after a race, for rematches (``r`` proposes, ``a`` accepts, ``q`` leaves)
        self.stay = stay
        #: no more typed lines will come (a stay ends with the race then)
        self.input_closed = False
        self.lang = lang
        self.move_errors = move_errors
        self.message = ""
        self.quit = False
        self._sent_moves: dict[int, tuple[str, ...]] = {}

    @property
    def done(self) -> bool:
        """The racer quit, or the race is over (and the racer does not stay for a rematch)."""
        return self.quit or (self.session.race_over and (not self.stay or self.input_closed))

    # -- typed lines ----------------------------------------------------------------------------

    def command(self, line: str) -> list[Message]:
        """Handle one typed line; return the messages to send (possibly none)."""
        session = self.session
        cmd = parse_command(line)
        self.message = ""
        if cmd.kind == "quit":
            self.quit = True
            return [session.leave_message()]
        if cmd.kind in ("help", "redraw"):
            self.message = say("help_race", self.lang, errors=say("on" if self.move_errors else "off", self.lang))
            return []
        if cmd.kind == "errors":
            self.move_errors = not self.move_errors
            self.message = word("move_errors_on" if self.move_errors else "move_errors_off", self.lang)
            return []
        if cmd.kind == "invalid":
            self.message = refusal(None, line, lang=self.lang) or say("refused", self.lang, text=line.strip())
            return []
        if cmd.kind == "start":
            if session.phase != "lobby":
                self.message = say("refused", self.lang, text=line.strip())
                return []
            if not session.is_host:
                self.message = say("not_host", self.lang)
                return []
            under_way = session.series is not None and not session.series.get("over")
            series = None if under_way else self.series  # a series cannot start inside another
            return [session.start_message(self.time_limit_s, series)]
        if cmd.kind == "rematch":
            if not session.race_over or session.role != "player":
                self.message = say("no_rematch", self.lang)
                return []
            return [session.rematch_message()]
        if cmd.kind == "accept":
            if not session.may_accept:
                self.message = say("no_rematch", self.lang)
                return []
            return [session.accept_message()]
        if session.phase in ("lobby", "countdown"):
            self.message = say("not_started", self.lang)
            return []
        if not session.playing:
            self.message = say("not_playing", self.lang)
            return []
        if cmd.kind == "undo":
            return [session.undo_message()]
        if cmd.kind == "give_up":
            return [session.give_up_message()]
        return self._move(cmd.positions, cmd.text)

    def _board_game(self) -> Game | None:
        """The visible board as a game (the code only names the deal; a sealed race has none yet)."""
        session = self.session
        if session.board is None:
            return None
        try:
            code = DealCode.parse(session.code) if session.code else None
        except HalfMoonError:
            code = None  # a code this engine cannot read: the board is enough
        return mirror(session.board.view(), code)

    def _move(self, positions: tuple[str, ...], text: str) -> list[Message]:
        """Check the move on the visible board, as the server will (legality depends only on the
        tops); a refused move becomes the message line, in the racer's language."""
        session = self.session
        game = self._board_game()
        if game is not None:
            said = refusal(game, " ".join(positions), lang=self.lang, move_errors=self.move_errors)
            if said is not None:
                self.message = said
                return []
        message = session.move_message(list(positions))
        self._sent_moves[message["id"]] = positions
        return [message]

    # -- server messages --------------------------------------------------------------------------

    def receive(self, message: Any, local_ms: int) -> str:
        """Feed one server message to the session; a refusal becomes the message line.

        Raises :class:`~halfmoon_client.errors.ProtocolError` like :meth:`Session.receive`.
        """
        kind = self.session.receive(message, local_ms)
        if kind == "error" and self.session.error is not None:
            self.message = self._error_text(message, *self.session.error)
        elif kind == "moved" and message.get("player") == self.session.you:
            self._sent_moves.pop(message.get("id", -1), None)
            self.message = ""
        return kind

    def _error_text(self, message: Message, code: str, text: str) -> str:
        if code == "illegal_move":
            positions = self._sent_moves.pop(message.get("id", -1), ())
            game = self._board_game()
            typed = " ".join(positions)
            said = refusal(game, typed, lang=self.lang, move_errors=self.move_errors) if positions else None
            if said is not None:
                return said
            # the board here took the move: say the server's verdict without its English reason
            cards = [game.card_at(parse_position(p)) for p in positions] if game is not None else []
            if not self.move_errors or message.get("reason") != "not_a_match" or not cards or None in cards:
                return say("refused", self.lang, text=typed or "—")
            symbols = ", ".join(card.symbol(lang=self.lang) for card in cards if card is not None)
            reason = "triple" if cards[0] is not None and cards[0].is_face else "sum"
            return say("refused", self.lang, text=f"{typed} ({symbols}): {MOVE_ERROR_MESSAGES[reason][self.lang]}")
        if code == "nothing_to_undo":
            return word("nothing_to_undo", self.lang)
        if code in ("not_host", "not_started", "not_playing", "no_rematch"):
            return say(code, self.lang)
        return say("refused", self.lang, text=text)

    # -- the screen -----------------------------------------------------------------------------

    def screen(self, local_ms: int, *, color: bool = False) -> str:
        screen = self._race_screen(local_ms, color=color)
        me = self.session.me
        if self.ghost is not None and self.session.code is not None and self.session.code != self.ghost.code:
            return screen + "\n" + say("ghost_other_deal", self.lang, code=self.ghost.code)  # its lane would mislead
        if self.ghost is None or me is None or self.session.phase in (None, "lobby", "countdown"):
            return screen
        over = self.session.outcome is not None or self.session.race_over
        return screen + "\n" + self.ghost.lane(self.session.elapsed_ms(me, local_ms), over=over, lang=self.lang)

    def _race_screen(self, local_ms: int, *, color: bool = False) -> str:
        return race_screen(
            self.session,
            local_ms=local_ms,
            lang=self.lang,
            move_errors=self.move_errors,
            message=self.message,
            color=color,
            stay=self.stay,
        )
