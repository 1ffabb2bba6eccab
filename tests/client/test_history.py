"""``halfmoon history`` and the terminal client's player key: one key per server in the state
folder (owner-only, made once), sent with ``join``; the history read with it over REST shows the
games raced from the terminal."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from halfmoon_client import cli
from halfmoon_client.rest import create_room, history
from halfmoon_client.screens import history_lines
from halfmoon_client.seats import KEYS_FILE, SeatBook
from halfmoon_client.session import Session
from halfmoon_client.terminal import play_race
from tests.client.support import RecordingScreen

SERVER = "http://127.0.0.1:8080"
KEY_RE = re.compile(r"[A-Za-z0-9_-]{43}")


def test_a_key_is_made_once_per_server_and_kept_for_its_owner_only(tmp_path: Path) -> None:
    book = SeatBook(tmp_path / "state" / "seats.json")
    assert book.player_key(SERVER, create=False) is None  # nothing made by merely asking
    key = book.player_key(SERVER)
    assert key is not None and KEY_RE.fullmatch(key)
    assert SeatBook(tmp_path / "state" / "seats.json").player_key(SERVER) == key  # on disk, the same
    other = book.player_key("http://example.test:8080")
    assert other is not None and other != key  # a server learns only its own
    path = tmp_path / "state" / KEYS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {SERVER: key, "http://example.test:8080": other}


@pytest.mark.parametrize("content", ["{not json", "[]", '{"http://127.0.0.1:8080": "short"}'])
def test_a_corrupt_or_malformed_key_file_gives_a_fresh_key(tmp_path: Path, content: str) -> None:
    (tmp_path / KEYS_FILE).write_text(content)
    key = SeatBook(tmp_path / "seats.json").player_key(SERVER)
    assert key is not None and KEY_RE.fullmatch(key)


def test_a_key_that_cannot_be_kept_is_none_and_raises_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert SeatBook(blocker / "seats.json").player_key(SERVER) is None  # its folder would be inside a file


def test_the_join_message_carries_the_key_only_when_there_is_one() -> None:
    assert Session.join_message("K7WQ2M", "Ada") == {"type": "join", "v": 1, "room": "K7WQ2M", "name": "Ada"}
    with_key = Session.join_message("K7WQ2M", "Ada", "k" * 43)
    assert with_key["player_key"] == "k" * 43


def test_the_history_screen_hides_what_the_server_hides_and_marks_clean_wins() -> None:
    game = {"game": "g1", "mode": "race", "room": "K7WQ2M", "code": None, "daily_date": None, "name": "Ada",
            "score": 10, "moves": 1, "time_ms": 4000, "outcome": "gave_up", "undos": 0, "clean": False,
            "finished_at": 1_795_900_000_000, "ranked": True, "unranked_reason": None}
    won = {**game, "code": "HM1-N-AAAAAAA", "mode": "solo", "score": 520, "outcome": "won", "clean": True,
           "ranked": False, "unranked_reason": "casual"}
    data = {"name": "Ada", "games": 2, "ranked_games": 1, "wins": 0, "clean_wins": 0, "streak": 0,
            "daily_today": False, "best": [], "casual": {"games": 1, "wins": 1, "clean_wins": 1, "best": [won]},
            "recent": [game, won]}
    text = "\n".join(history_lines(data, SERVER, "it"))
    assert "In classifica: partite 1 · vittorie 0 · vittorie pulite (senza annullare) 0" in text
    assert "Fuori classifica (amichevoli su un codice noto prima della partenza, tentativi ripetuti, bot, troppo" \
        " veloci): partite 1 · vittorie 1" in text
    assert "Miglior tempo per smazzata (✓ pulita)" not in text  # no ranked win: no ranked best
    assert "Miglior tempo per smazzata nelle amichevoli (✓ pulita)" in text
    assert "(nascosto)" in text and "2026-11-28" in text
    recent = text.split("Ultime partite")[1].splitlines()
    assert recent[2].split()[:3] == ["2026-11-28", "gara", "(nascosto)"]
    assert recent[2].rstrip().endswith("sì") and recent[3].rstrip().endswith("✓  amichevole")
    assert "Nessuna partita" in "\n".join(history_lines({"games": 0}, SERVER, "it"))


def test_the_history_screen_in_english_counts_ranked_games_and_shows_casual_ones_apart() -> None:
    line = {"game": "g1", "mode": "race", "room": "K7WQ2M", "code": "HM1-N-AAAAAAA", "daily_date": None,
            "name": "Ada", "score": 520, "moves": 48, "time_ms": 60_000, "outcome": "won", "undos": 0, "clean": True,
            "finished_at": 1_795_900_000_000, "ranked": False, "unranked_reason": "too_fast"}
    data = {"name": "Ada", "games": 1, "ranked_games": 0, "wins": 0, "clean_wins": 0, "streak": 0,
            "daily_today": False, "best": [], "casual": {"games": 1, "wins": 1, "clean_wins": 1, "best": [line]},
            "recent": [line]}
    text = "\n".join(history_lines(data, SERVER, "en"))
    assert "Ranked: games 0 · wins 0 · clean wins (no undo) 0" in text
    assert "Not ranked (casual games on a code known before the start, daily retries, bots, too fast): games 1 · " \
        "wins 1 · clean wins 1" in text
    assert text.split("Latest games")[1].splitlines()[2].rstrip().endswith("too fast")


def test_the_history_screen_does_not_say_an_unranked_sealed_race_had_a_known_code() -> None:
    """Games not ranked for another reason than a known code — a sealed race finished too fast, a
    daily retry, a bot — are counted with the casual ones: the line that counts them names every
    reason, not only «code known before the start»."""
    line = {"game": "g1", "mode": "race", "room": "K7WQ2M", "code": "HM1-S-" + "-".join(["ABCDEFG"] * 4),
            "daily_date": None, "name": "Ada", "score": 55, "moves": 5, "time_ms": 400, "outcome": "gave_up",
            "undos": 0, "clean": False, "finished_at": 1_795_900_000_000, "ranked": False,
            "unranked_reason": "too_fast"}
    data = {"name": "Ada", "games": 1, "ranked_games": 0, "wins": 0, "clean_wins": 0, "streak": 0,
            "daily_today": False, "best": [], "casual": {"games": 1, "wins": 0, "clean_wins": 0, "best": []},
            "recent": [line]}
    for lang, reasons in (("it", ("noto prima della partenza", "ripetut", "bot", "troppo veloc")),
                          ("en", ("known before the start", "retr", "bot", "too fast"))):
        [counted] = [x for x in history_lines(data, SERVER, lang) if "partite 1 ·" in x or "games 1 ·" in x]
        assert all(reason in counted for reason in reasons), (lang, counted)


async def until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


def _history_command(server: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="halfmoon")
    sub = parser.add_subparsers(dest="command")
    cli.register_history(sub)
    return parser.parse_args(["history", "--server", server, "--lang", "en"])


async def test_a_race_joined_from_the_terminal_shows_in_halfmoon_history(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _history_command(server_url)
    assert await asyncio.to_thread(args.func, args) == 0  # no key yet: an empty history, no key made
    assert "No games with this key yet" in capsys.readouterr().out
    book = SeatBook.default()
    assert book.player_key(server_url, create=False) is None

    key = book.player_key(server_url)
    assert key is not None
    created = await create_room(server_url, "HM1-N-AAAAAAB")
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    race = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.1, player_key=key))
    await until(lambda: "You are the host" in screen.last)
    lines.put_nowait("s")
    await until(lambda: screen.last.startswith("Time "))
    lines.put_nowait("g")
    racer = await asyncio.wait_for(race, 30)
    assert racer.done
    for _ in range(200):  # the game is stored just after its end
        data = await history(server_url, key)
        if data["games"]:
            break
        await asyncio.sleep(0.05)
    assert (data["games"], data["wins"], data["name"]) == (1, 0, "Ada")
    assert data["recent"][0]["code"] == "HM1-N-AAAAAAB" and data["recent"][0]["outcome"] == "gave_up"

    assert await asyncio.to_thread(args.func, args) == 0
    out = capsys.readouterr().out
    assert "Your games — Ada" in out and "Ranked: games 0 · wins 0" in out
    assert "Not ranked (casual games on a code known before the start, daily retries, bots, too fast): games 1 · " \
        "wins 0" in out  # a race on a typed code
    assert "HM1-N-AAAAAAB" in out and "gave up" in out and key not in out
