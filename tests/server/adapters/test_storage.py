"""Storage on SQLite and on PostgreSQL, both through the Alembic migrations, and in memory: the
schema the migrations build, one contract every implementation keeps (the leaderboards' order
by the one ranking rule, the daily bookkeeping), and whole servers on PostgreSQL and in memory."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Coroutine
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from alembic import command
from sqlalchemy import insert, inspect, text

from halfmoon.codes import daily_code, sealed_code
from halfmoon.protocol import ranking_key
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.adapters.models import DailyAttemptRow
from halfmoon_server.adapters.storage import (
    FinishedGame,
    SqlStorage,
    alembic_config,
    make_engine,
    migrate,
    open_storage,
)
from halfmoon_server.core.records import PlayerGame
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import Storage
from halfmoon_server.web import keys
from tests.server.conftest import StartServer, admin
from tests.server.support import WsClient, won_record

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'sub' / 'halfmoon.db'}"
    url: str = request.getfixturevalue("pg_database")
    return url


def _game(
    name: str, score: int, time_ms: int, *, code: str = "HM1-N-AAAAAAA", day: date | None = None, ranked: bool = True
) -> FinishedGame:
    return FinishedGame(
        nickname=name,
        code=code,
        mode="daily" if day else "race",
        room="ABCDEF",
        score=score,
        moves=score // 10,
        time_ms=time_ms,
        outcome="won" if score == 520 else "gave_up",
        record={"code": code, "moves": [["1", "2"]]},
        ranked=ranked,
        daily_date=day,
        finished_at=NOW,
    )


async def test_migrations_build_the_schema_and_storage_works(db_url: str) -> None:
    engine = make_engine(db_url)
    await migrate(engine)
    await migrate(engine)  # already at the newest revision: nothing to do

    def tables(sync_conn: object) -> set[str]:
        return set(inspect(sync_conn).get_table_names())

    async with engine.connect() as conn:
        assert await conn.run_sync(tables) == {
            "alembic_version", "games", "daily_challenges", "daily_attempts",
            "ratings", "rating_history", "rated_races",
            "accounts", "passkeys", "account_players", "account_sessions", "account_tokens",
        }
        assert (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one() == "0011"

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


async def test_a_sqlite_database_is_readable_by_the_servers_user_alone(tmp_path: Path) -> None:
    # it holds today's and tomorrow's daily codes and the games of races still being played: with
    # the usual umask (022) any account on the host could read the deals
    path = tmp_path / "data" / "halfmoon.db"
    old = os.umask(0o022)
    try:
        storage = await open_storage(f"sqlite+aiosqlite:///{path}")
        try:
            day = date(2026, 12, 7)
            await storage.save_daily_code(day, str(daily_code(day, b"s" * 32, long=True)), datetime.now(UTC))
            files = [p for p in path.parent.iterdir() if p.name.startswith("halfmoon.db")]
            assert path in files
            for file in files:
                assert stat.S_IMODE(file.stat().st_mode) & 0o077 == 0, (file.name, oct(file.stat().st_mode))
        finally:
            await storage.close()
    finally:
        os.umask(old)


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

    # a game keeps whether it is ranked and why not, for REST and the history
    bot = replace(_game("Bot", 520, 1_000, code="HM1-N-CCCCCCC"), ranked=False, unranked_reason="bot", player="p" * 64)
    await storage.save_game(bot, "g-bot")
    kept = await storage.get_game("g-bot")
    assert kept is not None and (kept.ranked, kept.unranked_reason) == (False, "bot")
    [mine] = await storage.games_of_player("p" * 64, 10)
    assert (mine.ranked, mine.unranked_reason) == (False, "bot")
    await storage.close()


async def test_the_migration_to_0007_makes_the_open_races_and_solo_games_stored_before_it_casual(
    db_url: str,
) -> None:
    """Games stored before ranked and casual results existed: an open race's and a solo game's
    code was known in advance (casual); a sealed race's game and a daily's first attempt stay
    ranked; a daily retry gets its reason."""
    engine = make_engine(db_url)

    def to_0005_then_head(sync_conn: Any) -> list[tuple[str, bool, str | None]]:
        config = alembic_config(sync_conn)
        command.upgrade(config, "0005")
        rows = [
            ("open", "race", None, None, True),
            ("sealed", "race", "ab" * 16, None, True),
            ("solo", "solo", None, None, True),
            ("first", "daily", None, NOW.date(), True),
            ("retry", "daily", None, NOW.date(), False),
        ]
        for game_id, mode, salt, day, ranked in rows:
            sync_conn.execute(
                text(
                    "INSERT INTO games (id, nickname, name_key, code, mode, room, score, moves, time_ms, outcome,"
                    " record, ranked, daily_date, finished_at, salt) VALUES (:id, 'Ada', 'ada', 'HM1-N-AAAAAAA',"
                    " :mode, 'ABCDEF', 10, 1, 1000, 'gave_up', '{}', :ranked, :day, :at, :salt)"
                ),
                {"id": game_id, "mode": mode, "ranked": ranked, "day": day, "at": NOW, "salt": salt},
            )
        command.upgrade(config, "head")
        found = sync_conn.execute(text("SELECT id, ranked, unranked_reason FROM games ORDER BY id"))
        return [(r[0], bool(r[1]), r[2]) for r in found]

    async with engine.begin() as conn:
        assert await conn.run_sync(to_0005_then_head) == [
            ("first", True, None),
            ("open", False, "casual"),
            ("retry", False, "daily_retry"),
            ("sealed", True, None),
            ("solo", False, "casual"),
        ]
    await engine.dispose()


async def test_the_migration_to_0007_makes_the_open_races_stored_under_0006_casual_and_keeps_their_sealed_races_ranked(
    db_url: str,
) -> None:
    """Games stored at revision 0006 (the seal, before ranked and casual results): that release
    wrote a game with no seal through SQLAlchemy's JSON type, which stores Python's None as the
    JSON ``null`` — not SQL NULL. An open race stored so is still casual after 0007; a sealed
    race (a seal object) stays ranked."""
    import sqlalchemy as sa

    engine = make_engine(db_url)
    seal = {"seed": "ab" * 16, "contributions": ["cd" * 16]}

    def to_0006_then_head(sync_conn: Any) -> list[tuple[str, bool, str | None]]:
        config = alembic_config(sync_conn)
        command.upgrade(config, "0006")
        games = sa.table(  # the games table as 0006's storage wrote it (the JSON type's default)
            "games",
            *(
                sa.column(c)
                for c in (
                    "id",
                    "nickname",
                    "name_key",
                    "code",
                    "mode",
                    "room",
                    "score",
                    "moves",
                    "time_ms",
                    "outcome",
                    "ranked",
                    "finished_at",
                )
            ),
            sa.column("record", sa.JSON()),
            sa.column("seal", sa.JSON()),
        )
        for game_id, mode, sealed in [("open", "race", None), ("sealed", "race", seal), ("solo", "solo", None)]:
            sync_conn.execute(
                games.insert().values(
                    id=game_id,
                    nickname="Ada",
                    name_key="ada",
                    code="HM1-N-AAAAAAA",
                    mode=mode,
                    room="ABCDEF",
                    score=10,
                    moves=1,
                    time_ms=1000,
                    outcome="gave_up",
                    record={},
                    ranked=True,
                    finished_at=NOW,
                    seal=sealed,
                )
            )
        command.upgrade(config, "head")
        found = sync_conn.execute(text("SELECT id, ranked, unranked_reason FROM games ORDER BY id"))
        return [(r[0], bool(r[1]), r[2]) for r in found]

    async with engine.begin() as conn:
        assert await conn.run_sync(to_0006_then_head) == [
            ("open", False, "casual"),
            ("sealed", True, None),
            ("solo", False, "casual"),
        ]
    await engine.dispose()


async def test_a_players_history_lists_a_stored_game_as_stored_without_its_record(any_storage: Storage) -> None:
    """Every field of a game is defined once (:class:`halfmoon_server.core.records.FinishedGame`): what
    a history lists is the stored game with an empty record and its undo count, on every storage."""
    game = replace(
        _game("Ada", 300, 7_000, code="HM1-N-CCCCCCC"),
        record={"code": "HM1-N-CCCCCCC", "moves": [["1", "2"], "undo", ["1", "2"], "undo"]},
        player="h" * 64,
        salt="5" * 32,
        seal={"seed": "ab" * 32, "contributions": ["cd" * 16]},
        ranked=False,
        unranked_reason="casual",
    )
    await any_storage.save_game(game, "g-history")
    stored = await any_storage.get_game("g-history")
    assert stored is not None and stored.undos == 2
    [listed] = await any_storage.games_of_player("h" * 64, 10)
    assert listed == PlayerGame.listed(stored)
    assert (listed.record, listed.undos, listed.sealed) == ({}, 2, True)


async def test_concurrent_daily_claims_from_one_address_rank_at_most_the_cap(any_storage: Storage) -> None:
    """25 first attempts of the day from one address at once (25 names, say 25 tabs): the count of
    the address's ranked attempts and the new attempt's row are one step (SQLite: under its write
    lock; PostgreSQL: under an advisory lock), so no more than the cap are ranked."""
    day, cap = date(2026, 11, 28), 3
    claims = [
        any_storage.claim_daily_attempt(day, f"name-{i}", NOW, address="203.0.113.7", per_address=cap)
        for i in range(25)
    ]
    ranked = await asyncio.gather(*claims)
    assert sum(ranked) == cap, ranked
    # every attempt was recorded, ranked or not: the same name cannot start a second one
    assert not any(await asyncio.gather(*(any_storage.claim_daily_attempt(day, f"name-{i}", NOW) for i in range(25))))
    # the cap is per address and per day
    assert await any_storage.claim_daily_attempt(day, "other", NOW, address="203.0.113.8", per_address=cap)
    next_day = date(2026, 11, 29)
    assert await any_storage.claim_daily_attempt(next_day, "name-0", NOW, address="203.0.113.7", per_address=cap)


async def test_with_no_per_address_cap_every_names_first_daily_attempt_is_ranked(any_storage: Storage) -> None:
    """``per_address=0`` (--daily-ranked-per-address 0): no cap per address — every name's first
    attempt from one address is ranked, and a name's second is still not."""
    day = date(2026, 11, 28)
    firsts = [
        await any_storage.claim_daily_attempt(day, f"name-{i}", NOW, address="203.0.113.7", per_address=0)
        for i in range(12)
    ]
    assert all(firsts)
    assert not await any_storage.claim_daily_attempt(day, "name-0", NOW, address="203.0.113.7")


async def test_a_daily_claim_asked_again_after_its_answer_was_lost_is_the_same_claim_moved_to_its_new_room(
    any_storage: Storage,
) -> None:
    """A claim the database recorded but did not answer for (its room dropped unseen) is found again
    by the same name, address and account naming that room: ranked as it was, in the new room,
    once — and the address's ranked count is not spent a second time."""
    day, where = date(2026, 11, 28), "203.0.113.7"
    assert await any_storage.claim_daily_attempt(
        day, "ada", NOW, address=where, per_address=2, account="acc", room="R1"
    )
    assert await any_storage.claim_daily_attempt(
        day, "ada", NOW, address=where, per_address=2, account="acc", room="R2", retrying=("R0", "R1")
    )
    assert await any_storage.daily_attempt_room(day, "acc") == "R2"
    # found once: the same retry again is a second attempt of the name (unranked)
    assert not await any_storage.claim_daily_attempt(
        day, "ada", NOW, address=where, per_address=2, account="acc", room="R3", retrying=("R1",)
    )
    assert await any_storage.daily_attempt_room(day, "acc") == "R2"
    # the address spent one ranked attempt, not two: a second name from it is still ranked
    assert await any_storage.claim_daily_attempt(day, "bob", NOW, address=where, per_address=2, room="B1")


async def test_a_daily_retry_naming_another_claims_room_or_from_elsewhere_is_not_that_claim(
    any_storage: Storage,
) -> None:
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", room="R1")
    assert not await any_storage.claim_daily_attempt(day, "ada", NOW, address="a2", room="R2", retrying=("R1",))
    assert not await any_storage.claim_daily_attempt(
        day, "ada", NOW, address="a1", account="x", room="R3", retrying=("R1",)
    )
    assert not await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", room="R4", retrying=("R9",))
    # a retry whose earlier claim was never recorded is a first claim
    assert await any_storage.claim_daily_attempt(day, "bob", NOW, address="a1", room="B2", retrying=("B1",))


async def test_two_retries_of_one_lost_daily_claim_at_once_find_it_once(any_storage: Storage) -> None:
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, room="R1")
    retries = [any_storage.claim_daily_attempt(day, "ada", NOW, room=f"S{i}", retrying=("R1",)) for i in range(6)]
    assert sorted(await asyncio.gather(*retries)) == [False] * 5 + [True]


@pytest.mark.parametrize(
    ("lost", "look"),
    [
        ({"address": "a1", "account": "acc"}, {"name": "zed", "address": "a9", "account": "acc"}),
        ({"address": "a1"}, {"name": "mal", "address": "a1"}),
        ({"address": "a1"}, {"name": "ada", "address": "a2"}),
    ],
    ids=["another name of the account", "another name from the address", "the name from elsewhere"],
)
async def test_a_lost_daily_claim_is_spent_once_a_claim_sharing_its_name_address_or_account_was_made(
    any_storage: Storage, lost: dict[str, str], look: dict[str, str]
) -> None:
    """Whoever makes a claim may see the day's cards: once a claim shares a name, an address or an
    account with the lost one, asking again for the lost one is a second attempt (unranked)."""
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, per_address=3, room="R1", **lost)
    await any_storage.claim_daily_attempt(
        day, look["name"], NOW, address=look["address"], account=look.get("account"), per_address=3, room="L1"
    )
    assert not await any_storage.claim_daily_attempt(
        day, "ada", NOW, per_address=3, room="R2", retrying=("R1",), **lost
    )


async def test_a_lost_unranked_daily_claim_of_an_account_moves_to_its_new_room(any_storage: Storage) -> None:
    """The name was played today by somebody else: the account's attempt is unranked, and asked
    again after a lost answer its room is the new one (another device resumes it there)."""
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, address="a0", room="R0")
    assert not await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", account="acc", room="R1")
    assert not await any_storage.claim_daily_attempt(
        day, "ada", NOW, address="a1", account="acc", room="R2", retrying=("R1",)
    )
    assert await any_storage.daily_attempt_room(day, "acc") == "R2"


async def _made_while_a_claim_commits(
    storage: SqlStorage, claim: Coroutine[Any, Any, bool], *, address_locked: bool = False, **row: Any
) -> bool:
    """What ``claim`` answers when it is made while another claim of 'ada' (room R1, from address
    a1; ``row`` changes it) is written but not committed — and, with ``address_locked``, holds its
    address's lock as a claim under a ranked limit does. The other claim commits after 0.5 s."""
    day = date(2026, 11, 28)
    values = dict(day=day, name_key="ada", started_at=NOW, address="a1", ranked=True, account=None, room="R1")
    async with storage.engine.connect() as connection:
        committing = await connection.begin()
        if address_locked and connection.dialect.name == "postgresql":
            await connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"daily:{day}:a1"})
        await connection.execute(insert(DailyAttemptRow).values(**{**values, **row}))
        made = asyncio.create_task(claim)
        await asyncio.sleep(0.5)
        assert not made.done(), "it waited for the other claim's commit"
        await committing.commit()
    return await made


async def test_a_daily_retry_made_while_the_lost_claim_still_commits_finds_it(db_url: str) -> None:
    """The retry's first look misses a claim whose commit is still under way (PostgreSQL shows no
    uncommitted row; SQLite makes the retry wait for its lock): the retry's insert then meets it,
    and it is found then."""
    storage = await open_storage(db_url)
    assert isinstance(storage, SqlStorage)
    day = date(2026, 11, 28)
    try:
        retry = storage.claim_daily_attempt(day, "ada", NOW, address="a1", per_address=3, room="R2", retrying=("R1",))
        assert await _made_while_a_claim_commits(storage, retry) is True
    finally:
        await storage.close()


@pytest.mark.parametrize("shared", ["address", "account"])
async def test_a_look_made_while_the_lost_claim_still_commits_spends_it(db_url: str, shared: str) -> None:
    """A claim sharing the lost claim's address (its lock) or account (its unique index) made while
    that claim's commit is under way waits for it, shows its cards after it — and marks it then:
    asked again, the lost claim is not ranked."""
    storage = await open_storage(db_url)
    assert isinstance(storage, SqlStorage)
    day = date(2026, 11, 28)
    by_address = shared == "address"
    account = None if by_address else "acc"
    try:
        look = (
            storage.claim_daily_attempt(day, "mal", NOW, address="a1", per_address=1, room="M1")
            if by_address
            else storage.claim_daily_attempt(day, "zed", NOW, address="a9", account="acc", room="Z1")
        )
        assert await _made_while_a_claim_commits(storage, look, address_locked=by_address, account=account) is False
        again = storage.claim_daily_attempt(
            day, "ada", NOW, address="a1", per_address=int(by_address), account=account, room="R2", retrying=("R1",)
        )
        assert await again is False
    finally:
        await storage.close()


async def test_a_retry_that_finds_its_claim_spends_the_other_lost_claims_it_shares_with(any_storage: Storage) -> None:
    """Two lost claims from one address: the first asked again is found (and its cards shown), so
    the second, asked again after it, is not ranked."""
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", per_address=2, room="R1")
    assert await any_storage.claim_daily_attempt(day, "bob", NOW, address="a1", per_address=2, room="B1")
    # (the claims of one address mark each other as they are made: the database's own lost answers
    # leave them unmarked only in a race; start from that state)
    if isinstance(any_storage, MemoryStorage):
        any_storage.looked_since.clear()
    else:
        assert isinstance(any_storage, SqlStorage)
        async with any_storage.engine.begin() as connection:
            await connection.execute(text("UPDATE daily_attempts SET looked_since = false"))
    assert await any_storage.claim_daily_attempt(
        day, "bob", NOW, address="a1", per_address=2, room="B2", retrying=("B1",)
    )
    assert not await any_storage.claim_daily_attempt(
        day, "ada", NOW, address="a1", per_address=2, room="R2", retrying=("R1",)
    )


async def test_with_no_limit_a_address_the_claims_of_its_other_names_leave_a_lost_claim(any_storage: Storage) -> None:
    """With no ranked limit an address (players behind one router), an address is nobody's: a
    neighbour's claim under another name does not spend the lost one."""
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", room="R1")
    assert await any_storage.claim_daily_attempt(day, "bob", NOW, address="a1", room="B1")
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", room="R2", retrying=("R1",))


async def test_a_claim_sharing_nothing_with_a_lost_claim_leaves_it_to_be_asked_again(any_storage: Storage) -> None:
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", account="acc", per_address=3, room="R1")
    assert await any_storage.claim_daily_attempt(day, "bob", NOW, address="a2", account="bcc", per_address=3, room="B1")
    assert await any_storage.claim_daily_attempt(
        day, "ada", NOW, address="a1", account="acc", per_address=3, room="R2", retrying=("R1",)
    )


async def test_a_spent_retry_of_an_accounts_claim_moves_the_accounts_attempt_to_its_new_room(
    any_storage: Storage,
) -> None:
    """The account's 'Ada' was lost and 'Zed' looked: 'Ada' asked again is unranked, and the
    account's attempt — which another signed-in device resumes — is the room it is played in."""
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW, address="a1", account="acc", room="R1")
    assert not await any_storage.claim_daily_attempt(day, "zed", NOW, address="a9", account="acc", room="Z1")
    assert not await any_storage.claim_daily_attempt(
        day, "ada", NOW, address="a1", account="acc", room="R2", retrying=("R1",)
    )
    assert await any_storage.daily_attempt_room(day, "acc") == "R2"


async def test_a_database_failure_is_said_in_one_line_whatever_the_driver_adds(tmp_path: Path) -> None:
    """A driver's message may go on with the statement or a traceback of its own (seen with
    asyncpg on a connection reset): a StorageError says its first line, so a log line that quotes
    it stays one line, with no traceback."""
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}")
    assert isinstance(storage, SqlStorage)

    async def failing() -> None:
        raise ConnectionResetError("connection reset\nTraceback (most recent call last):\n  File ...")

    try:
        with pytest.raises(StorageError) as failed:
            await storage.run("cannot read the leaderboard", failing)
        assert str(failed.value) == "cannot read the leaderboard: connection reset"
    finally:
        await storage.close()


async def test_a_drivers_own_connection_error_is_a_storage_failure_not_a_bug(tmp_path: Path) -> None:
    """The lowest SQLAlchemy allowed lets asyncpg's error through unwrapped when a connection
    drops while it is being set up (seen in a PostgreSQL outage: the ratings job logged it as a
    bug, with its traceback): it is a StorageError like any other failure of the database."""
    exceptions = pytest.importorskip("asyncpg.exceptions")
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}")
    assert isinstance(storage, SqlStorage)

    async def dropped() -> None:
        raise exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation")

    async def refused() -> None:
        raise exceptions.InterfaceError("cannot perform operation: another operation is in progress")

    try:
        for work in (dropped, refused):
            with pytest.raises(StorageError) as failed:
                await storage.run("cannot rate the finished races", work)
            assert str(failed.value).startswith("cannot rate the finished races: ")
    finally:
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
    await server.app[keys.TASKS].settle()  # (game_over does not wait for the database: the write follows it)
    async with aiohttp.ClientSession() as http:
        board = await (await http.get(server.make_url(f"/api/leaderboard/{record.code}"))).json()
        game = await (await http.get(server.make_url(f"/api/games/{over['game']}"))).json()
    assert [(e["name"], e["score"], e["game"]) for e in board["entries"]] == [("Ada", 520, over["game"])]
    assert game["outcome"] == "won" and len(game["moves"]) == 48
    await client.close()


async def test_every_storage_keeps_a_sealed_races_long_code_and_seal_and_a_dailys_long_code(
    any_storage: Storage,
) -> None:
    """A sealed race's code (HM1-S-…, 37 characters) and its seal, and a long daily code, are kept
    whole on every backend (PostgreSQL enforces the columns' length: 0006 widened them)."""
    seed, contributions = "5e" * 32, ["a1" * 16, "b2" * 16]
    code = str(sealed_code(seed, contributions))
    game = replace(_game("Ada", 10, 1000, code=code), seal={"seed": seed, "contributions": contributions})
    await any_storage.save_game(game, "sealed-1")
    stored = await any_storage.get_game("sealed-1")
    assert stored is not None and stored.code == code and stored.seal == game.seal
    day = date(2026, 12, 6)
    daily = str(daily_code(day, b"secret", long=True))
    assert await any_storage.save_daily_code(day, daily, NOW) == daily == await any_storage.daily_code(day)


async def test_an_accounts_claims_rank_one_attempt_a_day_even_at_once_and_keep_its_room(any_storage: Storage) -> None:
    """One ranked daily attempt per account: 10 claims at once under 10 names of one account rank
    exactly one (the unique (day, account) decides); the account's attempt keeps its room; another
    account, a claim with no account and the next day are apart."""
    day = date(2026, 11, 28)
    claims = [
        any_storage.claim_daily_attempt(day, f"name-{i}", NOW, account="acct-ada", room=f"ROOM{i:02}")
        for i in range(10)
    ]
    ranked = await asyncio.gather(*claims)
    assert sum(ranked) == 1, ranked
    assert await any_storage.daily_attempt_room(day, "acct-ada") == f"ROOM{ranked.index(True):02}"
    assert not await any_storage.claim_daily_attempt(day, "fresh-name", NOW, account="acct-ada")
    assert await any_storage.claim_daily_attempt(day, "bo", NOW, account="acct-bo", room="BOROOM")
    assert await any_storage.daily_attempt_room(day, "acct-bo") == "BOROOM"
    assert await any_storage.claim_daily_attempt(day, "no-account", NOW)
    assert await any_storage.claim_daily_attempt(day, "no-account-either", NOW)
    assert await any_storage.daily_attempt_room(day, "acct-cy") is None
    assert await any_storage.claim_daily_attempt(date(2026, 11, 29), "name-0", NOW, account="acct-ada")


async def test_an_accounts_attempt_under_a_name_played_today_spends_the_accounts_ranked_attempt(
    any_storage: Storage,
) -> None:
    """An account's attempt under a name someone played today is unranked, and it is the account's
    attempt of the day all the same (its room kept): the account's next attempt, under its own
    name, is not ranked — an unranked look at the cards is no scouting run before the ranked one.
    A name whose key is the account marker's text cannot take it: names are case-folded."""
    day = date(2026, 11, 28)
    assert await any_storage.claim_daily_attempt(day, "ann", NOW)  # someone played as Ann
    assert not await any_storage.claim_daily_attempt(day, "ann", NOW, account="acct-ada", room="SCOUTS")
    assert await any_storage.daily_attempt_room(day, "acct-ada") == "SCOUTS"
    assert not await any_storage.claim_daily_attempt(day, "ada", NOW, account="acct-ada", room="RANKED")
    assert await any_storage.daily_attempt_room(day, "acct-ada") == "SCOUTS"
    # the name Ada is still free for its own first attempt (another identity's, with no account)
    assert await any_storage.claim_daily_attempt(day, "ada", NOW)
    assert await any_storage.claim_daily_attempt(day, "account:acct-bo", NOW)  # a name's key, not a marker
    assert await any_storage.claim_daily_attempt(day, "ann", NOW, account="acct-bo") is False
    assert await any_storage.claim_daily_attempt(day, "bo", NOW, account="acct-bo") is False
