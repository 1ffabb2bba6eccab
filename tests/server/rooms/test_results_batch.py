"""Finished games are stored in batches by one writer (:class:`halfmoon_server.rooms.results.Recorder`),
through ``save_games`` (one transaction, idempotent on each id), on SQLite in WAL mode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import text

from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.adapters.storage import SqlStorage, open_storage
from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import FinishedGame
from halfmoon_server.rooms.results import BatchStorage, Recorder
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _game(name: str, score: int) -> FinishedGame:
    return FinishedGame(
        nickname=name, code="HM1-N-AAAAAAA", mode="race", room="ABCDEF", score=score, moves=score // 10,
        time_ms=1000 + score, outcome="won" if score == 520 else "gave_up", record={"code": "HM1-N-AAAAAAA"},
        ranked=True, daily_date=None, finished_at=NOW,
    )  # fmt: skip


@pytest.fixture(params=["sqlite", "postgres"])
async def sql_storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlStorage]:
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"
    else:
        url = request.getfixturevalue("pg_database")
    storage = await open_storage(url)
    assert isinstance(storage, SqlStorage)
    yield storage
    await storage.close()


async def test_save_games_stores_each_game_once(sql_storage: SqlStorage) -> None:
    games = [(_game(f"p{k}", 10 * k), f"game{k:08d}") for k in range(20)]
    await sql_storage.save_games(games[:12])
    await sql_storage.save_games(games[8:])  # four of them again: each id is stored once
    for game, game_id in games:
        stored = await sql_storage.get_game(game_id)
        assert stored is not None and (stored.nickname, stored.score) == (game.nickname, game.score)
    assert len(await sql_storage.games_of_room("ABCDEF", 100)) == 20
    await sql_storage.save_game(games[0][0], games[0][1])  # the single write agrees: nothing changes
    assert len(await sql_storage.games_of_room("ABCDEF", 100)) == 20


async def test_the_sqlite_database_writes_ahead(tmp_path: Path) -> None:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}")
    assert isinstance(storage, SqlStorage)
    try:
        async with storage.engine.connect() as conn:
            assert (await conn.execute(text("PRAGMA journal_mode"))).scalar_one() == "wal"
            assert (await conn.execute(text("PRAGMA synchronous"))).scalar_one() == 1  # NORMAL
    finally:
        await storage.close()


class _CountingStorage(MemoryStorage):
    """A storage that counts its writes, each a batch."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []
        self.fail = False

    async def save_games(self, games: Sequence[tuple[FinishedGame, str]]) -> None:
        await asyncio.sleep(0.01)  # a write takes a while: the games handed over meanwhile wait
        if self.fail:
            raise StorageError("the database is down")
        self.batches.append(len(games))
        for game, game_id in games:
            await self.save_game(game, game_id)


async def test_the_recorder_stores_games_handed_over_together_in_one_write() -> None:
    storage = _CountingStorage()
    assert isinstance(storage, BatchStorage)
    recorder = Recorder(storage)
    await recorder.store(_game("first", 10), "first000")  # alone: one save_game
    await asyncio.gather(*(recorder.store(_game(f"p{k}", k), f"game{k:04d}") for k in range(50)))
    assert sum(storage.batches) == 50 and len(storage.batches) <= 2, storage.batches
    assert None not in [await storage.get_game(f"game{k:04d}") for k in range(50)]


async def test_a_failed_batch_fails_every_game_in_it_and_the_next_one_is_written() -> None:
    storage = _CountingStorage()
    recorder = Recorder(storage)
    storage.fail = True
    outcomes = await asyncio.gather(
        *(recorder.store(_game(f"p{k}", k), f"game{k:04d}") for k in range(5)), return_exceptions=True
    )
    assert all(isinstance(outcome, StorageError) for outcome in outcomes), outcomes
    storage.fail = False
    await recorder.store(_game("p0", 0), "game0000")  # the room tries again: it is stored
    assert await storage.get_game("game0000") is not None and await storage.get_game("game0001") is None


class _Outage(MemoryStorage):
    """Memory storage that fails every call while ``down``."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        if self.down:
            raise StorageError("the database is down")
        await super().save_game(game, game_id)

    async def ping(self) -> None:
        if self.down:
            raise StorageError("the database is down")
        await super().ping()


async def test_the_recorder_counts_each_return_of_the_database_within_a_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A room whose backoff has grown to 30 s does not wait it out: the recorder probes the
    database while writes fail and counts its return (``recoveries``), which the rooms watch."""
    monkeypatch.setattr("halfmoon_server.rooms.results.PROBE_EVERY_S", 0.05)
    storage = _Outage()
    recorder = Recorder(storage)
    storage.down = True
    with pytest.raises(StorageError):
        await recorder.store(_game("ada", 520), "game00000001")
    await asyncio.sleep(0.3)
    assert recorder.recoveries == 0  # still down
    storage.down = False
    async with asyncio.timeout(2.0):  # seen within a probe, not after 30 s
        while recorder.recoveries == 0:
            await asyncio.sleep(0.01)
    await recorder.store(_game("ada", 520), "game00000001")
    assert (await storage.get_game("game00000001")) is not None
    assert recorder.recoveries == 1  # a write that succeeds while up is no return
    # a later outage counts afresh
    storage.down = True
    with pytest.raises(StorageError):
        await recorder.store(_game("bob", 10), "game00000002")
    await asyncio.sleep(0.3)
    assert recorder.recoveries == 1
    storage.down = False
    async with asyncio.timeout(2.0):
        while recorder.recoveries == 1:
            await asyncio.sleep(0.01)
    await recorder.close()


@pytest.mark.parametrize(("setting", "pragma"), [("normal", 1), ("full", 2)])
async def test_the_games_database_syncs_as_the_journal_setting_says(tmp_path: Path, setting: str, pragma: int) -> None:
    """``--journal-sync full`` (survive a power cut) holds for the games' database too, not only
    the room journal: a journal saying "stored" must not outlive the game it stored."""
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}", synchronous=setting)
    assert isinstance(storage, SqlStorage)
    try:
        async with storage.engine.connect() as conn:
            assert (await conn.execute(text("PRAGMA synchronous"))).scalar_one() == pragma
    finally:
        await storage.close()


async def test_a_recording_that_fails_still_ends_the_race_and_the_result_is_stored_once_the_database_is_back(
    start_server: StartServer, clock: ManualClock, monkeypatch: Any
) -> None:
    """(Reviewed at 36fc040: a write that blew up jammed the room.) Now the room's log is the
    result's outbox: a failing write does not hold up game_over or race_over (the game's id is
    fixed up front); the write is retried with backoff, lands exactly once when the database is
    back, and only then may the room go."""
    from halfmoon_server.core import room_state

    monkeypatch.setattr(room_state, "STORE_RETRY_FIRST_S", 0.05)
    server = await start_server(finished_ttl_s=60)
    storage = server.app[keys.STORAGE]
    save = storage.save_game
    broken_until_fixed = {"broken": True, "calls": 0}

    async def flaky(game: Any, game_id: str) -> None:
        broken_until_fixed["calls"] += 1
        if broken_until_fixed["broken"]:
            raise RuntimeError("the database is down")
        await save(game, game_id)

    monkeypatch.setattr(storage, "save_game", flaky)  # the Recorder holds this same object
    ada = await WsClient.connect(server, "ada")
    await ada.send("solo", name="Ada")
    room = (await ada.next("welcome"))["room"]["room"]
    await ada.send("give_up")
    over = await ada.next("game_over", timeout=5.0)
    assert over["game"] is not None, "the id is fixed up front: game_over does not wait for the database"
    results = await ada.next("race_over", timeout=2.0)
    assert [(r["outcome"], r["game"]) for r in results["results"]] == [("gave_up", over["game"])]
    await ada.close()
    live = server.app[keys.LOBBY].rooms
    clock.advance(61_000)
    async with asyncio.timeout(5):  # the write is tried again (its first try follows game_over, not before it)
        while broken_until_fixed["calls"] < 2:
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # (the ticker's rounds, with the room past finished_ttl_s)
    assert live.get(room) is not None, "the room is the result's outbox: it stays until the game is stored"
    broken_until_fixed["broken"] = False  # the database is back
    for _ in range(200):
        if live.get(room) is None:
            break
        clock.advance(1_000)
        await asyncio.sleep(0.05)
    assert live.get(room) is None, "stored: the room may go"
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/rooms/{room}"))).json()
    assert [(e["name"], e["game"]) for e in board["results"]] == [("Ada", over["game"])], "stored exactly once"
