"""Measure the unit costs of the capacity model, run by hand:
``python bench/capacity/measure.py [--quick] [--out bench/capacity/unit_costs.json]``.

Everything runs on 127.0.0.1 against the real services: a ``redis-server`` of this script's own
(append-only, ``appendfsync always``, as bench/bench_server.py's cluster modes), a fresh
PostgreSQL database (created, then dropped), and ``halfmoon_server`` instances in child
processes (bench/bench_server.py's ``--serve``: no rate limit, no countdown, no solver), pinned
to CPU 0 while this driver runs on CPU 1. Each instance is reached through a counting TCP proxy,
so the WebSocket bytes are the bytes on the wire (frames and the HTTP upgrade; not TCP/IP
headers). The machine is shared: **every CPU figure is process CPU time read from /proc**
(:func:`benchlib.cpu_seconds`: the servers, redis-server, and the PostgreSQL backends serving the
fresh database), never a wall-clock rate.

The runs (each on a cluster of 1, 2 or 3 instances, players of a room spread round robin over
the instances, one spectator per room):

- ``lobby``: rooms whose players join, start and give up at once (no move): the fixed cost of a
  game, per room and per connection, and the memory per connected player (RSS and Redis);
- ``play``: real bots (:mod:`halfmoon_client.bots`, greedy, their default think time) racing to
  the end; the spectator timestamps every ``moved``: the bots' think-time distribution and the
  moves per game; the move cost is the run's cost less its games' fixed cost;
- rooms of 4 and of 8 on one instance give the cost per recipient of a move (fan-out), the
  same rooms spread over two instances the cost of each extra instance holding a room;
- ``validate``: mixed rooms of 2–8 on two and three instances, kept as the model's check
  (bench/capacity/validation.json, written by ``model.py --validate``);
- ``leaderboard``: the daily leaderboard query the server runs (captured from
  :class:`~halfmoon_server.adapters.storage.SqlStorage` itself) under ``EXPLAIN ANALYZE`` at 100,000 and
  1,000,000 results of one day loaded with COPY; also the day's player count and the daily page's
  list of past days.

``--quick`` runs one tiny lobby and play run and a 2,000-row leaderboard (a smoke test; its
figures mean nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import itertools
import json
import os
import platform
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
for part in ("shared", "server", "client"):
    if str(ROOT / part) not in sys.path:
        sys.path.insert(0, str(ROOT / part))
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import aiohttp  # noqa: E402
import asyncpg  # type: ignore[import-untyped]  # noqa: E402
import redis  # noqa: E402

from bench_server import rss_kib, start_redis, wait_up  # noqa: E402
from benchlib import cpu_seconds, free_port  # noqa: E402
from halfmoon_client.bots import BotBrain, run_bot  # noqa: E402
from halfmoon_client.rest import create_room  # noqa: E402
from halfmoon_client.session import Session  # noqa: E402
from halfmoon_client.strategy import STRATEGIES  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

OUT = Path(__file__).resolve().parent / "unit_costs.json"
#: the bots' default think time (``halfmoon bot``'s ``--think``): each move waits 0.5–1.5× this
BOT_THINK_MS = 300
#: games per ``save_games`` write in the batched PostgreSQL measure (a few races' results)
BATCH = 20


class CountingProxy(TcpProxy):
    """A :class:`TcpProxy` that counts the bytes it passes each way (its pipes run on one thread)."""

    def __init__(self, target_port: int) -> None:
        super().__init__(target_port)
        self.to_server = 0
        self.to_client = 0

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = writer.get_extra_info("peername")[1] == self.target_port
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if upstream:
                    self.to_server += len(data)
                else:
                    self.to_client += len(data)
                writer.write(data)
                await writer.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            self._abort(writer)


def _pg_dsn(url: str) -> str:
    """An asyncpg DSN from the SQLAlchemy URL the server takes."""
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


class Cluster:
    """A redis-server, a fresh PostgreSQL database and ``count`` server instances behind counting
    proxies; :meth:`snapshot` reads every counter the unit costs are differences of."""

    def __init__(self, count: int, pg_url: str, folder: str) -> None:
        self.count = count
        self.folder = folder
        self.database = f"hm_capacity_{secrets.token_hex(4)}"
        self.admin_dsn = _pg_dsn(pg_url)
        self.db_url = f"{pg_url.rsplit('/', 1)[0]}/{self.database}"
        self.redis_process: subprocess.Popen[bytes] | None = None
        self.children: list[subprocess.Popen[bytes]] = []
        self.proxies: list[CountingProxy] = []
        self.bases: list[str] = []
        self.redis: redis.Redis | None = None

    def start(self) -> Cluster:
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        asyncio.run(self._admin(f'CREATE DATABASE "{self.database}"'))
        self.redis_process, redis_url = start_redis(self.folder)
        self.redis = redis.Redis.from_url(redis_url)
        pin = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
        path = os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", "bench", ""))
        for k in range(self.count):
            port = free_port()
            command = [sys.executable, str(BENCH / "bench_server.py"), "--serve", str(port)]
            command += [f"{self.folder}/i{k}", self.db_url, redis_url]
            if pin:
                command = ["taskset", "-c", "0", *command]
            child = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": path}, stderr=subprocess.DEVNULL)
            self.children.append(child)
            proxy = CountingProxy(port)
            proxy.start()
            self.proxies.append(proxy)
            self.bases.append(f"http://127.0.0.1:{proxy.port}")
        for k, child in enumerate(self.children):
            for attempt in range(6):  # instances importing at once on one shared core start slowly
                try:
                    asyncio.run(wait_up(f"http://127.0.0.1:{self.proxies[k].target_port}"))
                    break
                except RuntimeError:
                    if child.poll() is not None or attempt == 5:
                        raise RuntimeError(f"server instance {k} did not start") from None
        return self

    def close(self) -> None:
        for child in self.children:
            child.terminate()
            child.wait(10)
        for proxy in self.proxies:
            proxy.stop()
        if self.redis is not None:
            self.redis.close()
        if self.redis_process is not None:
            self.redis_process.terminate()
            self.redis_process.wait(10)
        asyncio.run(self._admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)'))

    def __enter__(self) -> Cluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _admin(self, statement: str) -> None:
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    async def _pg_counters(self) -> dict[str, float]:
        conn = await asyncpg.connect(f"{self.admin_dsn.rsplit('/', 1)[0]}/{self.database}")
        try:
            await conn.execute("SELECT pg_stat_force_next_flush()")
            wal = await conn.fetchval("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")
            stats = await conn.fetchrow(
                "SELECT xact_commit, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = $1", self.database
            )
            rows = await conn.fetchval("SELECT count(*) FROM games") if await self._has_games(conn) else 0
            size = await conn.fetchval("SELECT pg_database_size($1)", self.database)
            pids = await conn.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", self.database
            )
        finally:
            await conn.close()
        backend_cpu = 0.0
        for row in pids:
            with contextlib.suppress(OSError):
                backend_cpu += cpu_seconds(int(row["pid"]))
        return {
            "wal_bytes": float(wal),
            "xact_commit": float(stats["xact_commit"]),
            "tup_inserted": float(stats["tup_inserted"]),
            "tup_updated": float(stats["tup_updated"]),
            "games_rows": float(rows),
            "db_bytes": float(size),
            "backend_cpu_s": backend_cpu,
        }

    async def stored_records(self) -> list[str]:
        """The records of the games stored so far, as JSON text."""
        conn = await asyncpg.connect(f"{self.admin_dsn.rsplit('/', 1)[0]}/{self.database}")
        try:
            return [str(row[0]) for row in await conn.fetch("SELECT record::text FROM games")]
        finally:
            await conn.close()

    @staticmethod
    async def _has_games(conn: asyncpg.Connection) -> bool:
        return bool(await conn.fetchval("SELECT to_regclass('public.games') IS NOT NULL"))

    def snapshot(self) -> dict[str, float]:
        """Every counter now: CPU seconds, Redis commands and bytes, PostgreSQL writes, wire bytes."""
        assert self.redis is not None and self.redis_process is not None
        info = self.redis.info("all")
        snap: dict[str, float] = {
            "server_cpu_s": sum(cpu_seconds(child.pid) for child in self.children),
            "redis_cpu_s": cpu_seconds(self.redis_process.pid),
            "server_rss_kib": float(sum(rss_kib(child.pid) for child in self.children)),
            "redis_in_bytes": float(info["total_net_input_bytes"]),
            "redis_out_bytes": float(info["total_net_output_bytes"]),
            "redis_used_memory": float(info["used_memory"]),
            "ws_to_server_bytes": float(sum(p.to_server for p in self.proxies)),
            "ws_to_client_bytes": float(sum(p.to_client for p in self.proxies)),
            "wall_s": time.perf_counter(),
        }
        commands = 0.0
        for key, value in info.items():
            if key.startswith("cmdstat_") and isinstance(value, dict):
                name = key.removeprefix("cmdstat_")
                snap[f"redis_calls_{name}"] = float(value["calls"])
                snap[f"redis_usec_{name}"] = float(value["usec"])
                if name not in ("info", "monitor"):  # this script's own reads
                    commands += float(value["calls"])
        snap["redis_commands"] = commands
        with ThreadPoolExecutor(1) as aside:  # callable from inside a running loop too
            snap.update(aside.submit(asyncio.run, self._pg_counters()).result())
        return snap

    def member_base(self, room_index: int, member: int) -> str:
        """Where member ``member`` of room ``room_index`` connects: round robin over the instances."""
        return self.bases[(room_index + member) % self.count]


def diff(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before.get(key, 0.0) for key in after}


# -- the drivers ---------------------------------------------------------------------------------


@dataclass
class Watcher:
    """A spectator of one room: timestamps every ``moved``, counts frames, waits for ``race_over``."""

    moves_by_player: dict[str, list[float]] = field(default_factory=dict)
    frames: int = 0
    over: asyncio.Event = field(default_factory=asyncio.Event)
    welcomed: asyncio.Event = field(default_factory=asyncio.Event)

    async def watch(self, http: aiohttp.ClientSession, base: str, room: str) -> None:
        async with http.ws_connect(base.replace("http", "ws", 1) + "/ws", max_msg_size=0) as ws:
            await ws.send_json(Session.watch_message(room))
            async for msg in ws:
                if msg.type is not aiohttp.WSMsgType.TEXT:
                    break
                self.frames += 1
                data = json.loads(msg.data)
                kind = data.get("type")
                if kind == "welcome":
                    self.welcomed.set()
                elif kind == "moved" and data.get("action") == "move":
                    self.moves_by_player.setdefault(str(data["player"]), []).append(time.perf_counter())
                elif kind == "race_over":
                    self.over.set()
                    return


async def _expect(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    while True:
        msg = await asyncio.wait_for(ws.receive(), 30)
        if msg.type is not aiohttp.WSMsgType.TEXT:
            raise RuntimeError(f"the connection ended while waiting for {kind!r}: {msg}")
        data: dict[str, Any] = json.loads(msg.data)
        if data.get("type") == kind:
            return data
        if data.get("type") == "error":
            raise RuntimeError(f"the server refused: {data}")


async def lobby_games(cluster: Cluster, sizes: list[int]) -> dict[str, float]:
    """Rooms of ``sizes`` players and a spectator each: all join (memory measured with everyone
    in), start, and every player gives up at once. Returns the RSS and Redis memory per
    connection and per room with everyone in (the cluster's counters are read around it)."""
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        rooms: list[tuple[aiohttp.ClientWebSocketResponse, list[aiohttp.ClientWebSocketResponse]]] = []
        before = cluster.snapshot()
        for r, size in enumerate(sizes):
            created = await (await http.post(f"{cluster.bases[r % cluster.count]}/api/rooms", json={})).json()
            room = created["room"]
            spectator = await http.ws_connect(cluster.member_base(r, size).replace("http", "ws", 1) + "/ws")
            await spectator.send_json(Session.watch_message(room))
            await _expect(spectator, "welcome")
            players = []
            for k in range(size):
                ws = await http.ws_connect(cluster.member_base(r, k).replace("http", "ws", 1) + "/ws")
                await ws.send_json(Session.join_message(room, f"p{r}x{k}"))
                await _expect(ws, "welcome")
                players.append(ws)
            rooms.append((spectator, players))
        await asyncio.sleep(0.5)
        joined = cluster.snapshot()
        for _, players in rooms:
            await players[0].send_json(Session.start_message())
        for spectator, players in rooms:
            await asyncio.gather(*(_expect(ws, "started") for ws in [spectator, *players]))
            for ws in players:
                await ws.send_json(Session.give_up_message())
        for spectator, players in rooms:
            await _expect(spectator, "race_over")
            for ws in [spectator, *players]:
                await ws.close()
    connections = sum(sizes) + len(sizes)
    return {
        "rss_kib_per_connection": (joined["server_rss_kib"] - before["server_rss_kib"]) / connections,
        "redis_bytes_per_room_joined": (joined["redis_used_memory"] - before["redis_used_memory"]) / len(sizes),
    }


async def bot_games(cluster: Cluster, sizes: list[int], think_ms: int, seed: int) -> dict[str, Any]:
    """Real greedy bots race in rooms of ``sizes`` players (a spectator each) until every race
    is over. Returns the moves, the think gaps and the moves per player-game the spectators saw."""
    master = random.Random(seed)
    choose = STRATEGIES["greedy"]
    watchers: list[Watcher] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def room_race(r: int, size: int) -> None:
            created = await create_room(cluster.bases[r % cluster.count])
            watcher = Watcher()
            watchers.append(watcher)
            watching = asyncio.create_task(watcher.watch(http, cluster.member_base(r, size), created.room))
            await asyncio.wait_for(watcher.welcomed.wait(), 30)
            names = [f"b{r}x{k}" for k in range(size)]
            team = frozenset(names)
            brains = [BotBrain(choose, random.Random(master.random()), team=team) for _ in names]
            host_in = asyncio.Event()
            first = cluster.member_base(r, 0)
            host = asyncio.create_task(
                run_bot(first, created.room, names[0], brains[0], think_ms=think_ms, welcomed=host_in)
            )
            await asyncio.wait_for(host_in.wait(), 30)
            others = [
                run_bot(cluster.member_base(r, k), created.room, names[k], brains[k], think_ms=think_ms)
                for k in range(1, size)
            ]
            await asyncio.gather(host, *others)
            await asyncio.wait_for(watcher.over.wait(), 30)
            await watching

        await asyncio.gather(*(room_race(r, size) for r, size in enumerate(sizes)))
    gaps: list[float] = []
    per_player: list[int] = []
    for watcher in watchers:
        for times in watcher.moves_by_player.values():
            per_player.append(len(times))
            gaps.extend(1000 * (b - a) for a, b in itertools.pairwise(times))
    players = sum(sizes)
    per_player.extend([0] * (players - len(per_player)))  # players who gave up before any move
    return {"moves": sum(per_player), "gaps_ms": gaps, "moves_per_player": per_player}


def quantiles(values: list[float], points: int = 21) -> list[float]:
    """``points`` evenly spaced quantiles, min to max (the model's inverse CDF)."""
    ordered = sorted(values)
    if not ordered:
        return [0.0] * points
    out = []
    for i in range(points):
        position = i / (points - 1) * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        out.append(ordered[low] + (ordered[high] - ordered[low]) * (position - low))
    return [round(x, 2) for x in out]


def think_quantiles(points: int = 21) -> list[float]:
    """The bots' own think time, from their code (:func:`halfmoon_client.bots.run_bot` waits
    ``think_ms × uniform(0.5, 1.5)`` before each move): what the gaps between a bot's moves
    would be with no round trip. The gaps measured here add this loaded machine's round trip."""
    return [round(BOT_THINK_MS * (0.5 + i / (points - 1)), 2) for i in range(points)]


@dataclass
class Run:
    """One measured run: what it was, and the differences of the cluster's counters over it."""

    name: str
    instances: int
    sizes: list[int]
    moves: int
    counters: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def connections(self) -> int:
        return sum(self.sizes) + len(self.sizes)

    def holders(self) -> float:
        """Instances holding each room, on average (members round robin over the instances)."""
        return statistics.fmean(min(self.instances, size + 1) for size in self.sizes)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "instances": self.instances,
            "rooms": len(self.sizes),
            "sizes": self.sizes,
            "spectators_per_room": 1,
            "moves": self.moves,
            "counters": {k: round(v, 6) for k, v in self.counters.items()},
            **self.extra,
        }


def idle_rate(cluster: Cluster, seconds: float) -> dict[str, float]:
    """The cluster's cost per second while nobody plays (heartbeats, timers)."""
    before = cluster.snapshot()
    time.sleep(seconds)
    d = diff(cluster.snapshot(), before)
    return {key: d[key] / d["wall_s"] for key in ("server_cpu_s", "redis_cpu_s", "redis_commands")}


def less_idle(counters: dict[str, float], idle: dict[str, float]) -> dict[str, float]:
    out = dict(counters)
    for key, per_s in idle.items():
        out[key] = counters[key] - per_s * counters["wall_s"]
    return out


def measure_lobby(cluster: Cluster, sizes: list[int], idle: dict[str, float]) -> Run:
    before = cluster.snapshot()
    memory = asyncio.run(lobby_games(cluster, sizes))
    time.sleep(1.0)  # the results reach PostgreSQL
    counters = less_idle(diff(cluster.snapshot(), before), idle)
    return Run(f"lobby{cluster.count}", cluster.count, sizes, 0, counters, memory)


def measure_play(cluster: Cluster, name: str, sizes: list[int], think_ms: int, idle: dict[str, float]) -> Run:
    before = cluster.snapshot()
    seen = asyncio.run(bot_games(cluster, sizes, think_ms, seed=len(sizes) * 31 + cluster.count))
    time.sleep(1.0)
    counters = less_idle(diff(cluster.snapshot(), before), idle)
    extra = {"gaps_ms": seen["gaps_ms"], "moves_per_player": seen["moves_per_player"]}
    return Run(name, cluster.count, sizes, seen["moves"], counters, extra)


# -- the leaderboard --------------------------------------------------------------------------------


async def leaderboard(pg_url: str, sizes: list[int], records: list[str]) -> dict[str, Any]:
    """The daily leaderboard read at each size: a fresh database (migrated by the server's own
    code), one day's ``n`` ranked results loaded with COPY, then ``EXPLAIN ANALYZE`` of the exact
    statements :class:`SqlStorage` sends (captured from its engine), median of 5 runs."""
    from sqlalchemy import event

    from halfmoon_server.adapters.storage import SqlStorage, open_storage

    admin = await asyncpg.connect(_pg_dsn(pg_url))
    name = f"hm_capacity_lb_{secrets.token_hex(4)}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    results: dict[str, Any] = {}
    try:
        storage = await open_storage(f"{pg_url.rsplit('/', 1)[0]}/{name}")
        assert isinstance(storage, SqlStorage)
        sent: list[tuple[str, Any]] = []

        @event.listens_for(storage.engine.sync_engine, "before_cursor_execute")
        def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
            sent.append((statement, parameters))

        day = dt.date(2026, 12, 1)
        queries: dict[str, tuple[str, Any]] = {}
        await storage.daily_leaderboard(day, 5000)  # rest.py's MAX_ROWS
        queries["daily_leaderboard"] = sent[-1]
        await storage.daily_players(day)
        queries["daily_players"] = sent[-1]
        await storage.daily_days(day + dt.timedelta(days=1), 60)
        queries["daily_days"] = sent[-1]
        await storage.close()
        conn = await asyncpg.connect(f"{_pg_dsn(pg_url).rsplit('/', 1)[0]}/{name}")
        await conn.executemany(  # the days the daily page lists (its query joins their players' counts)
            "INSERT INTO daily_challenges (day, code, created_at) VALUES ($1, 'HM1-D-AAAAAAA', now())",
            [(day - dt.timedelta(days=k),) for k in range(60)],
        )
        loaded = 0
        rng = random.Random(20261201)
        midnight = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
        for size in sizes:
            rows = [
                (
                    f"c{i:015d}", f"player{i}", f"player{i}", "HM1-N-AAAAAAA", "daily", f"R{i % 10**7:07d}",
                    rng.randint(0, 104), rng.randint(10, 200), rng.randint(20_000, 1_800_000),
                    rng.choice(("won", "stuck", "gave_up")), records[i % len(records)], True, day,
                    midnight + dt.timedelta(milliseconds=i * 86_400_000 // size), None,
                )
                for i in range(loaded, size)
            ]  # fmt: skip
            started = time.perf_counter()
            await conn.copy_records_to_table(
                "games",
                records=rows,
                columns=["id", "nickname", "name_key", "code", "mode", "room", "score", "moves", "time_ms",
                         "outcome", "record", "ranked", "daily_date", "finished_at", "salt"],
            )  # fmt: skip
            copy_s = time.perf_counter() - started
            loaded = size
            await conn.execute("VACUUM ANALYZE games")
            entry: dict[str, Any] = {"copy_s": round(copy_s, 2)}
            for label, (statement, parameters) in queries.items():
                timings = []
                plan: Any = None
                for _ in range(5):
                    raw = await conn.fetchval("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, *parameters)
                    plan = json.loads(raw)[0]
                    timings.append(plan["Execution Time"])
                entry[label] = {
                    "execution_ms_median": round(statistics.median(timings), 2),
                    "execution_ms_all": [round(t, 2) for t in timings],
                    "nodes": plan_nodes(plan["Plan"]),
                }
            entry["table_bytes"] = await conn.fetchval("SELECT pg_total_relation_size('games')")
            results[str(size)] = entry
        await conn.close()
        results["statements"] = {label: statement for label, (statement, _) in queries.items()}
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    return results


async def pg_writes(pg_url: str, records: list[str], rounds: int, games: int) -> dict[str, float]:
    """What storing one finished game costs PostgreSQL, alone on a fresh database: the server's
    own :meth:`SqlStorage.save_game` on one pooled connection, ``games`` at a time, ``rounds``
    times. The WAL position is server-wide (other databases' writes would count too), so the
    least of the rounds is kept; commits are counted on the engine, CPU on its backend."""
    from sqlalchemy import event, text

    from halfmoon_server.adapters.storage import SqlStorage, make_engine, migrate
    from halfmoon_server.ports import FinishedGame

    admin = await asyncpg.connect(_pg_dsn(pg_url))
    name = f"hm_capacity_pg_{secrets.token_hex(4)}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        engine = make_engine(f"{pg_url.rsplit('/', 1)[0]}/{name}", pool_size=1, max_overflow=0)
        await migrate(engine)
        commits = 0

        @event.listens_for(engine.sync_engine, "commit")
        def count(conn: Any) -> None:
            nonlocal commits
            commits += 1

        storage = SqlStorage(engine)
        async with engine.connect() as conn:
            backend = int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())
        wal, cpu, per_commit, size = [], [], [], []
        now = dt.datetime.now(dt.UTC)
        for r in range(rounds):
            commits = 0
            lsn = await admin.fetchval("SELECT pg_current_wal_lsn()")
            cpu_before = cpu_seconds(backend)
            size_before = await admin.fetchval("SELECT pg_database_size($1)", name)
            for i in range(games):
                record = json.loads(records[(r * games + i) % len(records)])
                game = FinishedGame(
                    nickname=f"p{r}x{i}", code=record["code"], mode="race", room=f"R{r:03d}{i:04d}", score=50,
                    moves=len(record["moves"]), time_ms=90_000, outcome="stuck", record=record, ranked=True,
                    daily_date=None, finished_at=now,
                )  # fmt: skip
                await storage.save_game(game, f"w{r:04d}{i:06d}")
            wal.append(float(await admin.fetchval("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)", lsn)) / games)
            cpu.append((cpu_seconds(backend) - cpu_before) * 1e6 / games)
            per_commit.append(commits / games)
            size.append((await admin.fetchval("SELECT pg_database_size($1)", name) - size_before) / games)
        batched: dict[str, float] = {}
        if hasattr(storage, "save_games"):  # results.Recorder's group commit: many games, one write
            wal_b, cpu_b = [], []
            for r in range(rounds):
                commits = 0
                lsn = await admin.fetchval("SELECT pg_current_wal_lsn()")
                cpu_before = cpu_seconds(backend)
                for start in range(0, games, BATCH):
                    batch = []
                    for i in range(start, min(games, start + BATCH)):
                        record = json.loads(records[(r * games + i) % len(records)])
                        game = FinishedGame(
                            nickname=f"q{r}x{i}", code=record["code"], mode="race", room=f"Q{r:03d}{i:04d}",
                            score=50, moves=len(record["moves"]), time_ms=90_000, outcome="stuck", record=record,
                            ranked=True, daily_date=None, finished_at=now,
                        )  # fmt: skip
                        batch.append((game, f"v{r:04d}{i:06d}"))
                    await storage.save_games(batch)
                wal_b.append(float(await admin.fetchval("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)", lsn)))
                cpu_b.append((cpu_seconds(backend) - cpu_before) * 1e6 / games)
            batched = {
                "batch": BATCH,
                "wal_bytes_per_game_min": round(min(wal_b) / games, 1),
                "backend_cpu_us_per_game_median": round(statistics.median(cpu_b), 1),
                "commits_per_game": round(commits / games, 3),
            }
        await storage.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    return {
        "wal_bytes_per_game_min": round(min(wal), 1),
        "wal_bytes_per_game_all": [round(x, 1) for x in wal],
        "backend_cpu_us_per_game_median": round(statistics.median(cpu), 1),
        "commits_per_game": max(per_commit),
        "db_bytes_per_game_median": round(statistics.median(size), 1),
        "save_games_batched": batched,
    }


def plan_nodes(node: dict[str, Any]) -> list[str]:
    """A plan as a flat list of its nodes, with the index each scan used."""
    label = node["Node Type"] + (f" using {node['Index Name']}" if "Index Name" in node else "")
    out = [label]
    for child in node.get("Plans", []):
        out.extend(plan_nodes(child))
    return out


# -- the unit costs ---------------------------------------------------------------------------------


def per(run: Run, key: str, count: float) -> float:
    return run.counters[key] / count if count else 0.0


def fixed_costs(lobbies: list[Run]) -> dict[str, float]:
    """A game's cost with no move, as ``per_room + per_connection × connections``: fitted on the
    lobby runs (rooms of 4 and of 8, each with a spectator); one run alone gives it per connection."""
    out: dict[str, float] = {}
    for key, name in (
        ("server_cpu_s", "server_cpu_us"), ("redis_cpu_s", "redis_cpu_us"), ("redis_commands", "redis_commands"),
        ("redis_in_bytes", "redis_in_bytes"), ("redis_out_bytes", "redis_out_bytes"),
        ("ws_to_server_bytes", "ws_in_bytes"), ("ws_to_client_bytes", "ws_out_bytes"),
    ):  # fmt: skip
        scale = 1e6 if key.endswith("cpu_s") else 1.0
        if len(lobbies) >= 2:
            a, b = lobbies[0], lobbies[1]
            ca, cb = a.connections / len(a.sizes), b.connections / len(b.sizes)
            ya, yb = per(a, key, len(a.sizes)) * scale, per(b, key, len(b.sizes)) * scale
            slope = (yb - ya) / (cb - ca)
            out[f"{name}_per_connection"] = round(max(0.0, slope), 3)
            out[f"{name}_per_room"] = round(max(0.0, ya - slope * ca), 3)
        else:
            out[f"{name}_per_connection"] = round(per(lobbies[0], key, lobbies[0].connections) * scale, 3)
            out[f"{name}_per_room"] = 0.0
    return out


def game_fixed(fixed: dict[str, float], name: str, run: Run) -> float:
    """What ``run``'s games cost with no move, by the fitted fixed costs."""
    return len(run.sizes) * fixed[f"{name}_per_room"] + run.connections * fixed[f"{name}_per_connection"]


def move_cost(run: Run, fixed: dict[str, float], key: str, name: str) -> float:
    """Per move: the run's total less its games' fixed cost, over its moves."""
    scale = 1e6 if key.endswith("cpu_s") else 1.0
    return (run.counters[key] * scale - game_fixed(fixed, name, run)) / max(1, run.moves)


def unit_costs(
    lobbies: list[Run],
    plays: dict[str, Run],
    idle: dict[str, float],
    board: dict[str, Any],
    pg: dict[str, Any],
    quick: bool,
) -> dict[str, Any]:
    """The JSON the model reads: every unit cost, and the runs it came from."""
    fixed = fixed_costs(lobbies)
    moves: dict[str, float] = {}
    r4 = plays["p4"]
    for key, name in (
        ("server_cpu_s", "server_cpu_us"), ("redis_cpu_s", "redis_cpu_us"), ("redis_commands", "redis_commands"),
        ("redis_in_bytes", "redis_in_bytes"), ("redis_out_bytes", "redis_out_bytes"),
        ("ws_to_server_bytes", "ws_in_bytes"), ("ws_to_client_bytes", "ws_out_bytes"),
    ):  # fmt: skip
        moves[f"{name}_at_5_recipients"] = round(move_cost(r4, fixed, key, name), 3)
    recipients4, recipients8 = 5.0, 9.0
    if "p8" in plays:
        cpu8 = move_cost(plays["p8"], fixed, "server_cpu_s", "server_cpu_us")
        per_recipient = (cpu8 - moves["server_cpu_us_at_5_recipients"]) / (recipients8 - recipients4)
        out8 = move_cost(plays["p8"], fixed, "ws_to_client_bytes", "ws_out_bytes")
        ws_per_recipient = (out8 - moves["ws_out_bytes_at_5_recipients"]) / (recipients8 - recipients4)
    else:
        per_recipient = moves["server_cpu_us_at_5_recipients"] / recipients4 / 2
        ws_per_recipient = moves["ws_out_bytes_at_5_recipients"] / recipients4
    if per_recipient >= 0:
        moves["server_cpu_us_per_recipient"] = round(per_recipient, 3)
        moves["server_cpu_us_base"] = round(moves["server_cpu_us_at_5_recipients"] - recipients4 * per_recipient, 3)
    else:  # rooms of 8 cost less a move than rooms of 4 (more moves share each wake-up): a flat cost
        both = [r4, plays["p8"]]
        spent = sum(r.counters["server_cpu_s"] * 1e6 - game_fixed(fixed, "server_cpu_us", r) for r in both)
        moves["server_cpu_us_per_recipient"] = 0.0
        moves["server_cpu_us_base"] = round(spent / sum(r.moves for r in both), 3)
        moves["server_cpu_us_fan_out_fit"] = round(per_recipient, 3)
    moves["ws_out_bytes_per_recipient"] = round(ws_per_recipient, 3)
    if "p4spread" in plays:
        spread = plays["p4spread"]
        extra_holders = spread.holders() - 1
        cpu_spread = move_cost(spread, fixed, "server_cpu_s", "server_cpu_us")
        moves["server_cpu_us_per_extra_holder"] = round(
            max(0.0, (cpu_spread - moves["server_cpu_us_at_5_recipients"]) / extra_holders), 3
        )
        publishes = spread.counters.get("redis_calls_publish", 0.0) / max(1, spread.moves)
        moves["redis_publishes_per_extra_holder"] = round(publishes / extra_holders, 3)
        usec = spread.counters.get("redis_usec_publish", 0.0) / max(1.0, spread.counters.get("redis_calls_publish", 1))
        moves["redis_publish_us"] = round(usec, 3)
        moves["redis_cpu_us_per_move_spread"] = round(move_cost(spread, fixed, "redis_cpu_s", "redis_cpu_us"), 3)
        moves["spread_extra_holders"] = round(extra_holders, 3)
    else:
        moves["server_cpu_us_per_extra_holder"] = moves["server_cpu_us_base"]
        moves["redis_publishes_per_extra_holder"] = 1.0
        moves["redis_publish_us"] = 1.0
    lobby = lobbies[-1]
    player_games = sum(sum(r.sizes) for r in [*lobbies, *plays.values()] if r.instances == 1)
    pg_runs = [r for r in [*lobbies, *plays.values()] if r.instances == 1]
    total = {key: sum(r.counters[key] for r in pg_runs) for key in
             ("wal_bytes", "xact_commit", "tup_inserted", "games_rows", "db_bytes", "backend_cpu_s")}  # fmt: skip
    gaps = [g for r in plays.values() for g in r.extra.get("gaps_ms", [])]
    per_player = [m for r in plays.values() for m in r.extra.get("moves_per_player", [])]
    return {
        "quick": quick,
        "spread_extra_holders": moves.pop("spread_extra_holders", 1.0),
        "measured_on": {
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()} {os.cpu_count()} CPU, Python {platform.python_version()}",
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "cpu": "process CPU time from /proc (benchlib.cpu_seconds), not wall rates: the machine is shared",
        },
        "server": {
            **{k: v for k, v in fixed.items() if k.startswith("server_cpu")},
            **{k: v for k, v in moves.items() if k.startswith("server_cpu")},
            "idle_cpu_us_per_s": round(idle["server_cpu_s"] / lobby.instances * 1e6, 1),
            "rss_kib_per_connection": round(max(r.extra["rss_kib_per_connection"] for r in lobbies), 2),
        },
        "redis": {
            **{k: v for k, v in fixed.items() if k.startswith("redis")},
            **{k: v for k, v in moves.items() if k.startswith("redis")},
            "idle_commands_per_instance_s": round(idle["redis_commands"] / lobby.instances, 2),
            "bytes_per_active_room": round(max(r.extra["redis_bytes_per_room_joined"] for r in lobbies), 1),
        },
        "postgres": {
            "rows_per_player_game": round(total["games_rows"] / max(1, player_games), 3),
            "commits_per_player_game": pg["commits_per_game"],
            "wal_bytes_per_player_game": pg["wal_bytes_per_game_min"],
            "db_bytes_per_player_game": round(total["db_bytes"] / max(1, player_games), 1),
            "backend_cpu_us_per_player_game": pg["backend_cpu_us_per_game_median"],
            "save_game_alone": pg,
            "in_the_runs": {
                "wal_bytes_per_player_game": round(total["wal_bytes"] / max(1, player_games), 1),
                "xact_commit_per_player_game": round(total["xact_commit"] / max(1, player_games), 3),
                "backend_cpu_us_per_player_game": round(total["backend_cpu_s"] * 1e6 / max(1, player_games), 1),
                "note": "server-wide WAL (the machine's other databases count too); pg_stat_database lags (flushed "
                "at most once a second per backend): the save_game_alone figures are the ones the model uses",
            },
        },
        "websocket": {
            **{k: v for k, v in fixed.items() if k.startswith("ws_")},
            **{k: v for k, v in moves.items() if k.startswith("ws_")},
        },
        "leaderboard": board,
        "bots": {
            "think_ms_setting": BOT_THINK_MS if not quick else None,
            "gap_ms_quantiles": quantiles(gaps),
            "think_ms_quantiles": think_quantiles(),
            "gap_ms_median": round(statistics.median(gaps), 1) if gaps else 0.0,
            "moves_per_player_quantiles": quantiles([float(m) for m in per_player]),
            "moves_per_player_mean": round(statistics.fmean(per_player), 2) if per_player else 0.0,
            "samples": {"gaps": len(gaps), "player_games": len(per_player)},
        },
        "runs": [r.to_json() | {"gaps_ms": None, "moves_per_player": None} for r in [*lobbies, *plays.values()]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny runs: checks the script works, measures nothing")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--rooms", type=int, default=40, help="rooms per play run")
    parser.add_argument("--board", type=int, nargs="*", default=[100_000, 1_000_000], help="leaderboard sizes")
    parser.add_argument(
        "--pg", default=os.environ.get("HALFMOON_BENCH_DB", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    )
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("measure.py needs redis-server (apt-get install redis-server)")
    if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    think = 20 if args.quick else BOT_THINK_MS
    rooms = 1 if args.quick else args.rooms
    boards = [2_000] if args.quick else args.board
    lobbies: list[Run] = []
    plays: dict[str, Run] = {}
    validation: list[Run] = []
    with tempfile.TemporaryDirectory() as folder:
        with Cluster(1, args.pg, f"{folder}/c1") as one:
            idle = idle_rate(one, 0.5 if args.quick else 3.0)
            lobbies.append(measure_lobby(one, [4] * (2 if args.quick else 60), idle))
            if not args.quick:
                lobbies.append(measure_lobby(one, [8] * 40, idle))
            plays["p4"] = measure_play(one, "p4", [4] * rooms, think, idle)
            if not args.quick:
                plays["p8"] = measure_play(one, "p8", [8] * rooms, think, idle)
            records = asyncio.run(one.stored_records())  # the leaderboard's rows carry real records
        if not args.quick:
            with Cluster(2, args.pg, f"{folder}/c2") as two:
                idle2 = idle_rate(two, 3.0)
                plays["p4spread"] = measure_play(two, "p4spread", [4] * rooms, think, idle2)
                mixed = [2 + (r % 7) for r in range(rooms + 2)]
                validation.append(measure_play(two, "validate2", mixed, think, idle2))
            with Cluster(3, args.pg, f"{folder}/c3") as three:
                idle3 = idle_rate(three, 3.0)
                validation.append(measure_play(three, "validate3", mixed, think, idle3))
        board = asyncio.run(leaderboard(args.pg, boards, records))
        pg = asyncio.run(pg_writes(args.pg, records, 2 if args.quick else 5, 20 if args.quick else 200))
    costs = unit_costs(lobbies, plays, idle, board, pg, args.quick)
    costs["validation_runs"] = [
        r.to_json() | {"gaps_ms": None, "moves_per_player": None, "holders_mean": r.holders()} for r in validation
    ]
    args.out.write_text(json.dumps(costs, indent=1) + "\n")
    print(json.dumps({k: costs[k] for k in ("server", "redis", "postgres", "websocket", "bots")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
