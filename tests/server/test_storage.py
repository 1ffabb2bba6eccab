"""Storage on SQLite and on PostgreSQL, both through the Alembic migrations, and in memory: the
schema the migrations build, one contract every implementation keeps (the leaderboards' order
by the one ranking rule, the daily bookkeeping), and whole servers on PostgreSQL and in memory."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from alembic import command
from sqlalchemy import inspect, text

from halfmoon.protocol import ranking_key
from halfmoon_server.memory_storage import MemoryStorage
from halfmoon_server.ports import Storage
from halfmoon_server.storage import FinishedGame, SqlStorage, alembic_config, make_engine, migrate, open_storage
from tests.server.conftest import StartServer, admin
from tests.server.support import WsClient, won_record

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'sub' / 'halfmoon.db'}"
    url: str = request.getfixturevalue("pg_database")
    return url


def _game(name: str, score: int, time_ms: int, *, code: str = "HM1-N-AAAAAAA", day: date | None = None,
          ranked: bool = True) -> FinishedGame:
    return FinishedGame(
        nickname=name, code=code, mode="daily" if day else "race", room="ABCDEF", score=score,
        moves=score // 10, time_ms=time_ms, outcome="won" if score == 520 else "gave_up",
        record={"code": code, "moves": [["1", "2"]]}, ranked=ranked, daily_date=day, finished_at=NOW,
    )


async def test_migrations_build_the_schema_and_storage_works(db_url: str) -> None:
    engine = make_engine(db_url)
    await migrate(engine)
    await migrate(engine)  # already at the newest revision: nothing to do

    def tables(sync_conn: object) -> set[str]:
        return set(inspect(sync_conn).get_table_names())

    async with engine.connect() as conn:
        assert await conn.run_sync(tables) == {"alembic_version", "games", "daily_challenges", "daily_attempts"}
        assert (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one() == "0005"

    await check_storage_contract(SqlStorage(engine))


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def any_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = "memory://" if request.param == "memory" else request.getfixturevalue("db_url_" + request.param)
    storage = await open_storage(url)
    yield storage
    await storage.close()


@pytest.fixture
def db_url_sqlite(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"


@pytest.fixture
def db_url_postgres(pg_database: str) -> str:
    return pg_database


async def test_open_storage_picks_the_implementation_the_url_names(tmp_path: Path) -> None:
    memory = await open_storage("memory://")
    assert isinstance(memory, MemoryStorage)
    sql = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    assert isinstance(sql, SqlStorage)
    await sql.close()


async def test_every_storage_keeps_the_same_contract(any_storage: Storage) -> None:
    await check_storage_contract(any_storage)


async def test_every_storage_ranks_by_the_one_ranking_rule(any_storage: Storage) -> None:
    """Score, then time, then who finished first: the rule the race's own results follow."""
    games = [
        ("late", 300, 5_000, 3),
        ("early", 300, 5_000, 1),
        ("faster", 300, 4_000, 9),
        ("best", 400, 9_000, 5),
        ("low", 100, 1_000, 0),
    ]
    for name, score, time_ms, minute in games:
        at = NOW.replace(minute=minute)
        await any_storage.save_game(replace(_game(name, score, time_ms, code="HM1-N-CCCCCCC"), finished_at=at), name)
    expected = sorted(games, key=lambda g: ranking_key(g[1], g[2], g[3]))
    board = await any_storage.leaderboard_for_code("HM1-N-CCCCCCC", 10)
    assert [g.nickname for g in board] == [g[0] for g in expected] == ["best", "faster", "early", "late", "low"]


async def check_storage_contract(storage: Storage) -> None:
    await storage.ping()
    slow, fast, low = "game-slow", "game-fast", "game-low"
    await storage.save_game(_game("Slow", 520, 90_000), slow)
    await storage.save_game(_game("Fast", 520, 60_000), fast)
    await storage.save_game(_game("Low", 200, 10_000), low)
    await storage.save_game(_game("Fast", 520, 60_000), fast)  # a second write of the same game: nothing new
    assert [g.id for g in await storage.games_of_room("ABCDEF", 10)] == [fast, slow, low]
    assert await storage.games_of_room("ZZZZZZ", 10) == []
    await storage.save_game(_game("Other", 520, 1_000, code="HM1-N-BBBBBBB"), "g1")
    board = await storage.leaderboard_for_code("HM1-N-AAAAAAA", 10)
    assert [g.id for g in board] == [fast, slow, low]
    assert len(await storage.leaderboard_for_code("HM1-N-AAAAAAA", 2)) == 2
    stored = await storage.get_game(fast)
    assert stored is not None and stored.record == {"code": "HM1-N-AAAAAAA", "moves": [["1", "2"]]}
    assert await storage.get_game("missing") is None

    day = date(2026, 11, 28)
    assert await storage.claim_daily_attempt(day, "ada", NOW) is True
    assert await storage.claim_daily_attempt(day, "ada", NOW) is False
    assert await storage.claim_daily_attempt(date(2026, 11, 29), "ada", NOW) is True
    assert await storage.daily_code(day) is None
    assert await storage.save_daily_code(day, "HM1-D-AAAAAAA", NOW) == "HM1-D-AAAAAAA"
    assert await storage.save_daily_code(day, "HM1-D-ZZZZZZZ", NOW) == "HM1-D-AAAAAAA"  # fixed once chosen
    await storage.save_game(_game("Ada", 100, 5_000, code="HM1-D-AAAAAAA", day=day), "g2")
    await storage.save_game(_game("Ada", 300, 5_000, code="HM1-D-AAAAAAA", day=day, ranked=False), "g3")
    await storage.save_game(_game("Bob", 150, 9_000, code="HM1-D-AAAAAAA", day=day), "g4")
    assert [g.nickname for g in await storage.daily_leaderboard(day, 10)] == ["Bob", "Ada"]
    days = await storage.daily_days(date(2026, 11, 29), 10)
    assert [(d.day, d.code, d.players) for d in days] == [(day, "HM1-D-AAAAAAA", 2)]
    assert await storage.daily_days(day, 10) == []
    await storage.close()


async def test_migrations_downgrade_and_upgrade_again(db_url: str) -> None:
    engine = make_engine(db_url)
    await migrate(engine)

    def down_and_up(sync_conn: object) -> set[str]:
        config = alembic_config(sync_conn)  # type: ignore[arg-type]
        command.downgrade(config, "base")
        after_down = set(inspect(sync_conn).get_table_names())
        command.upgrade(config, "head")
        return after_down

    async with engine.begin() as conn:
        assert await conn.run_sync(down_and_up) <= {"alembic_version"}
    storage = SqlStorage(engine)
    await storage.save_game(_game("Ada", 520, 1), "game-ada")
    assert (await storage.get_game("game-ada")) is not None
    await storage.close()


async def test_a_whole_server_on_postgresql(start_server: StartServer, pg_database: str) -> None:
    record = won_record()
    server = await start_server(db_url=pg_database)
    async with aiohttp.ClientSession() as http:
        assert await (await http.get(server.make_url("/healthz"))).json() == {"status": "ok"}
    client = await WsClient.connect(server, "ada")
    await client.send("solo", name="Ada", code=str(record.code))
    await client.next("welcome")
    for step in record.moves:
        await client.send("move", positions=step.names())  # type: ignore[union-attr]
        await client.next("moved")
    over = await client.next("game_over")
    assert over["outcome"] == "won"
    await client.close()
    await server.close()
    server = await start_server(db_url=pg_database)  # restarted: nothing lost
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/leaderboard/{record.code}"))).json()
    assert [(e["name"], e["score"], e["game"]) for e in board["entries"]] == [("Ada", 520, over["game"])]


async def test_healthz_stays_ok_and_readyz_says_unavailable_when_the_database_is_gone(
    start_server: StartServer, pg_database: str, postgres_url: str
) -> None:
    server = await start_server(db_url=pg_database)
    async with aiohttp.ClientSession() as http:
        assert (await http.get(server.make_url("/healthz"))).status == 200
        name = pg_database.rsplit("/", 1)[1]
        await admin(postgres_url, f'DROP DATABASE "{name}" WITH (FORCE)')
        # liveness: the process serves; restarting it would not bring the database back
        assert await (await http.get(server.make_url("/healthz"))).json() == {"status": "ok"}
        response = await http.get(server.make_url("/readyz"))
        assert response.status == 503
        body = await response.json()
        assert body["status"] == "unavailable" and body["checks"]["database"].startswith("down: ")
        assert "Traceback" not in str(body)
        # the API says so too, as JSON, without a traceback
        board = await http.get(server.make_url("/api/leaderboard/HM1-N-AAAAAAA"))
        assert board.status == 503 and (await board.json())["error"]["code"] == "unavailable"


async def test_a_whole_server_in_memory(start_server: StartServer) -> None:
    record = won_record()
    server = await start_server(db_url="memory://")
    client = await WsClient.connect(server, "ada")
    await client.send("solo", name="Ada", code=str(record.code))
    await client.next("welcome")
    for step in record.moves:
        await client.send("move", positions=step.names())  # type: ignore[union-attr]
        await client.next("moved")
    over = await client.next("game_over")
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/leaderboard/{record.code}"))).json()
        game = await (await http.get(server.make_url(f"/api/games/{over['game']}"))).json()
    assert [(e["name"], e["score"], e["game"]) for e in board["entries"]] == [("Ada", 520, over["game"])]
    assert game["outcome"] == "won" and len(game["moves"]) == 48
    await client.close()
