"""What routing by room saves, run by hand: ``python bench/bench_routing.py [--rooms 40]``
(``--quick``: a few rooms, for CI; ``--out FILE``: the JSON).

Starts its own ``redis-server``, ``halfmoon serve --redis`` instances (each its own SQLite
database, every limit lifted) and a real nginx running deploy/nginx.conf in front of them, on
ports of their own (``--port-base P``: P, P+1, …; else free ones). Then plays **the same rooms
and moves** in three set-ups, one after the other, each on fresh processes:

- ``one``: one instance behind nginx;
- ``two-by-room``: two instances behind nginx's ``hash $halfmoon_room consistent``, every client
  connecting to ``/ws?room=ID`` as the browser and terminal clients do. A room made with
  ``POST /api/rooms`` (round robin: it names no room yet) is let go at once, and the instance its
  members are routed to claims it: one owner, nobody relayed;
- ``two-round-robin``: the same two instances, the clients naming no room (an older client):
  nginx balances each connection round robin, so a room's players are spread: those that reach
  the instance that does not own the room are relayed to its owner.

In each, ``--rooms`` races of 4 players (plus one spectator every ``--spectator-every`` rooms): a
room made with ``POST /api/rooms`` through nginx (round robin: it names no room yet) on a deal
with a known winning line (tests/vectors/won_records.json); its players join, the first starts,
and each plays the whole line in a closed loop (its next move once the last was acknowledged).

Measured over the play (from every race started to every game over, plus a quiet half second
for the last answers), never wall time: each instance's process CPU (/proc, user+system)
and Redis's ``INFO commandstats`` (``publish`` + ``spublish`` calls, the Lua append scripts'
included). Reported per set-up: moves acknowledged, instance CPU per move (total over the
instances), PUBLISH+SPUBLISH per move, Redis CPU per move, and how many connections were relayed
to their room's owner (``halfmoon_relayed_connections_total`` on each instance). Then the ratios the
issue asks for: total instance CPU per move, two instances ÷ one, and PUBLISH+SPUBLISH per move,
for each two-instance set-up. Figures go in docs/benchmarks.md ("Routing by room").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import cpu_seconds, free_port, wait_up

ROOT = Path(__file__).resolve().parent.parent
TABLE = 4  # players in a room
SETUPS = ("one", "two-by-room", "two-round-robin")
#: every limit a load would hit, lifted (each is a server setting)
LIFTED = {
    "HALFMOON_RATE_BURST": "1000000",
    "HALFMOON_RATE_PER_S": "1000000",
    "HALFMOON_ROOM_BURST": "1000000",
    "HALFMOON_ROOM_PER_MIN": "1000000",
    "HALFMOON_MAX_CONNECTIONS_PER_ADDRESS": "0",
    "HALFMOON_MAX_ROOMS": "1000000",
    "HALFMOON_COUNTDOWN_S": "0",
    "HALFMOON_SOLVER_WORKERS": "0",
    "HALFMOON_DAILY_REQUIRES_WINNABLE": "0",
    "HALFMOON_SECRET": "routing-benchmark-secret-routing-benchmark",
    "HALFMOON_LOG_LEVEL": "WARNING",
    "HALFMOON_METRICS_ON_APP_PORT": "1",  # (the relays counted: each instance's /metrics)
}


def winning_line() -> tuple[str, list[list[str]]]:
    """A deal code and a winning line of it (positions), from the engine's golden won games."""
    records = json.loads((ROOT / "tests" / "vectors" / "won_records.json").read_text())["records"]
    for record in records:
        if all(isinstance(step, list) for step in record["moves"]):
            return str(record["code"]), [list(step) for step in record["moves"]]
    raise RuntimeError("no won record without an undo in tests/vectors/won_records.json")


class Ports:
    """Consecutive ports from ``base`` (a helper's own range), or free ones (``base`` None)."""

    def __init__(self, base: int | None) -> None:
        self.next = base

    def take(self) -> int:
        if self.next is None:
            return free_port()
        port, self.next = self.next, self.next + 1
        return port


@dataclass
class Processes:
    redis_pid: int
    redis_port: int
    instance_pids: list[int]
    instance_ports: list[int]
    base: str  # nginx's URL


def nginx_config(upstreams: list[int], listen: int, folder: Path) -> Path:
    """deploy/nginx.conf with these upstream ports, listening on ``listen``, its files in ``folder``."""
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    block = re.search(r"upstream halfmoon \{.*?\}", text, re.S)
    if block is None:
        raise RuntimeError("deploy/nginx.conf has no upstream halfmoon block")
    servers = "".join(f"server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;\n        " for port in upstreams)
    upstream = re.sub(r"(?:server [^\n]*\n\s*)+", lambda _: servers, block.group(0), count=1)
    text = text.replace(block.group(0), upstream).replace("listen 8000;", f"listen 127.0.0.1:{listen};")
    text = text.replace("/tmp/halfmoon-nginx", str(folder / "nginx"))
    text = text.replace("worker_processes auto;", "worker_processes 1;\ndaemon off;")
    config = folder / "nginx.conf"
    config.write_text(text)
    return config


@contextlib.asynccontextmanager
async def started(instances: int, folder: Path, ports: Ports) -> AsyncIterator[Processes]:
    """A redis-server, ``instances`` instances on it and nginx in front; stopped on the way out."""
    nginx_binary = shutil.which("nginx") or "/usr/sbin/nginx"
    redis_binary = shutil.which("redis-server") or "redis-server"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        redis_port = ports.take()
        (folder / "redis").mkdir(parents=True)
        redis_options = ["--port", str(redis_port), "--bind", "127.0.0.1", "--dir", str(folder / "redis")]
        redis_options += ["--save", "", "--appendonly", "no"]
        redis = subprocess.Popen([redis_binary, *redis_options], stdout=subprocess.DEVNULL)
        procs.append(redis)
        await _redis_up(redis_port)
        env = {**os.environ, **LIFTED}
        env["PYTHONPATH"] = os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client"))
        instance_ports = [ports.take() for _ in range(instances)]
        servers = []
        for port in instance_ports:
            data = folder / f"instance-{port}"
            data.mkdir()
            command = [sys.executable, "-m", "halfmoon", "serve", "--host", "127.0.0.1", "--port", str(port)]
            command += ["--data-dir", str(data), "--redis", f"redis://127.0.0.1:{redis_port}/0"]
            log = (data / "server.log").open("wb")
            servers.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data))
        procs.extend(servers)
        for port, server in zip(instance_ports, servers, strict=True):
            await wait_up(f"http://127.0.0.1:{port}", server)
        listen = ports.take()
        config = nginx_config(instance_ports, listen, folder)
        procs.append(subprocess.Popen([nginx_binary, "-c", str(config), "-p", str(folder)], stderr=subprocess.DEVNULL))
        base = f"http://127.0.0.1:{listen}"
        await wait_up(base, procs[-1])
        yield Processes(redis.pid, redis_port, [s.pid for s in servers], instance_ports, base)
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def _redis_up(port: int) -> None:
    async with asyncio.timeout(10):
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.05)


async def redis_command(port: int, *words: str) -> str:
    """One command's reply: a bulk string's text (INFO) or an integer's digits (SCARD)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write((f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)).encode())
        await writer.drain()
        head = (await reader.readline()).decode().strip()
        if head.startswith("$"):
            return (await reader.readexactly(int(head[1:]) + 2))[:-2].decode()
        if head.startswith(":"):
            return head[1:]
        raise RuntimeError(f"Redis answered {head!r}")
    finally:
        writer.close()


async def publish_calls(port: int) -> int:
    """PUBLISH + SPUBLISH calls so far (``INFO commandstats``)."""
    text = await redis_command(port, "INFO", "commandstats")
    return sum(int(n) for n in re.findall(r"^cmdstat_s?publish:calls=(\d+)", text, re.M))


def command_calls(commandstats: str) -> dict[str, int]:
    """Calls of each Redis command so far, from ``INFO commandstats``'s text."""
    return {name: int(n) for name, n in re.findall(r"^cmdstat_([^:]+):calls=(\d+)", commandstats, re.M)}


async def relayed(http: aiohttp.ClientSession, ports: list[int]) -> int:
    """Connections the instances relayed to their room's owner so far (their ``/metrics``)."""
    total = 0.0
    for port in ports:
        async with http.get(f"http://127.0.0.1:{port}/metrics") as answer:
            text = await answer.text()
        counted = re.findall(r'^halfmoon_relayed_connections_total\{outcome="relayed"\} (\S+)$', text, re.M)
        total += sum(float(n) for n in counted)
    return int(total)


class Member:
    """One player's WebSocket: reads every frame, answers what a test of the play waits for."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.acked: asyncio.Future[dict[str, Any]] | None = None
        self.failed: Exception | None = None
        self.not_host = 0
        self.reader = asyncio.create_task(self.read())

    async def read(self) -> None:
        async for frame in self.ws:
            if frame.type is not aiohttp.WSMsgType.TEXT:
                continue
            message = json.loads(frame.data)
            kind = message["type"]
            if kind == "error" and message.get("code") == "not_host":
                self.not_host += 1  # (a start refused: the race tries its next player)
                continue
            if kind == "error":  # nothing else in this play is refused: stop the run, saying what
                self.fail(RuntimeError(f"refused: {message}"))
                return
            if kind == "moved" and message.get("id") is not None and self.acked is not None:
                self.acked.set_result(message)
            waiting = self.waiting.pop(kind, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(message)

    def fail(self, error: Exception) -> None:
        """Every wait of this member ends with ``error``."""
        for future in [*self.waiting.values(), self.acked]:
            if future is not None and not future.done():
                future.set_exception(error)
        self.failed = error

    def expect(self, kind: str) -> asyncio.Future[dict[str, Any]]:
        future = self.waiting[kind] = asyncio.get_running_loop().create_future()
        if self.failed is not None:
            future.set_exception(self.failed)
        return future

    async def send(self, kind: str, **fields: Any) -> None:
        await self.ws.send_str(json.dumps({"type": kind, "v": 1, **fields}))

    async def play(self, line: list[list[str]]) -> int:
        over = self.expect("game_over")
        for number, move in enumerate(line, 1):
            self.acked = asyncio.get_running_loop().create_future()
            if self.failed is not None:
                raise self.failed
            await self.send("move", positions=move, id=number)
            await asyncio.wait_for(self.acked, 30)
        await asyncio.wait_for(over, 30)
        return len(line)


@dataclass
class Result:
    setup: str
    instances: int
    rooms: int
    moves: int
    instance_cpu_s: list[float]
    instance_cpu_per_move_us: float
    publish_per_move: float
    redis_cpu_per_move_us: float
    relayed_connections: int
    #: Redis commands per move over the play, by command (those of at least 0.01 a move): how many
    #: round trips and scripts a move costs, and whether fewer moves share each
    redis_calls_per_move: dict[str, float]


async def run_setup(setup: str, rooms: int, spectator_every: int, folder: Path, ports: Ports) -> Result:
    code, line = winning_line()
    instances = 1 if setup == "one" else 2
    by_room = setup != "two-round-robin"
    connector = aiohttp.TCPConnector(limit=0)  # a WebSocket holds its connection: no pool limit
    async with started(instances, folder, ports) as procs, aiohttp.ClientSession(connector=connector) as http:
        ws_base = procs.base.replace("http", "ws", 1) + "/ws"
        tables: list[tuple[str, list[Member]]] = []
        for number in range(rooms):
            async with http.post(f"{procs.base}/api/rooms", json={"code": code}) as answer:
                room = (await answer.json())["room"]
            url = f"{ws_base}?room={room}" if by_room else ws_base
            members: list[Member] = []
            for seat in range(TABLE):
                member = Member(await http.ws_connect(url, max_msg_size=0))
                welcome = member.expect("welcome")
                await member.send("join", room=room, name=f"P{seat}")
                await asyncio.wait_for(welcome, 30)
                members.append(member)
            if spectator_every and number % spectator_every == 0:
                spectator = Member(await http.ws_connect(url, max_msg_size=0))
                welcome = spectator.expect("welcome")
                await spectator.send("watch", room=room)
                await asyncio.wait_for(welcome, 30)
            tables.append((room, members))
        await asyncio.sleep(0.5)  # the joins' echoes settle
        cpu_before = [cpu_seconds(pid) for pid in procs.instance_pids]
        redis_before, published_before = cpu_seconds(procs.redis_pid), await publish_calls(procs.redis_port)
        calls_before = command_calls(await redis_command(procs.redis_port, "INFO", "commandstats"))

        async def race(members: list[Member]) -> int:
            starts = [m.expect("started") for m in members]
            # the first to join hosts; on a machine so busy that an instance's heartbeat lapses,
            # another instance may take its players for gone and pass the host on: then the next
            for member in members:
                await member.send("start")
                done, _ = await asyncio.wait([starts[0]], timeout=2)
                if done:
                    break
            await asyncio.wait_for(asyncio.gather(*starts), 30)
            return sum(await asyncio.gather(*(m.play(line) for m in members)))

        moves = sum(await asyncio.gather(*(race(members) for _, members in tables)))
        await asyncio.sleep(0.5)  # the last answers go out
        cpu = [cpu_seconds(pid) - before for pid, before in zip(procs.instance_pids, cpu_before, strict=True)]
        redis_cpu = cpu_seconds(procs.redis_pid) - redis_before
        published = await publish_calls(procs.redis_port) - published_before
        calls_after = command_calls(await redis_command(procs.redis_port, "INFO", "commandstats"))
        calls = {name: (n - calls_before.get(name, 0)) / moves for name, n in calls_after.items()}
        relays = await relayed(http, procs.instance_ports)
        for _, members in tables:
            for member in members:
                await member.ws.close()
    return Result(
        setup=setup,
        instances=instances,
        rooms=rooms,
        moves=moves,
        instance_cpu_s=[round(c, 3) for c in cpu],
        instance_cpu_per_move_us=round(sum(cpu) / moves * 1e6, 1),
        publish_per_move=round(published / moves, 4),
        redis_cpu_per_move_us=round(redis_cpu / moves * 1e6, 1),
        relayed_connections=relays,
        redis_calls_per_move={name: round(c, 3) for name, c in sorted(calls.items()) if c >= 0.01},
    )


def ratios(results: list[Result]) -> dict[str, float]:
    """The issue's figures from a run's results: CPU ratios to one instance, publishes per move."""
    by = {r.setup: r for r in results}
    one = by["one"].instance_cpu_per_move_us
    return {
        "cpu_two_by_room_over_one": round(by["two-by-room"].instance_cpu_per_move_us / one, 3),
        "cpu_two_round_robin_over_one": round(by["two-round-robin"].instance_cpu_per_move_us / one, 3),
        "publish_per_move_by_room": by["two-by-room"].publish_per_move,
        "publish_per_move_round_robin": by["two-round-robin"].publish_per_move,
    }


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="halfmoon-routing-") as name:
        yield Path(name)


async def run(rooms: int, spectator_every: int, repeat: int, port_base: int | None) -> dict[str, Any]:
    ports = Ports(port_base)
    main_task = asyncio.current_task()
    if main_task is not None:  # a SIGTERM stops the processes started, as Ctrl-C does
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    results: list[Result] = []
    for round_ in range(repeat):
        for setup in SETUPS:  # interleaved: a noisy minute hits every set-up alike
            with workdir() as folder:
                result = await run_setup(setup, rooms, spectator_every, folder, ports)
            print(json.dumps({"round": round_ + 1, **asdict(result)}), flush=True)
            results.append(result)
            if port_base is not None:
                ports.next = port_base  # the last set-up's processes are gone: its ports are free again
    summary: dict[str, Any] = {"runs": [asdict(r) for r in results]}
    per_round = [ratios(results[k : k + len(SETUPS)]) for k in range(0, len(results), len(SETUPS))]
    summary["ratios"] = per_round
    summary["median"] = {key: sorted(r[key] for r in per_round)[len(per_round) // 2] for key in per_round[0]}
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, default=40, help="races of 4 players in each set-up (default 40)")
    parser.add_argument("--spectator-every", type=int, default=10, help="one spectator per this many rooms (0: none)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the four set-ups, interleaved")
    parser.add_argument("--port-base", type=int, help="use ports from this one up (else free ones)")
    parser.add_argument("--quick", action="store_true", help="3 rooms, one round: to see that it runs")
    parser.add_argument("--out", type=Path, help="write the summary (JSON) here")
    args = parser.parse_args()
    for binary in ("nginx", "redis-server"):
        if shutil.which(binary) is None and not Path(f"/usr/sbin/{binary}").exists():
            print(f"{binary} is not installed", file=sys.stderr)
            return 2
    rooms, repeat = (3, 1) if args.quick else (args.rooms, args.repeat)
    started_at = time.monotonic()
    summary = asyncio.run(run(rooms, args.spectator_every, repeat, args.port_base))
    summary["seconds"] = round(time.monotonic() - started_at, 1)
    print(json.dumps({"median": summary["median"], "seconds": summary["seconds"]}))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
