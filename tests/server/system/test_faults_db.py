"""Database and Redis faults lose nothing, against the real services: a TCP proxy in front of
PostgreSQL (or Redis) that the test cuts — a reset (the server went down) or a blackhole (it froze,
or a firewall drops packets) — and restores; and the embedded SQLite file made read-only
(``chattr +i``: the tests run as root, and root ignores file modes but not the immutable flag).

What must hold: players get ``game_over`` on time during the cut; ``/healthz`` and ``/readyz``
answer 503 within their budget, naming what is down; once the database is back every game that
ended during the cut reaches the leaderboard, each once; connections opened while the SQLite file
was read-only do not stay read-only; ``/readyz`` names a blackholed Redis, and a solver pool
that says it is broken or does not answer. The bounds on time below are correctness bounds on the
timeouts (generous: a budget of 1.5 s checked against 3 s), not speed figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from sqlalchemy.engine import make_url

from halfmoon.game import Move
from halfmoon_server.adapters.journal import PROBE_EVERY_S
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.clock import ManualClock
from halfmoon_server.core import room_state
from halfmoon_server.settings import Settings
from halfmoon_server.web import keys, rest
from halfmoon_server.web.app import create_app
from tests.conftest import ROOT, require_service
from tests.server.conftest import StartServer
from tests.server.instances import Instance, RedisServer, tracebacks
from tests.server.support import WsClient, make_settings, solo_to_the_end, won_record

sys.path.insert(0, str(ROOT / "bench"))
from tcp_proxy import TcpProxy

CODE = str(won_record().code)
#: What a health answer may take at most here: the budget is 1.5 s (rest.HEALTH_BUDGET_S).
HEALTH_BOUND_S = 3.0
#: How long the results of a cut may take to reach the leaderboard once the database is back
#: (the outbox retries every 0.5 s at most in these tests).
SETTLE_S = 15.0


@pytest.fixture(autouse=True)
def fast_outbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retry a failed write of a finished game every 0.1-0.5 s (0.5-30 s in production)."""
    monkeypatch.setattr(room_state, "STORE_RETRY_FIRST_S", 0.1)
    monkeypatch.setattr(room_state, "STORE_RETRY_MAX_S", 0.5)


@pytest.fixture
def pg_proxy(pg_database: str) -> Iterator[tuple[TcpProxy, str]]:
    """A TCP proxy in front of PostgreSQL, and the fresh database's URL through it."""
    url = make_url(pg_database)
    with TcpProxy(url.port or 5432, url.host or "127.0.0.1") as proxy:
        yield proxy, url.set(port=proxy.port).render_as_string(hide_password=False)


async def play_to_the_end(server: TestServer, name: str, moves: int) -> dict[str, Any]:
    """A solo game on :data:`CODE`: ``moves`` moves, then give up; its ``game_over``, which must
    come within 5 s (it never waits for the database)."""
    return await solo_to_the_end(await WsClient.connect(server, name), CODE, name, moves, timeout=5.0)


async def timed_get(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, Any], float]:
    started = time.perf_counter()
    async with http.get(url) as response:
        body = await response.json()
        return response.status, body, time.perf_counter() - started


async def leaderboard_games(http: aiohttp.ClientSession, server: TestServer) -> list[str] | None:
    """Every game id on :data:`CODE`'s leaderboard (best entries and their others), or None
    while the database does not answer."""
    async with http.get(server.make_url(f"/api/leaderboard/{CODE}")) as response:
        if response.status != 200:
            return None
        board = await response.json()
    return [g["game"] for e in board["entries"] for g in (e, *e["others"])]


async def wait_for_games(http: aiohttp.ClientSession, server: TestServer, expected: set[str]) -> list[str]:
    """Poll the leaderboard until it holds every expected game; the ids it lists then."""
    async with asyncio.timeout(SETTLE_S):
        while True:
            games = await leaderboard_games(http, server)
            if games is not None and expected <= set(games):
                return games
            await asyncio.sleep(0.1)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["reset", "blackhole"])
async def test_games_that_end_while_postgresql_is_cut_all_reach_the_leaderboard_once(
    start_server: StartServer, pg_proxy: tuple[TcpProxy, str], mode: str
) -> None:
    proxy, db_url = pg_proxy
    server = await start_server(db_url=db_url)
    async with aiohttp.ClientSession() as http:
        before = await play_to_the_end(server, "Before", 2)
        assert (await timed_get(http, str(server.make_url("/readyz"))))[:2] == (
            200,
            {"status": "ready", "checks": {"database": "ok", "journal": "ok", "solver": "off", "draining": "no"}},
        )

        proxy.cut(mode)  # type: ignore[arg-type]
        during = await asyncio.gather(*(play_to_the_end(server, f"Cut{k}", k + 1) for k in range(4)))
        assert all(over["game"] for over in during), "each game_over names its game id, fixed up front"
        health, ready = await asyncio.gather(
            timed_get(http, str(server.make_url("/healthz"))), timed_get(http, str(server.make_url("/readyz")))
        )
        # liveness: the process serves, and play goes on (the game_overs above): it is not dead
        assert health[:2] == (200, {"status": "ok"}), health
        assert health[2] < 0.5, f"/healthz took {health[2]:.2f} s: it asked the database"
        assert ready[0] == 503 and ready[1]["status"] == "unavailable", ready
        assert ready[1]["checks"]["database"].startswith("down: "), ready
        assert ready[1]["checks"]["journal"] == "ok", "the room log is not the database"
        assert ready[2] < HEALTH_BOUND_S, f"/readyz took {ready[2]:.2f} s"
        board = await timed_get(http, str(server.make_url(f"/api/leaderboard/{CODE}")))
        assert board[0] == 503 and board[1]["error"]["code"] == "unavailable"
        assert board[2] < HEALTH_BOUND_S + 1, f"the leaderboard took {board[2]:.2f} s to say 503"

        proxy.restore()
        games = await wait_for_games(http, server, {before["game"], *(over["game"] for over in during)})
        assert len(games) == len(set(games)) == 5, f"each game once: {games}"
        assert (await timed_get(http, str(server.make_url("/healthz"))))[0] == 200
        assert (await timed_get(http, str(server.make_url("/readyz"))))[0] == 200
        after = await play_to_the_end(server, "After", 1)  # the pool works again at once
        games = await wait_for_games(http, server, {after["game"]})
        assert len(games) == len(set(games)) == 6


def _immutable(path: Path, on: bool) -> subprocess.CompletedProcess[str]:
    """Set or clear the immutable flag of a SQLite database: the file, and its write-ahead log
    when it has one (in WAL mode a commit writes only the log). Not the shared-memory index:
    SQLite maps it in memory, and a write to a mapped immutable file kills the process (SIGBUS)."""
    wal = path.with_name(f"{path.name}-wal")
    files = [str(f) for f in (path, wal) if f.exists()]
    return subprocess.run(["chattr", "+i" if on else "-i", *files], capture_output=True, text=True, check=False)


@pytest.fixture
def read_only_file(tmp_path: Path) -> Iterator[Path]:
    """The embedded database's path; the test makes it read-only with ``chattr +i`` (which root
    cannot bypass, unlike file modes) and the fixture always takes the flag off again."""
    chattr = shutil.which("chattr")
    probe = tmp_path / "probe"
    probe.write_text("x")
    works = chattr is not None and _immutable(probe, True).returncode == 0
    if works:
        _immutable(probe, False)
    require_service("chattr +i", works, "no chattr, or the file system has no immutable flag")
    path = tmp_path / "data" / "halfmoon.db"
    try:
        yield path
    finally:
        _immutable(path, False)


async def test_a_read_only_sqlite_file_loses_nothing_and_leaves_no_read_only_connection(
    start_server: StartServer, read_only_file: Path
) -> None:
    server = await start_server(db_timeout_s=1.0)
    async with aiohttp.ClientSession() as http:
        before = await play_to_the_end(server, "Before", 2)
        assert (await timed_get(http, str(server.make_url("/healthz"))))[0] == 200

        assert _immutable(read_only_file, True).returncode == 0
        during = await asyncio.gather(*(play_to_the_end(server, f"RO{k}", k + 1) for k in range(3)))
        # several reads at once open fresh connections now — connections SQLite opens read-only,
        # and that stay so unless recycled (the reads answer, or 503 once a failed write left a
        # journal SQLite cannot roll back on a read-only file)
        boards = await asyncio.gather(*(timed_get(http, str(server.make_url("/api/daily"))) for _ in range(6)))
        assert {status for status, _, _ in boards} <= {200, 503}, boards
        health = await timed_get(http, str(server.make_url("/healthz")))
        assert health[0] == 200, "the process serves: liveness asks no database"
        ready = await timed_get(http, str(server.make_url("/readyz")))
        assert ready[0] == 503 and ready[1]["checks"]["database"].startswith("down: ")
        await asyncio.sleep(0.3)  # the outbox retries (and fails) meanwhile

        assert _immutable(read_only_file, False).returncode == 0
        # writes at once, before the outbox's next retry: no connection may still be read-only
        daily = await asyncio.gather(*(_start_daily(server, f"Day{k}") for k in range(6)))
        assert all(kind == "welcome" for kind in daily), daily
        async with http.get(server.make_url("/api/daily")) as response:
            assert response.status == 200, await response.text()
        games = await wait_for_games(http, server, {before["game"], *(over["game"] for over in during)})
        assert len(games) == len(set(games)) == 4, f"each game once: {games}"
        assert (await timed_get(http, str(server.make_url("/healthz"))))[0] == 200


async def _start_daily(server: TestServer, name: str) -> str:
    """Start a daily attempt (a write: the attempt is claimed); what the server answers first."""
    client = await WsClient.connect(server, name)
    try:
        await client.send("daily", name=name)
        message = await client.next("welcome", "error")
    finally:
        await client.close()
    return message["type"] if message["type"] == "welcome" else f"error {message['code']}: {message['message']}"


@pytest.fixture
async def redis_proxy(tmp_path: Path) -> AsyncIterator[TcpProxy]:
    """A ``redis-server`` of the test's own, behind a TCP proxy."""
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    redis = await RedisServer(tmp_path / "redis").start()
    try:
        with TcpProxy(redis.port) as proxy:
            yield proxy
    finally:
        redis.kill()


@pytest.mark.redis
async def test_readyz_names_a_blackholed_redis_within_its_budget(
    start_server: StartServer, redis_proxy: TcpProxy
) -> None:
    server = await start_server(db_url="memory://", redis_url=f"redis://127.0.0.1:{redis_proxy.port}/0")
    url = str(server.make_url("/readyz"))
    async with aiohttp.ClientSession() as http:
        status, body, _ = await timed_get(http, url)
        assert status == 200, body
        checks = {"database": "ok", "redis": "ok", "solver": "off", "draining": "no"}
        assert body == {"status": "ready", "checks": checks}

        redis_proxy.cut("blackhole")
        status, body, took = await timed_get(http, url)
        assert status == 503 and body["status"] == "unavailable", body
        assert body["checks"] == {
            "database": "ok", "redis": "down: did not answer in 1.5 s", "solver": "off", "draining": "no"
        }
        assert took < HEALTH_BOUND_S, f"/readyz took {took:.2f} s"
        assert (await timed_get(http, str(server.make_url("/healthz"))))[0] == 200, "liveness asks no Redis"

        redis_proxy.restore()
        async with asyncio.timeout(10):
            while (await timed_get(http, url))[0] != 200:
                await asyncio.sleep(0.1)


class SolverPool:
    """What ``/readyz`` asks of the solver's worker pool: ``async check()``, None when healthy."""

    def __init__(self, answer: str | None, *, hang: bool = False) -> None:
        self.answer = answer
        self.hang = hang
        self.asked = 0

    async def check(self) -> str | None:
        self.asked += 1
        if self.hang:
            await asyncio.sleep(60)
        return self.answer


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        (SolverPool(None), (200, "ok")),
        (SolverPool("the worker died; restarting it"), (503, "down: the worker died; restarting it")),
        (SolverPool(None, hang=True), (503, "down: did not answer in 1.5 s")),
        (None, (200, "off")),
    ],
)
async def test_readyz_asks_the_solver_pool_within_its_budget(
    aiohttp_client: Any, tmp_path: Path, pool: SolverPool | None, expected: tuple[int, str]
) -> None:
    app = web.Application(middlewares=[rest.api_errors])
    app[keys.SETTINGS] = Settings(db_url="memory://", data_dir=tmp_path)
    app[keys.STORAGE] = MemoryStorage()
    app[keys.EXECUTOR] = pool  # type: ignore[assignment]
    app.router.add_get("/readyz", rest.readyz)
    client = await aiohttp_client(app)
    started = time.perf_counter()
    response = await client.get("/readyz")
    took = time.perf_counter() - started
    body = await response.json()
    assert (response.status, body["checks"]["solver"]) == expected, body
    assert body["checks"]["database"] == "ok" and body["status"] == ("ready" if expected[0] == 200 else "unavailable")
    assert took < HEALTH_BOUND_S, f"/readyz took {took:.2f} s"
    assert pool is None or pool.asked == 1


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a file system of its own, 2 MB (a tmpfs: the tests run as root)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)], capture_output=True)
    require_service("mount -t tmpfs", mount.returncode == 0, f"cannot mount a tmpfs: {mount.stderr!r}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def fill(folder: Path) -> Path:
    """Fill ``folder``'s file system to the last byte; the file that fills it."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (65536, 4096, 1):  # then the last partial blocks
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


async def _readyz_until(http: aiohttp.ClientSession, url: str, status: int) -> tuple[int, dict[str, Any], float]:
    """``/readyz`` polled until it answers ``status`` (within 1 s and a poll past the journal's
    shared probe, :data:`halfmoon_server.adapters.journal.PROBE_EVERY_S`): its last answer."""
    deadline = asyncio.get_running_loop().time() + PROBE_EVERY_S + 1.5
    while True:
        answer = await timed_get(http, url)
        if answer[0] == status or asyncio.get_running_loop().time() > deadline:
            return answer
        await asyncio.sleep(0.1)


async def test_a_full_disk_under_the_journal_is_not_ready_and_says_so(
    aiohttp_server: Callable[..., Awaitable[TestServer]], clock: ManualClock, small_disk: Path, tmp_path: Path
) -> None:
    """The room log (the embedded journal) on a disk that fills: moves are refused
    ``unavailable``, and ``/readyz`` says the journal is down (a read alone would still pass);
    once there is room again both recover."""
    line = [step for step in won_record().moves if isinstance(step, Move)]
    settings = make_settings(small_disk, clock, db_url=f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}")
    server = await aiohttp_server(create_app(settings))
    ready_url = str(server.make_url("/readyz"))
    client = await WsClient.connect(server, "Ada")
    async with aiohttp.ClientSession() as http:
        await client.send("solo", name="Ada", code=CODE)
        await client.next("welcome")
        await client.send("move", positions=line[0].names())
        await client.next("moved")
        assert (await timed_get(http, ready_url))[1]["checks"]["journal"] == "ok"

        filler = fill(small_disk)
        await client.send("move", positions=line[1].names())
        refused = await client.next("moved", "error")
        assert refused["type"] == "error" and refused["code"] == "unavailable", refused
        # a probe's answer serves readiness polls for a second (journal.PROBE_EVERY_S): the next
        # probe after it finds the disk full
        status, body, took = await _readyz_until(http, ready_url, 503)
        assert status == 503 and body["checks"]["journal"].startswith("down: "), body
        assert took < HEALTH_BOUND_S
        assert (await timed_get(http, str(server.make_url("/healthz"))))[0] == 200, "the process serves"

        filler.unlink()
        assert (await _readyz_until(http, ready_url, 200))[:2] == (200, {
            "status": "ready", "checks": {"database": "ok", "journal": "ok", "solver": "off", "draining": "no"}
        })  # fmt: skip
        await client.send("move", positions=line[1].names())
        assert (await client.next("moved", "error"))["type"] == "moved"
    await client.close()


async def _burst(http: aiohttp.ClientSession, base: str, count: int) -> list[int]:
    """``count`` reads that each need the database, at once; their statuses. (Not ``/api/daily``:
    its counts are cached for seconds, so it may answer from before an outage.)"""
    paths = [f"/api/leaderboard/{CODE}", "/api/daily/2026-11-30/leaderboard", "/api/games/abcdefabcdef"]
    paths += ["/api/rooms/ZZZZZZ", "/readyz"]  # (not /healthz: liveness asks no database)

    async def one(path: str) -> int:
        async with http.get(base + path) as response:
            await response.read()
            return response.status

    return list(await asyncio.gather(*(one(paths[k % len(paths)]) for k in range(count))))


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_postgresql_outage_logs_no_error_from_the_driver(
    tmp_path: Path, pg_proxy: tuple[TcpProxy, str]
) -> None:
    """Reads abandoned at their timeout while PostgreSQL is cut make asyncpg open a side connection
    to cancel the statement; when that one is lost too, asyncpg fails a future nobody awaits
    (MagicStack/asyncpg#1310) and asyncio logged ``ERROR asyncio: Future exception was never
    retrieved ... ConnectionError: unexpected connection_lost() call`` — an ERROR line for an
    outage the server already reports, each time, as one warning."""
    proxy, db_url = pg_proxy
    inst = await Instance(tmp_path / "data", db=db_url).start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            assert set(await _burst(http, inst.base, 20)) <= {200, 404}
            for mode in ("blackhole", "reset"):
                proxy.cut(mode)  # type: ignore[arg-type]
                for _ in range(3):
                    statuses = await _burst(http, inst.base, 70)
                    assert set(statuses) == {503}, statuses
                proxy.restore()
                async with asyncio.timeout(10):
                    while not set(await _burst(http, inst.base, 10)) <= {200, 404}:
                        await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)  # the futures are reported when collected
    finally:
        inst.stop()
    errors = [line for line in inst.log.read_text().splitlines() if " ERROR " in line]
    assert errors == [], errors
    assert tracebacks(inst) == []
