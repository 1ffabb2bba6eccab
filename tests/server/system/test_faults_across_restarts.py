"""Finished games lose nothing across a restart of a real ``halfmoon serve`` on 127.0.0.1: games
that end while PostgreSQL is cut (through a TCP proxy) or the SQLite file is read-only, or as the
server is stopped, are all stored, once, after it starts again.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy.engine import make_url

from halfmoon_server.solver.pool import SolverPool
from tests.conftest import ROOT, require_service
from tests.server import instances
from tests.server.instances import Instance
from tests.server.support import WsClient, alive, solo_to_the_end, won_record

sys.path.insert(0, str(ROOT / "bench"))
from tcp_proxy import TcpProxy

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


def tracebacks(inst: Instance) -> list[str]:
    text = inst.log.read_text(errors="replace")
    return [chunk[:1500] for chunk in text.split("Traceback")[1:]]


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


async def _closed_by_server(reader: asyncio.StreamReader, within_s: float) -> bool:
    """Whether the server closes this connection (EOF or reset) within ``within_s``."""
    try:
        async with asyncio.timeout(within_s):
            return await reader.read(1024) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def test_one_address_cannot_hold_more_idle_connections_than_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before HTTP (halfmoon_server.web.admission): one address holds at most 2 × cap + 16 TCP
    connections, the rest closed at once; and a connection that sends no whole request head
    (nothing, or a header line now and then: slowloris) is closed after --head-timeout, so
    silent sockets cannot hold the server's descriptors. The server answers throughout."""
    cap = 2  # WebSockets per address: TCP connections per address 2 × 2 + 16 = 20
    monkeypatch.setenv("HALFMOON_MAX_CONNECTIONS_PER_ADDRESS", str(cap))
    monkeypatch.setenv("HALFMOON_HEAD_TIMEOUT_S", "1.5")
    inst = await Instance(tmp_path / "data").start()
    writers: list[asyncio.StreamWriter] = []
    try:
        readers = []
        for k in range(30):
            reader, writer = await asyncio.open_connection("127.0.0.1", inst.port)
            if k % 2:  # half send nothing, half a request line and a header, then stall (slowloris)
                writer.write(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            readers.append(reader)
            writers.append(writer)
        over = await asyncio.gather(*(_closed_by_server(reader, 0.5) for reader in readers[20:]))
        assert all(over), f"{sum(over)} of the 10 connections over the address's 20 were closed at once"
        early = await asyncio.gather(*(_closed_by_server(reader, 0.2) for reader in readers[:20]))
        assert not any(early), "the 20 within the limit are not closed before their head timeout"
        late = await asyncio.gather(*(_closed_by_server(reader, 5.0) for reader in readers[:20]))
        assert all(late), f"{sum(late)} of 20 silent or slowloris connections were closed after the head timeout"
        # the limit is free again: the server answers
        async with aiohttp.ClientSession() as http, http.get(inst.base + "/healthz") as health:
            assert health.status == 200
    finally:
        for writer in writers:
            writer.close()
        inst.stop()


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


async def test_a_cancelled_job_of_a_pool_whose_worker_dies_leaves_no_traceback_and_no_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job cancelled while queued (the daily's wait timing out, ``/readyz``'s check, the app
    shutting down) then the worker dies: Python 3.11's ProcessPoolExecutor sets the error on every
    queued job, the cancelled one too, and its management thread dies of ``InvalidStateError``
    (a traceback in the log) before it stops the pool's other workers."""
    failures: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(repr(args.exc_value)))
    pool = SolverPool(2)
    try:
        loop = asyncio.get_running_loop()
        jobs = [loop.run_in_executor(pool, time.sleep, 1.0) for _ in range(6)]
        async with asyncio.timeout(10):
            while len(pool.worker_pids()) < 2:
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)  # the first two run; the rest wait
        for job in jobs[4:]:
            job.cancel()
        await asyncio.sleep(0.1)
        first, second = pool.worker_pids()
        os.kill(first, signal.SIGKILL)
        async with asyncio.timeout(10):
            while alive(second):  # the broken pool's other worker is stopped
                await asyncio.sleep(0.02)
        assert failures == []
        await asyncio.gather(*jobs[:4])  # the jobs the dead worker lost are run again
        assert await pool.check() is None, "the pool works again"
    finally:
        await pool.close(timeout_s=1.0)
    assert failures == []


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def _is_solver_worker(pid: int) -> bool:
    try:
        return "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
async def test_a_stop_signal_to_the_group_while_the_solver_worker_starts_leaves_no_traceback(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C (SIGINT to the terminal's group) or systemd's SIGTERM to the whole service while
    the solver worker is still starting — before its initializer makes it ignore them — killed the
    worker: SIGINT with a ``KeyboardInterrupt`` traceback ("Fatal Python error: init_import_site")
    in the server's log. The server alone must hear them, and stop cleanly, leaving no process."""
    port = instances.free_port()
    command = [sys.executable, "-m", "halfmoon", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--data-dir", str(tmp_path / "data"), "--secret", "review-secret-32-bytes-long-xxxxxxx"]
    command += ["--solver-workers", "1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("shared", "server", "client", ""))}
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        async with asyncio.timeout(30):
            while not any(_is_solver_worker(child) for child in _children(server.pid)):
                assert server.poll() is None, log.read_text()
                await asyncio.sleep(0.005)
        group = list(_children(server.pid))
        os.killpg(server.pid, sig)
        assert await asyncio.to_thread(server.wait, 30) == 0, log.read_text()[-3000:]
        async with asyncio.timeout(10):
            while any(alive(pid) for pid in group):
                await asyncio.sleep(0.05)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Fatal Python error" not in text, text[-3000:]


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


async def test_polling_readiness_while_the_solver_worker_hangs_piles_no_jobs_up() -> None:
    """``/readyz`` polled while the worker hangs (SIGSTOP): every check says so within its time,
    and they share one trivial job — none is cancelled (see the test above), so each check
    submitting its own would grow the executor's queue for as long as the worker hangs."""
    pool = SolverPool(1)
    try:
        assert await pool.check() is None
        (worker,) = pool.worker_pids()
        os.kill(worker, signal.SIGSTOP)
        try:
            answers = list(await asyncio.gather(*(pool.check() for _ in range(5))))
            answers += [await pool.check(), await pool.check()]
            assert answers == ["the solver worker does not answer"] * 7
            # the executor's queue (no public API counts it): one job at most
            assert len(pool._executor._pending_work_items) <= 1  # type: ignore[attr-defined]
        finally:
            os.kill(worker, signal.SIGCONT)
        async with asyncio.timeout(10):
            while await pool.check() is not None:
                await asyncio.sleep(0.05)
    finally:
        await pool.close(timeout_s=1.0)
