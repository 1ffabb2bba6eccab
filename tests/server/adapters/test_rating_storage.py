"""Ratings kept by storage (memory, SQLite, PostgreSQL): a race is rated in the write that stores
its last game, once however often its games are stored, in its place in the order when it
completes after a later race — and ``rebuild_ratings`` (``halfmoon ratings rebuild``) makes the
same numbers from the games alone."""

from __future__ import annotations

import argparse
import asyncio
import random
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, text

from halfmoon.cli import main
from halfmoon_server.adapters import storage as storage_module
from halfmoon_server.adapters.models import GameRow
from halfmoon_server.adapters.storage import SqlStorage, make_engine, open_storage, rate_races
from halfmoon_server.core import ratings
from halfmoon_server.core.names import name_key
from halfmoon_server.core.ratings import TWO_SEATS, Rating
from halfmoon_server.ops.ratings import run_ratings
from halfmoon_server.ports import FinishedGame, Storage

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PLAYERS = [c * 64 for c in "abcdef"]
ANN, BOB, CAT = PLAYERS[:3]


def finished(
    player: str | None, score: int, *, room: str, racers: int | None, at: datetime, code: str | None = None,
    ranked: bool = True, name: str | None = None,
) -> FinishedGame:
    code = code or f"HM1-S-{room}"
    return FinishedGame(
        nickname=name or (player or "anon")[:3], code=code, mode="race", room=room, score=score, moves=score // 10,
        time_ms=60_000, outcome="won" if score == 520 else "gave_up", record={"code": code, "moves": []},
        ranked=ranked, unranked_reason=None if ranked else "bot", daily_date=None, finished_at=at, player=player,
        racers=racers,
    )


def a_race(room: str, field: list[tuple[str | None, int]], at: datetime) -> list[tuple[FinishedGame, str]]:
    """A race's games with their ids (the first finishing first)."""
    return [
        (finished(p, score, room=room, racers=len(field), at=at + timedelta(milliseconds=i)), f"{room}{i:02d}")
        for i, (p, score) in enumerate(field)
    ]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"
    else:
        url = request.getfixturevalue("pg_database")
    opened = await open_storage(url)
    yield opened
    await opened.close()


async def snapshot(storage: Storage) -> tuple[list[tuple[str, Rating]], dict[str, Any]]:
    board = await storage.rating_leaderboard(1000)
    return board, {p: await storage.rating_of(p, 1000) for p in PLAYERS}


async def test_a_race_is_rated_when_its_last_game_is_stored_and_the_winner_goes_up(storage: Storage) -> None:
    (first, first_id), (second, second_id) = a_race("ROOM01", [(BOB, 100), (ANN, 520)], T0)
    await storage.save_game(first, first_id)
    assert await storage.rating_leaderboard(10) == []  # Ann still plays: nothing rated, nothing told
    assert await storage.rating_of(BOB, 10) == (None, [])
    await storage.save_game(second, second_id)
    board = await storage.rating_leaderboard(10)
    assert [player for player, _ in board] == [ANN, BOB]
    ann, bob = board[0][1], board[1][1]
    assert ann.mu > Rating().mu > bob.mu and ann.games == bob.games == 1 and (ann.name, bob.name) == ("aaa", "bbb")
    rating, changes = await storage.rating_of(ANN, 10)
    assert rating == ann
    assert [(c.game, c.place, c.field, c.reason, c.after) for c in changes] == [(second_id, 1, 2, None, ann)]


async def test_a_race_of_three_waits_for_its_third_game(storage: Storage) -> None:
    games = a_race("ROOM01", [(ANN, 520), (BOB, 300), (CAT, 100)], T0)
    for game, game_id in games[:2]:
        await storage.save_game(game, game_id)
    assert await storage.rating_leaderboard(10) == []  # Cat still plays
    await storage.save_game(*games[2])
    assert [p for p, _ in await storage.rating_leaderboard(10)] == [ANN, BOB, CAT]


async def test_a_game_stored_twice_rates_its_race_once(storage: Storage, caplog: pytest.LogCaptureFixture) -> None:
    """A second write of a rated race's game finds the race rated and does nothing (no second
    rating, and no failed one: the table's key would refuse it, but it is not tried)."""
    games = a_race("ROOM01", [(ANN, 520), (BOB, 100)], T0)
    for game, game_id in games:
        await storage.save_game(game, game_id)
    once = await snapshot(storage)
    for game, game_id in games:
        await storage.save_game(game, game_id)  # a retry after a lost answer
    save_games = getattr(storage, "save_games", None)
    if save_games is not None:
        await save_games(games)
    assert await snapshot(storage) == once
    assert len((await storage.rating_of(ANN, 10))[1]) == 1
    assert "rating the race" not in caplog.text


async def test_an_identity_seated_twice_is_flagged_in_its_history_and_not_rated(storage: Storage) -> None:
    for game, game_id in a_race("ROOM01", [(ANN, 520), (ANN, 0), (BOB, 300), (CAT, 100)], T0):
        await storage.save_game(game, game_id)
    rating, changes = await storage.rating_of(ANN, 10)
    assert rating is None
    assert [(c.reason, c.game, c.place) for c in changes] == [(TWO_SEATS, "ROOM0100", 1)]
    assert [p for p, _ in await storage.rating_leaderboard(10)] == [BOB, CAT]


async def test_a_rating_that_fails_leaves_the_games_stored_and_a_rebuild_makes_it(
    storage: Storage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A result outweighs a rating: should rating a race fail, its games are stored all the same,
    the failure is logged, and ``rebuild_ratings`` makes the missing ratings."""
    games = a_race("ROOM01", [(ANN, 520), (BOB, 100)], T0)

    def broken(*args: object) -> object:
        raise ValueError("a bug in rating")

    with monkeypatch.context() as patched:
        patched.setattr(ratings, "insert", broken)
        for game, game_id in games:
            await storage.save_game(game, game_id)
    assert [await storage.get_game(game_id) is not None for _, game_id in games] == [True, True]
    assert await storage.rating_leaderboard(10) == []
    assert "'halfmoon ratings rebuild'" in caplog.text
    assert await storage.rebuild_ratings() == (2, 2)
    assert [p for p, _ in await storage.rating_leaderboard(10)] == [ANN, BOB]


async def test_a_rating_refused_half_way_writes_none_of_it_and_the_games_stay_stored(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database refuses a rating's last write (its changes written, its ratings deleted): the
    race's rating writes go back together (a savepoint) and its games stay stored."""
    if not isinstance(storage, SqlStorage):
        pytest.skip("the SQL storage's writes (memory has none half-way)")
    games = a_race("ROOM01", [(ANN, 520), (BOB, 100)], T0)
    refused = {"player": ANN, "name": None, "mu": 25.0, "sigma": 1.0, "ordinal": 22.0, "games": 1}  # name NOT NULL
    monkeypatch.setattr(storage_module, "_rating_row", lambda player, rating: refused)
    for game, game_id in games:
        await storage.save_game(game, game_id)
    assert [await storage.get_game(game_id) is not None for _, game_id in games] == [True, True]
    assert await storage.rating_of(ANN, 10) == (None, [])  # no change kept without its rating
    monkeypatch.undo()
    assert await storage.rebuild_ratings() == (2, 2)


async def test_games_stored_before_ratings_are_not_rated(storage: Storage) -> None:
    for game, game_id in a_race("ROOM01", [(ANN, 520), (BOB, 100)], T0):
        old = FinishedGame(**{**{f: getattr(game, f) for f in game.__dataclass_fields__}, "racers": None})
        await storage.save_game(old, game_id)
    assert await storage.rating_leaderboard(10) == []
    assert await storage.rebuild_ratings() == (0, 0)


async def test_on_postgresql_whoever_stores_a_races_last_game_rates_it_though_both_store_at_once(
    pg_database: str,
) -> None:
    """Two instances store a race's two games at the same moment, each in its own transaction:
    neither sees the other's game until it commits. The ratings' lock, taken after the insert,
    makes the second wait for the first's commit — and then count both games and rate the race."""
    storage = await open_storage(pg_database)  # (migrated)
    await storage.close()
    (ada_game, ada_id), (bob_game, bob_id) = a_race("ROOM01", [(ANN, 520), (BOB, 100)], T0)
    first, second = make_engine(pg_database), make_engine(pg_database)

    def values(game: FinishedGame, game_id: str) -> dict[str, Any]:
        kept = {f.name: getattr(game, f.name) for f in fields(game)}
        return {**kept, "id": game_id, "name_key": name_key(game.nickname), "undos": game.undos}

    try:
        async with first.connect() as one, second.connect() as two:
            await one.begin()
            await one.execute(insert(GameRow).values(values(ada_game, ada_id)))
            await rate_races(one, {("ROOM01", ada_game.code)})  # Ada's alone: not complete, nothing rated
            await two.begin()
            await two.execute(insert(GameRow).values(values(bob_game, bob_id)))
            rating = asyncio.ensure_future(rate_races(two, {("ROOM01", bob_game.code)}))
            await asyncio.sleep(0.5)
            assert not rating.done()  # waiting for the lock the first transaction holds
            await one.commit()
            await rating
            await two.commit()
        storage = SqlStorage(make_engine(pg_database))
        assert [p for p, _ in await storage.rating_leaderboard(10)] == [ANN, BOB]
        await storage.close()
    finally:
        await first.dispose()
        await second.dispose()


def _many_races(rnd: random.Random, count: int) -> list[list[tuple[FinishedGame, str]]]:
    races = []
    for n in range(count):
        field: list[tuple[str | None, int]] = [(p, rnd.choice((0, 100, 300, 520))) for p in rnd.sample(PLAYERS, 3)]
        if rnd.random() < 0.15:
            field.append((field[0][0], 0))  # a second seat of one key
        if rnd.random() < 0.15:
            field.append((None, 200))  # a player without a key
        races.append(a_race(f"R{n:05d}", field, T0 + timedelta(seconds=rnd.randint(0, 60))))
    return races


async def test_ratings_kept_race_by_race_in_any_order_equal_a_rebuild(storage: Storage) -> None:
    """Races completing out of their order (a database outage, two instances), stored game by game
    and in batches, games stored twice: what storage kept equals what a rebuild makes."""
    rnd = random.Random(3)
    races = _many_races(rnd, 24)
    games = [game for race in races for game in race]
    rnd.shuffle(games)  # each race completes whenever its last game comes
    save_games = getattr(storage, "save_games", None)
    while games:
        size = rnd.randint(1, 5)
        batch, games = games[:size], games[size:]
        if save_games is not None and len(batch) > 1:
            await save_games(batch)
        else:
            for game, game_id in batch:
                await storage.save_game(game, game_id)
        if rnd.random() < 0.2:
            await storage.save_game(*batch[0])  # stored twice
    kept = await snapshot(storage)
    assert len(kept[0]) == len(PLAYERS)
    assert await storage.rebuild_ratings() == (len(PLAYERS), sum(len(h[1]) for h in kept[1].values()))
    assert await snapshot(storage) == kept


def test_the_rebuild_command_makes_the_same_ratings_from_the_games_table(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"
    rnd = random.Random(8)

    async def store_and_read() -> Any:
        storage = await open_storage(url)
        for race in _many_races(rnd, 10):
            for game, game_id in race:
                await storage.save_game(game, game_id)
        kept = await snapshot(storage)
        await storage.close()
        return kept

    async def wipe_and_read(wipe: bool) -> Any:
        engine = make_engine(url)
        if wipe:  # what a restore of the games alone leaves
            async with engine.begin() as conn:
                await conn.execute(text("DELETE FROM ratings"))
                await conn.execute(text("DELETE FROM rating_changes"))
        storage = SqlStorage(engine)
        read = await snapshot(storage)
        await storage.close()
        return read

    kept = asyncio.run(store_and_read())
    assert asyncio.run(wipe_and_read(True))[0] == []
    assert run_ratings(argparse.Namespace(db_url=url, timeout=60.0)) == 0
    assert asyncio.run(wipe_and_read(False)) == kept


def test_halfmoon_ratings_rebuild_runs_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``halfmoon ratings rebuild --db URL`` as the server's install registers it (pyproject.toml)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"

    async def store() -> None:
        storage = await open_storage(url)
        for game, game_id in a_race("ROOM01", [(ANN, 520), (BOB, 100)], T0):
            await storage.save_game(game, game_id)
        await storage.close()

    asyncio.run(store())
    entry = EntryPoint("ratings", "halfmoon_server.ops.ratings:register_ratings", "halfmoon.commands")
    monkeypatch.setattr("halfmoon.cli.entry_points", lambda group: [entry])
    assert main(["ratings", "rebuild", "--db", url]) == 0
    assert capsys.readouterr().out == "rebuilt the ratings: 2 players rated, 2 rating changes\n"
    monkeypatch.setenv("HALFMOON_DB", url)
    assert main(["ratings", "rebuild"]) == 0  # the server's own variable
    with pytest.raises(SystemExit) as usage:
        main(["ratings"])  # an action is required
    assert usage.value.code == 2


def test_the_rebuild_command_refuses_no_database_and_memory(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_ratings(argparse.Namespace(db_url=None, timeout=60.0)) == 2
    assert run_ratings(argparse.Namespace(db_url="memory://", timeout=60.0)) == 2
    assert run_ratings(argparse.Namespace(db_url="nosuch://x", timeout=60.0)) == 1
    err = capsys.readouterr().err
    assert "--db URL" in err and "memory://" in err and "Traceback" not in err
