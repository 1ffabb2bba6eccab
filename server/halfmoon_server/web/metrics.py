"""What ``GET /metrics`` shows, in the Prometheus text format (prometheus-client).

Each application has its own :class:`Metrics` (its own registry, so tests may run several
servers in one process). Most figures are read when Prometheus scrapes — connected players and
spectators, rooms by mode and phase, the recording backlog — so the hot path pays nothing for
them; the rest are a few counters that the transport bumps (moves, refusals by reason), a
timing wrapper around the storage's writes (:class:`TimedStorage`), one around the solver's
executor (:class:`CountedExecutor`), a task that measures the event loop's lag, and a
``gc.callbacks`` hook that times each garbage collection.

Every label takes values from a small closed set (modes, phases, refusal codes, storage
operations, solver job names): no room ids, nicknames or addresses, so the series stay few.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter as Tally
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future
from datetime import date, datetime
from typing import Any, ParamSpec, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from halfmoon import __version__
from halfmoon.compiled import compiled
from halfmoon.protocol import Mode, Phase
from halfmoon_server.core.commands import LOG_VERSION, log_version
from halfmoon_server.core.rating import Rated, RatedGame
from halfmoon_server.errors import StorageError
from halfmoon_server.ports import DailyDay, FinishedGame, PlayerGame, Storage, StoredGame

P = ParamSpec("P")
T = TypeVar("T")

#: How often the lag probe wakes; the lag is how late it wakes.
LAG_PROBE_S = 0.25


class Metrics:
    """One server's metrics: the counters the hooks bump, and the registry ``/metrics`` renders."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.moves = Counter(
            "halfmoon_moves", "Moves and undos applied for this instance's players", ["kind"], registry=r
        )
        self._moves_by_kind: dict[str, Any] = {}
        self.refusals = Counter(
            "halfmoon_refusals", "Client messages refused, by the error code sent back", ["reason"], registry=r
        )
        self.loop_lag = Gauge(
            "halfmoon_event_loop_lag_seconds", "How late the event loop ran the last probe", registry=r
        )
        self.loop_lag_hist = Histogram(
            "halfmoon_event_loop_delay_seconds",
            "How late the event loop runs a timer",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=r,
        )
        self.gc_pauses = Histogram(
            "halfmoon_gc_pause_seconds",
            "Garbage collections (each one stops the event loop), by the oldest generation collected",
            ["generation"],
            buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=r,
        )
        self.gc_collected = Counter(
            "halfmoon_gc_collected_objects",
            "Unreachable objects the garbage collector freed (reference cycles), by the oldest generation collected",
            ["generation"],
            registry=r,
        )
        self.db_writes = Histogram(
            "halfmoon_db_write_seconds",
            "Database writes (finished games, daily attempts and deals), by operation",
            ["op"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
            registry=r,
        )
        self.db_write_errors = Counter(
            "halfmoon_db_write_errors", "Database writes that failed, by operation", ["op"], registry=r
        )
        self.solver_jobs = Counter(
            "halfmoon_solver_jobs",
            "Solver jobs finished, by job and outcome (ok, error, cancelled)",
            ["job", "outcome"],
            registry=r,
        )
        self.solver_running = Gauge(
            "halfmoon_solver_jobs_in_flight", "Solver jobs submitted and not finished (queued or running)", registry=r
        )
        self.solver_seconds = Histogram(
            "halfmoon_solver_job_seconds",
            "Solver jobs' time from submission to result",
            ["job"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
            registry=r,
        )
        self.solver_restarts = Counter(
            "halfmoon_solver_restarts", "Solver workers that died and were replaced (SolverPool)", registry=r
        )
        self.relays = Counter(
            "halfmoon_relayed_connections",
            "Connections relayed to the instance that owns their room (a cluster), by outcome"
            " (relayed; unreachable: the owner could not be reached)",
            ["outcome"],
            registry=r,
        )
        self.build = Info(
            "halfmoon_build",
            "This instance's version and build (compiled: the HALFMOON_COMPILE=1 build, or the pure-Python one)",
            registry=r,
        )
        self.build.info({"version": __version__, "compiled": "true" if compiled() else "false"})
        ProcessCollector(registry=r)
        self._watching = False

    def watch(
        self,
        connections: Callable[[], Iterable[Member]],
        rooms: Callable[[], Iterable[Held]],
        backlog: Callable[[], int],
    ) -> None:
        """Read the application's connections, rooms and recording backlog at every scrape
        (:mod:`halfmoon_server.web.monitoring` hands them over)."""
        if not self._watching:
            self._watching = True
            self.registry.register(_LiveCollector(connections, rooms, backlog))

    def refused(self, code: str) -> None:
        self.refusals.labels(code).inc()

    def moved(self, kind: str) -> None:
        child = self._moves_by_kind.get(kind)
        if child is None:  # (every move passes here: each kind's child is looked up once)
            child = self._moves_by_kind[kind] = self.moves.labels(kind)
        child.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class Member(Protocol):
    """A connection as the gauges see it: the room it is in and as which player (None: none)."""

    room: str | None
    player_id: str | None


class Held(Protocol):
    """A room as the gauges see it: its race's mode and phase, its state's log header."""

    @property
    def race(self) -> Any: ...

    @property
    def state(self) -> Any: ...


class _LiveCollector(Collector):
    """Gauges read from the live application when Prometheus scrapes."""

    def __init__(
        self,
        connections: Callable[[], Iterable[Member]],
        rooms: Callable[[], Iterable[Held]],
        backlog: Callable[[], int],
    ) -> None:
        self.connections, self.rooms, self.backlog = connections, rooms, backlog

    def describe(self) -> Iterable[Metric]:
        return []  # the gauges depend on the app's state; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        connections = GaugeMetricFamily(
            "halfmoon_connections", "Open WebSockets, by role (player, spectator, idle: in no room)", labels=["role"]
        )
        roles: Tally[str] = Tally({"player": 0, "spectator": 0, "idle": 0})
        for conn in list(self.connections()):
            roles["idle" if conn.room is None else "spectator" if conn.player_id is None else "player"] += 1
        for role, n in roles.items():
            connections.add_metric([role], n)
        yield connections

        rooms = GaugeMetricFamily(
            "halfmoon_rooms", "Rooms held by this instance, by mode and phase", labels=["mode", "phase"]
        )
        formats = GaugeMetricFamily(
            "halfmoon_rooms_by_log_version",
            "Rooms held by this instance, by the format their log is written in (the header's v)",
            labels=["version"],
        )
        phases: Tally[tuple[str, str]] = Tally({(m.value, p.value): 0 for m in Mode for p in Phase})
        versions: Tally[int] = Tally({version: 0 for version in range(1, LOG_VERSION + 1)})
        for room in list(self.rooms()):  # (one pass over the rooms for both gauges)
            phases[(room.race.mode.value, room.race.phase.value)] += 1
            versions[log_version(room.state.header)] += 1
        for (mode, phase), n in sorted(phases.items()):
            rooms.add_metric([mode, phase], n)
        yield rooms
        for version, n in sorted(versions.items()):
            formats.add_metric([str(version)], n)
        yield formats

        backlog = GaugeMetricFamily(
            "halfmoon_recording_backlog",
            "Finished games (and room ticks) handed to the recorder and not yet done: storing and analysing",
        )
        backlog.add_metric([], self.backlog())
        yield backlog


class CountedExecutor(Executor):
    """An executor that counts the solver's jobs: in flight, finished by outcome, and their time.
    ``loop.run_in_executor`` calls :meth:`submit`, so every job passes here."""

    def __init__(self, inner: Executor, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        job = getattr(fn, "__name__", "job")
        metrics = self.metrics
        metrics.solver_running.inc()
        started = time.perf_counter()

        def done(future: Future[T]) -> None:
            metrics.solver_running.dec()
            outcome = "cancelled" if future.cancelled() else "error" if future.exception() is not None else "ok"
            metrics.solver_jobs.labels(job, outcome).inc()
            metrics.solver_seconds.labels(job).observe(time.perf_counter() - started)

        try:
            future = self.inner.submit(fn, *args, **kwargs)
        except BaseException:
            metrics.solver_running.dec()
            raise
        future.add_done_callback(done)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.inner.shutdown(wait=wait, cancel_futures=cancel_futures)


class TimedStorage:
    """:class:`Storage` around another one, timing its writes (``halfmoon_db_write_seconds``)."""

    def __init__(self, inner: Storage, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics

    @contextlib.asynccontextmanager
    async def _write(self, op: str) -> AsyncIterator[None]:
        started = time.perf_counter()
        try:
            yield
        except StorageError:
            self.metrics.db_write_errors.labels(op).inc()
            raise
        finally:
            self.metrics.db_writes.labels(op).observe(time.perf_counter() - started)

    async def ping(self) -> None:
        await self.inner.ping()

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        async with self._write("save_game"):
            await self.inner.save_game(game, game_id)

    async def save_games(self, games: Sequence[tuple[FinishedGame, str]]) -> None:
        """Many games in one write when the storage can (:class:`~halfmoon_server.rooms.results.BatchStorage`)."""
        save_games = getattr(self.inner, "save_games", None)
        async with self._write("save_games"):
            if save_games is not None:
                await save_games(games)
            else:
                for game, game_id in games:
                    await self.inner.save_game(game, game_id)

    async def get_game(self, game_id: str) -> StoredGame | None:
        return await self.inner.get_game(game_id)

    async def leaderboard_for_code(self, code: str, limit: int) -> list[StoredGame]:
        return await self.inner.leaderboard_for_code(code, limit)

    async def daily_leaderboard(self, day: date, limit: int) -> list[StoredGame]:
        return await self.inner.daily_leaderboard(day, limit)

    async def daily_players(self, day: date) -> int:
        return await self.inner.daily_players(day)

    async def games_of_room(self, room: str, limit: int) -> list[StoredGame]:
        return await self.inner.games_of_room(room, limit)

    async def games_of_player(self, player: str, limit: int) -> list[PlayerGame]:
        return await self.inner.games_of_player(player, limit)

    async def games_of_players(self, players: list[str], limit: int) -> list[PlayerGame]:
        return await self.inner.games_of_players(players, limit)

    async def claim_daily_attempt(
        self,
        day: date,
        name_key: str,
        at: datetime,
        *,
        address: str | None = None,
        per_address: int = 0,
        account: str | None = None,
        room: str | None = None,
        retrying: tuple[str, ...] = (),
    ) -> bool:
        async with self._write("claim_daily_attempt"):
            return await self.inner.claim_daily_attempt(
                day,
                name_key,
                at,
                address=address,
                per_address=per_address,
                account=account,
                room=room,
                retrying=retrying,
            )

    async def daily_attempt_room(self, day: date, account: str) -> str | None:
        return await self.inner.daily_attempt_room(day, account)

    async def daily_code(self, day: date) -> str | None:
        return await self.inner.daily_code(day)

    async def save_daily_code(self, day: date, code: str, at: datetime) -> str:
        async with self._write("save_daily_code"):
            return await self.inner.save_daily_code(day, code, at)

    async def daily_days(self, before: date, limit: int) -> list[DailyDay]:
        return await self.inner.daily_days(before, limit)

    async def rate_due(self, now: datetime, limit: int) -> int:
        return await self.inner.rate_due(now, limit)

    async def rebuild_ratings(self, now: datetime) -> int:
        return await self.inner.rebuild_ratings(now)

    async def rating_board(self, limit: int, *, provisional: bool = False) -> list[Rated]:
        return await self.inner.rating_board(limit, provisional=provisional)

    async def player_rating(self, player: str, limit: int) -> tuple[Rated | None, list[RatedGame]]:
        return await self.inner.player_rating(player, limit)

    async def game_rating(self, game_id: str) -> tuple[str, RatedGame | None]:
        return await self.inner.game_rating(game_id)

    async def close(self) -> None:
        await self.inner.close()
