"""The seat book: tokens kept on disk, so that ``halfmoon join`` run again resumes the player
(unit tests, then against a real server)."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest

from halfmoon_client.rest import create_room
from halfmoon_client.seats import MAX_SEATS, SeatBook, default_state_dir
from halfmoon_client.terminal import play_race
from tests.client.support import RecordingScreen, board_from_screen
from tests.client.test_live import start_and_play_a_move, until

SERVER = "http://127.0.0.1:8080"


def test_a_seat_is_kept_for_its_server_room_and_name_only(tmp_path: Path) -> None:
    book = SeatBook(tmp_path / "state" / "seats.json")
    assert book.token(SERVER, "K7WQ2M", "Ada") is None
    assert book.keep(SERVER, "K7WQ2M", "Ada", "t1")
    assert book.token(SERVER, "K7WQ2M", "Ada") == "t1"
    assert book.token(SERVER, "K7WQ2M", "Bob") is None  # another name is another player
    assert book.token(SERVER, "ZZZZZZ", "Ada") is None
    assert book.token("http://elsewhere:8080", "K7WQ2M", "Ada") is None
    assert SeatBook(tmp_path / "state" / "seats.json").token(SERVER, "K7WQ2M", "Ada") == "t1"  # on disk
    book.keep(SERVER, "K7WQ2M", "Bob", "t2")  # the same room under another name replaces the seat
    assert book.token(SERVER, "K7WQ2M", "Ada") is None and book.token(SERVER, "K7WQ2M", "Bob") == "t2"
    book.drop(SERVER, "K7WQ2M")
    assert book.token(SERVER, "K7WQ2M", "Bob") is None
    book.drop(SERVER, "K7WQ2M")  # dropping nothing is fine


def test_the_seat_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    book = SeatBook(tmp_path / "seats.json")
    book.keep(SERVER, "K7WQ2M", "Ada", "secret-token")
    assert stat.S_IMODE((tmp_path / "seats.json").stat().st_mode) == 0o600


def test_the_oldest_seats_go_first_when_the_book_is_full(tmp_path: Path) -> None:
    book = SeatBook(tmp_path / "seats.json")
    for i in range(MAX_SEATS + 3):
        book.keep(SERVER, f"ROOM{i:02d}", "Ada", f"t{i}")
    kept = json.loads((tmp_path / "seats.json").read_text())
    assert len(kept) == MAX_SEATS
    assert book.token(SERVER, "ROOM00", "Ada") is None and book.token(SERVER, "ROOM02", "Ada") is None
    assert book.token(SERVER, "ROOM03", "Ada") == "t3"
    assert book.token(SERVER, f"ROOM{MAX_SEATS + 2:02d}", "Ada") == f"t{MAX_SEATS + 2}"


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"x": 3, "y": {"name": 1, "token": "t"}}', ""])
def test_a_corrupt_book_reads_as_empty_and_is_replaced(tmp_path: Path, content: str) -> None:
    path = tmp_path / "seats.json"
    path.write_text(content)
    book = SeatBook(path)
    assert book.token(SERVER, "K7WQ2M", "Ada") is None
    assert book.keep(SERVER, "K7WQ2M", "Ada", "t1")
    assert book.token(SERVER, "K7WQ2M", "Ada") == "t1"


def test_a_book_that_cannot_be_written_says_so_and_raises_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    book = SeatBook(blocker / "seats.json")  # its folder would have to be inside a file
    assert book.keep(SERVER, "K7WQ2M", "Ada", "t1") is False
    assert book.token(SERVER, "K7WQ2M", "Ada") is None
    book.drop(SERVER, "K7WQ2M")


def test_the_book_lives_in_the_state_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HALFMOON_STATE_DIR", str(tmp_path / "explicit"))
    assert default_state_dir() == tmp_path / "explicit"
    monkeypatch.delenv("HALFMOON_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_dir() == tmp_path / "xdg" / "halfmoon"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_state_dir() == tmp_path / "home" / ".local" / "state" / "halfmoon"


# -- against a real server ---------------------------------------------------------------------


async def test_a_racer_run_again_after_its_process_ended_resumes_the_same_game(server_url: str, tmp_path: Path) -> None:
    book = SeatBook(tmp_path / "seats.json")
    created = await create_room(server_url)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    first = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.1, seats=book))
    await until(lambda: "You are the host" in screen.last)
    token = book.token(server_url, created.room, "Ada")
    assert token  # kept as soon as the server gave it
    bots, board = await start_and_play_a_move(server_url, created.room, lines, screen, think_ms=50, seed=3)
    first.cancel()  # the terminal is closed: no leave, the process is simply gone
    with pytest.raises(asyncio.CancelledError):
        await first
    assert book.token(server_url, created.room, "Ada") == token

    # run again: the same player, the same game, one move in (a newcomer could only watch)
    again_lines: asyncio.Queue[str | None] = asyncio.Queue()
    again = RecordingScreen()
    second = asyncio.create_task(play_race(server_url, created.room, "Ada", again_lines, again, tick_s=0.1, seats=book))
    await until(lambda: again.last.startswith("Time ") and "Moves 1" in again.last)
    assert board_from_screen(again.last) == board
    again_lines.put_nowait("g")
    racer = await asyncio.wait_for(second, 60)
    await asyncio.wait_for(bots, 60)
    assert racer.done and racer.session.race_over
    assert book.token(server_url, created.room, "Ada") is None  # the race is over: nothing to resume


async def test_a_seat_the_server_no_longer_knows_is_dropped_and_the_racer_joins_afresh(
    server_url: str, tmp_path: Path
) -> None:
    book = SeatBook(tmp_path / "seats.json")
    created = await create_room(server_url)
    book.keep(server_url, created.room, "Ada", "a-token-from-another-life")
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    task = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.1, seats=book))
    await until(lambda: "You are the host" in screen.last)
    fresh = book.token(server_url, created.room, "Ada")
    assert fresh and fresh != "a-token-from-another-life"
    lines.put_nowait("q")  # leaving drops the seat
    await asyncio.wait_for(task, 20)
    assert book.token(server_url, created.room, "Ada") is None
