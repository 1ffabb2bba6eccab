"""The solver's worker processes, supervised: :class:`SolverPool` owns a spawn
:class:`~concurrent.futures.ProcessPoolExecutor`, replaces it when a worker dies, leaves stop
signals to the server, and says whether its worker answers (:meth:`SolverPool.check`).

Why each part:

- A worker that dies (the OOM killer, an operator's ``kill -9``) breaks a ``ProcessPoolExecutor``
  for good: every later job fails with ``BrokenProcessPool``. The pool here starts a new
  executor instead, retries each job the dead one lost once on it, and logs one warning line
  (no traceback): ``the solver worker (pid 1234) died (killed by SIGKILL); started a new one``.
- A server killed outright (SIGKILL, the OOM killer) cannot close its pool: each worker watches
  its server and exits the moment it is gone (:func:`die_with_parent`), and multiprocessing's
  resource tracker, left without anyone holding its pipe, leaves too.
- systemd's default ``KillMode=control-group`` sends SIGTERM to every process of the service,
  and Ctrl-C sends SIGINT to the terminal's whole process group. The workers ignore both
  (:func:`ignore_stop_signals`, in the executor's initializer), so only the server hears them: it
  shuts down in order and closes the pool itself (:meth:`SolverPool.close`).

``loop.run_in_executor(pool, fn, ...)`` works as with any executor: the pool is one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import BrokenExecutor, Executor, Future, InvalidStateError, ProcessPoolExecutor
from multiprocessing.connection import wait as wait_for_ready
from multiprocessing.process import BaseProcess
from typing import Any, ParamSpec, TypeVar

from halfmoon_server.solver.search import solve

log = logging.getLogger("halfmoon_server.solver")

P = ParamSpec("P")
T = TypeVar("T")

#: How long :meth:`SolverPool.check` waits for its trivial job before saying the worker does not
#: answer: within ``/readyz``'s budget for each check (1.5 s), so the answer says why.
CHECK_TIMEOUT_S = 1.0
#: How long :meth:`SolverPool.close` lets running jobs finish before it kills their workers.
CLOSE_TIMEOUT_S = 5.0


#: The signals meant for the server alone (see :func:`ignore_stop_signals`).
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


def ignore_stop_signals() -> None:
    """SIGINT and SIGTERM are for the server, which closes the pool. They arrive blocked
    (:func:`_stop_signals_blocked`): one sent while the worker was starting is pending, and is
    dropped here, once ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


#: How often a worker looks whether its server is still there, where it cannot be told at once.
PARENT_POLL_S = 0.2


def die_with_parent() -> None:
    """End this worker as soon as the server that started it is gone, SIGKILL included: a
    thread waits on the parent (a pidfd, or its pid polled every :data:`PARENT_POLL_S`) and
    exits the process. A worker the server can no longer close would otherwise live on, an
    orphan ignoring SIGTERM — and multiprocessing's resource tracker with it, which leaves only
    once every process holding its pipe (the server and its workers) has gone."""
    parent = os.getppid()
    watcher = threading.Thread(target=_watch_parent, args=(parent,), name="halfmoon-parent-watch", daemon=True)
    watcher.start()


def _watch_parent(parent: int) -> None:
    try:
        pidfd = os.pidfd_open(parent)
    except (AttributeError, OSError):  # no pidfd (an old kernel), or the parent is gone already
        pidfd = None
    if pidfd is not None:
        if os.getppid() == parent:  # (it could have died before the pidfd was opened)
            select.select([pidfd], [], [])  # readable once the parent has exited
        os.close(pidfd)
    else:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
    os._exit(0)  # nothing to finish: the jobs' answers have nobody to go to


def start_worker() -> None:
    """The workers' initializer: :func:`ignore_stop_signals` and :func:`die_with_parent`."""
    ignore_stop_signals()
    die_with_parent()


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Block SIGINT and SIGTERM in this thread while it may start a worker (the executor starts
    them in ``submit``): the new process inherits the mask, so a group's Ctrl-C or systemd's
    SIGTERM during its half second of start-up, before :func:`ignore_stop_signals` runs, stays
    pending instead of killing it (SIGINT: a ``KeyboardInterrupt`` traceback in the log). The
    server's own threads do not block them, so the server still hears them at once (as
    ``multiprocessing``'s resource tracker is started)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def warm_up() -> bool:
    """Touch the solver in a worker (importing the engine and the solver), so the first real job
    does not pay for starting it; also :meth:`SolverPool.check`'s trivial job."""
    return solve is not None


def _settle(future: Future[Any], *, result: Any = None, error: BaseException | None = None) -> None:
    """Finish ``future`` unless its caller cancelled it meanwhile."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass  # cancelled by the caller: nobody waits for the result


def _detached(inner: Future[T]) -> Future[T]:
    """A future that follows ``inner``'s outcome; cancelling it leaves ``inner`` alone. No queued
    job of the executor is ever cancelled here: when a worker dies, Python 3.11's
    ProcessPoolExecutor fails every queued job, a cancelled one too, and that kills its management
    thread (``InvalidStateError``, a traceback in the log) before it stops the pool's other
    workers. A job nobody waits for any more runs anyway (the solver's jobs take milliseconds)."""
    outer: Future[T] = Future()

    def follow(done: Future[T]) -> None:
        if done.cancelled():
            outer.cancel()
            return
        error = done.exception()
        _settle(outer, result=None if error is not None else done.result(), error=error)

    inner.add_done_callback(follow)
    return outer


def _retrieved(answer: asyncio.Future[Any]) -> None:
    if not answer.cancelled():
        answer.exception()  # read: asyncio logs an error it thinks nobody saw


def _ended(processes: list[BaseProcess]) -> tuple[list[BaseProcess], list[BaseProcess]]:
    """The processes that have ended (with their exit status), and those still running."""
    ended, running = [], []
    for process in processes:
        try:
            over = bool(wait_for_ready([process.sentinel], timeout=0))
        except (OSError, ValueError):  # its pipe is already closed: long gone
            over = True
        if over:
            # its pipes close as it exits, a moment before its exit status can be read
            process.join(1.0)
            ended.append(process)
        else:
            running.append(process)
    return ended, running


def _exit_reason(process: BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class SolverPool(Executor):
    """``workers`` solver processes (spawned, so nothing of the server's state is inherited),
    started on the first job and started again when one dies.

    A job lost with a dead worker is retried once on the new one; if that one dies too, the
    job's future fails with :class:`~concurrent.futures.process.BrokenProcessPool` (the caller
    decides what to do: the daily challenge chooses its deal in a thread instead).
    """

    def __init__(self, workers: int, *, on_restart: Callable[[], None] | None = None) -> None:
        """``on_restart`` is called (from any thread) each time a dead worker is replaced.

        Raises :class:`ValueError` when ``workers`` is below 1.
        """
        if workers < 1:
            raise ValueError(f"a solver pool needs at least one worker, not {workers}")
        self.workers = workers
        self.on_restart = on_restart
        #: How many times a dead worker was replaced.
        self.restarts = 0
        self._lock = threading.Lock()
        self._closed = False
        self._executor = self._new_executor()
        #: :meth:`check`'s trivial job under way: on which executor, and its answer
        self._probing: tuple[ProcessPoolExecutor, asyncio.Future[bool]] | None = None

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=start_worker,
        )

    def _processes(self) -> list[BaseProcess]:
        # ProcessPoolExecutor keeps its workers in ``_processes`` (pid -> Process), None once shut
        # down; no public API lists them, and supervising them needs their pids and exit codes
        processes: dict[int, BaseProcess] | None = getattr(self._executor, "_processes", None)
        return list((processes or {}).values())

    def worker_pids(self) -> list[int]:
        """The pids of the current workers (none before the first job)."""
        return sorted(p.pid for p in self._processes() if p.pid is not None)

    # -- jobs ------------------------------------------------------------------------------------------

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` in a worker; a job lost with a dead worker runs again once
        on a new one. The future fails with :class:`RuntimeError` once the pool is closed."""
        outer: Future[T] = Future()
        self._attempt(outer, fn, args, kwargs, retries=1)
        return outer

    def _attempt(
        self, outer: Future[T], fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any], retries: int
    ) -> None:
        if outer.cancelled():
            return
        with self._lock:
            closed, executor = self._closed, self._executor
        if closed:
            _settle(outer, error=RuntimeError("the solver pool is closed"))
            return
        try:
            with _stop_signals_blocked():
                inner = executor.submit(fn, *args, **kwargs)
        except BrokenExecutor as exc:  # the worker died while idle
            self._replace(executor)
            if retries > 0:
                self._attempt(outer, fn, args, kwargs, retries - 1)
            else:
                _settle(outer, error=exc)
            return
        except RuntimeError as exc:  # closed meanwhile
            _settle(outer, error=exc)
            return

        def done(inner: Future[T]) -> None:
            if inner.cancelled():
                outer.cancel()
                return
            error = inner.exception()
            if isinstance(error, BrokenExecutor):
                self._replace(executor)  # for the next jobs, retried or not
            if isinstance(error, BrokenExecutor) and retries > 0 and not self._closed:
                self._attempt(outer, fn, args, kwargs, retries - 1)
            elif error is not None:
                _settle(outer, error=error)
            else:
                _settle(outer, result=inner.result())

        # a cancelled ``outer`` leaves ``inner`` queued (see :func:`_detached`); it runs, unread
        inner.add_done_callback(done)

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Start a new executor in place of ``broken`` (once, however many jobs saw it break)."""
        with self._lock:
            if self._closed or self._executor is not broken:
                return
            self._executor = self._new_executor()
            self.restarts += 1
            executor = self._executor
        # the broken executor has failed its jobs (they are retried) and tears itself down; its
        # other workers, if any, ignore the SIGTERM it sends them and may wait on a queue the dead
        # one left locked: they are killed
        dead, others = _ended(list((getattr(broken, "_processes", None) or {}).values()))
        for process in others:
            process.kill()
        who = ", ".join(f"(pid {p.pid}) died ({_exit_reason(p)})" for p in dead) or "died"
        log.warning("the solver worker %s; started a new one", who)
        if self.on_restart is not None:
            self.on_restart()
        # if it fails, the next job or check says so
        with contextlib.suppress(BrokenExecutor, RuntimeError), _stop_signals_blocked():
            executor.submit(warm_up)  # start it now, not on the next job

    # -- health and shutdown ---------------------------------------------------------------------------

    async def check(self) -> str | None:
        """None when a worker runs a trivial job within ``CHECK_TIMEOUT_S``, else a short reason
        (for ``/readyz``). A dead worker is replaced, and the next check sees the new one. One
        trivial job at a time: checks while it is still unanswered (a hung worker) wait for that
        one, so polling ``/readyz`` never piles jobs up in the queue."""
        with self._lock:
            closed, executor = self._closed, self._executor
        if closed:
            return "the solver pool is shut down"
        try:
            answer = self._probe(executor)
            done, _ = await asyncio.wait({answer}, timeout=CHECK_TIMEOUT_S)  # never cancels it
            if not done:
                return "the solver worker does not answer"
            answer.result()
        except BrokenExecutor:
            self._replace(executor)
            return "the solver worker died (a new one is starting)"
        except RuntimeError:
            return "the solver pool is shut down"
        return None

    def _probe(self, executor: ProcessPoolExecutor) -> asyncio.Future[bool]:
        """The answer of the trivial job on ``executor`` still under way, else of a new one."""
        held = self._probing
        if held is not None and held[0] is executor and not held[1].done():
            return held[1]
        with _stop_signals_blocked():
            job = executor.submit(warm_up)
        answer = asyncio.wrap_future(_detached(job))  # never cancelled: the job is never cancelled
        answer.add_done_callback(_retrieved)  # its failure may come when nobody waits any more
        self._probing = (executor, answer)
        return answer

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Close the pool: no new jobs; see :meth:`close` for the bounded, non-blocking way."""
        with self._lock:
            self._closed = True
            executor = self._executor
        executor.shutdown(wait=wait, cancel_futures=cancel_futures)

    async def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Shut down from the event loop: queued jobs are cancelled, running ones get ``timeout_s``
        to finish, then their workers are killed (they ignore SIGTERM). Returns once every worker
        has exited."""
        processes = self._processes()
        self.shutdown(wait=False, cancel_futures=True)
        await asyncio.to_thread(_reap, processes, timeout_s)


def _reap(processes: list[BaseProcess], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            log.warning(
                "the solver worker (pid %s) did not exit within %g s of the shutdown; killed it", process.pid, timeout_s
            )
            process.kill()
            process.join(5)
