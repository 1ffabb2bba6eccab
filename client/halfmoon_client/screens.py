"""What the terminal shows, as pure functions of the session's view model and the clock.

Every screen is a string of at most 80 columns by 24 lines (the board itself is the seed's
diagram, 63 columns by 12 lines, from :func:`halfmoon.diagram.render`). The terminal layer
draws it in place with :data:`CLEAR` in front.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any, Final

from halfmoon.cards import Card
from halfmoon.cli.screen import CLEAR as CLEAR  # drawn in front of each full screen
from halfmoon.diagram import render
from halfmoon.text import format_bar, format_time
from halfmoon.view import HIDDEN_TOP, BoardView
from halfmoon_client.session import Board, Player, Session
from halfmoon_client.words import columns, say, status_word

WIDTH: Final = 80
HEIGHT: Final = 24
CARDS: Final = 104
_BAR_CELLS: Final = 10


def progress_bar(cards_left: int, cells: int = _BAR_CELLS) -> str:
    """Cards removed out of 104 as a bar of ``cells`` characters.

    >>> progress_bar(52)
    '█████░░░░░'
    """
    done = round((CARDS - max(0, min(CARDS, cards_left))) * cells / CARDS)
    return "█" * done + "░" * (cells - done)


def _notice(session: Session, lang: str) -> str:
    if session.notice is None:
        return ""
    key, values = session.notice
    try:
        return say(key, lang, **values)
    except KeyError:
        return key


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for paragraph in text.splitlines():
        lines.extend(textwrap.wrap(paragraph, width) or [""])
    return lines


def _fit(lines: Iterable[str], width: int, height: int) -> str:
    """Cut lines to the width (the board's ANSI colours are only ever on its own lines) and height."""
    out = []
    for line in lines:
        out.append(line if "\x1b[" in line or len(line) <= width else line[: width - 1] + "…")
    return "\n".join(out[:height])


def rival_line(player: Player, session: Session, local_ms: int, lang: str) -> str:
    """One rival: name, score, moves, and a progress bar while playing (the outcome after)."""
    state = (
        progress_bar(player.cards_left)
        if player.status == "playing"
        else status_word(player.status, lang)[:_BAR_CELLS].ljust(_BAR_CELLS)
    )
    away = "" if player.connected else "⌁"
    return f"{away or ' '}{player.name:<14.14} {player.score:>3} {player.moves:>2} {state}"


def _rivals(session: Session, local_ms: int, lang: str, width: int) -> list[str]:
    rivals = session.opponents()
    head = f"{say('rivals', lang)} · {session.room}"
    if not rivals:
        return [f"{head}  {say('no_rivals', lang)}"]
    cells = [rival_line(p, session, local_ms, lang) for p in rivals]
    per_row = max(1, width // 40)
    rows = [head]
    for i in range(0, len(cells), per_row):
        rows.append("  ".join(cell.ljust(38) for cell in cells[i : i + per_row]).rstrip())
    return rows


def lobby_screen(session: Session, *, lang: str = "en", message: str = "", width: int = WIDTH) -> str:
    lines = [say("lobby", lang, room=session.room, count=len(session.players)), ""]
    for player in session.players.values():
        marks = ("★ " if player.id == session.host else "  ") + player.name
        if player.id == session.you:
            marks += " ←"
        lines.append("  " + marks)
    lines.append("")
    if session.is_host:
        lines.append(say("you_host", lang))
    else:
        host = session.players.get(session.host or "")
        lines.append(say("waiting_host", lang, host=host.name if host else "?"))
    said = " ".join(text for text in (_notice(session, lang), message) if text)
    lines += _wrap(said, width) if said else []
    lines.append(say("help_lobby", lang))
    return _fit(lines, width, HEIGHT - 1)


def countdown_screen(session: Session, *, local_ms: int, lang: str = "en", width: int = WIDTH) -> str:
    remaining = session.countdown_ms(local_ms) or 0
    seconds = (remaining + 999) // 1000
    lines = [say("countdown", lang, seconds=seconds), ""]
    lines += ["  " + p.name for p in session.players.values()]
    return _fit(lines, width, HEIGHT - 1)


def race_screen(
    session: Session,
    *,
    local_ms: int,
    lang: str = "en",
    move_errors: bool = False,
    message: str = "",
    color: bool = False,
    width: int = WIDTH,
) -> str:
    """The racer's screen: the bar, the board, the rivals, a message and the help line."""
    if not session.welcomed:
        return "…"
    if session.race_over:
        return results_screen(session, lang=lang, width=width)
    if session.phase == "lobby":
        return lobby_screen(session, lang=lang, message=message, width=width)
    if session.phase == "countdown":
        return countdown_screen(session, local_ms=local_ms, lang=lang, width=width)
    if session.board is None:  # a spectator after all (joined too late)
        return watch_screen(session, local_ms=local_ms, lang=lang, width=width)
    me = session.me
    time_ms = session.elapsed_ms(me, local_ms) if me else 0
    bar = format_bar(
        time_ms=time_ms, score=me.score if me else 0, moves=me.moves if me else 0, code=session.code, lang=lang
    )
    lines = [bar, "", *render(session.board.view(), lang=lang, color=color).split("\n")]
    lines += [""] * (14 - len(lines))
    lines.append("")
    lines += _rivals(session, local_ms, lang, width)
    said = _wrap(" ".join(text for text in (_notice(session, lang), message) if text), width)
    if session.outcome is not None:
        said.append(say("wait_others", lang))
    lines += said[-3:]
    lines.append(say("help_race", lang, errors=say("on" if move_errors else "off", lang)))
    return _fit(lines, width, HEIGHT - 1)


# -- spectators ------------------------------------------------------------------------------


def compact_board(board: Board, lang: str = "en") -> list[str]:
    """A board in two lines: the 12 piles (top card·count, as the seed's diagram writes a
    position·count under each card, so that ``8♦·8`` and ``10♦·8`` never run together) and the
    8 reserve slots. At most 78 columns.

    >>> from halfmoon.cards import Card
    >>> b = Board([Card.parse("5S"), Card.parse("10D")] + [None] * 18, [8, 7] + [0] * 18)
    >>> compact_board(b)[0]
    ' piles  5♠·8 10♦·7  --·0  --·0  --·0  --·0  --·0  --·0  --·0  --·0  --·0  --·0'
    """
    view: BoardView = board.view()

    def shown(pos: int, card: Card | None) -> str:
        if pos in board.hidden:
            return HIDDEN_TOP  # a card not every racer still playing has seen yet
        return "--" if card is None else card.symbol(lang=lang)

    cells = [f"{shown(pos, card):>3}·{view.counts[pos]}" for pos, card in enumerate(view.tops[:12])]
    slots = [f"{shown(pos, card):>3}" for pos, card in enumerate(view.tops[12:], 12)]
    return [say("piles", lang) + " ".join(cells), say("reserve", lang) + " ".join(slots)]


def player_header(player: Player, session: Session, local_ms: int, lang: str) -> str:
    time = format_time(session.elapsed_ms(player, local_ms))
    away = "" if player.connected else " ⌁"
    return (
        f"{player.name:<14.14} {status_word(player.status, lang):<13} "
        f"{say('watch_line', lang, score=player.score, moves=player.moves, left=player.cards_left)} "
        f"{progress_bar(player.cards_left)} {time}{away}"
    )


def watch_pages(session: Session, *, height: int = HEIGHT) -> int:
    """How many pages the spectator's screen needs (players are cycled when they do not fit)."""
    per_page = max(1, (height - 3) // 3)
    return max(1, -(-len(session.players) // per_page))


def watch_screen(
    session: Session, *, local_ms: int, lang: str = "en", page: int = 0, width: int = WIDTH, height: int = HEIGHT
) -> str:
    """The spectator's screen: every player's board, live; page ``page`` when they do not all fit.

    With one player the board is the full diagram; otherwise three lines per player.
    """
    if not session.welcomed:
        return "…"
    if session.race_over:
        return results_screen(session, lang=lang, width=width)
    watchers = say("spectators", lang, count=session.spectators)
    try:
        phase = say(f"phase_{session.phase}", lang)
    except KeyError:
        phase = str(session.phase)
    head = f"{session.room} · {phase} · {session.code or '—'} · {watchers}"
    second = ""
    if session.phase == "countdown":
        remaining = ((session.countdown_ms(local_ms) or 0) + 999) // 1000
        second = say("countdown", lang, seconds=remaining)
    players = list(session.players.values())
    if len(players) == 1 and players[0].id in session.boards and not session.boards[players[0].id].hidden:
        player = players[0]
        lines = [head, player_header(player, session, local_ms, lang), second]
        lines += render(session.boards[player.id].view(), lang=lang).split("\n")
        return _fit(lines, width, height - 1)
    per_page = max(1, (height - 3) // 3)
    pages = watch_pages(session, height=height)
    page %= pages
    if pages > 1:
        head += " · " + say("page", lang, page=page + 1, pages=pages)
    lines = [head, second]
    for player in players[page * per_page : (page + 1) * per_page]:
        lines.append(player_header(player, session, local_ms, lang))
        board = session.boards.get(player.id)
        lines += compact_board(board, lang) if board is not None else ["", ""]
    return _fit(lines, width, height - 1)


# -- the end -----------------------------------------------------------------------------------


def _entry(entry: dict[str, Any], players: dict[str, Player], index: int) -> tuple[str, ...]:
    pid = entry.get("player") or entry.get("id")
    known = players.get(pid) if isinstance(pid, str) else None
    name = entry.get("name") or (known.name if known else str(pid))
    status = entry.get("outcome") or entry.get("status") or (known.status if known else "")
    time_ms = entry.get("time_ms", entry.get("elapsed_ms"))
    rank = entry.get("rank", index + 1)
    return (
        str(rank),
        str(name),
        str(status),
        str(entry.get("score", "")),
        str(entry.get("moves", "")),
        format_time(time_ms) if isinstance(time_ms, int) else "",
    )


def results_table(results: list[dict[str, Any]], players: dict[str, Player], lang: str = "en") -> list[str]:
    """The ranked results as aligned text rows, a header first."""
    head = columns("results_head", lang)
    rows = [_entry(entry, players, i) for i, entry in enumerate(results)]
    rows = [(r[0], r[1], status_word(r[2], lang), *r[3:]) for r in rows]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    right = {0, 3, 4, 5}

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()

    return [line(head)] + [line(row) for row in rows]


def results_screen(session: Session, *, lang: str = "en", width: int = WIDTH) -> str:
    lines = [say("results", lang, room=session.room, code=session.code or "—"), ""]
    lines += results_table(session.results or [], session.players, lang)
    if session.outcome is not None:
        lines += ["", *_wrap(_outcome_text(session, lang), width)]
    if session.verified is not None:
        lines += ["", *_wrap(say("verified" if session.verified else "not_verified", lang), width)]
    return _fit(lines, width, HEIGHT - 1)


def _outcome_text(session: Session, lang: str) -> str:
    outcome = session.outcome
    if outcome is None:
        return ""
    try:
        return say(
            "outcome_" + outcome.outcome, lang, score=outcome.score, moves=outcome.moves, time_ms=outcome.time_ms
        )
    except KeyError:
        return outcome.outcome
