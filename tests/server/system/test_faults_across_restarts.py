"""Finished games lose nothing across a restart of a real ``halfmoon serve`` on 127.0.0.1: games
that end while PostgreSQL is cut (through a TCP proxy) or the SQLite file is read-only, or as the
server is stopped, are all stored, once, after it starts again.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import ROOT, require_service
from tests.server import instances
from tests.server.instances import Instance, tracebacks
from tests.server.support import WsClient, solo_to_the_end, won_record

sys.path.insert(0, str(ROOT / "bench"))
from tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow  # real servers stopped and restarted through outages: ~40 s

CODE = str(won_record().code)
#: How long the stored games may take to reach the leaderboard once the database is back.
SETTLE_S = 20.0


@pytest.fixture
def pg_proxy(pg_database: str) -> Iterator[tuple[TcpProxy, str]]:
    """A TCP proxy in front of PostgreSQL, and the fresh database's URL through it."""
    url = make_url(pg_database)
    with TcpProxy(url.port or 5432, url.host or "127.0.0.1") as proxy:
        yield proxy, url.set(port=proxy.port).render_as_string(hide_password=False)


async def solo_on(inst: Instance, name: str, moves: int) -> dict[str, Any]:
    """A solo game on :data:`CODE` on ``inst``: ``moves`` moves, then give up; its ``game_over``."""
    return await solo_to_the_end(await WsClient.connect_url(inst.ws, name), CODE, name, moves, timeout=8.0)


async def leaderboard_games(http: aiohttp.ClientSession, inst: Instance) -> list[str] | None:
    async with http.get(f"{inst.base}/api/leaderboard/{CODE}") as response:
        if response.status != 200:
            return None
        board = await response.json()
    return [g["game"] for e in board["entries"] for g in (e, *e["others"])]


async def wait_for_games(http: aiohttp.ClientSession, inst: Instance, expected: set[str]) -> list[str]:
    games: list[str] | None = None
    try:
        async with asyncio.timeout(SETTLE_S):
            while True:
                games = await leaderboard_games(http, inst)
                if games is not None and expected <= set(games):
                    return games
                await asyncio.sleep(0.2)
    except TimeoutError:
        raise AssertionError(f"lost results: expected {sorted(expected)}, the leaderboard has {games}") from None


@pytest.mark.postgres
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
async def test_games_that_end_while_postgresql_is_cut_survive_a_restart_of_the_server(
    tmp_path: Path, pg_proxy: tuple[TcpProxy, str], stop: signal.Signals
) -> None:
    """The outbox survives the process: games end while PostgreSQL is cut, the server is stopped
    (SIGTERM, as systemd does, or SIGKILL) before the database is back, and started again on the
    same data directory: every game reaches the leaderboard, each once."""
    proxy, db_url = pg_proxy
    data = tmp_path / "data"
    first = await Instance(data, db=db_url).start()
    try:
        async with aiohttp.ClientSession() as http:
            before = await solo_on(first, "Before", 1)
            await wait_for_games(http, first, {before["game"]})
            proxy.cut("reset")
            during = [await solo_on(first, f"Cut{k}", k + 1) for k in range(3)]
            assert all(over["game"] for over in during)
            first.kill(stop)
            proxy.restore()
            second = await Instance(data, db=db_url, port=first.port).start()
            try:
                expected = {before["game"], *(over["game"] for over in during)}
                games = await wait_for_games(http, second, expected)
                assert len(games) == len(set(games)) == 4, f"each game once: {games}"
            finally:
                second.stop()
            assert tracebacks(second) == []
    finally:
        first.stop()
    assert tracebacks(first) == []


def _immutable(path: Path, on: bool) -> bool:
    """Set or clear the immutable flag of a SQLite file and its write-ahead log (root ignores file
    modes, not this flag)."""
    wal = path.with_name(f"{path.name}-wal")
    files = [str(f) for f in (path, wal) if f.exists()]
    done = subprocess.run(["chattr", "+i" if on else "-i", *files], capture_output=True, check=False)
    return done.returncode == 0


@pytest.fixture
def read_only_db(tmp_path: Path) -> Iterator[Path]:
    """The embedded database's path; the test makes it read-only, the fixture always undoes it."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    works = shutil.which("chattr") is not None and _immutable(probe, True)
    if works:
        _immutable(probe, False)
    require_service("chattr +i", works, "no chattr, or the file system has no immutable flag")
    path = tmp_path / "data" / "halfmoon.db"
    try:
        yield path
    finally:
        _immutable(path, False)


async def wait_answering(base: str, timeout: float = 30.0) -> None:
    """Until ``/healthz`` answers at all (200 or 503): the server listens."""
    async with aiohttp.ClientSession() as http, asyncio.timeout(timeout):
        while True:
            try:
                async with http.get(f"{base}/healthz") as response:
                    if response.status in (200, 503):
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)


async def test_games_that_end_while_the_sqlite_file_is_read_only_survive_a_restart_while_it_still_is(
    tmp_path: Path, read_only_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite file turns read-only, games end, the server is stopped (SIGTERM) and started
    again while the file is still read-only, then it becomes writable: every game is stored, once."""
    data = tmp_path / "data"
    first = await Instance(data).start()
    second: Instance | None = None
    try:
        async with aiohttp.ClientSession() as http:
            before = await solo_on(first, "Before", 1)
            await wait_for_games(http, first, {before["game"]})
            assert _immutable(read_only_db, True)
            during = [await solo_on(first, f"RO{k}", k + 1) for k in range(3)]
            first.kill(signal.SIGTERM)
            second = Instance(data, port=first.port)
            monkeypatch.setattr(instances, "wait_healthy", wait_answering)  # it starts unhealthy
            await second.start()
            async with http.get(f"{second.base}/healthz") as response:
                assert response.status == 200, "the process serves: liveness asks no database"
            async with http.get(f"{second.base}/readyz") as response:
                assert response.status == 503, "a database file that cannot be written is not ready"
            assert _immutable(read_only_db, False)
            expected = {before["game"], *(over["game"] for over in during)}
            games = await wait_for_games(http, second, expected)
            assert len(games) == len(set(games)) == 4, f"each game once: {games}"
    finally:
        _immutable(read_only_db, False)
        first.stop()
        if second is not None:
            second.stop()
    assert tracebacks(first) == []


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
async def test_games_that_end_as_the_server_is_stopped_are_all_stored_once_after_it_restarts(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """Twelve solo games give up at once and the server is stopped in the same moment: every game
    whose ``game_over`` reached its player is on the leaderboard after the restart, once."""
    data = tmp_path / "data"
    first = await Instance(data).start()
    clients: list[WsClient] = []
    try:
        for k in range(12):
            client = await WsClient.connect_url(first.ws, f"S{k}")
            await client.send("solo", name=f"Stop{k}", code=CODE)
            await client.next("welcome")
            clients.append(client)
        await asyncio.gather(*(client.send("give_up") for client in clients))
        await clients[0].next("game_over")  # the others are on their way
        first.kill(stop)
        await asyncio.sleep(0.2)  # what was sent before the end is read
        overs = [m for client in clients for m in client.history if m["type"] == "game_over"]
        second = await Instance(data, port=first.port).start()
        try:
            async with aiohttp.ClientSession() as http:
                games = await wait_for_games(http, second, {over["game"] for over in overs})
                assert len(games) == len(set(games)), f"each game once: {games}"
                assert overs, "at least the first game_over came"
        finally:
            second.stop()
    finally:
        for client in clients:
            await client.close()
        first.stop()
    assert tracebacks(first) == []
