"""What the terminal shows, as pure functions of the session's view model and the clock.

Every screen is a string of at most 80 columns by 24 lines (the board itself is the seed's
diagram, 63 columns by 12 lines, from :func:`halfmoon.diagram.render`). The terminal layer
draws it in place with :data:`CLEAR` in front.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterable
from typing import Any, Final

from halfmoon.cards import Card
from halfmoon.cli.screen import CLEAR as CLEAR  # drawn in front of each full screen
from halfmoon.diagram import render
from halfmoon.protocol import SPLIT_MOVES
from halfmoon.text import format_bar, format_time
from halfmoon.view import HIDDEN_TOP, BoardView
from halfmoon_client.session import Board, Player, Session
from halfmoon_client.words import columns, say, status_word

WIDTH: Final = 80
HEIGHT: Final = 24
CARDS: Final = 104
_BAR_CELLS: Final = 10
#: a lane's columns besides its track: marks, name, score, moves, the spaces and ``←``
_LANE_FIGURES: Final = 28


def progress_bar(cards_left: int, cells: int = _BAR_CELLS) -> str:
    """A racer on the race's track: a marker at the cards removed out of 104, the way behind it
    drawn. (A won game's 48 moves remove all 104; a card removed is worth 5 points, so the
    furthest marker is the highest score.)

    >>> progress_bar(104), progress_bar(52), progress_bar(0)
    ('●·········', '━━━━●·····', '━━━━━━━━━●')
    """
    done = round((CARDS - max(0, min(CARDS, cards_left))) * (cells - 1) / CARDS)
    return "━" * done + "●" + "·" * (cells - 1 - done)


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


def rival_line(
    player: Player,
    session: Session,
    local_ms: int,
    lang: str,
    leaders: frozenset[str] | set[str] = frozenset(),
    cells: int = _BAR_CELLS,
) -> str:
    """One racer's lane of the track: ``▶`` when they lead, ``⌁`` when away, name, score, moves,
    and their marker on a track of ``cells`` while they play (the outcome after); ``←`` marks you."""
    state = (
        progress_bar(player.cards_left, cells)
        if player.status == "playing"
        else status_word(player.status, lang)[:cells].ljust(cells)
    )
    lead = "▶" if player.id in leaders else " "
    away = " " if player.connected else "⌁"
    you = " ←" if player.id == session.you else ""
    return f"{lead}{away}{shown_name(player, 14, lang):<14.14} {player.score:>3} {player.moves:>2} {state}{you}"


def shown_name(player: Player, width: int, lang: str = "en") -> str:
    """A player's name in ``width`` characters, a bot's cut short to keep its ``[bot]`` mark in sight."""
    if not player.bot:
        return player.name
    mark = say("bot_mark", lang)
    return f"{player.name[: max(1, width - len(mark) - 1)]} {mark}"


def _rivals(session: Session, local_ms: int, lang: str, width: int) -> list[str]:
    """The race's track: every racer (you too) in the order they joined, the leader marked."""
    head = f"{say('rivals', lang)} · {session.room} · {say('track_axis', lang)}"
    if not session.opponents():
        head += "  " + say("no_rivals", lang)
    leaders = session.leaders()
    # up to four racers: a lane per line and a long track (2 cards a cell); more: two per line
    wide = len(session.players) <= 4
    per_row = 1 if wide else max(1, width // 40)
    track = width - _LANE_FIGURES if wide else _BAR_CELLS
    cells = [rival_line(p, session, local_ms, lang, leaders, track) for p in session.players.values()]
    rows = [head]
    for i in range(0, len(cells), per_row):
        rows.append("  ".join(cell.ljust(38) for cell in cells[i : i + per_row]).rstrip())
    return rows


def lobby_screen(session: Session, *, lang: str = "en", message: str = "", width: int = WIDTH) -> str:
    lines = [say("lobby", lang, room=session.room, count=len(session.players)), ""]
    if session.round > 1:
        lines[0] += " · " + say("round", lang, round=session.round)
    for player in session.players.values():
        marks = ("★ " if player.id == session.host else "  ") + player.name
        if player.id == session.you:
            marks += " ←"
        lines.append("  " + marks)
    if session.seated:
        lines.append(say("seated", lang, names=", ".join(p.name for p in session.seated.values())))
    lines.append("")
    if session.may_accept:
        lines.append(say("may_accept", lang))
    elif session.quick and session.round == 1:
        lines.append(say("quick_lobby", lang))
    elif session.is_host:
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
    stay: bool = False,
) -> str:
    """The racer's screen: the bar, the board, the rivals, a message and the help line
    (``stay``: the racer stays after a race, for rematches)."""
    if not session.welcomed:
        return "…"
    if session.race_over:
        screen = results_screen(session, lang=lang, width=width)
        if not stay:
            return screen
        return "\n".join([screen, *_wrap(" ".join([message, say("help_rematch", lang)]).strip(), width)])
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
        ranking = ranking_text(session.outcome.ranked, session.outcome.unranked_reason, lang)
        said += [*_wrap(ranking, width), say("wait_others", lang)] if ranking else [say("wait_others", lang)]
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
    """A player as spectators see them: ``▶`` when they lead, their figures, their marker on
    the race's track and their time."""
    time = format_time(session.elapsed_ms(player, local_ms))
    away = "" if player.connected else " ⌁"
    lead = "▶" if player.id in session.leaders() else " "
    return (
        f"{lead}{shown_name(player, 13, lang):<13.13} {status_word(player.status, lang):<13} "
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
    if known is not None and known.bot:
        name = f"{name} [bot]"
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


def _splits(entry: dict[str, Any]) -> tuple[str, ...]:
    """A result's splits (docs/protocol.md) as times, ``—`` where not reached."""
    splits = entry.get("splits")
    if not isinstance(splits, list) or len(splits) != len(SPLIT_MOVES):
        return ("",) * len(SPLIT_MOVES)
    return tuple(format_time(ms) if isinstance(ms, int) else "—" for ms in splits)


def results_table(
    results: list[dict[str, Any]], players: dict[str, Player], lang: str = "en", width: int = WIDTH
) -> list[str]:
    """The ranked results as aligned text rows, a header first; with a race's splits, a column
    for each (names are cut short rather than the last split off the screen)."""
    head = columns("results_head", lang)
    rows = [_entry(entry, players, i) for i, entry in enumerate(results)]
    rows = [(r[0], r[1], status_word(r[2], lang), *r[3:]) for r in rows]
    if any("splits" in entry for entry in results):
        head = (*head, *(str(n) for n in SPLIT_MOVES))
        rows = [(*row, *_splits(entry)) for row, entry in zip(rows, results, strict=True)]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    spare = width - (sum(widths) + 2 * (len(widths) - 1))
    if spare < 0 and widths[1] + spare >= len(head[1]):
        widths[1] += spare
        rows = [(r[0], r[1] if len(r[1]) <= widths[1] else r[1][: widths[1] - 1] + "…", *r[2:]) for r in rows]
    right = {0, *range(3, len(head))}

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()

    return [line(head)] + [line(row) for row in rows]


def results_screen(session: Session, *, lang: str = "en", width: int = WIDTH) -> str:
    lines = [say("results", lang, room=session.room, code=session.code or "—"), ""]
    lines += results_table(session.results or [], session.players, lang, width)
    if any("splits" in entry for entry in session.results or []):
        lines.append(say("splits_note", lang))
    if session.series is not None:
        lines += ["", *series_table(session.series, lang)]
    if session.outcome is not None:
        lines += ["", *_wrap(_outcome_text(session, lang), width)]
    if session.verified is not None:
        lines += ["", *_wrap(say("verified" if session.verified else "not_verified", lang), width)]
    return _fit(lines, width, HEIGHT - 1)


def series_table(series: dict[str, Any], lang: str = "en") -> list[str]:
    """A series' points table as text: its title (which race of how many, or over), then a
    row per player, best first, as the server ranks them."""
    key = "series_over" if series.get("over") else "series_head"
    lines = [say(key, lang, race=series["race"], races=series["races"])]
    for rank, line in enumerate(series.get("table") or [], 1):
        points = say("points", lang, points=line["points"])
        lines.append(f"{rank:>2}. {str(line['name'])[:20]:<20} {points:>10}  {format_time(int(line['time_ms']))}")
    return lines


def _outcome_text(session: Session, lang: str) -> str:
    outcome = session.outcome
    if outcome is None:
        return ""
    try:
        said = say(
            "outcome_" + outcome.outcome, lang, score=outcome.score, moves=outcome.moves, time_ms=outcome.time_ms
        )
    except KeyError:
        said = outcome.outcome
    return f"{said} {ranking_text(outcome.ranked, outcome.unranked_reason, lang)}".rstrip()


def ranking_text(ranked: bool | None, reason: str | None, lang: str = "en") -> str:
    """Whether a result is ranked, and why not, as a sentence ("" when the server did not say)."""
    if ranked is None:
        return ""
    if ranked:
        return say("ranked_result", lang)
    try:
        return say(f"unranked_{reason}", lang)
    except KeyError:
        return say("unranked_casual", lang) if reason is None else str(reason)


def _ranked_cell(game: dict[str, Any], lang: str) -> str:
    if game.get("ranked", True):
        return say("rank_yes", lang)
    reason = str(game.get("unranked_reason"))
    try:
        return say(f"rank_{reason}", lang)
    except KeyError:
        return reason


def _aligned(head: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    return [
        "  ".join(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in [head, *rows]
    ]


def history_lines(history: dict[str, Any], server: str, lang: str = "en") -> list[str]:
    """``halfmoon history``: the player's counts, streak, best time per deal and latest games
    (``GET /api/me/history``), a code the server still hides shown as hidden."""
    name = history.get("name") or "—"
    lines = [say("history_title", lang, name=name, server=server), ""]
    if not history.get("games"):
        return [*lines, say("history_none", lang)]
    today = say("history_today_done" if history.get("daily_today") else "history_today_open", lang)
    # streaks and bests count ranked games only; casual ones (their code known in advance) apart
    ranked = {"games": history.get("ranked_games", 0), "wins": history.get("wins", 0)}
    lines += [say("history_counts", lang, **ranked, clean_wins=history.get("clean_wins", 0))]
    lines += [say("history_streak", lang, streak=history.get("streak", 0), today=today)]
    casual = history.get("casual") or {}
    lines += [say("history_casual", lang, **{k: casual.get(k, 0) for k in ("games", "wins", "clean_wins")}), ""]
    head = columns("history_head", lang)

    def row(game: dict[str, Any]) -> tuple[str, ...]:
        day = time.strftime("%Y-%m-%d", time.gmtime(int(game.get("finished_at", 0)) / 1000))
        mode = str(game.get("mode"))
        kind = say(f"mode_{mode}", lang) if mode in ("race", "solo", "daily") else mode
        code = str(game["code"]) if game.get("code") else say("history_hidden", lang)
        outcome = status_word(str(game.get("outcome")), lang)
        return (day, kind, code, outcome, str(game.get("score")), format_time(int(game.get("time_ms", 0))),
                "✓" if game.get("clean") else "", _ranked_cell(game, lang))

    for key, games in (("history_best", history.get("best", [])), ("history_best_casual", casual.get("best", []))):
        best = [row(game) for game in games]
        if best:
            fastest = _aligned((head[2], head[5], head[6]), [(r[2], r[5], r[6]) for r in best], {1})
            lines += [say(key, lang), *fastest, ""]
    lines += [say("history_recent", lang), *_aligned(head, [row(g) for g in history.get("recent", [])], {4, 5})]
    return lines


def queue_screen(
    count: int, starts_at: int | None, offer: bool, ghost: dict[str, Any] | None, *, local_ms: int, lang: str = "en"
) -> str:
    """The quick-race queue as the terminal shows it: how many are in the player's group and the
    countdown to its start (``starts_at`` on the local clock), or — alone long enough — the offer
    to keep waiting (and a recent race's ghost to race, when there is one)."""
    if starts_at is None:
        lines = [say("quick_alone", lang)]
    else:
        seconds = max(0, -(-(starts_at - local_ms) // 1000))
        lines = [say("quick_count", lang, count=count, seconds=seconds)]
    if offer:
        lines += _wrap(say("quick_offer", lang), WIDTH)
        if ghost:
            lines += _wrap(say("quick_ghost", lang, name=ghost["name"], code=ghost["code"], game=ghost["game"]), WIDTH)
    lines.append(say("help_queue", lang))
    return "\n".join(lines)
