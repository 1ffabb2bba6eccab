"""The ``halfmoon`` command: ``deal``, ``replay``, ``new`` and ``play``; and, where the server's
commands are not installed (a player's install), ``serve`` and ``solve`` saying where they are."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from halfmoon import Game, parse_code
from halfmoon.cli import SERVER_INSTALL, main
from halfmoon.cli.play import play, ticking_lines
from halfmoon.cli.screen import CLEAR, AnsiScreen
from tests.conftest import VECTORS

GOLDEN = {deal["code"]: deal for deal in json.loads((VECTORS / "deals.json").read_text(encoding="utf-8"))["deals"]}
WON: list[dict[str, Any]] = json.loads((VECTORS / "won_records.json").read_text(encoding="utf-8"))["records"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


# -- deal ---------------------------------------------------------------------------------------


def test_deal_draws_the_diagram(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "deal", "HM1-N-AAAAAAB")
    assert status == 0 and err == ""
    assert out.startswith("HM1-N-AAAAAAB\n")
    assert "[10♥]" in out and "1·8" in out and "R8·1" in out and "12·8" in out


def test_deal_json_is_the_golden_deal(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "deal", "--json", "HM1-N-AAAAAAB")
    assert status == 0 and json_lines(out) == [GOLDEN["HM1-N-AAAAAAB"]]


def test_several_codes_give_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    codes = ["HM1-N-AAAAAAA", "hm1-n-zzzzzzz", "HM1-D-AAAAAAA"]
    status, out, _ = run(capsys, "deal", *codes)
    assert status == 0
    assert json_lines(out) == [GOLDEN[str(parse_code(code))] for code in codes]


def test_a_bad_code_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "deal", "HM1-N-AAAA")
    assert status == 1 and out == ""
    assert err == "halfmoon deal: deal code 'HM1-N-AAAA' ends in 4 letters; it needs exactly 7 or 28 (A-Z)\n"


def test_a_bad_code_among_several_is_a_json_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "deal", "HM1-N-AAAAAAA", "HM1-Q-AAAAAAA", "HM1-N-AAAAAAB")
    lines = json_lines(out)
    assert status == 1 and len(lines) == 3
    assert lines[0] == GOLDEN["HM1-N-AAAAAAA"] and lines[2] == GOLDEN["HM1-N-AAAAAAB"]
    assert lines[1]["code"] == "HM1-Q-AAAAAAA" and "unknown kind 'Q'" in lines[1]["error"]


def test_deal_needs_a_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["deal"])
    assert info.value.code == 2
    assert "CODE" in capsys.readouterr().err


# -- replay -------------------------------------------------------------------------------------


@pytest.fixture
def records(tmp_path: Path) -> dict[str, Path]:
    won = WON[1]
    files = {
        "won": {"code": won["code"], "moves": won["moves"]},
        "partial": {"code": won["code"], "moves": [*won["moves"][:3], "undo"]},
        "illegal": {"code": "HM1-N-AAAAAAB", "moves": [["1", "R4"], ["1", "2"], ["4", "6"]]},
    }
    paths = {}
    for name, record in files.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(record, indent=2), encoding="utf-8")
    paths["broken"] = tmp_path / "broken.json"
    paths["broken"].write_text('{"code": "HM1-N-AAAAAAB", "moves": [["1", "R4"]', encoding="utf-8")
    paths["shape"] = tmp_path / "shape.json"
    paths["shape"].write_text('{"code": "HM1-N-AAAAAAB", "moves": [["1", "R44"]]}', encoding="utf-8")
    return paths


def test_replay_a_won_file(capsys: pytest.CaptureFixture[str], records: dict[str, Path]) -> None:
    status, out, _ = run(capsys, "replay", str(records["won"]))
    assert status == 0
    assert out == "HM1-N-AAAAAAB: won, score 520, 48 moves, 0 cards left\n"


def test_replay_json(capsys: pytest.CaptureFixture[str], records: dict[str, Path]) -> None:
    status, out, _ = run(capsys, "replay", "--json", str(records["partial"]))
    assert status == 0
    assert json_lines(out) == [
        {"code": "HM1-N-AAAAAAB", "score": 20, "moves": 2, "status": "playing", "cards_left": 100, "error": None}
    ]


def test_replay_stops_at_the_first_illegal_move_with_exit_status_1(
    capsys: pytest.CaptureFixture[str], records: dict[str, Path]
) -> None:
    status, out, _ = run(capsys, "replay", "--json", str(records["illegal"]))
    assert status == 1
    assert json_lines(out) == [
        {
            "code": "HM1-N-AAAAAAB",
            "score": 10,
            "moves": 1,
            "status": "playing",
            "cards_left": 102,
            "error": {"index": 1, "reason": "move 1 2: 4S and 3S are not a pair: 4 + 3 = 7, not 11"},
        }
    ]
    status, out, _ = run(capsys, "replay", str(records["illegal"]))
    assert status == 1
    assert out == (
        "HM1-N-AAAAAAB: playing, score 10, 1 moves, 102 cards left — error at step 1: "
        "move 1 2: 4S and 3S are not a pair: 4 + 3 = 7, not 11\n"
    )


def test_replay_several_files_gives_json_lines(capsys: pytest.CaptureFixture[str], records: dict[str, Path]) -> None:
    status, out, _ = run(capsys, "replay", str(records["won"]), str(records["illegal"]), str(records["partial"]))
    lines = json_lines(out)
    assert status == 1
    assert [line["status"] for line in lines] == ["won", "playing", "playing"]
    assert [line["error"] is None for line in lines] == [True, False, True]


def test_replay_malformed_json_is_a_clear_error(capsys: pytest.CaptureFixture[str], records: dict[str, Path]) -> None:
    status, out, _ = run(capsys, "replay", "--json", str(records["broken"]), str(records["shape"]))
    assert status == 1
    broken, shape = json_lines(out)
    assert broken["code"] is None and broken["error"]["index"] is None
    assert broken["error"]["reason"].startswith(f"{records['broken']}: a game record must be JSON")
    assert shape["error"]["reason"] == f"{records['shape']}: move 0: no such position: 'R44' " + (
        "(piles are '1'…'12', reserve slots 'R1'…'R8')"
    )
    status, out, err = run(capsys, "replay", str(records["broken"]))
    assert status == 1 and out == "" and err.startswith("halfmoon replay: ") and "must be JSON" in err
    assert "Traceback" not in err


def test_replay_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(capsys, "replay", str(tmp_path / "nope.json"))
    assert status == 1 and err == f"halfmoon replay: cannot read {tmp_path / 'nope.json'}: No such file or directory\n"


def test_replay_a_file_that_is_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"code": "HM1-N-\xc0AAAAAA", "moves": []}')
    status, _, err = run(capsys, "replay", str(path))
    assert status == 1 and "not UTF-8 text" in err


def test_replay_standard_input_one_record(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, records: dict[str, Path]
) -> None:
    stdin(monkeypatch, records["won"].read_text(encoding="utf-8"))  # pretty-printed over many lines
    status, out, _ = run(capsys, "replay", "-")
    assert status == 0 and out.startswith("HM1-N-AAAAAAB: won")


def test_replay_standard_input_json_lines(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [json.dumps({"code": record["code"], "moves": record["moves"]}) for record in WON]
    lines.insert(2, '{"code": "HM1-N-AAAAAAB", "moves": [["1", "2"]]}')
    lines.insert(3, "")
    lines.insert(4, "not json")
    stdin(monkeypatch, "\n".join(lines) + "\n")
    status, out, _ = run(capsys, "replay", "-")
    results = json_lines(out)
    assert status == 1 and len(results) == len(WON) + 2
    assert [r["status"] for r in results] == ["won", "won", "playing", None, "won", "won", "won"]
    assert results[2]["error"]["index"] == 0
    assert results[3]["error"]["reason"].startswith("<stdin>:5: a game record must be JSON")


def test_replay_empty_standard_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    stdin(monkeypatch, "  \n")
    status, out, err = run(capsys, "replay", "-")
    assert status == 1 and out == "" and "standard input is empty" in err


# -- new ----------------------------------------------------------------------------------------


def test_new_prints_a_fresh_random_code(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "new")
    assert status == 0 and re.fullmatch(r"HM1-N-[A-Z]{7}\n", out)
    parse_code(out)
    status, out, _ = run(capsys, "new", "--count", "5")
    codes = out.split()
    assert status == 0 and len(set(codes)) == 5 and all(parse_code(code).kind == "N" for code in codes)


@pytest.mark.parametrize(("count", "says"), [("0", "must be from 1 to 100000, not 0"), ("-3", "not -3"), ("x", "'x'")])
def test_new_refuses_a_bad_count(capsys: pytest.CaptureFixture[str], count: str, says: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["new", "--count", count])
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == "" and says in err


def test_the_installed_command_and_python_m() -> None:
    # the command pip installed beside this interpreter (a venv's bin need not be on PATH)
    command = Path(sysconfig.get_path("scripts")) / "halfmoon"
    assert command.is_file(), f"{command}: the package is not installed for {sys.executable}"
    result = subprocess.run([str(command), "deal", "--json", "HM1-N-AAAAAAB"], capture_output=True, text=True)
    assert result.returncode == 0 and json.loads(result.stdout) == GOLDEN["HM1-N-AAAAAAB"]
    command = [sys.executable, "-m", "halfmoon", "deal", "HM1-N-AAAAAA!"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 1 and "'!' not allowed" in result.stderr and "Traceback" not in result.stderr


def test_an_engine_command_does_not_load_the_server_or_the_client() -> None:
    script = (
        "import sys; from halfmoon.cli import main; status = main(['new']); "
        "heavy = ('halfmoon_server', 'halfmoon_client', 'aiohttp'); "
        "print(status, sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "0 []"


# -- the server's commands, where they are not installed ------------------------------------------


def installed(monkeypatch: pytest.MonkeyPatch, **commands: str) -> None:
    """Make ``halfmoon`` see only these entry points (name → target), as in another install."""
    entries = [EntryPoint(name, target, "halfmoon.commands") for name, target in commands.items()]
    monkeypatch.setattr("halfmoon.cli.entry_points", lambda group: entries)


PLAYERS_INSTALL = {"deal": "halfmoon.cli.tools:register_deal", "new": "halfmoon.cli.tools:register_new"}


@pytest.mark.parametrize(
    "argv",
    [["solve", "HM1-N-AAAAAAB"], ["solve", "--record", "game.json"], ["solve"], ["serve"], ["serve", "--port", "1"],
     ["serve", "--host", "0.0.0.0", "--no-winnable-daily", "extra"]],
)  # fmt: skip
def test_a_players_install_sends_server_commands_to_the_servers_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    installed(monkeypatch, **PLAYERS_INSTALL)
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    why = f"it comes with the server, a separate install: {SERVER_INSTALL}"
    assert err == f"halfmoon {argv[0]}: not available here: {why}\n"


def test_a_players_help_lists_no_solve_and_says_where_the_server_is(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed(monkeypatch, **PLAYERS_INSTALL)
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and "deal" in out and "new" in out
    assert "solv" not in out.lower() and "serve " not in out
    assert f"The server is a separate install: {SERVER_INSTALL}." in " ".join(out.split())
    with pytest.raises(SystemExit) as exit_info:  # a command nobody installs is still a usage error
        main(["frobnicate"])
    assert exit_info.value.code == 2 and "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_a_server_command_that_cannot_load_names_the_servers_install_whatever_its_arguments(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed(monkeypatch, **PLAYERS_INSTALL, serve="halfmoon_server.not_here:register_serve")
    status, out, err = run(capsys, "serve", "--port", "1", "--db", "sqlite:///x")
    assert status == 2 and out == "" and "usage:" not in err
    assert "comes with the server" in err and "halfmoon_server.not_here" in err and SERVER_INSTALL in err
    status, out, err = run(capsys, "new")  # the commands that load still work
    assert status == 0 and out.startswith("HM1-")


# -- play ---------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scripted(clock: Clock, lines: list[str], seconds_each: float = 1.0) -> Iterator[str]:
    for line in lines:
        clock.now += seconds_each
        yield line


def screens(text: str) -> list[str]:
    """The output split into screens (each begins with the bar)."""
    return [s for s in re.split(r"(?=^(?:Time|Tempo) )", text, flags=re.M) if s]


def run_play(lines: list[str], code: str = "HM1-N-AAAAAAB", **options: Any) -> tuple[Game, list[str]]:
    out = io.StringIO()
    clock = Clock()
    game = play(Game.from_code(code), scripted(clock, lines), out, clock=clock, **options)
    return game, screens(out.getvalue())


def test_play_shows_the_bar_and_the_board() -> None:
    game, shown = run_play(["1 R4"])
    assert len(shown) == 2
    assert shown[0].startswith("Time 0:00  ·  Score 0  ·  Moves 0  ·  Code HM1-N-AAAAAAB\n")
    assert "[10♥]" in shown[0] and "Move: the positions" in shown[0]
    assert shown[1].startswith("Time 0:00  ·  Score 10  ·  Moves 1  ·  Code HM1-N-AAAAAAB\n")  # from the move on
    assert "[ 4♠]" in shown[1] and "R4·0" in shown[1]
    assert game.score == 10


def test_play_undo() -> None:
    game, shown = run_play(["1 R4", "u", "undo"])
    assert "Score 0  ·  Moves 0" in shown[2] and "[10♥]" in shown[2]
    assert shown[3].rstrip().endswith("There is no move to undo.")
    assert game.move_count == 0


def test_play_bad_input_changes_nothing_and_says_why() -> None:
    game, shown = run_play(["1 2", "zz 1", "1", "1 1"])
    assert shown[1].rstrip().endswith("✗ 1 2")  # «Errori di mossa» off: no explanation of the sum
    assert shown[2].rstrip().endswith("✗ 'zz' is not a position: piles are 1 to 12, the reserve R1 to R8")
    assert "✗ 1: a move names 2 positions (a pair) or 3 (a triple)" in shown[3]
    assert "✗ 1 1: position 1 is named twice" in shown[4]
    assert game.snapshot() == Game.from_code("HM1-N-AAAAAAB").snapshot()


def test_play_move_errors_explain_in_the_seeds_words() -> None:
    _, shown = run_play(["e", "1 2", "8 1", "8 12 1"], lang="it")
    assert shown[1].rstrip().endswith("Errori di mossa: attivati")
    assert shown[2].rstrip().endswith("✗ 1 2 (10♥, 3♠): La somma deve essere uguale a 11")
    assert shown[3].rstrip().endswith("✗ 8 1 (R♠, 10♥): Servono un Fante, una Donna e un Re")
    assert shown[4].rstrip().endswith("✗ 8 12 1 (R♠, V♣, 10♥): Servono un Fante, una Donna e un Re")
    _, shown = run_play(["1 2"], move_errors=True)
    assert shown[1].rstrip().endswith("✗ 1 2 (10♥, 3♠): The sum must equal 11")


def test_play_announces_a_stall() -> None:
    game = Game.from_code("HM1-N-AAAAAAH")
    moves = []
    while legal := list(game.legal_moves()):
        game.push(legal[0])
        moves.append(str(legal[0]))
    assert game.is_stalled
    played, shown = run_play(moves, code="HM1-N-AAAAAAH")
    assert played.is_stalled
    assert "Stalled: no pair summing to 11 and no Jack-Queen-King" in shown[-1]
    assert all("Stalled" not in screen for screen in shown[:-1])
    _, shown = run_play([*moves, "u"], code="HM1-N-AAAAAAH")
    assert "Stalled" not in shown[-1]


def test_play_announces_a_win() -> None:
    record = WON[1]
    game, shown = run_play([" ".join(move) for move in record["moves"]], code=record["code"], lang="it")
    assert game.is_won
    assert shown[-1].startswith("Tempo 0:47  ·  Punti 520  ·  Mosse 48")  # from the first move to the last
    won = "Vittoria! Tutte le 104 carte sono state rimosse: 520 punti in 48 mosse, tempo 0:47."
    assert " ".join(shown[-1].split()).endswith(won)  # wrapped to 80 columns


#: A card in the engine's machine notation ("KH", "4D", "10S"): never shown to a player.
RAW_CARD = re.compile(r"(?<![\w-])(?:10|[2-9AJQK])[SHDC](?!\w)")


def test_play_in_italian_says_every_refusal_in_italian_with_card_symbols() -> None:
    lines = ["1 2", "8 1", "zz 1", "1", "1 1", "1 2 3 4", "e", "1 2", "8 1", "8 12 1", "r9 1", "1 1"]
    _, shown = run_play(lines, lang="it")
    said = [screen.rstrip().rsplit("\n", 1)[-1] for screen in shown[1:]]
    assert said[2] == "✗ «zz» non è una posizione: le pile vanno da 1 a 12, la riserva da R1 a R8"
    assert said[3] == "✗ 1: una mossa nomina 2 posizioni (una coppia) o 3 (un terzetto)"
    assert said[4] == "✗ 1 1: la posizione 1 è nominata due volte"
    assert said[8] == "✗ 8 1 (R♠, 10♥): Servono un Fante, una Donna e un Re"
    english = re.compile(r"\b(move|moves|not|pair|triple|position|reserve|slot|named|twice|is|and|the)\b")
    for line in said:
        assert not english.search(line), line
        assert not RAW_CARD.search(line), line


def test_play_empty_pile_is_said_in_the_players_language() -> None:
    _, shown = run_play(["1 R4", "R4 1"], lang="it")
    assert shown[2].rstrip().endswith("✗ R4 1: la casella di riserva R4 è vuota")
    _, shown = run_play(["1 R4", "R4 1"])
    assert shown[2].rstrip().endswith("✗ R4 1: reserve slot R4 is empty")


def test_play_redraws_in_place_and_its_clock_ticks_while_nobody_types() -> None:
    """On a terminal the screen is drawn once, then only the lines that change: each tick of
    the input (None) moves the clock without a keystroke; a command redraws in place."""
    out = io.StringIO()
    clock = Clock()

    def lines() -> Iterator[str | None]:
        yield None  # no move yet: the clock has not started
        clock.now += 1
        yield "1 R4"
        for _ in range(3):
            clock.now += 1
            yield None

    play(Game.from_code("HM1-N-AAAAAAB"), lines(), AnsiScreen(out), clock=clock)
    text = out.getvalue()
    assert text.count(CLEAR) == 2  # the first screen and the move: drawn in place, never appended
    assert text.index(CLEAR) == 0
    ticks = text.rsplit(CLEAR, 1)[1].split("\n> ", 1)[1]
    assert ticks == "".join(
        f"\x1b7\x1b[1;1H\x1b[2KTime 0:0{s}  ·  Score 10  ·  Moves 1  ·  Code HM1-N-AAAAAAB\x1b8" for s in (1, 2, 3)
    )


class Bars:
    """A screen that keeps the bar of every screen drawn."""

    def __init__(self) -> None:
        self.bars: list[str] = []

    def draw(self, text: str, *, full: bool = False) -> None:
        self.bars.append(text.split("\n", 1)[0].split("  ·  ")[0])


def test_play_clock_stands_still_while_stalled_and_after_a_win() -> None:
    game = Game.from_code("HM1-N-AAAAAAH")
    moves = []
    while legal := list(game.legal_moves()):
        game.push(legal[0])
        moves.append(str(legal[0]))
    clock = Clock()

    def lines() -> Iterator[str | None]:
        for move in moves:
            clock.now += 1
            yield move
        for _ in range(5):  # stalled: the clock stands still
            clock.now += 10
            yield None
        clock.now += 1
        yield "u"  # it goes on after an undo
        clock.now += 2
        yield None

    screen = Bars()
    play(Game.from_code("HM1-N-AAAAAAH"), lines(), screen, clock=clock)
    stalled_at = len(moves) - 1  # seconds from the first move to the stall
    assert screen.bars[-7:] == [f"Time 0:{s:02d}" for s in [stalled_at] * 6 + [stalled_at + 2]]

    record = WON[1]
    clock = Clock()

    def winning() -> Iterator[str | None]:
        for move in record["moves"]:
            clock.now += 1
            yield " ".join(move)
        for _ in range(3):
            clock.now += 60
            yield None

    screen = Bars()
    won = play(Game.from_code(record["code"]), winning(), screen, clock=clock)
    assert won.is_won and screen.bars[-4:] == ["Time 0:47"] * 4


def test_play_fits_80_columns_in_both_languages() -> None:
    """A line longer than the terminal would wrap and shift the rows the in-place redraw rewrites."""
    game = Game.from_code("HM1-N-AAAAAAH")
    moves = []
    while legal := list(game.legal_moves()):
        game.push(legal[0])
        moves.append(str(legal[0]))
    for lang in ("it", "en"):
        _, shown = run_play(["", "e", "8 12 1", "zz 1", *moves], code="HM1-N-AAAAAAH", lang=lang, move_errors=True)
        _, won = run_play([" ".join(move) for move in WON[1]["moves"]], code=WON[1]["code"], lang=lang)
        for text in [*shown, *won]:
            assert all(len(line) <= 80 for line in text.split("\n")), text


def test_ticking_lines_gives_a_tick_while_nothing_is_typed() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, encoding="utf-8") as stream:
        lines = ticking_lines(stream, 0.02)
        assert next(lines) is None  # nothing typed yet
        os.write(write_fd, b"1 8\n")
        got = next(lines)
        while got is None:
            got = next(lines)
        assert got == "1 8"
        os.close(write_fd)
        assert [line for line in lines if line is not None] == []


def test_play_new_game_and_quit() -> None:
    out = io.StringIO()
    clock = Clock()
    fresh = Game.from_code("HM1-N-ZZZZZZZ")
    game = play(
        Game.from_code("HM1-N-AAAAAAB"),
        scripted(clock, ["1 R4", "n", "q", "1 R4"]),
        out,
        clock=clock,
        new_game=lambda: fresh,
    )
    assert game is fresh and game.move_count == 0
    last = screens(out.getvalue())[-1]
    assert "Code HM1-N-ZZZZZZZ" in last and "Time 0:00" in last
    assert len(screens(out.getvalue())) == 3  # start, the move, the new game; 'q' stops before the last line


def test_play_command_runs_on_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin(monkeypatch, "1 R4\n")
    status, out, _ = run(capsys, "play", "HM1-N-AAAAAAB", "--lang", "en")
    assert status == 0 and "Score 10  ·  Moves 1  ·  Code HM1-N-AAAAAAB" in out
    status, out, err = run(capsys, "play", "HM1-N-AAAAAAB1")
    assert status == 2 and err.startswith("halfmoon play: deal code 'HM1-N-AAAAAAB1'")


def test_play_command_without_a_code_deals_a_random_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin(monkeypatch, "q\n")
    status, out, _ = run(capsys, "play", "--lang", "en")
    assert status == 0 and re.search(r"Code HM1-N-[A-Z]{7}\n", out)
