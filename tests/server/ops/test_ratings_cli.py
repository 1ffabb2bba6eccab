"""``halfmoon ratings rebuild``: rates every stored race again and gets the numbers the ratings
job got; bad settings and a database that fails are clear errors, changing nothing."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest

from halfmoon_server.adapters.storage import open_storage
from halfmoon_server.core.rating import Rated, RatedGame
from halfmoon_server.ops.cli import register_ratings
from tests.server.adapters.test_ratings_storage import ADA, BEA, CAL, DAN, T0, races


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="halfmoon")
    register_ratings(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["ratings", *argv])
    status: int = args.func(args)
    return status


async def snapshot(url: str) -> tuple[list[Rated], list[list[RatedGame]]]:
    storage = await open_storage(url)
    try:
        board = await storage.rating_board(100, provisional=True)
        histories = [(await storage.player_rating(p, 100))[1] for p in (ADA, BEA, CAL, DAN)]
    finally:
        await storage.close()
    return board, histories


def without_times(histories: list[list[RatedGame]]) -> list[list[tuple[object, ...]]]:
    return [[(h.game_id, h.race, h.place, h.before, h.after) for h in history] for history in histories]


def test_the_rebuild_gives_the_numbers_the_job_gave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"

    async def play() -> None:
        storage = await open_storage(url)
        await races(storage, 10, rate_every=4)  # the job ran now and then, 2 races a pass
        while await storage.rate_due(T0, 100):
            pass
        await storage.close()

    asyncio.run(play())
    board, histories = asyncio.run(snapshot(url))
    assert len(board) == 4
    assert run("rebuild", "--db", url) == 0
    assert "10 races rated, 4 players rated" in capsys.readouterr().out
    board_again, histories_again = asyncio.run(snapshot(url))
    assert board_again == board
    assert without_times(histories_again) == without_times(histories)


def test_the_rebuild_refuses_two_urls_and_a_database_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url_file = tmp_path / "db-url"
    url_file.write_text("sqlite+aiosqlite:///x.db\n")
    assert run("rebuild", "--db", "sqlite+aiosqlite:///y.db", "--db-file", str(url_file)) == 2
    assert "both --db and --db-file are given" in capsys.readouterr().err
    assert run("rebuild", "--db", "memory://") == 2
    assert "keeps nothing to rebuild from" in capsys.readouterr().err


def test_a_database_that_cannot_be_used_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("rebuild", "--db", "nosuchdialect://x") == 1
    err = capsys.readouterr().err
    assert err.startswith("halfmoon ratings: cannot use database") and "Traceback" not in err
    # a URL mistyped (the colon after the dialect left out) is not quoted: it holds the password
    assert run("rebuild", "--db", "postgresql+asyncpg//halfmoon:hunter2@db/halfmoon") == 1
    err = capsys.readouterr().err
    assert err.startswith("halfmoon ratings: cannot use database (a URL that does not parse)"), err
    assert "hunter2" not in err and "Traceback" not in err
    # one that parses is named with its password hidden
    assert run("rebuild", "--db", "nosuchdialect://halfmoon:hunter2@db/halfmoon") == 1
    err = capsys.readouterr().err
    assert "nosuchdialect://halfmoon:***@db/halfmoon" in err and "hunter2" not in err
