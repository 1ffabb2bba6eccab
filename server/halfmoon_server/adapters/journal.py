"""Room logs for one process: :class:`JournalLog`, a SQLite journal beside the database (the
embedded default: kill the server, start it again, and every room is rebuilt from it), and
:class:`MemoryLog`, which keeps nothing past the process (``--db memory://``, benchmarks).

Both are :class:`halfmoon_server.ports.RoomLog` for a single instance: the followers they deliver
to (:class:`halfmoon_server.ports.Follower`, by room id) are this process's own, and no other
instance is alive.

The journal writes with *group commit*: every entry appended while a write is under way goes in
the next transaction, so under load one commit carries many moves. SQLite runs in WAL mode with
``synchronous=NORMAL`` by default: a committed entry survives the process being killed (even
with SIGKILL); a power cut may lose the last commits. ``synchronous=FULL`` (``--journal-sync
full``) survives that too, at a higher cost per commit (docs/server.md, "Durability"). A checkpoint
between two commits copies the write-ahead log back into the file, so the log restarts from its
beginning however busy the journal is: with ``thread``, SQLite's own, run by the commit that takes
the log past 1,000 pages; with ``auto``, the journal's (below).

Where a round's commit runs (``commit``, ``--journal-commit``): ``auto`` (the default) commits a
round on the event loop's own thread when that is safe and cheap — ``synchronous=NORMAL`` (a
commit is a write into the operating system's cache, no ``fsync``), the journal's thread idle
(so the two never share the connection), no checkpoint due, no room being recounted after a
failed round, and every such commit of the last :data:`INLINE_BACKOFF_S` waited under
:data:`INLINE_SLOW_S` off the CPU; otherwise on the journal's thread, as ``thread`` always does.
A lone move then pays no hop to the thread and back (a context switch each way, a wake-up of the
loop: docs/benchmarks.md, "A lone move"). The checkpoints are then the journal's own (SQLite's
automatic one is off: it would copy ~4 MB and ``fsync`` twice on the loop), run on its thread
every :data:`CHECKPOINT_PAGES` pages written (counted from above), and the first commit after
each is the thread's too (restarting the log syncs its header). The price: a disk that stalls
*during* a commit on the loop stalls the loop for as long (the next rounds go back to the
thread, with its time-out); ``thread`` keeps every write off the loop (docs/server.md, "Durability").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import logging
import queue
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from halfmoon_server.adapters.private_files import private_sqlite_file
from halfmoon_server.errors import LogUnavailable
from halfmoon_server.ports import Claim, Follower, LoadedRoom
from halfmoon_server.settings import JOURNAL_COMMITS

log = logging.getLogger("halfmoon_server.journal")

Entry = dict[str, Any]
#: How long one journal round (a group commit, a read) may take before it counts as failed.
COMMIT_TIMEOUT_S = 10.0
#: What :meth:`JournalLog.ping` writes (one row, replaced each time): 16 pages, more than a round
#: of moves takes (or than a commit that failed half-way may have left room for in the write-ahead
#: log), so a disk that cannot take the moves fails the probe too.
PROBE_BYTES = 64 * 1024
#: Readiness polls share one probe at a time, and its answer for this long: a flood of /readyz
#: never queues more than one write a second ahead of the players' moves on the journal's thread.
PROBE_EVERY_S = 1.0
#: SQLite's page (its default size: the journal never sets another).
PAGE_BYTES = 4096
#: What the probe writes, counted towards a checkpoint: the old row's pages freed, the new one's
#: written, twice over.
PROBE_PAGES = 2 * (PROBE_BYTES // PAGE_BYTES + 1)
#: ``auto``: a commit on the loop's thread that waited longer than this off the CPU (a disk under
#: pressure) sends the rounds of the next :data:`INLINE_BACKOFF_S` to the journal's thread, and
#: says so once.
INLINE_SLOW_S = 0.05
INLINE_BACKOFF_S = 60.0
#: ``auto``: the journal checkpoints its write-ahead log on its thread once this many pages were
#: written since the last checkpoint, counted from above (:func:`pages_of`): between checkpoints
#: that complete, the log stays under 4,000 pages (15.6 MiB, :data:`WAL_SIZE_LIMIT`). Four times
#: SQLite's own 1,000, because a checkpoint copies each page once however often it was written
#: since the last: measured under a saturated load (~9,000 moves/s), every 1,000 pages counted
#: (~450 in the log) cost ~43 ms of CPU a second in 14 checkpoints, every 4,000 (~1,460) ~25 ms
#: in 4.5 (docs/benchmarks.md, "Fewer checkpoints").
CHECKPOINT_PAGES = 4000
#: A checkpoint that failed, or could not copy every page (a reader, such as a backup, holds an
#: older snapshot), is tried again after this long (the rounds go to the thread meanwhile).
CHECKPOINT_RETRY_S = 5.0
#: The bound of the write-ahead log file (bytes): :data:`CHECKPOINT_PAGES` pages; a log that grew
#: past it meanwhile is cut back to it when it restarts (``journal_size_limit``).
WAL_SIZE_LIMIT = CHECKPOINT_PAGES * PAGE_BYTES
#: What one row writes, from above: its leaf page, a share of the leaves' splits (three pages
#: each: two leaves and their parent), and past ~1,000 bytes (the most of a row a leaf of this
#: table keeps) an overflow page per 4,092 bytes — measured 1.5 pages a row of 150 bytes, 4.4 a
#: row of 1,500 (four such rows fill a leaf), counted here as 2 pages a row plus one per 300 bytes.
ROW_BYTES_PER_PAGE = 300


class CheckpointIncomplete(Exception):
    """A checkpoint could not copy every page of the write-ahead log (a reader holds some)."""


def pages_of(row_bytes: int) -> int:
    """The write-ahead log's pages that writing a row of ``row_bytes`` (UTF-8) may take, from above."""
    return 2 + row_bytes // ROW_BYTES_PER_PAGE


def new_instance_name() -> str:
    """A name for this process's instance, unique per start."""
    return secrets.token_hex(5)


class _LocalLog:
    """What both one-process logs share: the rooms followed here, the entry numbers."""

    def __init__(self) -> None:
        self.instance = new_instance_name()
        self.rooms: dict[str, Follower] = {}  # the rooms followed here, by id
        self.counts: dict[str, int] = {}  # entries committed per room
        #: rooms in the log that are not held in memory (a finished room nobody is in): when
        #: each next needs a look (its ``finished_ttl``), and those times in a heap
        self.sleeping: dict[str, int] = {}
        self._wakes: list[tuple[int, str]] = []

    def follow(self, follower: Follower) -> None:
        self.rooms[follower.id] = follower

    def unfollow(self, room_id: str) -> None:
        self.rooms.pop(room_id, None)

    def _follower(self, room_id: str) -> Follower:
        follower = self.rooms.get(room_id)
        if follower is None:
            raise LogUnavailable(f"room {room_id} is not followed here")
        return follower

    def alive(self, instance: str) -> bool:
        return instance == self.instance

    # one process owns every room: nothing to claim, nobody to route to

    async def claim(self, room_id: str) -> Claim:
        return Claim(self.instance, mine=True)

    def shared_reads(self) -> int | None:
        return None  # (nobody else reads it)

    async def owner(self, room_id: str) -> str | None:
        return None

    def route(self, instance: str) -> str | None:
        return None

    def unreachable(self, instance: str) -> None:
        return None

    async def adopt(self) -> list[str]:
        return []

    async def due(self, now: int) -> list[str]:
        """The rooms not held here whose look is due (a room held here is looked at by the
        lobby's ticker: at least every few rounds)."""
        due: list[str] = []
        while self._wakes and self._wakes[0][0] <= now:
            at, room_id = heapq.heappop(self._wakes)
            if self.sleeping.get(room_id) == at:  # (not woken meanwhile, nor put to sleep again)
                del self.sleeping[room_id]
                due.append(room_id)
        return due

    async def wake(self, room_id: str, at: int | None) -> None:
        if room_id in self.rooms:
            return  # held here: the ticker looks at it every few rounds anyway
        if at is None:
            self.sleeping.pop(room_id, None)
        elif self.sleeping.get(room_id) != at:
            self.sleeping[room_id] = at
            heapq.heappush(self._wakes, (at, room_id))

    async def catch_up(self, room_id: str) -> None:
        follower = self.rooms.get(room_id)
        if follower is None:
            return
        applied = follower.applied
        entries = await self._entries_after(room_id, applied)
        if self.rooms.get(room_id) is follower:
            for number, entry in enumerate(entries, applied + 1):
                follower.deliver(number, entry)

    async def _entries_after(self, room_id: str, number: int) -> list[Entry]:
        raise NotImplementedError

    async def load(self, room_id: str, *, snapshot: bool = True) -> LoadedRoom | None:
        raise NotImplementedError


class MemoryLog(_LocalLog):
    """A room log in memory: entries are applied at once, nothing survives the process."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: dict[str, Entry] = {}
        self.entries: dict[str, list[Entry]] = {}
        #: each room's latest snapshot and how many entries it covers
        self.snapshots: dict[str, tuple[int, Entry]] = {}

    async def create(self, header: Entry, *, own: bool = True) -> bool:
        if header["room"] in self.headers:
            return False
        self.headers[header["room"]] = header
        self.entries[header["room"]] = []
        return True

    async def append(self, room_id: str, entry: Entry) -> int:
        follower = self._follower(room_id)
        entries = self.entries[room_id]
        entries.append(entry)
        number = len(entries)
        follower.deliver(number, entry)
        return number

    async def load(self, room_id: str, *, snapshot: bool = True) -> LoadedRoom | None:
        header = self.headers.get(room_id)
        if header is None:
            return None
        kept = self.snapshots.get(room_id) if snapshot else None
        if kept is None:
            return LoadedRoom(header, list(self.entries[room_id]))
        base, data = kept
        return LoadedRoom(header, self.entries[room_id][base:], orjson.loads(orjson.dumps(data)), base)

    async def _entries_after(self, room_id: str, number: int) -> list[Entry]:
        return self.entries.get(room_id, [])[number:]

    async def save_snapshot(self, room_id: str, number: int, snapshot: Entry) -> None:
        kept = self.snapshots.get(room_id)
        if room_id in self.headers and (kept is None or kept[0] < number):
            self.snapshots[room_id] = (number, orjson.loads(orjson.dumps(snapshot)))  # (a copy, as a store keeps)

    async def room_ids(self) -> list[str]:
        return list(self.headers)

    async def ping(self) -> None:
        return None  # nothing outside the process to wait for

    async def forget(self, room_id: str) -> None:
        self.headers.pop(room_id, None)
        self.entries.pop(room_id, None)
        self.snapshots.pop(room_id, None)
        self.sleeping.pop(room_id, None)

    async def close(self) -> None:
        return None


@dataclass(slots=True)
class _Pending:
    room: str
    entry: Entry
    done: asyncio.Future[int] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # (given up on: its time-out cancelled it)
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class _Worker:
    """The journal's one thread: runs its SQLite work in order, one job at a time.

    Lighter per job than a ``ThreadPoolExecutor`` (a job is one tuple on a ``SimpleQueue``, its
    answer one ``call_soon_threadsafe``: no concurrent future, work item, locks or callbacks to
    chain), which matters because under a light load every move is a journal round of its own.
    A job given up on before the thread reached it (its round timed out) is not run, as an
    executor would not run a cancelled future's job either.

    :meth:`submit` answers with a future; :meth:`post` (the group commit's rounds) calls
    ``answer(result, error)`` on the event loop instead: no future, and no task to resume.
    :attr:`outstanding` counts, on the loop, the jobs posted whose end the loop has not yet
    heard of (one given up on included): at 0 the thread is not using the connection."""

    def __init__(self, name: str) -> None:
        self.outstanding = 0
        self._jobs: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._serving = threading.Thread(target=self._serve, name=name, daemon=True)
        self._serving.start()

    def submit(self, work: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run ``work(*args)`` on the thread; its result (or exception) in the future returned.
        A future cancelled before the thread reached its job: the job is not run. Raises
        :class:`LogUnavailable` when the thread has stopped."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.post(work, args, functools.partial(_settle, future), future.done)
        return future

    def post(
        self,
        work: Callable[..., Any],
        args: tuple[Any, ...],
        answer: Callable[[Any, BaseException | None], None],
        given_up: Callable[[], bool],
    ) -> None:
        """Run ``work(*args)`` on the thread, then ``answer(result, error)`` on the running loop;
        neither when ``given_up()`` is true once the thread reaches the job. Raises
        :class:`LogUnavailable` when the thread has stopped."""
        if not self._serving.is_alive():  # (a task that outlived the shutdown)
            raise LogUnavailable("the journal is closed")
        self._jobs.put((asyncio.get_running_loop(), work, args, answer, given_up))
        self.outstanding += 1

    def _ended(self, answer: Callable[[Any, BaseException | None], None] | None, result: Any, error: Any) -> None:
        self.outstanding -= 1
        if answer is not None:
            answer(result, error)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, work, args, answer, given_up = job
            result: Any = None
            error: BaseException | None = None
            if given_up():
                answer = None  # not run; the loop still hears that the job is over
            else:
                try:
                    result = work(*args)
                except BaseException as exc:  # handed back to the loop, as an executor would
                    error = exc
            del job, work, args
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                loop.call_soon_threadsafe(self._ended, answer, result, error)
            del loop, answer, given_up, result, error

    def shutdown(self) -> None:
        """Let the thread finish the jobs queued, then stop it."""
        if self._serving.is_alive():
            self._jobs.put(None)
            self._serving.join()


@dataclass(slots=True)
class _Round:
    """One group-commit round on the journal's thread: the batch it carries, numbered (or, first,
    the recount of rooms whose last commit failed), when it began (loop time), and whether it was
    given up on (its time-out passed: the appenders heard so, and its answer, if it comes, is
    ignored)."""

    batch: list[_Pending]
    started: float
    numbered: list[tuple[str, int, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    abandoned: bool = False

    def given_up(self) -> bool:
        return self.abandoned


_SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (id TEXT PRIMARY KEY, header TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, pad BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    room TEXT NOT NULL, n INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (room, n)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (room TEXT PRIMARY KEY, n INTEGER NOT NULL, snapshot TEXT NOT NULL);
"""
# (The journal's schema has no version: each table is made if missing, so a journal of an earlier
# release gets its ``snapshots`` table when it is opened, and its rooms replay from their first
# entry until their first snapshot is written.)


class JournalLog(_LocalLog):
    """A room log in a SQLite file, written with group commit: on the event loop's thread or on the
    journal's own (``commit``; the module's docstring says when)."""

    def __init__(self, path: Path, *, synchronous: str = "NORMAL", commit: str = "auto") -> None:
        super().__init__()
        commit = commit.lower()
        if commit not in JOURNAL_COMMITS:
            raise ValueError(f"commit must be one of {', '.join(JOURNAL_COMMITS)}, not {commit!r}")
        self.path = path
        self.synchronous = synchronous
        #: rounds may commit on the loop's thread (``auto`` with ``synchronous=NORMAL``); the
        #: checkpoints are then the journal's own
        self.commits_on_loop = commit == "auto" and synchronous.upper() != "FULL"
        #: no commit on the loop's thread before this (loop time): a slow or failed one was seen
        self._inline_after = float("-inf")
        #: pages written since the last checkpoint (counted from above), whether one is queued,
        #: whether the log may restart at the next write (its first after a checkpoint: the
        #: thread's, since restarting syncs the log's header), and no checkpoint before (a failed one)
        self._pages = 0
        self._checkpointing = False
        self._restart_due = False
        self._checkpoint_after = float("-inf")
        self._worker = _Worker("halfmoon-journal")
        self._db: sqlite3.Connection | None = None
        self._queue: list[_Pending] = []
        #: the group-commit round on the thread (None: none), the watchdog timer that gives up
        #: a round past its time-out, and what ``close`` waits on until the rounds are over
        self._round: _Round | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._drained: asyncio.Future[None] | None = None
        #: the next round starts at the end of this turn of the loop (``_committed``)
        self._gathering = False
        #: rooms of a failed commit: it may have landed all the same (a time-out), so their
        #: counts are read again from the journal before they are numbered again
        self._unsure: set[str] = set()
        #: the write probe under way or last made (:meth:`ping`), and when it began
        self._probe: asyncio.Future[None] | None = None
        self._probed_at = float("-inf")

    async def open(self) -> None:
        """Open (or create) the journal and count each room's entries. Raises :class:`LogUnavailable`."""
        await self._run(self._open)

    def _open(self) -> None:
        private_sqlite_file(self.path)  # it holds every live sealed race's seed
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if self.synchronous.upper() == 'FULL' else 'NORMAL'}")
        if self.commits_on_loop:  # (SQLite's own would copy and fsync in a commit on the loop)
            db.execute("PRAGMA wal_autocheckpoint=0")
            # the count of pages starts at 0: a log left by a process that was killed is copied
            # back and emptied first, or it would hold its pages and the next mark's
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        # a log that grew past the bound meanwhile (a checkpoint held back by a reader: a backup)
        # is cut back to it when it restarts; the file never shrinks otherwise
        db.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        db.executescript(_SCHEMA)
        self._db = db
        counts = db.execute(
            "SELECT rooms.id, COALESCE(MAX(entries.n), 0) FROM rooms LEFT JOIN entries ON entries.room = rooms.id"
            " GROUP BY rooms.id"
        ).fetchall()
        self.counts = {room: n for room, n in counts}

    async def _run(self, work: Any, *args: Any, pages: int = 0) -> Any:
        """Run ``work(*args)`` on the journal's thread, in order; ``pages``: about how many pages
        of write-ahead log it writes (towards the next checkpoint)."""
        self._pages += pages
        try:
            async with asyncio.timeout(COMMIT_TIMEOUT_S):
                result = await self._worker.submit(work, *args)
        except TimeoutError:  # a stalled disk: the write may still land (first: TimeoutError is an OSError)
            raise LogUnavailable(f"the journal {self.path} did not answer in time", certain=False) from None
        except (sqlite3.Error, OSError) as exc:
            raise LogUnavailable(f"the journal {self.path} failed: {exc}") from exc
        else:
            if pages:
                self._restart_due = False  # (this write, on the thread, restarted the log if it could)
            return result
        finally:
            if pages:
                self._checkpoint_if_due()

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise sqlite3.OperationalError("the journal is not open")
        return self._db

    async def create(self, header: Entry, *, own: bool = True) -> bool:
        text = orjson.dumps(header).decode()

        def insert() -> bool:
            try:
                self._connection().execute("INSERT INTO rooms (id, header) VALUES (?, ?)", (header["room"], text))
            except sqlite3.IntegrityError:
                return False
            return True

        created: bool = await self._run(insert, pages=pages_of(len(text.encode())))
        if created:
            self.counts[header["room"]] = 0
        return created

    async def append(self, room_id: str, entry: Entry) -> int:
        self._follower(room_id)  # (checked before anything is written)
        pending = _Pending(room_id, entry)
        self._queue.append(pending)
        if self._round is None and not self._gathering:
            if self._inline_ready():
                # on the loop's thread: at the end of this turn, with whatever else it appends
                self._gathering = True
                asyncio.get_running_loop().call_soon(self._gathered)
            else:
                self._next_round()
        return await pending.done

    # -- the group commit: rounds on the thread, driven by their answers -----------------------------
    #
    # Everything appended while a round is on the thread goes in the next one. A round is driven
    # by callbacks, not by a task awaiting it under ``asyncio.timeout``: under a light load every
    # move is a round of its own, and a task's steps, a future and a timer armed and cancelled
    # for each were a third of what a lone move cost the journal. One watchdog timer
    # (:meth:`_watch`) gives up a round older than :data:`COMMIT_TIMEOUT_S`; it is armed when a
    # round starts and none is armed, and moves itself on to the round under way when it fires
    # early, so it fires about once per time-out, not once per move. A round committed on the
    # loop's thread (``auto``: :meth:`_inline_ready`) needs none of it: it is over, delivered and
    # answered before :meth:`_next_round` returns; a move appended while no round is under way
    # starts its round at the end of the loop's turn, so the moves of one turn share a commit.

    def _next_round(self) -> None:
        """Start the next round with everything queued (nothing when a round is under way)."""
        if self._round is not None:
            return
        if not self._queue:
            if self._drained is not None and not self._drained.done():
                self._drained.set_result(None)
            return
        self._checkpoint_if_due()
        batch, self._queue = self._queue, []
        loop = asyncio.get_running_loop()
        current = self._round = _Round(batch, loop.time())
        if self._inline_ready():
            self._commit_inline(current)
            return
        due = current.started + COMMIT_TIMEOUT_S
        if self._watchdog is None or self._watchdog.when() > due:  # (none armed, or for a longer time-out)
            if self._watchdog is not None:
                self._watchdog.cancel()
            self._watchdog = loop.call_at(due, self._watch)
        if self._unsure:  # recount the rooms of a failed commit first: it may have landed
            unsure, self._unsure = self._unsure, set()
            current.counts = dict.fromkeys(unsure, 0)
            self._post(current, self._counts_of, sorted(unsure), self._recounted)
        else:
            self._commit_round(current)

    def _post(
        self,
        current: _Round,
        work: Callable[..., Any],
        arg: Any,
        then: Callable[[_Round, Any, BaseException | None], None],
    ) -> None:
        def answer(result: Any, error: BaseException | None) -> None:
            if current is self._round:  # (else given up on: its appenders heard so already)
                then(current, result, error)

        try:
            self._worker.post(work, (arg,), answer, current.given_up)
        except LogUnavailable as exc:  # the thread has stopped
            self._round_failed(current, exc)

    def _recounted(self, current: _Round, found: dict[str, int] | None, error: BaseException | None) -> None:
        if error is not None:
            self._unsure |= set(current.counts)  # counted again before the next commit
            current.counts = {}
            self._round_failed(current, self._unavailable(error))
            return
        assert found is not None
        for room_id, count in found.items():
            if room_id in self.counts:  # (not forgotten meanwhile)
                self.counts[room_id] = count
        self._commit_round(current)

    def _number(self, current: _Round) -> None:
        """Number the round's entries, each after its room's last (and count the pages they write)."""
        numbered = current.numbered
        counts: dict[str, int] = {}  # the batch's rooms' counts: self.counts moves on once committed
        pages = 0
        for item in current.batch:
            room_id = item.room
            number = counts.get(room_id) or self.counts.get(room_id, 0)
            number += 1
            counts[room_id] = number
            raw = orjson.dumps(item.entry)
            pages += pages_of(len(raw))
            numbered.append((room_id, number, raw.decode()))
        current.counts = counts
        self._pages += pages

    def _commit_round(self, current: _Round) -> None:
        self._number(current)
        self._post(current, self._commit, current.numbered, self._committed)

    def _inline_ready(self) -> bool:
        """Whether the next round may commit on the loop's thread (``auto``; module docstring)."""
        return (
            self.commits_on_loop
            and self._worker.outstanding == 0  # (nor a checkpoint, a read, a snapshot, a probe)
            and not self._unsure
            and not self._restart_due
            and self._pages < CHECKPOINT_PAGES
            and self._db is not None
            and asyncio.get_running_loop().time() >= self._inline_after
        )

    def _commit_inline(self, current: _Round) -> None:
        """Commit the round here, on the loop's thread, and answer it at once. A commit that
        waited longer than :data:`INLINE_SLOW_S` for the disk, or one that failed, sends the next
        rounds to the thread."""
        started, cpu = time.perf_counter(), time.thread_time()
        error: BaseException | None = None
        try:
            self._number(current)  # (an entry that cannot be written: its round fails, nothing waits)
            self._commit(current.numbered)
        except Exception as exc:  # answered as the thread's would be
            error = exc
        # the time the loop's thread spent off the CPU in it: waiting for the disk (a collection
        # of the heap that started inside the commit is CPU time, and no sign of a slow disk)
        waited = (time.perf_counter() - started) - (time.thread_time() - cpu)
        if error is not None or waited > INLINE_SLOW_S:
            self._inline_after = asyncio.get_running_loop().time() + INLINE_BACKOFF_S
            if error is None:
                log.warning(
                    "a commit of the journal %s waited %.1f ms off the CPU (for the disk, or a busy machine) on"
                    " the event loop: the next %.0f s of commits go through its thread",
                    self.path,
                    waited * 1000,
                    INLINE_BACKOFF_S,
                )
        self._committed(current, None, error)

    def _checkpoint_if_due(self) -> None:
        """``auto``: queue a checkpoint on the thread once :data:`CHECKPOINT_PAGES` were written
        (the rounds behind it wait for it there, as they would for SQLite's own)."""
        if not self.commits_on_loop or self._checkpointing or self._pages < CHECKPOINT_PAGES or self._db is None:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self._checkpoint_after:
            return
        self._checkpointing = True
        self._restart_due = True
        written, self._pages = self._pages, 0

        def answer(_result: Any, error: BaseException | None) -> None:
            self._checkpointing = False
            if error is not None:  # the log keeps growing meanwhile (the rounds on the thread)
                message = "checkpointing the journal %s failed: %s; trying again in %.0f s"
                log.warning(message, self.path, error, CHECKPOINT_RETRY_S)
                self._pages += written
                self._checkpoint_after = loop.time() + CHECKPOINT_RETRY_S

        try:
            self._worker.post(self._checkpoint, (), answer, lambda: False)
        except LogUnavailable:  # the thread has stopped (closing)
            self._checkpointing = False

    def _checkpoint(self) -> None:
        """Copy the log back into the file. Raises :class:`CheckpointIncomplete` when a reader kept
        some pages from being copied (the log cannot restart yet: tried again later)."""
        busy, frames, copied = self._connection().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if busy or copied < frames:
            raise CheckpointIncomplete(f"{copied} of the log's {frames} pages copied (a reader holds the rest)")

    def _committed(self, current: _Round, _result: None, error: BaseException | None) -> None:
        """The round's commit is over: deliver its entries in order and answer the appenders
        (only now: a move is acknowledged once it is durable), then start the next round."""
        if error is not None:
            self._unsure.update(current.counts)  # numbered again only once the journal says how far they got
            self._round_failed(current, self._unavailable(error))
            return
        self._round = None
        self._restart_due = False  # (a commit on the thread: it restarted the log if it could)
        self.counts.update(current.counts)
        rooms = self.rooms
        for item, (room_id, number, _) in zip(current.batch, current.numbered, strict=True):
            follower = rooms.get(room_id)
            if follower is not None:  # (unfollowed meanwhile: its appender hears it was not applied)
                try:
                    follower.deliver(number, item.entry)
                except Exception:  # a bug (a room catches its own): never hold back the others
                    log.exception("delivering entry %d of room %s failed", number, room_id)
            if not item.done.done():
                item.done.set_result(number)
        # the next round starts after the callbacks already due in this turn of the loop: the
        # moves read with the thread's answer join it (as they did when a task drove the rounds)
        self._gathering = True
        asyncio.get_running_loop().call_soon(self._gathered)

    def _gathered(self) -> None:
        self._gathering = False
        self._next_round()

    def _round_failed(self, current: _Round, exc: LogUnavailable) -> None:
        """A round that failed or was given up on: its appenders hear ``exc``; the next round starts."""
        current.abandoned = True
        if current is self._round:
            self._round = None
        log.error("%s", exc)
        for item in current.batch:
            if not item.done.done():
                item.done.set_exception(exc)
        self._next_round()

    def _watch(self) -> None:
        """The watchdog: give up the round under way once it is :data:`COMMIT_TIMEOUT_S` old (it
        may still land: its rooms are counted again before they are numbered again); for a younger
        one, come back when it will be that old."""
        self._watchdog = None
        current = self._round
        if current is None:
            return  # the next round arms it again
        loop = asyncio.get_running_loop()
        due = current.started + COMMIT_TIMEOUT_S
        if loop.time() < due:
            self._watchdog = loop.call_at(due, self._watch)
            return
        self._unsure.update(current.counts)  # (a commit's rooms, or a recount's: unsure still)
        message = f"the journal {self.path} did not answer in time"
        self._round_failed(current, LogUnavailable(message, certain=False))

    def _unavailable(self, error: BaseException) -> LogUnavailable:
        """What the appenders of a round that failed on the thread hear."""
        if isinstance(error, LogUnavailable):
            return error
        if not isinstance(error, (sqlite3.Error, OSError)):  # a bug: logged whole; nobody left waiting
            log.error("a journal round failed", exc_info=error)
        return LogUnavailable(f"the journal {self.path} failed: {error}")

    def _counts_of(self, rooms: list[str]) -> dict[str, int]:
        db = self._connection()
        query = "SELECT COALESCE(MAX(n), 0) FROM entries WHERE room = ?"
        return {room: db.execute(query, (room,)).fetchone()[0] for room in rooms}

    def _commit(self, rows: list[tuple[str, int, str]]) -> None:
        db = self._connection()
        db.execute("BEGIN")
        try:
            db.executemany("INSERT INTO entries (room, n, entry) VALUES (?, ?, ?)", rows)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # (a COMMIT refused, e.g. busy: the transaction is still open)
                db.execute("ROLLBACK")
            raise

    async def load(self, room_id: str, *, snapshot: bool = True) -> LoadedRoom | None:
        def read() -> LoadedRoom | None:
            db = self._connection()
            row = db.execute("SELECT header FROM rooms WHERE id = ?", (room_id,)).fetchone()
            if row is None:
                return None
            kept = (
                db.execute("SELECT n, snapshot FROM snapshots WHERE room = ?", (room_id,)).fetchone()
                if snapshot
                else None
            )
            base = 0 if kept is None else int(kept[0])
            entries = db.execute(
                "SELECT entry FROM entries WHERE room = ? AND n > ? ORDER BY n", (room_id, base)
            ).fetchall()
            data = None if kept is None else orjson.loads(kept[1])
            return LoadedRoom(orjson.loads(row[0]), [orjson.loads(e) for (e,) in entries], data, base)

        loaded: LoadedRoom | None = await self._run(read)
        return loaded

    async def _entries_after(self, room_id: str, number: int) -> list[Entry]:
        def read() -> list[Entry]:
            rows = self._connection().execute(
                "SELECT entry FROM entries WHERE room = ? AND n > ? ORDER BY n", (room_id, number)
            )
            return [orjson.loads(e) for (e,) in rows.fetchall()]

        entries: list[Entry] = await self._run(read)
        return entries

    async def save_snapshot(self, room_id: str, number: int, snapshot: Entry) -> None:
        """Keep the room's snapshot (one row a room, replaced by a newer one), through the
        journal's thread: behind the entries it covers, which were committed before it was taken."""

        text = orjson.dumps(snapshot).decode()

        def write() -> None:
            self._connection().execute(
                "INSERT INTO snapshots (room, n, snapshot)"
                " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM rooms WHERE id = ?)"
                " ON CONFLICT (room) DO UPDATE SET n = excluded.n, snapshot = excluded.snapshot"
                " WHERE excluded.n > snapshots.n",
                (room_id, number, text, room_id),
            )

        await self._run(write, pages=pages_of(len(text.encode())))

    async def room_ids(self) -> list[str]:
        rows = await self._run(lambda: self._connection().execute("SELECT id FROM rooms ORDER BY id").fetchall())
        return [room for (room,) in rows]

    async def ping(self) -> None:
        """Whether the journal can still *write*, through its thread (so it answers once the
        writes ahead of it have): a committed transaction that writes :data:`PROBE_BYTES` of
        pages. A full disk or a read-only file fails it as it fails the moves; a read alone
        would still succeed there."""

        def write() -> None:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:  # the old row's pages are freed, the new one's written: twice PROBE_BYTES of frames
                db.execute("INSERT OR REPLACE INTO probe (id, pad) VALUES (1, zeroblob(?))", (PROBE_BYTES,))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

        now = time.monotonic()
        if self._probe is None or (self._probe.done() and now - self._probed_at >= PROBE_EVERY_S):
            self._probed_at = now
            self._probe = asyncio.ensure_future(self._run(write, pages=PROBE_PAGES))
            # (a failure is read by every caller that awaits it; none left unread)
            self._probe.add_done_callback(lambda done: done.cancelled() or done.exception())
        await asyncio.shield(self._probe)

    async def forget(self, room_id: str) -> None:
        def delete() -> None:
            db = self._connection()
            db.execute("BEGIN")
            db.execute("DELETE FROM entries WHERE room = ?", (room_id,))
            db.execute("DELETE FROM snapshots WHERE room = ?", (room_id,))
            db.execute("DELETE FROM rooms WHERE id = ?", (room_id,))
            db.execute("COMMIT")

        # (a deleted row's leaf and overflow pages are rewritten or freed: up to two a row)
        await self._run(delete, pages=2 + 2 * self.counts.get(room_id, 0))
        self.counts.pop(room_id, None)
        self.sleeping.pop(room_id, None)

    async def close(self) -> None:
        if self._round is not None or self._queue:
            self._drained = asyncio.get_running_loop().create_future()
            self._next_round()
            await self._drained
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._db is not None:
            db, self._db = self._db, None
            await self._worker.submit(db.close)  # the last connection: SQLite checkpoints the rest
        self._worker.shutdown()
