"""Ratings in every storage (memory, SQLite, PostgreSQL): a race is rated once every seat is
stored, once, by the job's pass (never by storing a game); the rebuild gives the job's numbers;
two instances sharing one database rate each race once; an account's linked keys are one identity
(never rating each other), and the rebuild still gives the job's numbers when keys are linked
between its passes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from halfmoon_server.adapters.accounts import accounts_for
from halfmoon_server.adapters.storage import FinishedGame, SqlStorage, make_engine, open_storage
from halfmoon_server.core.rating import DUE, NOT_RATED, PROVISIONAL_GAMES, RATED, Seat, Skill, rate_race
from halfmoon_server.ports import Storage

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
SEAL = {"seed": "s" * 32, "contributions": []}
ADA, BEA, CAL, DAN = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def seat(player: str | None, score: int, *, room: str = "ROOMAA", code: str = "HM1-N-AAAAAAA", seats: int = 3,
         minute: int = 0, sealed: bool = True, ranked: bool = True, name: str | None = None) -> FinishedGame:
    """A player's game of a race of ``seats`` seats (sealed, ranked and identified unless told)."""
    return FinishedGame(
        nickname=name or (player or "bot")[:3], code=code, mode="race", room=room, score=score, moves=score // 10,
        time_ms=60_000 + minute, outcome="gave_up", record={"code": code, "moves": []}, ranked=ranked,
        daily_date=None, finished_at=T0 + timedelta(minutes=minute), player=player,
        seal=SEAL if sealed else None, seats=seats, unranked_reason=None if ranked else "bot",
    )


async def store(storage: Storage, games: list[FinishedGame], room: str) -> None:
    for i, game in enumerate(games):
        await storage.save_game(game, f"{room}-{i}")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    url = "memory://" if request.param == "memory" else (
        f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}" if request.param == "sqlite"
        else request.getfixturevalue("pg_database")
    )
    opened = await open_storage(url)
    yield opened
    await opened.close()


async def test_a_race_is_rated_by_the_job_once_every_seat_is_stored_and_only_once(storage: Storage) -> None:
    games = [seat(ADA, 300), seat(BEA, 200), seat(CAL, 100)]
    await store(storage, games[:2], "ROOMAA")
    assert await storage.game_rating("ROOMAA-0") == (DUE, None)  # stored: waits for the job
    assert await storage.rate_due(T0, 100) == 0  # a seat still plays: not yet
    assert await storage.player_rating(ADA, 10) == (None, [])
    await store(storage, games, "ROOMAA")  # the third seat (the first two again: stored once)
    assert await storage.rate_due(T0, 100) == 1
    assert await storage.rate_due(T0, 100) == 0  # rated once
    status, ada = await storage.game_rating("ROOMAA-0")
    assert status == RATED and ada is not None
    assert ada.place == 1 and ada.before == Skill() and ada.after.games == 1 and ada.change > 0
    _, cal = await storage.game_rating("ROOMAA-2")
    assert cal is not None and cal.place == 3 and cal.after.mu < cal.before.mu
    rated, history = await storage.player_rating(ADA, 10)
    assert rated is not None and rated.skill == ada.after and history == [ada]


async def test_a_seat_that_removed_no_card_carries_no_weight(storage: Storage) -> None:
    # an idle second identity beside its owner lifts nobody: the race is rated as if it were not there
    await store(storage, [seat(ADA, 300), seat(BEA, 200), seat(DAN, 0)], "ROOMAA")
    assert await storage.rate_due(T0, 100) == 1
    _, with_idle = await storage.game_rating("ROOMAA-0")
    pair = [Seat("x", "R", "C", ADA, "Ada", 300, 1, T0, 2), Seat("y", "R", "C", BEA, "Bea", 200, 1, T0, 2)]
    two_alone = rate_race(pair, {})
    assert with_idle is not None and with_idle.after == two_alone[0].after  # as if the idle seat were not there
    assert await storage.game_rating("ROOMAA-2") == (NOT_RATED, None)
    assert (await storage.player_rating(DAN, 10))[0] is None
    # alone with an idle identity: nobody moves
    await store(storage, [seat(ADA, 300, room="ROOMCC", code="HM1-N-CCCCCCC", seats=2),
                          seat(CAL, 0, room="ROOMCC", code="HM1-N-CCCCCCC", seats=2)], "ROOMCC")
    assert await storage.rate_due(T0, 100) == 1
    assert await storage.game_rating("ROOMCC-0") == (NOT_RATED, None)


async def test_the_first_race_moves_two_identities_the_same_with_or_without_an_idle_seat(storage: Storage) -> None:
    await store(storage, [seat(ADA, 300, seats=3), seat(BEA, 200, seats=3), seat(DAN, 0, seats=3)], "ROOMAA")
    await storage.rate_due(T0, 100)
    _, ada = await storage.game_rating("ROOMAA-0")
    _, bea = await storage.game_rating("ROOMAA-1")
    assert ada is not None and bea is not None
    assert (ada.place, bea.place) == (1, 2)  # the idle seat holds no place
    assert ada.after.mu - 25 == pytest.approx(25 - bea.after.mu)  # two equals: a zero-sum first race


async def test_open_races_bots_and_anonymous_seats_are_not_rated(storage: Storage) -> None:
    await store(storage, [seat(ADA, 300, sealed=False, seats=2), seat(BEA, 200, sealed=False, seats=2)], "OPENAA")
    await store(storage, [seat(ADA, 300, room="BOTSAA", seats=2),
                          seat(BEA, 200, room="BOTSAA", ranked=False, seats=2)], "BOTSAA")
    await store(storage, [seat(ADA, 300, room="ANONAA", seats=2), seat(None, 200, room="ANONAA", seats=2)], "ANONAA")
    await storage.rate_due(T0, 100)
    for game in ("OPENAA-0", "OPENAA-1", "BOTSAA-0", "BOTSAA-1", "ANONAA-0", "ANONAA-1"):
        assert await storage.game_rating(game) == (NOT_RATED, None), game
    assert await storage.rating_board(10, provisional=True) == []


async def races(storage: Storage, count: int, *, rate_every: int) -> None:
    """``count`` races of four identities in turn (3 seats each), stored in an order that is not
    the races' order, with a job pass every ``rate_every`` races."""
    people = [ADA, BEA, CAL, DAN]
    for n in range(count):
        room = f"R{n:05d}"
        who = [people[(n + k) % 4] for k in range(3)]
        scores = [100 + (n * 37 + k * 53) % 300 for k in range(3)]
        code = f"HM1-N-{n:07d}"
        games = [seat(p, s, room=room, code=code, minute=count - n) for p, s in zip(who, scores, strict=True)]
        await store(storage, games, room)
        if (n + 1) % rate_every == 0:
            await storage.rate_due(T0, 2)


async def test_the_rebuild_gives_the_numbers_the_job_gave(storage: Storage) -> None:
    await races(storage, 14, rate_every=3)
    while await storage.rate_due(T0, 100):
        pass
    board = await storage.rating_board(10, provisional=True)
    histories = [await storage.player_rating(p, 100) for p in (ADA, BEA, CAL, DAN)]
    assert len(board) == 4 and all(r.skill.games >= PROVISIONAL_GAMES for r in board)
    assert await storage.rebuild_ratings(T0 + timedelta(days=1)) == 14
    assert await storage.rating_board(10, provisional=True) == board
    for player, (rated, history) in zip((ADA, BEA, CAL, DAN), histories, strict=True):
        again, history_again = await storage.player_rating(player, 100)
        assert again == rated
        assert [(h.game_id, h.race, h.place, h.before, h.after) for h in history_again] == [
            (h.game_id, h.race, h.place, h.before, h.after) for h in history
        ]


async def test_the_rebuild_of_a_database_never_rated_rates_the_races_in_order(storage: Storage) -> None:
    await races(storage, 6, rate_every=1000)
    assert await storage.rebuild_ratings(T0) == 6
    assert await storage.rate_due(T0, 100) == 0
    _, newest = await storage.player_rating(BEA, 100)
    assert [h.race for h in newest] == sorted((h.race for h in newest), reverse=True)


async def test_the_leaderboard_holds_the_provisional_ratings_only_when_asked(storage: Storage) -> None:
    for n in range(PROVISIONAL_GAMES):
        room = f"P{n:05d}"
        await store(storage, [seat(ADA, 300, room=room, seats=2, minute=n),
                              seat(BEA, 100, room=room, seats=2, minute=n)], room)
        await storage.rate_due(T0, 100)
        board = await storage.rating_board(10)
        assert board == [] if n < PROVISIONAL_GAMES - 1 else [r.player for r in board] == [ADA, BEA]
    best = await storage.rating_board(10)
    assert [r.player for r in best] == [ADA, BEA] and best[0].skill.shown > best[1].skill.shown
    assert not best[0].skill.provisional


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_two_instances_sharing_a_database_rate_each_race_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}" if backend == "sqlite" else request.getfixturevalue(
        "pg_database"
    )
    first, second = await open_storage(url), await open_storage(url)
    try:
        await races(first, 12, rate_every=1000)
        await asyncio.gather(*(s.rate_due(T0, 1) for _ in range(8) for s in (first, second)))
        while await first.rate_due(T0, 100) or await second.rate_due(T0, 100):
            pass
        assert isinstance(first, SqlStorage)
        engine = make_engine(url)
        async with engine.connect() as conn:
            from sqlalchemy import text

            rated = (await conn.execute(text("SELECT room, seq FROM rated_races ORDER BY seq"))).all()
            history = (await conn.execute(text("SELECT count(*) FROM rating_history"))).scalar_one()
        await engine.dispose()
        assert len(rated) == 12 and len({room for room, _ in rated}) == 12  # each once
        assert [seq for _, seq in rated] == list(range(1, 13))
        assert history == 36
        # in the same order a single instance takes them
        assert [room for room, _ in rated] == [f"R{n:05d}" for n in reversed(range(12))]
    finally:
        await first.close()
        await second.close()


async def test_storing_a_whole_race_rates_nothing_until_the_job_passes(storage: Storage) -> None:
    await store(storage, [seat(ADA, 300, seats=2), seat(BEA, 100, seats=2)], "ROOMAA")
    assert await storage.player_rating(ADA, 10) == (None, [])
    assert await storage.game_rating("ROOMAA-0") == (DUE, None)
    assert await storage.rating_board(10, provisional=True) == []


async def test_an_accounts_keys_are_one_identity_that_never_rates_itself(storage: Storage) -> None:
    """Two keys of one account in one race are one identity seated twice: counted once, at its
    worse place (a second device is no second try), rated as the key linked first; the other
    key's game moves nobody, and either key
    reads the account's one rating."""
    accounts = accounts_for(storage)
    assert await accounts.link_player("acct-ada", ADA, 1_000)
    assert await accounts.link_player("acct-ada", BEA, 2_000)  # the account's second device
    # the account's two keys alone in a race: one identity, nobody moves
    await store(storage, [seat(BEA, 300, room="PAIRAA", seats=2), seat(ADA, 200, room="PAIRAA", seats=2)], "PAIRAA")
    # with a third identity: the account (at its worse seat, ADA's key: BEA's better run does not
    # count) against CAL, as two players
    await store(storage, [seat(BEA, 300, minute=1), seat(ADA, 50, minute=1), seat(CAL, 100, minute=1)], "ROOMAA")
    assert await storage.rate_due(T0, 100) == 2
    assert await storage.game_rating("PAIRAA-0") == (NOT_RATED, None)
    assert await storage.game_rating("PAIRAA-1") == (NOT_RATED, None)
    _, worse = await storage.game_rating("ROOMAA-1")
    _, cal = await storage.game_rating("ROOMAA-2")
    assert worse is not None and cal is not None
    assert (worse.player, worse.place, cal.place) == (ADA, 2, 1)  # the account's canonical key, second
    assert await storage.game_rating("ROOMAA-0") == (NOT_RATED, None)  # its better seat moves nobody
    pair = [Seat("x", "R", "C", CAL, "Cal", 100, 1, T0, 2), Seat("y", "R", "C", ADA, "Ada", 50, 1, T0, 2)]
    assert worse.after == rate_race(pair, {})[1].after  # as two players, not three
    by_ada, by_bea = await storage.player_rating(ADA, 10), await storage.player_rating(BEA, 10)
    assert by_ada == by_bea and by_ada[0] is not None and by_ada[0].player == ADA and by_ada[0].skill.games == 1
    assert {r.player for r in await storage.rating_board(10, provisional=True)} == {ADA, CAL}


async def test_the_rebuild_gives_the_jobs_numbers_when_a_key_is_linked_between_passes(storage: Storage) -> None:
    """CAL plays 7 races as itself, then is linked to Ada's account and plays 7 more as the
    account: the rebuild rates each race as the identity it was rated under (CAL's early rating
    stays CAL's), so the numbers are the job's."""
    accounts = accounts_for(storage)
    assert await accounts.link_player("acct-ada", ADA, 1_000)
    people = [ADA, BEA, CAL, DAN]

    async def race_batch(first: int, count: int) -> None:
        for n in range(first, first + count):
            room, code = f"R{n:05d}", f"HM1-N-{n:07d}"
            who = [people[(n + k) % 4] for k in range(3)]
            scores = [100 + (n * 37 + k * 53) % 300 for k in range(3)]
            await store(storage, [seat(p, s, room=room, code=code, minute=n) for p, s in zip(who, scores, strict=True)],
                         room)
            if n % 3 == 2:
                await storage.rate_due(T0, 2)
        while await storage.rate_due(T0, 100):
            pass

    await race_batch(0, 7)
    cal_alone = (await storage.player_rating(CAL, 100))[0]
    assert cal_alone is not None and cal_alone.player == CAL
    assert await accounts.link_player("acct-ada", CAL, 2_000)
    await race_batch(7, 7)
    board = await storage.rating_board(10, provisional=True)
    assert {r.player for r in board} == {ADA, BEA, CAL, DAN}  # CAL's own rating, from before its link
    assert next(r for r in board if r.player == CAL) == cal_alone  # ... which its later races left alone
    histories = {p: await storage.player_rating(p, 100) for p in people}
    assert histories[CAL] == histories[ADA]  # the key reads the account's rating now
    assert await storage.rebuild_ratings(T0 + timedelta(days=1)) == 14
    assert await storage.rating_board(10, provisional=True) == board
    for player, (rated, history) in histories.items():
        again, history_again = await storage.player_rating(player, 100)
        assert again == rated, player
        assert [(h.game_id, h.player, h.race, h.place, h.before, h.after) for h in history_again] == [
            (h.game_id, h.player, h.race, h.place, h.before, h.after) for h in history
        ], player


@pytest.mark.parametrize("storage", ["sqlite", "postgres"], indirect=True)
async def test_a_game_rated_while_its_rating_is_read_reads_as_rated_not_as_not_rated(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's pass commits between the two reads of ``game_rating`` (each sees what is
    committed when it runs): the game reads as rated, never as neither due nor rated."""
    assert isinstance(storage, SqlStorage)
    await store(storage, [seat(ADA, 300), seat(BEA, 200), seat(CAL, 100)], "ROOMAA")
    sessions = storage._sessions

    class PassAfterTheFirstRead:
        def __init__(self) -> None:
            self.inner = sessions()
            self.reads = 0

        async def __aenter__(self) -> PassAfterTheFirstRead:
            self.session = await self.inner.__aenter__()
            return self

        async def __aexit__(self, *exc: object) -> None:
            await self.inner.__aexit__(*exc)

        async def _after(self, answer: object) -> object:
            self.reads += 1
            if self.reads == 1:
                assert await storage.rate_due(T0, 100) == 1  # the job's pass lands here
            return answer

        async def scalar(self, *args: object, **kwargs: object) -> object:
            return await self._after(await self.session.scalar(*args, **kwargs))  # type: ignore[arg-type]

        async def get(self, *args: object, **kwargs: object) -> object:
            return await self._after(await self.session.get(*args, **kwargs))  # type: ignore[arg-type]

    monkeypatch.setattr(storage, "_sessions", PassAfterTheFirstRead)
    status, ada = await storage.game_rating("ROOMAA-0")
    assert status == RATED and ada is not None and ada.place == 1
