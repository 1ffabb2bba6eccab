"""Server benchmark, run by hand: ``python bench/bench_server.py [--conns 100 1000] [--seconds 10]``.

Starts ``halfmoon_server`` in a child process pinned to CPU 0 (``taskset``) on 127.0.0.1 and
drives it from this process (pinned to CPU 1) through real WebSocket connections: N bots in
race rooms of 4 on the same deal, each playing a move and its undo over and over (closed loop:
the next message is sent once the server's ``moved`` answer arrived). Every move fans out to the
room's 4 players. Reports moves/s (median of 1-second windows), the server's CPU time per move
(from /proc: steadier than wall-clock rates on a shared machine), the server's RSS per
connection, and the round-trip latency median/p99. Figures go in docs/benchmarks.md ("Server").
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


def serve(port: int, data_dir: str) -> None:
    """The child: a server with bench settings (no rate limit, no solver processes)."""
    from aiohttp import web

    from halfmoon_server import Settings, create_app

    settings = Settings(
        port=port,
        data_dir=Path(data_dir),
        secret=b"bench",
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


async def run(base: str, pid: int, conns: int, seconds: float) -> dict[str, float]:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    rss_before = rss_kib(pid)
    bots: list[Bot] = []
    rooms = (conns + ROOM_SIZE - 1) // ROOM_SIZE
    ws_url = base.replace("http", "ws") + "/ws"
    for _ in range(rooms):
        room = (await (await session.post(f"{base}/api/rooms", json={"code": CODE})).json())["room"]
        members = []
        for k in range(min(ROOM_SIZE, conns - len(bots))):
            ws = await session.ws_connect(ws_url, max_msg_size=0)
            await ws.send_str(json.dumps({"type": "join", "v": 1, "room": room, "name": f"bot{k}"}))
            bot = Bot(ws)
            await bot.expect("welcome")
            members.append(bot)
        bots.extend(members)
        await members[0].ws.send_str(json.dumps({"type": "start", "v": 1}))
        await asyncio.gather(*(b.expect("started") for b in members))
    await asyncio.sleep(0.5)
    rss_connected = rss_kib(pid)
    windows: list[int] = []
    cpu_before = cpu_seconds(pid)
    stop = time.perf_counter() + seconds
    tasks = [asyncio.create_task(b.play(stop)) for b in bots]
    last = 0
    while time.perf_counter() < stop - 0.5:
        await asyncio.sleep(1.0)
        total = sum(b.done for b in bots)
        windows.append(total - last)
        last = total
    await asyncio.gather(*tasks)
    cpu_used = cpu_seconds(pid) - cpu_before
    latencies = sorted(x for b in bots for x in b.latencies)
    for b in bots:
        await b.ws.close()
    await session.close()
    return {
        "conns": conns,
        "moves_per_s_median": statistics.median(windows[1:] or windows),
        "server_cpu_us_per_move": 1e6 * cpu_used / max(1, sum(b.done for b in bots)),
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


def room_logic_us_per_move(moves: int = 20_000, *, journal: Path | None = None) -> float:
    """Microseconds per move of the race core and its room shell, no sockets: each move appended
    to the room log and applied (engine check, encodings, four frames handed to the outboxes,
    the event log); a room of 4, one mover. The log is in memory, or a SQLite ``journal`` (then
    the figure includes making each move durable, one mover at a time: no group commit)."""
    from dataclasses import asdict

    from halfmoon.protocol import Mode
    from halfmoon_server.analysis import Analyst
    from halfmoon_server.clock import ManualClock
    from halfmoon_server.commands import room_header
    from halfmoon_server.events import PlayerJoined
    from halfmoon_server.journal import JournalLog, MemoryLog
    from halfmoon_server.memory_storage import MemoryStorage
    from halfmoon_server.race import RaceConfig
    from halfmoon_server.results import Recorder
    from halfmoon_server.room import BackgroundTasks, Room, RoomServices

    async def measure() -> float:
        room_log: MemoryLog | JournalLog = MemoryLog() if journal is None else JournalLog(journal)
        if isinstance(room_log, JournalLog):
            await room_log.open()
        recorder = Recorder(MemoryStorage(), Analyst(None, node_budget=0, time_budget_ms=0))
        services = RoomServices(ManualClock(0), room_log, recorder, BackgroundTasks())
        header = room_header("BENCH1", Mode.RACE, CODE, created_at=0, nonce="bench", daily_day=None)
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
            await room.submit({"k": "move", "p": ids[0], "m": names}, msg_id=i)
            await room.submit({"k": "undo", "p": ids[0]}, msg_id=i)
        elapsed = time.perf_counter() - t
        room.close_timer()
        await room_log.close()
        assert sinks[1].frames >= moves, "every move reached the other players"
        return elapsed / moves * 1e6

    return asyncio.run(measure())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conns", type=int, nargs="*", default=[100, 1000], help="socket runs (none: --inproc alone)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--inproc", action="store_true", help="also time the room logic alone (no sockets)")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
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
    taskset = shutil.which("taskset")
    if taskset and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    for conns in args.conns:
        port = free_port()
        with tempfile.TemporaryDirectory() as data_dir:
            command = [sys.executable, __file__, "--serve", str(port), data_dir]
            if taskset and (os.cpu_count() or 1) >= 2:
                command = [taskset, "-c", "0", *command]
            child = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(ROOT)})
            try:
                base = f"http://127.0.0.1:{port}"
                asyncio.run(wait_up(base))
                pid = child.pid  # taskset execs the interpreter: same pid
                result = asyncio.run(run(base, pid, conns, args.seconds))
                print(json.dumps(result))
            finally:
                child.terminate()
                child.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
