"""The solver's worker, supervised (``halfmoon_server.solver.pool``): a worker killed with
SIGKILL is replaced and its job run again, stop signals meant for the server leave the worker
alone, the pool closes with the app and leaves no process behind, ``check()`` tells a dead or
hung worker; and the daily challenge never waits on it: tomorrow's code is stored a day ahead
(and shows through no door before its day), and a broken or hung worker makes the day's deal
be chosen in a thread instead of failing."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future
from concurrent.futures.process import BrokenProcessPool
from datetime import date, timedelta
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import aiohttp
import pytest

from halfmoon.codes import daily_code
from halfmoon.game import Game
from halfmoon_server.clock import ManualClock, day_start_ms
from halfmoon_server.rooms.daily import DailyService
from halfmoon_server.solver.pool import SolverPool, warm_up
from halfmoon_server.solver.search import first_winnable_daily
from halfmoon_server.web import keys
from tests.conftest import ROOT
from tests.ports import free_port
from tests.server import instances
from tests.server.conftest import StartServer
from tests.server.support import WsClient, alive

P = ParamSpec("P")
T = TypeVar("T")

SECRET = b"test-secret"
DAY1 = date(2026, 11, 28)  # the manual clock's day (T0)
DAY2 = date(2026, 11, 29)
DAY3 = date(2026, 11, 30)
BUDGET = 100_000


async def wait_dead(pid: int, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while alive(pid):
            await asyncio.sleep(0.01)


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> bool:
    return all(record.exc_info is None for record in caplog.records) and "Traceback" not in caplog.text


def restart_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "halfmoon_server.solver" and "died" in r.getMessage()]


async def run(pool: Executor, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the pool (a function a worker can import: no lambda)."""
    return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)


async def daily_attempt(server: Any, name: str, **fields: Any) -> tuple[WsClient, dict[str, Any]]:
    client = await WsClient.connect(server, name)
    await client.send("daily", name=name, **fields)
    return client, (await client.next("welcome", "error", timeout=30))


async def play_a_few_moves(client: WsClient, code: str, moves: int = 3) -> None:
    """Play ``moves`` legal moves of ``code``'s deal: the server accepts them only if the
    attempt's deal is that one."""
    game = Game.from_code(code)
    for _ in range(moves):
        move = next(game.legal_moves())
        game.push(move)
        await client.send("move", positions=move.names())
        reply = await client.next("moved", "error")
        assert reply["type"] == "moved", reply


# -- the pool alone -----------------------------------------------------------------------------------


async def test_a_killed_worker_is_replaced_and_its_job_run_again(caplog: pytest.LogCaptureFixture) -> None:
    """(A worker killed while idle: ``test_the_daily_survives_a_killed_worker``.)"""
    caplog.set_level(logging.INFO)
    restarted: list[int] = []
    pool = SolverPool(1, on_restart=lambda: restarted.append(1))
    try:
        assert await run(pool, warm_up) is True
        [first] = pool.worker_pids()
        # a job handed to a worker that dies (stopped first, so it cannot answer before): the
        # job is lost with it, and runs again on the next one
        os.kill(first, signal.SIGSTOP)
        jobs = [asyncio.get_running_loop().run_in_executor(pool, os.getpid) for _ in range(3)]
        os.kill(first, signal.SIGKILL)
        [second] = set(await asyncio.gather(*jobs))
        assert second != first and pool.worker_pids() == [second]
        assert await run(pool, os.getpid) == second
    finally:
        await pool.close()
    assert pool.restarts == 1 and restarted == [1]
    # one line per death, not one per job lost
    assert restart_lines(caplog) == [f"the solver worker (pid {first}) died (killed by SIGKILL); started a new one"]
    assert no_tracebacks(caplog)


async def test_a_job_whose_worker_dies_twice_fails_as_broken() -> None:
    """One retry, not a loop: a job that kills every worker it runs on fails with
    BrokenProcessPool on the second death (the caller decides what to do instead)."""
    pool = SolverPool(1)
    try:
        with pytest.raises(BrokenProcessPool):
            await run(pool, os._exit, 3)
        assert pool.restarts == 2  # the first death, then the retry's
        assert await run(pool, warm_up) is True  # the pool itself still works
    finally:
        await pool.close()


async def test_the_workers_ignore_sigint_and_sigterm() -> None:
    """A group signal (systemd's KillMode=control-group, Ctrl-C) is for the server alone."""
    pool = SolverPool(1)
    try:
        await run(pool, warm_up)
        [pid] = pool.worker_pids()
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGINT)
        assert await run(pool, os.getpid) == pid  # the same worker answers
        assert alive(pid) and pool.restarts == 0
    finally:
        await pool.close()
    assert not alive(pid)


async def test_check_tells_a_hung_and_a_dead_worker() -> None:
    pool = SolverPool(1)
    try:
        await run(pool, warm_up)
        assert await pool.check() is None
        [pid] = pool.worker_pids()
        os.kill(pid, signal.SIGSTOP)
        try:
            assert await pool.check() == "the solver worker does not answer"
        finally:
            os.kill(pid, signal.SIGCONT)
        assert await pool.check() is None

        os.kill(pid, signal.SIGKILL)
        await wait_dead(pid)
        assert await pool.check() == "the solver worker died (a new one is starting)"
        assert await run(pool, warm_up) is True  # the new one
        assert await pool.check() is None and pool.restarts == 1
    finally:
        await pool.close()
    assert await pool.check() == "the solver pool is shut down"


async def test_close_kills_a_worker_still_busy(caplog: pytest.LogCaptureFixture) -> None:
    pool = SolverPool(1)
    await run(pool, warm_up)
    [pid] = pool.worker_pids()
    job = asyncio.get_running_loop().run_in_executor(pool, time.sleep, 60)
    await asyncio.sleep(0.2)
    await pool.close(timeout_s=0.3)
    assert not alive(pid)
    with pytest.raises(BrokenExecutor):
        await job
    assert f"the solver worker (pid {pid}) did not exit within 0.3 s of the shutdown; killed it" in caplog.text


# -- the pool in the server ---------------------------------------------------------------------------


async def test_the_daily_survives_a_killed_worker(
    start_server: StartServer, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = await start_server(daily_requires_winnable=True, solver_workers=1, solver_node_budget=BUDGET)
    daily, pool = server.app[keys.DAILY], server.app[keys.EXECUTOR]
    assert isinstance(pool, SolverPool)
    await daily.prepare_ahead()  # today's and tomorrow's deals, chosen by the worker
    [pid] = pool.worker_pids()
    os.kill(pid, signal.SIGKILL)
    await wait_dead(pid)

    clock.set(day_start_ms(DAY3) + 1_000)  # two days on: a day with no stored deal
    ada, welcome = await daily_attempt(server, "Ada")
    assert welcome["type"] == "welcome" and welcome["room"]["mode"] == "daily"
    chosen = str(first_winnable_daily(DAY3, SECRET, node_budget=BUDGET))
    assert await server.app[keys.STORAGE].daily_code(DAY3) == chosen
    await play_a_few_moves(ada, chosen)
    assert pool.restarts == 1 and pool.worker_pids() != [pid]
    assert "choosing it in a thread" not in caplog.text  # the new worker chose it

    clock.set(day_start_ms(DAY3 + timedelta(days=1)) + 1_000)  # and the day after
    bob, welcome = await daily_attempt(server, "Bob")
    assert welcome["type"] == "welcome"
    async with aiohttp.ClientSession() as http:
        metrics = await (await http.get(server.make_url("/metrics"))).text()
        ready = await (await http.get(server.make_url("/readyz"))).json()
    assert "halfmoon_solver_restarts_total 1.0" in metrics
    assert ready["checks"]["solver"] == "ok"
    assert len(restart_lines(caplog)) == 1 and no_tracebacks(caplog)
    for client in (ada, bob):
        await client.close()


async def test_the_pool_closes_with_the_app(start_server: StartServer) -> None:
    server = await start_server(solver_workers=1)
    pool = server.app[keys.EXECUTOR]
    assert isinstance(pool, SolverPool)
    await run(pool, warm_up)
    assert await pool.check() is None  # what /readyz asks
    pids = pool.worker_pids()
    assert pids and all(alive(pid) for pid in pids)
    await server.close()  # the app's cleanup
    assert not any(alive(pid) for pid in pids)


class DeadWorker(Executor):
    """An executor whose worker is always dead: what the pool hands back when a job's retry died
    too (``test_a_job_whose_worker_dies_twice_fails_as_broken``)."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        future.set_exception(BrokenProcessPool("A process in the process pool was terminated abruptly"))
        return future


async def test_a_broken_worker_makes_the_day_choose_in_a_thread(
    start_server: StartServer, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server(daily_requires_winnable=True, solver_node_budget=BUDGET)
    daily: DailyService = server.app[keys.DAILY]
    await daily.prepare_ahead()
    daily.executor = DeadWorker()
    clock.set(day_start_ms(DAY3) + 1_000)
    ada, welcome = await daily_attempt(server, "Ada")
    assert welcome["type"] == "welcome", welcome  # not `internal`
    chosen = str(first_winnable_daily(DAY3, SECRET, node_budget=BUDGET))
    await play_a_few_moves(ada, chosen)
    assert "the solver worker cannot choose the daily deal of 2026-11-30 (it keeps dying)" in caplog.text
    assert no_tracebacks(caplog)
    await ada.close()


async def test_a_hung_worker_makes_the_day_choose_in_a_thread(
    start_server: StartServer, clock: ManualClock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("halfmoon_server.rooms.daily.SOLVER_WAIT_S", 0.5)
    server = await start_server(daily_requires_winnable=True, solver_workers=1, solver_node_budget=BUDGET)
    daily, pool = server.app[keys.DAILY], server.app[keys.EXECUTOR]
    assert isinstance(pool, SolverPool)
    await daily.prepare_ahead()
    [pid] = pool.worker_pids()
    os.kill(pid, signal.SIGSTOP)
    try:
        clock.set(day_start_ms(DAY3) + 1_000)
        ada, welcome = await daily_attempt(server, "Ada")
        assert welcome["type"] == "welcome", welcome
        await play_a_few_moves(ada, str(first_winnable_daily(DAY3, SECRET, node_budget=BUDGET)))
        assert "the solver worker did not choose the daily deal of 2026-11-30 within 0.5 s" in caplog.text
        async with aiohttp.ClientSession() as http:
            ready = await http.get(server.make_url("/readyz"))
            assert ready.status == 503
            assert (await ready.json())["checks"]["solver"] == "down: the solver worker does not answer"
    finally:
        os.kill(pid, signal.SIGCONT)
    assert no_tracebacks(caplog)
    await ada.close()


# -- tomorrow's deal, ahead and hidden ----------------------------------------------------------------


async def test_tomorrows_deal_is_stored_ahead_and_shows_through_no_door(
    start_server: StartServer, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)  # the default level (at DEBUG, aiosqlite logs its SQL with its values)
    caplog.set_level(logging.DEBUG, logger="halfmoon_server")
    server = await start_server()
    daily = server.app[keys.DAILY]
    await daily.prepare_ahead()
    today, tomorrow = str(daily_code(DAY1, SECRET, long=True)), str(daily_code(DAY2, SECRET, long=True))
    assert await server.app[keys.STORAGE].daily_code(DAY2) == tomorrow  # stored ahead
    secrets = (today, tomorrow)

    http = aiohttp.ClientSession()
    seen: list[str] = []
    for path in ("/api/daily", "/api/daily/2026-11-28/leaderboard"):
        response = await http.get(server.make_url(path))
        assert response.status == 200
        seen.append(await response.text())
    for day in ("2026-11-29", "2026-11-30"):
        future = await http.get(server.make_url(f"/api/daily/{day}/leaderboard"))
        assert future.status == 404 and (await future.json())["error"]["code"] == "no_such_day"
    # the daily message names no day; one that tries plays today's deal all the same
    ada, welcome = await daily_attempt(server, "Ada", date=DAY2.isoformat())
    assert welcome["room"]["code"] is None
    await play_a_few_moves(ada, today)
    room = await http.get(server.make_url(f"/api/rooms/{welcome['room']['room']}"))
    seen.append(await room.text())
    seen.append(await (await http.get(server.make_url("/metrics"))).text())
    seen.extend(str(message) for message in ada.history)
    seen.append(caplog.text)  # nothing logs a day's code either
    assert not [text for text in seen if any(code in text for code in secrets)]

    # a daily code cannot be raced or played solo: whoever knew tomorrow's could not use it
    created = await http.post(server.make_url("/api/rooms"), json={"code": tomorrow})
    assert created.status == 400 and (await created.json())["error"]["code"] == "bad_code"
    bob = await WsClient.connect(server, "bob")
    await bob.send("solo", name="Bob", code=tomorrow)
    assert (await bob.next("error"))["code"] == "bad_code"

    # its day: the attempt plays the deal stored ahead, and still hides it
    clock.set(day_start_ms(DAY2) + 1_000)
    await daily.prepare_ahead()  # now the day after it is stored
    assert await server.app[keys.STORAGE].daily_code(DAY3) == str(daily_code(DAY3, SECRET, long=True))
    carol, welcome = await daily_attempt(server, "Carol")
    assert welcome["room"]["code"] is None
    await play_a_few_moves(carol, tomorrow)
    today_page = await (await http.get(server.make_url("/api/daily"))).text()
    assert tomorrow not in today_page and str(daily_code(DAY3, SECRET, long=True)) not in today_page
    for client in (ada, bob, carol):
        await client.close()
    await http.close()


# -- the real process, signalled as systemd and a terminal do ------------------------------------------


def group_alive(pgid: int) -> list[int]:
    """The live processes of a process group."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_to_the_process_group_stops_the_server_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    command = [sys.executable, "-m", "halfmoon", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--data-dir", str(tmp_path), "--secret", "solver-pool-test-secret-32-bytes-long"]
    command += ["--solver-workers", "1", "--solver-node-budget", str(BUDGET), "--metrics-on-app-port"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", ""))}
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env, start_new_session=True
    )
    try:
        async with aiohttp.ClientSession() as http, asyncio.timeout(30):
            while True:  # until the worker has started (and set its signals)
                try:
                    metrics = await (await http.get(f"http://127.0.0.1:{port}/metrics")).text()
                    if 'halfmoon_solver_jobs_total{job="warm_up",outcome="ok"} 1.0' in metrics:
                        break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
        assert len(group_alive(process.pid)) >= 2  # the server and its worker (and the resource tracker)
        os.killpg(process.pid, sig)
        async with asyncio.timeout(30):
            output, _ = await process.communicate()
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    log = output.decode()
    assert process.returncode == 0, log
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
    async with asyncio.timeout(5):  # the resource tracker leaves once the server has gone
        while group_alive(process.pid):
            await asyncio.sleep(0.02)


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (its children, theirs, ...)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


async def test_a_killed_server_leaves_no_solver_worker_nor_resource_tracker_behind(tmp_path: Path) -> None:
    """SIGKILL gives the server no chance to close its pool: its worker (which ignores SIGTERM)
    and multiprocessing's resource tracker must go by themselves, within 2 s."""
    port = free_port()
    command = [sys.executable, "-m", "halfmoon", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--data-dir", str(tmp_path), "--secret", "solver-pool-test-secret-32-bytes-long"]
    command += ["--solver-workers", "1", "--solver-node-budget", str(BUDGET), "--metrics-on-app-port"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", ""))}
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env=env
    )
    started: list[int] = []
    try:
        async with aiohttp.ClientSession() as http, asyncio.timeout(30):
            while True:  # until the worker has started
                try:
                    metrics = await (await http.get(f"http://127.0.0.1:{port}/metrics")).text()
                    if 'halfmoon_solver_jobs_total{job="warm_up",outcome="ok"} 1.0' in metrics:
                        break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
        started = descendants(process.pid)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in started]
        assert any(b"resource_tracker" in line for line in commands), commands  # both are there to be left
        assert any(b"spawn_main" in line and b"resource_tracker" not in line for line in commands), commands
        process.kill()
        await process.wait()
        deadline = time.monotonic() + 2.0
        while (left := [pid for pid in started if alive(pid)]) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
    finally:
        for pid in started:
            if alive(pid):  # (the test failed: clean up what it found)
                os.kill(pid, signal.SIGKILL)


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


@pytest.mark.slow
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
