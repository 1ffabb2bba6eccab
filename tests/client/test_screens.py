"""The screens are pure functions of the view model: 80 columns, 24 lines, the seed's diagram."""

from __future__ import annotations

import argparse
import re

from halfmoon import text
from halfmoon.cards import Card
from halfmoon.cli import build_parser
from halfmoon.diagram import render
from halfmoon.game import Game
from halfmoon.view import BoardView
from halfmoon_client import words
from halfmoon_client.racer import Racer
from halfmoon_client.screens import compact_board, progress_bar, race_screen, results_table, watch_pages, watch_screen
from halfmoon_client.session import Board, Session
from tests.client.support import CODE, T0, board_from_screen, moved, started, summary, welcome

SEVEN_RIVALS = [
    summary(f"p{i}", name) for i, name in enumerate(["Ada", "Bob", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal"], 1)
]


def fits(screen: str) -> None:
    lines = screen.split("\n")
    assert len(lines) <= 23, len(lines)  # the 24th line is the prompt
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)


def running(players: list[dict[str, object]] | None = None) -> tuple[Session, Game]:
    session = Session()
    session.receive(welcome(1, players=players or SEVEN_RIVALS), T0)
    game = Game.from_code(CODE)
    session.receive(started(2, game), T0)
    return session, game


def test_the_race_screen_has_the_bar_the_seeds_diagram_and_every_rival_in_80x24() -> None:
    session, game = running()
    move = next(game.legal_moves())
    game.push(move)
    session.receive(moved(3, "p1", game, move.names(), changes=True), T0)
    rival = Game.from_code(CODE)
    for _ in range(3):
        rival.push(next(rival.legal_moves()))
    session.receive(moved(4, "p5", rival, ["1", "2"], changes=False, elapsed_ms=9000), T0)
    screen = race_screen(session, local_ms=T0 + 65_000)
    fits(screen)
    assert screen.startswith("Time 1:05  ·  Score 10  ·  Moves 1  ·  Code HM1-N-AAAAAAB")
    assert render(BoardView.of(game)) in screen  # the seed's diagram, as the engine draws it
    assert board_from_screen(screen) == {
        name: (None if (c := game.card_at(i)) is None else c.symbol()) for i, name in enumerate(
            [str(n) for n in range(1, 13)] + [f"R{n}" for n in range(1, 9)])
    }  # fmt: skip
    for name in ["Bob", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal"]:
        assert name in screen
    eve = next(line for line in screen.split("\n") if "Eve" in line)
    assert f" Eve{' ' * 12}{rival.score:>3}  3 {progress_bar(rival.cards_left)}" in eve


def test_italian_screen_uses_the_seeds_letters_and_words() -> None:
    session, _ = running([summary("p1", "Ada")])
    screen = race_screen(session, local_ms=T0, lang="it")
    fits(screen)
    assert screen.startswith("Tempo 0:00  ·  Punti 0  ·  Mosse 0  ·  Codice HM1-N-AAAAAAB")
    assert "[ D♣]" in screen  # Donna, not Q
    assert "nessun avversario" in screen


def test_lobby_tells_the_host_to_start_and_the_others_to_wait() -> None:
    session = Session()
    session.receive(welcome(1, players=[summary("p1", "Ada"), summary("p2", "Bob")]), T0)
    screen = race_screen(session, local_ms=T0)
    assert "You are the host" in screen and "★ Ada ←" in screen
    session.receive({"type": "player_joined", "v": 1, "seq": 2, "player": summary("p3", "Cy"), "host": "p1"}, T0)
    assert "Cy joined." in race_screen(session, local_ms=T0)
    guest = Session()
    guest.receive(welcome(1, you="p2", players=[summary("p1", "Ada"), summary("p2", "Bob")]), T0)
    assert "Waiting for Ada to start" in race_screen(guest, local_ms=T0)


def test_countdown_counts_down() -> None:
    session = Session()
    session.receive(welcome(1, phase="countdown", starts_at=T0 + 2500), T0)
    assert "The race starts in 3…" in race_screen(session, local_ms=T0)
    assert "The race starts in 1…" in race_screen(session, local_ms=T0 + 2000)


def test_stall_win_and_waiting_messages() -> None:
    session, game = running([summary("p1", "Ada"), summary("p2", "Bob")])
    move = next(game.legal_moves())
    game.push(move)
    session.receive(moved(3, "p1", game, move.names(), changes=True, status="stalled"), T0)
    screen = race_screen(session, local_ms=T0)
    fits(screen)
    assert "Stalled: no pair summing to 11" in screen and "give up (g)" in screen
    session.receive(
        {"type": "game_over", "v": 1, "seq": 4, "outcome": "won", "score": 520, "moves": 48, "time_ms": 754_000},
        T0,
    )
    screen = race_screen(session, local_ms=T0)
    assert "You won! All 104 cards removed: 520 points in 48 moves, time 12:34." in screen
    assert "Waiting for the others to finish" in screen


def test_results_table() -> None:
    results = [
        {"rank": 1, "player": "p2", "name": "Bob", "score": 520, "moves": 48, "time_ms": 600_000, "outcome": "won"},
        {"rank": 2, "player": "p1", "name": "Ada", "score": 75, "moves": 7, "time_ms": 61_000, "outcome": "gave_up"},
    ]
    assert results_table(results, {}) == [
        "#  Player  Outcome  Score  Moves   Time",
        "1  Bob     won        520     48  10:00",
        "2  Ada     gave up     75      7   1:01",
    ]
    session, _ = running([summary("p1", "Ada"), summary("p2", "Bob")])
    session.receive({"type": "race_over", "v": 1, "seq": 9, "results": results}, T0)
    screen = race_screen(session, local_ms=T0)
    assert screen.startswith("Results — room K7WQ2M · HM1-N-AAAAAAB") and "Bob     won" in screen


def test_spectator_sees_every_board_compactly_and_cycles_pages() -> None:
    session = Session()
    session.receive(welcome(1, you=None, token=None, players=SEVEN_RIVALS), T0)
    games = {f"p{i}": Game.from_code(CODE) for i in range(1, 9)}
    games["p3"].push(next(games["p3"].legal_moves()))
    session.receive(started(2, None, games), T0)
    assert watch_pages(session) == 2
    first, second = watch_screen(session, local_ms=T0, page=0), watch_screen(session, local_ms=T0, page=1)
    fits(first)
    fits(second)
    assert "page 1/2" in first and "Ada" in first and "Hal" not in first
    assert "page 2/2" in second and "Hal" in second
    assert compact_board(session.boards["p3"])[0] in first
    assert " piles " in first and " res. " in first
    one = Session()
    one.receive(welcome(1, you=None, token=None), T0)
    one.receive(started(2, None, {"p1": games["p1"]}), T0)
    assert render(BoardView.of(games["p1"])) in watch_screen(one, local_ms=T0)  # one player: the full diagram


def test_a_hidden_top_is_drawn_as_question_marks_with_its_count() -> None:
    board = Board([Card.parse("5S"), None, *([None] * 18)], [8, 7, *([0] * 18)], hidden={1})
    assert compact_board(board)[0].startswith(" piles  5♠·8  ??·7  --·0")


def test_the_spectator_in_italian_reads_no_english() -> None:
    session = Session()
    session.receive(welcome(1, you=None, token=None, players=SEVEN_RIVALS), T0)
    session.receive(started(2, None, {f"p{i}": Game.from_code(CODE) for i in range(1, 9)}), T0)
    screen = watch_screen(session, local_ms=T0, lang="it")
    fits(screen)
    english = re.compile(r"\b(running|pts|mv|left|piles|res|playing|page|spectators)\b")
    assert not english.search(screen), english.search(screen)
    assert "in corso" in screen and " pile " in screen and " ris. " in screen and "punti" in screen


def test_the_spectator_keeps_each_card_apart_from_its_count() -> None:
    """«8♦8» and «10♦8» ran card and count together: a dot parts them, as in the seed's diagram."""
    tops = [Card.parse("8D"), Card.parse("10D"), *([Card.parse("KS")] * 10), *([None] * 8)]
    board = Board(tops, [8, 8, *([7] * 10), *([0] * 8)])
    piles = compact_board(board, "it")[0]
    assert piles.split()[1:4] == ["8♦·8", "10♦·8", "R♠·7"] and len(piles) <= 78


def test_racer_screen_shows_its_message_line() -> None:
    racer = Racer()
    racer.session.receive(welcome(1), T0)
    racer.session.receive(started(2, Game.from_code(CODE)), T0)
    racer.command("1 99")
    assert "✗ '99' is not a position: piles are 1 to 12, the reserve R1 to R8" in racer.screen(T0)


def test_a_rival_who_lost_the_connection_is_marked() -> None:
    session, _ = running([summary("p1", "Ada"), summary("p2", "Bob")])
    assert "⌁Bob" not in race_screen(session, local_ms=T0)
    session.receive({"type": "progress", "v": 1, "seq": 3, "player": summary("p2", "Bob", connected=False)}, T0)
    assert "⌁Bob" in race_screen(session, local_ms=T0)


def test_the_spectator_sees_the_countdown() -> None:
    session = Session()
    session.receive(welcome(1, you=None, token=None, players=SEVEN_RIVALS, phase="countdown", starts_at=T0 + 2000), T0)
    screen = watch_screen(session, local_ms=T0)
    fits(screen)
    assert screen.split("\n")[1] == "The race starts in 2…" and "page 1/2" in screen.split("\n")[0]


def test_the_help_line_fits_in_both_languages() -> None:
    for lang in ("it", "en"):
        session, _ = running([summary("p1", "Ada")])
        help_line = race_screen(session, local_ms=T0, lang=lang, move_errors=True).split("\n")[-1]
        assert len(help_line) <= 80 and "…" not in help_line and "u " in help_line


#: What the seed forbids the app to say: whether a deal can, or could, be won.
WINNABILITY = re.compile(
    r"winnab|solvab|solver|can be won|could (?:have )?be(?:en)? won|vincibil|risolut|si pu[oò] vincere|"
    r"si poteva vincere|vittoria era (?:ancora )?possibile",
    re.IGNORECASE,
)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, tuple | list):
        return [s for item in value for s in _strings(item)]
    return []


def test_no_terminal_screen_says_whether_a_deal_can_be_won() -> None:
    """The seed: «l'app non indica se una smazzata si può vincere». Every phrase of halfmoon play
    and the terminal client, every player command's help (``solve`` is the operator's tool), and
    the racer's end screens even when an older server still sends ``game_over.analysis``."""
    said = _strings(text.WORDS) + _strings(words.WORDS) + _strings(words.STATUS_WORDS)
    for command in ("play", "race", "join", "watch", "bot"):
        parser = build_parser(command)
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        said.append(subparsers.choices[command].format_help())
    racer = Racer(lang="it")
    racer.receive(welcome(1, players=[summary("p1", "Ada")]), T0)
    racer.receive(started(2, Game.from_code(CODE)), T0)
    analysis = {"winnable": True, "winnable_after": 3, "lost_at": 3}
    over = {"type": "game_over", "v": 1, "seq": 3, "outcome": "gave_up", "score": 0, "moves": 0, "time_ms": 1000}
    racer.receive({**over, "analysis": analysis, "code": CODE, "game": "g1", "ranked": True}, T0)
    said.append(racer.screen(T0))
    results = [{"rank": 1, "player": "p1", "name": "Ada", "outcome": "gave_up", "score": 0, "moves": 0}]
    racer.receive({"type": "race_over", "v": 1, "seq": 4, "results": results, "code": CODE, "sealed": False}, T0)
    said.append(racer.screen(T0))
    assert "Risultati" in said[-1]
    for phrase in said:
        assert not WINNABILITY.search(phrase), phrase


def test_the_end_says_whether_the_result_is_ranked_and_why_not_in_both_languages() -> None:
    for lang, said in (
        ("en", "Not ranked: finished faster than a person can tap the cards."),
        ("it", "Fuori classifica: finita più in fretta di quanto una persona possa toccare le carte."),
    ):
        session, _ = running([summary("p1", "Ada"), summary("p2", "Bob")])
        over = {"type": "game_over", "v": 1, "seq": 4, "outcome": "won", "score": 520, "moves": 48,
                "time_ms": 4_000, "ranked": False, "unranked_reason": "too_fast"}
        session.receive(over, T0)
        screen = race_screen(session, local_ms=T0, lang=lang)
        fits(screen)
        assert said in " ".join(screen.split())
    session, _ = running([summary("p1", "Ada"), summary("p2", "Bob")])
    over = {"type": "game_over", "v": 1, "seq": 4, "outcome": "gave_up", "score": 5, "moves": 1,
            "time_ms": 60_000, "ranked": True, "unranked_reason": None}
    session.receive(over, T0)
    assert "This result is ranked." in race_screen(session, local_ms=T0)


def test_a_bot_is_marked_on_the_track_and_in_the_results() -> None:
    session, _ = running([summary("p1", "Ada"), summary("p2", "bot-xyz-001", bot=True)])
    screen = race_screen(session, local_ms=T0)
    assert "bot-xyz- [bot]" in screen and "Ada [bot]" not in screen
    results = [{"rank": 1, "player": "p2", "name": "bot-xyz-001", "score": 520, "moves": 48, "time_ms": 1_000,
                "outcome": "won", "ranked": False, "unranked_reason": "bot"}]
    assert "bot-xyz-001 [bot]" in results_table(results, session.players)[1]
