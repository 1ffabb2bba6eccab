"""Server benchmark, run by hand: ``python bench/bench_server.py [--conns 100 1000] [--seconds 10]``.

Starts ``halfmoon_server`` in child processes pinned to CPU 0 (``taskset``) on 127.0.0.1 and
drives them from this process (pinned to CPU 1) through real WebSocket connections: N bots in
race rooms of 4 on the same deal, each playing a move and its undo over and over (closed loop:
the next message is sent once the server's ``moved`` answer arrived). Every move fans out to the
room's 4 players. Reports moves/s (median of 1-second windows), the servers' CPU time per move
(from /proc: steadier than wall-clock rates on a shared machine), Redis's CPU time per move in
cluster mode, the server's RSS per connection, and the round-trip latency median/p99.

``--modes`` runs each mode in turn, in one run, for ratios: ``memory`` (no durability: the room
log in memory), ``embedded`` (the default: a SQLite journal), ``cluster`` (``--redis`` on a
``redis-server`` of the benchmark's own, append-only with ``appendfsync always``, and
``--db`` PostgreSQL), ``cluster2`` (two instances, players of a room spread over both).
``--inproc`` also times the room logic alone. Figures go in docs/benchmarks.md ("Server").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from benchlib import cpu_seconds, free_port
from halfmoon.game import Game

ROOT = Path(__file__).resolve().parent.parent
CODE = "HM1-N-AAAAAAA"
ROOM_SIZE = 4


def serve(port: int, data_dir: str, db: str | None, redis: str | None) -> None:
    """The child: a server with bench settings (no rate limit, no solver processes)."""
    from aiohttp import web

    from halfmoon_server import Settings, create_app

    settings = Settings(
        port=port,
        data_dir=Path(data_dir),
        db_url=db,
        redis_url=redis,
        secret=b"bench",
        max_connections_per_address=0,  # every simulated player comes from 127.0.0.1
        countdown_s=0.0,
        rate_burst=1e9,
        rate_per_s=1e9,
        room_burst=1e9,
        solver_workers=0,
        daily_requires_winnable=False,
        max_send_buffer=4 * 1024 * 1024,
    )
    web.run_app(create_app(settings), host="127.0.0.1", port=port, print=None, access_log=None)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")






async def wait_up(base: str) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            try:
                if (await http.get(f"{base}/healthz")).status == 200:
                    return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("the server did not start")


class Bot:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.done = 0
        self.latencies: list[float] = []

    async def expect(self, kind: str) -> dict[str, object]:
        while True:
            msg = await self.ws.receive()
            if msg.type is not aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"connection ended: {msg}")
            data: dict[str, object] = json.loads(msg.data)
            if data["type"] == kind:
                return data
            if data["type"] == "error":
                raise RuntimeError(f"error: {data}")

    async def answer(self, msg_id: int) -> None:
        """Wait for our own ``moved`` (the one echoing ``id``), skipping room mates' events."""
        while True:
            msg = await self.ws.receive()
            if msg.type is not aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"connection ended: {msg}")
            text = msg.data
            if '"id":' not in text:  # a room mate's event: no need to parse it
                continue
            data = json.loads(text)
            if data["type"] == "moved" and data.get("id") == msg_id:
                return
            if data["type"] == "error":
                raise RuntimeError(f"error: {data}")

    async def play(self, stop: float) -> None:
        move = next(Game.from_code(CODE).legal_moves()).names()
        frames = [
            json.dumps({"type": "move", "v": 1, "positions": move, "id": 1}),
            json.dumps({"type": "undo", "v": 1, "id": 2}),
        ]
        i = 0
        while time.perf_counter() < stop:
            t = time.perf_counter()
            await self.ws.send_str(frames[i & 1])
            await self.answer(1 + (i & 1))
            self.latencies.append(time.perf_counter() - t)
            self.done += 1
            i += 1


async def run(bases: list[str], pids: list[int], conns: int, seconds: float, redis_pid: int | None) -> dict[str, float]:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    rss_before = sum(rss_kib(pid) for pid in pids)
    bots: list[Bot] = []
    rooms = (conns + ROOM_SIZE - 1) // ROOM_SIZE
    for r in range(rooms):
        base = bases[r % len(bases)]
        room = (await (await session.post(f"{base}/api/rooms", json={"code": CODE})).json())["room"]
        members = []
        for k in range(min(ROOM_SIZE, conns - len(bots))):
            member_base = bases[(r + k) % len(bases)]  # several instances: a room's players on each
            ws = await session.ws_connect(member_base.replace("http", "ws") + "/ws", max_msg_size=0)
            await ws.send_str(json.dumps({"type": "join", "v": 1, "room": room, "name": f"bot{k}"}))
            bot = Bot(ws)
            await bot.expect("welcome")
            members.append(bot)
        bots.extend(members)
        await members[0].ws.send_str(json.dumps({"type": "start", "v": 1}))
        await asyncio.gather(*(b.expect("started") for b in members))
    await asyncio.sleep(0.5)
    rss_connected = sum(rss_kib(pid) for pid in pids)
    windows: list[int] = []
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    redis_before = cpu_seconds(redis_pid) if redis_pid else 0.0
    stop = time.perf_counter() + seconds
    tasks = [asyncio.create_task(b.play(stop)) for b in bots]
    last = 0
    while time.perf_counter() < stop - 0.5:
        await asyncio.sleep(1.0)
        total = sum(b.done for b in bots)
        windows.append(total - last)
        last = total
    await asyncio.gather(*tasks)
    moves = max(1, sum(b.done for b in bots))
    cpu_used = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    redis_used = (cpu_seconds(redis_pid) - redis_before) if redis_pid else 0.0
    latencies = sorted(x for b in bots for x in b.latencies)
    for b in bots:
        await b.ws.close()
    await session.close()
    return {
        "conns": conns,
        "instances": len(bases),
        "moves_per_s_median": statistics.median(windows[1:] or windows),
        "server_cpu_us_per_move": 1e6 * cpu_used / moves,
        "redis_cpu_us_per_move": 1e6 * redis_used / moves,
        "rss_per_conn_kib": (rss_connected - rss_before) / conns,
        "rss_mib": rss_connected / 1024,
        "latency_ms_median": 1000 * statistics.median(latencies),
        "latency_ms_p99": 1000 * latencies[int(len(latencies) * 0.99)],
    }


class _Sink:
    """An outbox for the in-process measure: counts frames, never sends."""

    closed = False

    def __init__(self) -> None:
        self.frames = 0

    def send(self, frame: bytes) -> None:
        self.frames += 1

    def close(self, code: int, reason: str) -> None:
        self.closed = True


def room_logic_us_per_move(moves: int = 20_000, *, journal: Path | None = None, redis: str | None = None) -> float:
    """Microseconds per move of the race core and its room shell, no sockets: each move appended
    to the room log and applied (engine check, encodings, four frames handed to the outboxes,
    the event log); a room of 4, its players moving in turn (one player alone may take only its
    share of the room's log: ~10,000 steps). The log is in memory, or a SQLite ``journal`` (then
    the figure includes making each move durable, one move at a time: no group commit)."""
    from dataclasses import asdict

    from halfmoon.protocol import Mode
    from halfmoon_server.adapters.journal import JournalLog, MemoryLog
    from halfmoon_server.adapters.memory_storage import MemoryStorage
    from halfmoon_server.adapters.redis_log import RedisLog
    from halfmoon_server.clock import ManualClock
    from halfmoon_server.core.commands import room_header
    from halfmoon_server.core.events import PlayerJoined
    from halfmoon_server.core.race import RaceConfig
    from halfmoon_server.rooms.results import Recorder
    from halfmoon_server.rooms.room import BackgroundTasks, Room, RoomServices

    async def measure() -> float:
        room_log: MemoryLog | JournalLog | RedisLog = MemoryLog() if journal is None else JournalLog(journal)
        if redis is not None:
            room_log = RedisLog(redis)
        if not isinstance(room_log, MemoryLog):
            await room_log.open()
        recorder = Recorder(MemoryStorage())
        services = RoomServices(ManualClock(0), room_log, recorder, BackgroundTasks())
        header = room_header(f"B{time.time_ns() % 10**9}", Mode.RACE, CODE, created_at=0, nonce="bench", daily_day=None)
        header["config"] = asdict(RaceConfig(countdown_ms=0))
        await room_log.create(header)
        room = Room(header, services)
        room_log.follow(room)
        sinks = [_Sink() for _ in range(ROOM_SIZE)]
        ids = []
        for k, sink in enumerate(sinks):
            joined = await room.submit({"k": "join", "n": f"bot{k}", "tok": f"token{k}"}, sink)
            ids.append(next(e.player.id for e in joined if isinstance(e, PlayerJoined)))
        await room.submit({"k": "start", "p": ids[0]})
        await room.submit({"k": "tick"})
        names = next(Game.from_code(CODE).legal_moves()).names()
        t = time.perf_counter()
        for i in range(moves // 2):
            mover = ids[i % ROOM_SIZE]
            await room.submit({"k": "move", "p": mover, "m": names}, msg_id=i)
            await room.submit({"k": "undo", "p": mover}, msg_id=i)
        elapsed = time.perf_counter() - t
        room.close_timer()
        await room_log.close()
        assert sinks[1].frames >= moves, "every move reached the other players"
        return elapsed / moves * 1e6

    return asyncio.run(measure())


def start_redis(folder: str) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server of the benchmark's own: append-only, fsync before every answer."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("cluster modes need redis-server (apt-get install redis-server)")
    port = free_port()
    options = ["--port", str(port), "--bind", "127.0.0.1", "--dir", folder, "--save", ""]
    options += ["--appendonly", "yes", "--appendfsync", "always"]
    process = subprocess.Popen([binary, *options], stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    return process, f"redis://127.0.0.1:{port}/0"


def run_mode(mode: str, conns: int, seconds: float, pg: str) -> dict[str, float | str]:
    """One mode: start its servers (and Redis), drive them, stop them."""
    taskset = shutil.which("taskset")
    pin = taskset is not None and (os.cpu_count() or 1) >= 2
    instances = 2 if mode == "cluster2" else 1
    with tempfile.TemporaryDirectory() as data_dir:
        redis_process, redis = start_redis(data_dir) if mode.startswith("cluster") else (None, None)
        db = "memory://" if mode == "memory" else (pg if redis else None)
        children = []
        try:
            for k in range(instances):
                port = free_port()
                command = [sys.executable, __file__, "--serve", str(port), f"{data_dir}/i{k}", db or "", redis or ""]
                if pin:
                    command = [str(taskset), "-c", "0", *command]
                path = os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", "bench", ""))
                children.append((port, subprocess.Popen(command, env={**os.environ, "PYTHONPATH": path})))
            bases = [f"http://127.0.0.1:{port}" for port, _ in children]
            for base in bases:
                asyncio.run(wait_up(base))
            redis_pid = redis_process.pid if redis_process else None
            result: dict[str, float | str] = {"mode": mode}
            result.update(asyncio.run(run(bases, [c.pid for _, c in children], conns, seconds, redis_pid)))
            return result
        finally:
            for _, child in children:
                child.terminate()
                child.wait(10)
            if redis_process is not None:
                redis_process.terminate()
                redis_process.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conns", type=int, nargs="*", default=[100, 1000], help="socket runs (none: --inproc alone)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--modes", nargs="+", default=["embedded"], choices=["memory", "embedded", "cluster", "cluster2"]
    )
    parser.add_argument(
        "--pg", default=os.environ.get("HALFMOON_BENCH_DB", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"),
        help="the PostgreSQL database of the cluster modes",
    )
    parser.add_argument("--inproc", action="store_true", help="also time the room logic alone (no sockets)")
    parser.add_argument("--serve", nargs=4, metavar=("PORT", "DIR", "DB", "REDIS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        port, data_dir, db, redis = args.serve
        serve(int(port), data_dir, db or None, redis or None)
        return 0
    if args.inproc:
        runs = [room_logic_us_per_move() for _ in range(5)]
        with tempfile.TemporaryDirectory() as folder:
            durable = [room_logic_us_per_move(2000, journal=Path(folder) / f"j{k}.db") for k in range(3)]
        print(
            json.dumps(
                {
                    "room_logic_us_per_move_median": statistics.median(runs),
                    "with_journal_us_per_move_median": statistics.median(durable),
                }
            )
        )
    if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    for conns in args.conns:
        results = [run_mode(mode, conns, args.seconds, args.pg) for mode in args.modes]
        for result in results:
            print(json.dumps(result))
        if len(results) > 1:
            base, first = float(results[0]["moves_per_s_median"]), results[0]["mode"]
            ratios = {f"{r['mode']}/{first}": round(float(r["moves_per_s_median"]) / base, 3) for r in results[1:]}
            print(json.dumps({"conns": conns, "moves_per_s_ratio": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
