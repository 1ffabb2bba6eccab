"""Load benchmark, run by hand: ``python bench/load.py --matrix`` (``--quick``: a few seconds, for CI).

A load client that speaks the real protocol. It starts ``halfmoon serve`` (the embedded default:
SQLite database and journal in a temporary data directory, no solver, no rate limit: every limit
lifted through its ``HALFMOON_*`` variable) pinned to CPU 0, and drives it from this process,
pinned to CPU 1, through real WebSockets:

- players sit at *tables* of 4; each race is a new room (``POST /api/rooms``) on a winnable deal
  (proved by the solver once, at start-up), the 4 join, the first starts, each plays the deal's
  48-move winning line to the end, waits for its ``game_over``, and once the race is over all
  ``leave`` and the table opens its next room; one spectator watches every 10th table;
- *closed loop* (``--loop closed``): each player sends its next move once the last was
  acknowledged (its own ``moved``): the server's saturated throughput;
- *open loop* (``--loop open --rate R``): moves are due on a schedule (R moves/s in all, each
  player at R/N a second, random phases) whether or not the server kept up; a move's latency runs
  from when it was *due* to its acknowledgement, so a stalled server shows in full (no
  coordinated omission). Where the warm-up holds a whole race, the tables sit down at random
  times over one race's length, so their games end spread out as in life (``--lockstep``: all
  at once, the shape before December 7, 2026, when every game ended in the same instant);
- the *echo ceiling* (``--echo``): the same connections against a bare aiohttp WebSocket echo
  server, each sending a move-sized frame and waiting for it back: what one core does with
  aiohttp and nothing else;
- the *game-like ceiling* (``--only gamelike-1k``): the same closed loop against
  ``bench/gamelike.py``, which answers the protocol's shape (rooms, join, start, moves fanned out
  to room mates and spectators, game and race over) with no rules, no log and no bookkeeping:
  the stack's floor for a game with fan-out.
- the *peers* (Node.js 20, ``bench/peers/``, installed by ``npm ci --prefix bench/peers``): the
  same closed loop against ``bench/peers/gamelike.mjs``, the game-like server line for line on
  the ``ws`` package (``--only node-gamelike-1k``), and a Colyseus room of the same shape
  (``bench/peers/colyseus-server.mjs``, ``--only colyseus-1k``) driven by Colyseus's own client
  in a Node load client of the same tables and loops (``bench/peers/colyseus-load.mjs``, pinned
  to CPU 1 like this process); both report in the same shape;
- ``--peers``: Half Moon, the ceilings and the peers side by side at 1,000 players, one of each in
  turn, ``--repeat`` rounds, then the medians and Half Moon's ratios to each (``--quick --peers``:
  8 players for a second each, to see that they all run); ``--peers human`` or ``bots``: the same
  in an open loop, 10,000 players at a human's or the bots' pace, with each server's players per
  core (``--peers-players N`` resizes either).

Each run reports moves/s (median of 1-second windows), the server's CPU per move (from /proc),
the acknowledgement latency (p50/p99/max), the time from a game's last move (when it was due) to
its ``game_over``'s arrival, timed as an acknowledgement is (p50/p99/max; failed stores: the
server's database writes that failed in the window, ``halfmoon_db_write_errors``, and any
``game_over`` without its id), the server's RSS over time (and per player), and this client's own
CPU share (a client near 100 % means the figures
are the client's limit, not the server's). Results are JSON lines (``--out`` writes them all).

``--compare REV`` runs each configuration on the code of git revision REV (``git archive``) and
on the working tree, interleaved ``--repeat`` times, and reports the medians and their ratios:
A/B in one run, so the ratio holds on a machine others use too.

``--chart RESULTS.json SVG`` draws latency and memory against players (docs/load.svg).
Figures go in docs/benchmarks.md ("Load (issue 15)").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import cpu_seconds, free_port, wait_up

ROOT = Path(__file__).resolve().parent.parent
TABLE = 4  # players in a room
#: the runs on a server of their own, not on a tree's (run once, whatever --compare says)
CEILINGS = ("echo", "gamelike")
#: the runs on a Node.js peer (bench/peers/), also on a server of their own
PEERS = ("node-gamelike", "colyseus")
PEERS_DIR = Path(__file__).resolve().parent / "peers"
SPECTATOR_EVERY = 10  # one spectator per this many tables
#: the environment that lifts every limit a load test would hit (each is a server setting)
LIFTED = {
    "HALFMOON_RATE_BURST": "1000000",
    "HALFMOON_RATE_PER_S": "1000000",
    "HALFMOON_ROOM_BURST": "1000000",
    "HALFMOON_ROOM_PER_MIN": "1000000",
    "HALFMOON_MAX_CONNECTIONS_PER_ADDRESS": "0",
    "HALFMOON_MAX_ROOMS": "1000000",
    "HALFMOON_MAX_SEND_BUFFER": str(4 * 1024 * 1024),
    "HALFMOON_COUNTDOWN_S": "0",
    "HALFMOON_SOLVER_WORKERS": "0",
    "HALFMOON_DAILY_REQUIRES_WINNABLE": "0",
    "HALFMOON_SECRET": "load-benchmark-secret-load-benchmark-secret",
    "HALFMOON_LOG_LEVEL": "WARNING",
}


def winnable_deals(count: int) -> dict[str, list[list[str]]]:
    """``count`` deal codes the solver proves winnable, each with its winning line (position names)."""
    from halfmoon.game import Game
    from halfmoon_server.solver.search import Verdict, solve

    deals: dict[str, list[list[str]]] = {}
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    for a in letters:
        for b in letters:
            code = f"HM1-N-AAAAA{a}{b}"
            result = solve(Game.from_code(code), node_budget=200_000)
            if result.verdict == Verdict.WINNABLE and result.moves:
                deals[code] = [move.names() for move in result.moves]
                if len(deals) == count:
                    return deals
    raise RuntimeError("not enough winnable deals found")


# -- the servers -------------------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def pin(cpu: int) -> list[str]:
    """A command prefix pinning a child to ``cpu`` (when the machine has two cores or more)."""
    taskset = shutil.which("taskset")
    return [taskset, "-c", str(cpu)] if taskset and (os.cpu_count() or 1) > 1 else []


def source_path(tree: Path) -> str:
    return os.pathsep.join(str(tree / part) for part in ("shared", "server", "client", ""))


@contextlib.contextmanager
def game_server(tree: Path, env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """``halfmoon serve`` from the source ``tree`` with every limit lifted; yields its base URL,
    its process and its log file."""
    with tempfile.TemporaryDirectory(prefix="halfmoon-load-") as data:
        port = free_port()
        # the tree's own serve command, not the one the install's entry point names
        serve = [sys.executable, str(Path(__file__).resolve().parent / "serve_tree.py")]
        command = [*pin(0), *serve, "--port", str(port), "--data-dir", data]
        command += ["--metrics-on-app-port"]  # the pause histograms are read from /metrics
        logfile = Path(data) / "server.log"
        full_env = {**os.environ, **LIFTED, **(env or {}), "PYTHONPATH": source_path(tree)}
        with logfile.open("wb") as sink:
            process = subprocess.Popen(command, env=full_env, stdout=sink, stderr=subprocess.STDOUT, cwd=data)
        try:
            base = f"http://127.0.0.1:{port}"
            asyncio.run(wait_up(base, process))
            yield base, process, logfile
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def ceiling_server(command: list[str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A ceiling's or a peer's server (``command``, then the port), pinned to CPU 0."""
    port = free_port()
    process = subprocess.Popen([*pin(0), *command, str(port)])
    try:
        base = f"http://127.0.0.1:{port}"
        asyncio.run(wait_up(base, process))
        yield base, process
    finally:
        process.terminate()
        process.wait(20)


#: The echo ceiling: a bare aiohttp WebSocket server that sends every frame back.
ECHO = [sys.executable, __file__, "--echo-serve"]
#: The game-like ceiling (``bench/gamelike.py``): the protocol's shape, no rules, no log.
GAMELIKE = [sys.executable, str(Path(__file__).resolve().parent / "gamelike.py")]


def node_command(script: str) -> list[str]:
    """``node`` on one of ``bench/peers/``'s scripts (raises when :func:`peers_missing`)."""
    missing = peers_missing()
    if missing:
        raise RuntimeError(missing)
    return [str(shutil.which("node")), str(PEERS_DIR / script)]


def peers_missing() -> str | None:
    """Why the Node.js peers cannot run here, or None when they can."""
    if shutil.which("node") is None:
        return "no node on PATH (the peers need Node.js 20: apt-get install nodejs npm)"
    if not (PEERS_DIR / "node_modules").is_dir():
        return f"{PEERS_DIR / 'node_modules'} is missing (npm ci --prefix bench/peers)"
    return None


def serve_echo(port: int) -> None:
    from aiohttp import web

    async def echo(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        async for msg in ws:
            if msg.type is aiohttp.WSMsgType.TEXT:
                await ws.send_str(msg.data)
        return ws

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/ws", echo)
    app.router.add_get("/healthz", healthz)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


class PeerFailed(RuntimeError):
    """A peer's run that could not finish (e.g. Colyseus's seat reservations expiring under a load
    its matchmaker cannot seat in time): with ``--peers`` recorded as that configuration's result,
    ``failed`` and the reason, and left out of the medians and ratios."""


def _last_error(stderr: str) -> str:
    """The load client's last ``Error``/``…Error:`` line (its stack traces and repeated warnings
    left out), else its stderr's last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line and not line.startswith("at ")]
    return (errors or lines or ["(nothing on stderr)"])[-1][:300]


def colyseus_run(config: Config, deals: dict[str, list[list[str]]], base: str, pid: int) -> dict[str, Any]:
    """The Colyseus peer's load (``bench/peers/colyseus-load.mjs``, pinned to CPU 1) on the server
    at ``base`` of process ``pid``: what it reports, in :meth:`Client.run`'s shape."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="halfmoon-deals-") as lines:
        json.dump(deals, lines)
        lines.flush()
        command = [*pin(1), *node_command("colyseus-load.mjs"), "--url", base, "--pid", str(pid)]
        command += ["--deals", lines.name, "--players", str(config.players)]
        command += ["--warmup", str(config.warmup), "--seconds", str(config.seconds)]
        if config.rate:
            command += ["--rate", str(config.rate)]
        timeout = config.warmup + config.seconds + 300  # and the seats taken before the warm-up
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise PeerFailed(f"the Colyseus load client exited with {done.returncode}: {_last_error(done.stderr)}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


# -- the client ----------------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the client saw: acknowledged moves (per second, and their latencies), finished games."""

    acks: int = 0
    latencies: list[float] = field(default_factory=list)
    game_over: list[float] = field(default_factory=list)
    games: int = 0
    failed_stores: int = 0
    races: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    measuring: bool = False


class Player:
    """One connection: a player (or a spectator). A reader task routes the frames it cares about;
    a room mate's ``moved`` (most of the traffic) is skipped without parsing."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, tally: Tally) -> None:
        self.ws = ws
        self.tally = tally
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.due: dict[int, float] = {}  # message id → when the move was due (open loop) or sent
        self.acked = asyncio.Event()
        self.over_at = 0.0  # when the last game_over arrived (perf_counter)
        self.reader = asyncio.get_running_loop().create_task(self.read())

    def expect(self, kind: str) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[kind] = future
        return future

    async def read(self) -> None:
        tally = self.tally
        async for msg in self.ws:
            if msg.type is not aiohttp.WSMsgType.TEXT:
                break
            text: str = msg.data
            if '"id":' not in text and text.startswith('{"player"') and '"type":"moved"' in text:
                continue  # a room mate's move (summary first): nothing to wait for
            data = orjson.loads(text)
            kind = data.get("type")
            if kind == "moved" and "id" in data:
                sent = self.due.pop(data["id"], None)
                if sent is not None:
                    if tally.measuring:
                        tally.acks += 1
                        tally.latencies.append(time.perf_counter() - sent)
                    self.acked.set()
                continue
            if kind == "error":
                code = str(data.get("code"))
                tally.errors[code] = tally.errors.get(code, 0) + 1
                for future in self.waiting.values():
                    if not future.done():
                        future.set_exception(RuntimeError(f"error from the server: {data}"))
                self.waiting.clear()
                self.acked.set()
                continue
            waiter = self.waiting.pop(kind, None)
            if waiter is not None and not waiter.done():
                if kind == "game_over":  # (timed on arrival, as an ack is: not when the player's task wakes)
                    self.over_at = time.perf_counter()
                waiter.set_result(data)
        for future in self.waiting.values():
            future.cancel()  # the connection closed
        self.acked.set()

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_str(orjson.dumps(message).decode())

    async def play(self, line: list[list[str]], interval: float | None, first_at: float) -> None:
        """Play the line. Closed loop (``interval`` None): a move once the last is acknowledged;
        open loop: a move every ``interval`` seconds from ``first_at``, acknowledged or not."""
        game_over = self.expect("game_over")
        due = first_at
        last = len(line) - 1
        for number, positions in enumerate(line):
            if interval is not None:
                due = max(due, time.perf_counter() - 5 * interval)  # a stall does not turn into a burst
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            else:
                due = time.perf_counter()
            self.acked.clear()
            self.due[number + 1] = due
            await self.ws.send_str(
                orjson.dumps({"type": "move", "v": 1, "positions": positions, "id": number + 1}).decode()
            )
            if number == last:
                break
            if interval is None:
                while number + 1 in self.due and not self.ws.closed:
                    await self.acked.wait()
                    self.acked.clear()
            else:
                due += interval
        over = await game_over
        if self.tally.measuring:
            self.tally.game_over.append(self.over_at - due)
            self.tally.games += 1
            if over.get("game") is None:
                self.tally.failed_stores += 1


def first_race_spread(race_s: float, warmup_s: float) -> float:
    """Over how many seconds an open loop's tables sit down for their first race: one race's
    length, as players arrive in life — otherwise every table plays in step and all their games
    end in the same instant (at 150 games a second, 750 game ends in 0.2 s every 5 s). 0 (all at
    once, in step) when the race is longer than the warm-up, so that every table is playing when
    the window opens: at 10,000 players a race (96 s at 5,000 moves/s) outlasts a 20 s window,
    but a long run (``memory-1k``: 48 s races in 10 minutes) keeps its bursts of game ends."""
    return race_s if race_s <= warmup_s + 1e-9 else 0.0  # (48 × 0.1 s is 4.800000000000001)


class Client:
    """Tables of players on one server, for closed- or open-loop runs."""

    def __init__(
        self,
        base: str,
        deals: dict[str, list[list[str]]],
        rate: float | None,
        players: int,
        *,
        lockstep: bool = False,
        seed: int = 0,
    ) -> None:
        self.base = base
        self.deals = list(deals.items())
        self.tally = Tally()
        self.rate = rate
        self.players = players
        #: every table's first race starts at once (the shape before December 7, 2026): in an open
        #: loop every game then ends within the same fifth of a second, race after race
        self.lockstep = lockstep
        #: the draw of the tables' arrival times (``--seed``): which tables happen to sit down
        #: close together, and so end their games close together
        self.seed = seed
        #: the seconds over which the tables sit down (0: all at once; :meth:`sit_down_over`)
        self.spread_s = 0.0
        self.stopping = False
        self.session: aiohttp.ClientSession | None = None

    async def connect(self) -> Player:
        assert self.session is not None
        ws = await self.session.ws_connect(self.base.replace("http", "ws", 1) + "/ws", max_msg_size=0, autoping=True)
        return Player(ws, self.tally)

    async def table(self, number: int, members: list[Player], spectator: Player | None) -> None:
        assert self.session is not None
        interval = self.players / self.rate if self.rate else None
        rng = random.Random(number)
        if self.spread_s:  # (a generator of its own: the moves' phases stay what they were)
            await asyncio.sleep(random.Random(f"arrival {self.seed} {number}").random() * self.spread_s)
        race = 0
        while not self.stopping:
            code, line = self.deals[(number + race) % len(self.deals)]
            race += 1
            async with self.session.post(f"{self.base}/api/rooms", json={"code": code}) as response:
                room = (await response.json())["room"]
            for k, player in enumerate(members):
                welcome = player.expect("welcome")
                await player.send({"type": "join", "v": 1, "room": room, "name": f"p{number}x{k}"})
                await welcome
            if spectator is not None:
                welcome = spectator.expect("welcome")
                await spectator.send({"type": "watch", "v": 1, "room": room})
                await welcome
            started = [p.expect("started") for p in members]
            overs = [p.expect("race_over") for p in members]
            await members[0].send({"type": "start", "v": 1})
            await asyncio.gather(*started)
            now = time.perf_counter()
            phases = [now + (rng.random() * interval if interval else 0.0) for _ in members]
            await asyncio.gather(*(p.play(line, interval, at) for p, at in zip(members, phases, strict=True)))
            await asyncio.gather(*overs)
            if self.tally.measuring:
                self.tally.races += 1
            for player in [*members, *([spectator] if spectator else [])]:
                await player.send({"type": "leave", "v": 1})

    def sit_down_over(self, warmup: float) -> float:
        """Set and return over how many seconds the tables sit down for their first race: an
        open loop's longest race where the warm-up holds it (:func:`first_race_spread`), else 0
        (said on stderr); 0 for a closed loop or ``lockstep``."""
        self.spread_s = 0.0
        if self.rate and not self.lockstep:
            race_s = max(len(line) for _, line in self.deals) * self.players / self.rate
            self.spread_s = first_race_spread(race_s, warmup)
            if not self.spread_s:
                print(
                    f"load.py: a race ({race_s:.1f} s) outlasts the warm-up ({warmup:g} s): the tables sit down "
                    "at once, and their games end in step",
                    file=sys.stderr,
                )
        return self.spread_s

    async def run(self, warmup: float, seconds: float, pid: int, samples: list[tuple[float, int]]) -> dict[str, Any]:
        self.sit_down_over(warmup)
        connector = aiohttp.TCPConnector(limit=0)
        self.session = aiohttp.ClientSession(connector=connector)
        rss_before = rss_kib(pid)
        tables = max(1, self.players // TABLE)
        semaphore = asyncio.Semaphore(200)

        async def connect_one() -> Player:
            async with semaphore:
                return await self.connect()

        members = await asyncio.gather(*(connect_one() for _ in range(tables * TABLE)))
        spectators = await asyncio.gather(*(connect_one() for _ in range(0, tables, SPECTATOR_EVERY)))
        rss_connected = rss_kib(pid)
        tasks = [
            asyncio.create_task(
                self.table(
                    t,
                    list(members[t * TABLE : (t + 1) * TABLE]),
                    spectators[t // SPECTATOR_EVERY] if t % SPECTATOR_EVERY == 0 else None,
                )
            )
            for t in range(tables)
        ]
        start = time.perf_counter()
        # the client's own garbage collector: with thousands of sockets here too, a full
        # collection would stall this process and show as the server's latency (open loop);
        # and its young collections walk every move in flight, as the server's did (--gc-young)
        thresholds = gc.get_threshold()
        gc.set_threshold(50_000, thresholds[1], thresholds[2])
        gc.collect()
        gc.freeze()
        await asyncio.sleep(warmup)
        gc.freeze()
        self.tally.measuring = True
        pauses_before = await self.pauses()
        cpu_before, own_before = cpu_seconds(pid), time.process_time()
        windows: list[int] = []
        last = 0
        began = time.perf_counter()
        while time.perf_counter() - began < seconds - 0.01:
            await asyncio.sleep(min(1.0, max(0.0, seconds - (time.perf_counter() - began))))
            gc.freeze()
            windows.append(self.tally.acks - last)
            last = self.tally.acks
            samples.append((time.perf_counter() - start, rss_kib(pid)))
            failed = [t for t in tasks if t.done() and t.exception() is not None]
            if failed:
                raise RuntimeError("a table failed") from failed[0].exception()
        elapsed = time.perf_counter() - began
        cpu_used, own_used = cpu_seconds(pid) - cpu_before, time.process_time() - own_before
        self.tally.measuring = False
        pauses = pause_counts(pauses_before, await self.pauses())
        rss_end = rss_kib(pid)
        self.stopping = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for player in [*members, *spectators]:
            await player.ws.close()
            player.reader.cancel()
        await self.session.close()
        gc.unfreeze()  # the next run starts from a heap the collector sees whole again
        gc.set_threshold(*thresholds)
        tally = self.tally
        moves = max(1, tally.acks)
        players = tables * TABLE
        return {
            "players": players,
            "spectators": len(spectators),
            "seconds": round(elapsed, 2),
            "moves_per_s_median": statistics.median(windows[1:] or windows),
            "moves_per_s_mean": round(tally.acks / elapsed, 1),
            "server_cpu_us_per_move": round(1e6 * cpu_used / moves, 1),
            "server_cpu_share": round(cpu_used / elapsed, 3),
            "client_cpu_share": round(own_used / elapsed, 3),
            "ack_ms": percentiles(tally.latencies),
            "game_over_ms": percentiles(tally.game_over),
            "games": tally.games,
            "games_per_s": round(tally.games / elapsed, 1),
            # (game_over goes out before the database write: the server's failed writes count too)
            "failed_stores": tally.failed_stores + pauses.pop("db_write_errors", 0),
            "races": tally.races,
            "tables_spread_s": round(self.spread_s, 2),  # (0: every table sat down at once)
            "errors": tally.errors,
            "rss_mib_start": round(rss_before / 1024, 1),
            "rss_mib_connected": round(rss_connected / 1024, 1),
            "rss_mib_end": round(rss_end / 1024, 1),
            "rss_kib_per_player": round((rss_end - rss_before) / players, 1),
            "pauses": pauses,
        }

    async def pauses(self) -> dict[str, float]:
        """The server's pause histograms as ``/metrics`` has them now: its garbage collections
        by generation and its event loop's lag (cumulative counts per bucket; empty where the
        server has no ``/metrics`` or no such series, as the game-like ceiling)."""
        assert self.session is not None
        try:
            async with self.session.get(f"{self.base}/metrics") as response:
                if response.status != 200:
                    return {}
                text = await response.text()
        except aiohttp.ClientError:
            return {}
        from prometheus_client.parser import text_string_to_metric_families

        kept: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            if family.name not in (
                "halfmoon_gc_pause_seconds",
                "halfmoon_event_loop_delay_seconds",
                "halfmoon_db_write_errors",
            ):
                continue
            for sample in family.samples:
                if sample.name.endswith(("_bucket", "_count", "_sum", "_total")):
                    labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                    kept[f"{sample.name}{{{labels}}}"] = sample.value
        return kept


def pause_counts(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """What the run's window added to the pause histograms: per GC generation the collections,
    their total time and how many took over 10 ms; the lag probes (every 0.25 s) over 10 and
    50 ms; and the database writes that failed (every operation)."""

    def added(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    out: dict[str, Any] = {}
    for generation in ("0", "1", "2"):
        count = added(f"halfmoon_gc_pause_seconds_count{{generation={generation}}}")
        if f"halfmoon_gc_pause_seconds_count{{generation={generation}}}" not in after:
            continue
        within = added(f"halfmoon_gc_pause_seconds_bucket{{generation={generation},le=0.01}}")
        out[f"gc{generation}"] = {
            "n": int(count),
            "total_ms": round(1000 * added(f"halfmoon_gc_pause_seconds_sum{{generation={generation}}}"), 1),
            "over_10ms": int(count - within),
        }
    lag = "halfmoon_event_loop_delay_seconds"
    if f"{lag}_count{{}}" in after:
        probes = added(f"{lag}_count{{}}")
        out["lag_probes"] = int(probes)
        out["lag_over_10ms"] = int(probes - added(f"{lag}_bucket{{le=0.01}}"))
        out["lag_over_50ms"] = int(probes - added(f"{lag}_bucket{{le=0.05}}"))
    out["db_write_errors"] = int(sum(added(key) for key in after if key.startswith("halfmoon_db_write_errors_total")))
    return out


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "max": None, "n": 0}
    ordered = sorted(values)
    return {
        "p50": round(1000 * ordered[len(ordered) // 2], 2),
        "p99": round(1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
        "max": round(1000 * ordered[-1], 2),
        "n": len(ordered),
    }


async def echo_run(base: str, connections: int, seconds: float, pid: int) -> dict[str, Any]:
    """Closed loop on the echo server: each connection sends a move-sized frame and waits for it."""
    frame = orjson.dumps({"type": "move", "v": 1, "positions": ["R4", "3"], "id": 1, "pad": "x" * 100}).decode()
    counts = [0]
    stop = [False]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        semaphore = asyncio.Semaphore(200)

        async def connect() -> aiohttp.ClientWebSocketResponse:
            async with semaphore:
                return await session.ws_connect(base.replace("http", "ws", 1) + "/ws", max_msg_size=0)

        sockets = await asyncio.gather(*(connect() for _ in range(connections)))

        async def bounce(ws: aiohttp.ClientWebSocketResponse) -> None:
            while not stop[0]:
                await ws.send_str(frame)
                await ws.receive()
                counts[0] += 1

        tasks = [asyncio.create_task(bounce(ws)) for ws in sockets]
        await asyncio.sleep(1.0)
        windows: list[int] = []
        cpu_before, own_before, began = cpu_seconds(pid), time.process_time(), time.perf_counter()
        last = counts[0]
        while time.perf_counter() - began < seconds - 0.01:
            await asyncio.sleep(1.0)
            windows.append(counts[0] - last)
            last = counts[0]
        elapsed = time.perf_counter() - began
        cpu_used, own_used = cpu_seconds(pid) - cpu_before, time.process_time() - own_before
        stop[0] = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for ws in sockets:
            await ws.close()
    return {
        "connections": connections,
        "msgs_per_s_median": statistics.median(windows),
        "server_cpu_us_per_msg": round(1e6 * cpu_used / max(1, sum(windows)), 1),
        "client_cpu_share": round(own_used / elapsed, 3),
    }


class _Sink:
    """An outbox that drops what it is sent (the in-process heap measure)."""

    closed = False
    room: str | None = None
    player_id: str | None = None

    def send(self, frame: bytes) -> None:
        return None

    def close(self, code: int, reason: str) -> None:
        return None


def build_rooms(rooms: int, moves: int) -> list[Any]:
    """``rooms`` rooms of 4 in this process (the room shell and race core without sockets, the
    log in memory), each player ``moves`` moves into a won line (48: every race over, its games
    recorded); the log's entries dropped, as the embedded journal keeps them on disk."""
    from halfmoon.protocol import Mode
    from halfmoon_server.adapters.journal import MemoryLog
    from halfmoon_server.adapters.memory_storage import MemoryStorage
    from halfmoon_server.clock import ManualClock
    from halfmoon_server.core.commands import room_header
    from halfmoon_server.core.events import PlayerJoined
    from halfmoon_server.core.race import RaceConfig
    from halfmoon_server.rooms.results import Recorder
    from halfmoon_server.rooms.room import BackgroundTasks, Room, RoomServices

    deals = list(winnable_deals(4).items())

    async def build() -> list[Room]:
        room_log = MemoryLog()
        tasks = BackgroundTasks()
        storage = MemoryStorage()
        services = RoomServices(ManualClock(0), room_log, Recorder(storage), tasks)
        kept = []
        for number in range(rooms):
            code, line = deals[number % len(deals)]
            header = room_header(f"R{number:06d}", Mode.RACE, code, created_at=0, nonce=f"n{number}", daily_day=None)
            header["config"] = asdict(RaceConfig(countdown_ms=0))
            await room_log.create(header)
            room = Room(header, services)
            room_log.follow(room)
            ids = []
            for k in range(TABLE):
                joined = await room.submit({"k": "join", "n": f"p{k}", "tok": f"t{number}-{k}"}, _Sink())
                ids.append(next(e.player.id for e in joined if isinstance(e, PlayerJoined)))
            await room.submit({"k": "start", "p": ids[0]})
            await room.submit({"k": "tick"})
            for positions in line[:moves]:
                for player in ids:
                    await room.submit({"k": "move", "p": player, "m": positions})
            await tasks.settle()  # the finished games recorded and stored
            room.close_timer()
            kept.append(room)
        room_log.entries.clear()  # the embedded journal keeps its entries on disk, not in memory
        storage.games.clear()  # and the database its games
        return kept

    return asyncio.run(build())


def gc_pause(rooms: int, moves: int) -> dict[str, Any]:
    """The CPU time of a full garbage collection on the heap of :func:`build_rooms`; then the
    same after ``gc.freeze()`` (what the server does every ``--gc-freeze`` seconds)."""
    kept = build_rooms(rooms, moves)
    gc.collect()
    tracked = len(gc.get_objects())
    started = time.process_time()
    gc.collect()
    full = time.process_time() - started
    gc.freeze()
    started = time.process_time()
    gc.collect()
    frozen = time.process_time() - started
    gc.unfreeze()
    return {
        "rooms": len(kept),
        "players": TABLE * len(kept),
        "moves_each": moves,
        "tracked_objects": tracked,
        "full_collection_ms": round(1000 * full, 1),
        "after_freeze_ms": round(1000 * frozen, 1),
    }


def room_footprint(rooms: int, moves: int) -> dict[str, Any]:
    """The memory a room of :func:`build_rooms` holds (tracemalloc: what its Python objects
    take, not the allocator's slack), per room; ``moves`` 48 gives finished races."""
    import tracemalloc

    tracemalloc.start()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    kept = build_rooms(rooms, moves)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    phases = sorted({room.race.phase.value for room in kept})
    return {
        "rooms": len(kept),
        "moves_each": moves,
        "phases": phases,
        "kib_per_room": round((after - before) / 1024 / len(kept), 1),
    }


# -- runs and the matrix -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    name: str
    players: int
    #: "closed" | "open" (Half Moon) | "echo" | "gamelike" (bench/gamelike.py) | "node-gamelike"
    #: (bench/peers/gamelike.mjs) | "colyseus" (bench/peers/colyseus-*.mjs); the last three a closed
    #: loop, or open with a ``rate``
    loop: str
    rate: float | None = None
    seconds: float = 10.0
    warmup: float = 3.0
    #: open loop: every table starts its first race at once (``--lockstep``; :class:`Client`)
    lockstep: bool = False
    #: the draw of the tables' arrival times (``--seed``; :class:`Client`)
    seed: int = 0


def matrix(minutes: float) -> list[Config]:
    return [
        Config("echo-1k", 1000, "echo", seconds=8),
        Config("gamelike-1k", 1000, "gamelike"),
        Config("node-gamelike-1k", 1000, "node-gamelike"),
        Config("colyseus-1k", 1000, "colyseus"),
        Config("closed-100", 100, "closed"),
        Config("closed-1k", 1000, "closed"),
        Config("closed-10k", 10_000, "closed", seconds=15, warmup=8),
        Config("open-10k-5k", 10_000, "open", rate=5000, seconds=20, warmup=8),
        Config("gamelike-10k-5k", 10_000, "gamelike", rate=5000, seconds=20, warmup=8),
        Config("node-gamelike-10k-5k", 10_000, "node-gamelike", rate=5000, seconds=20, warmup=8),
        Config("colyseus-10k-5k", 10_000, "colyseus", rate=5000, seconds=20, warmup=8),
        Config("open-10k-10k", 10_000, "open", rate=10_000, seconds=20, warmup=8),
        # a heap that keeps growing (a few thousand rooms): the garbage collector's pauses show
        Config("open-2k-1k", 2000, "open", rate=1000, seconds=20, warmup=15),
        # games end fast (10 moves/s a player: a game in 5 s): finished game → game_over, stores
        Config("games-200", 200, "open", rate=2000, seconds=20, warmup=6),
        Config("memory-1k", 1000, "open", rate=1000, seconds=60 * minutes, warmup=5),
    ]


QUICK = [
    Config("echo", 8, "echo", seconds=1.0),
    Config("gamelike", 8, "gamelike", seconds=1.0, warmup=0.5),
    Config("closed", 8, "closed", seconds=2.0, warmup=0.5),
    Config("open", 8, "open", rate=200, seconds=2.0, warmup=0.5),
]

#: ``--peers human|bots``: moves a second per player at a human pace and at the bots' (docs/capacity.md's
#: model: 1,811 and 8,802 moves/s from 10,000 players, a move every ~3 s and every ~0.3 s in the median)
PACES = {"human": 0.1811, "bots": 0.8802}


def side_by_side_configs(pace: str, players: int | None) -> list[Config]:
    """``--peers``: Half Moon, the ceilings and the peers side by side. Saturated (closed loop,
    1,000 players: the names of the matrix) with the echo ceiling as the yardstick; or open loop at
    a ``pace`` of :data:`PACES` (10,000 players), where what matters is the CPU share it takes."""
    n = players or (1000 if pace == "saturated" else 10_000)
    size = {1000: "1k", 10_000: "10k"}.get(n, str(n))
    if pace == "saturated":
        return [
            Config(f"echo-{size}", n, "echo", seconds=8),
            Config(f"gamelike-{size}", n, "gamelike"),
            Config(f"node-gamelike-{size}", n, "node-gamelike"),
            Config(f"colyseus-{size}", n, "colyseus"),
            Config(f"closed-{size}", n, "closed"),
        ]
    rate = round(PACES[pace] * n)
    return [
        Config(f"{loop}-{size}-{pace}", n, loop, rate=rate, seconds=20, warmup=8)
        for loop in ("gamelike", "node-gamelike", "colyseus", "open")
    ]


#: ``--quick --peers``: the same, 8 players for a second each (Colyseus for two after one: its
#: Node client counts a game only once it ends in the window, and on a loaded machine a second
#: held none of its 48-move games)
QUICK_PEERS = [
    Config("echo", 8, "echo", seconds=1.0),
    Config("gamelike", 8, "gamelike", seconds=1.0, warmup=0.5),
    Config("node-gamelike", 8, "node-gamelike", seconds=1.0, warmup=0.5),
    Config("colyseus", 8, "colyseus", seconds=2.0, warmup=1.0),
    Config("closed", 8, "closed", seconds=1.0, warmup=0.5),
]


def run_config(
    config: Config, tree: Path, deals: dict[str, list[list[str]]], env: dict[str, str], label: str = "after"
) -> dict[str, Any]:
    result: dict[str, Any] = {"config": asdict(config), "tree": str(tree), "label": label, "env": env}
    if config.loop == "echo":
        with ceiling_server(ECHO) as (base, process):
            result.update(asyncio.run(echo_run(base, config.players, config.seconds, process.pid)))
        return result
    if config.loop in ("gamelike", "node-gamelike"):
        command = GAMELIKE if config.loop == "gamelike" else node_command("gamelike.mjs")
        with ceiling_server(command) as (base, process):
            client = Client(base, deals, config.rate, config.players, lockstep=config.lockstep, seed=config.seed)
            result.update(asyncio.run(client.run(config.warmup, config.seconds, process.pid, [])))
        return result
    if config.loop == "colyseus":
        with ceiling_server(node_command("colyseus-server.mjs")) as (base, process):
            result.update(colyseus_run(config, deals, base, process.pid))
        return result
    with game_server(tree, env) as (base, process, logfile):
        samples: list[tuple[float, int]] = []
        rate = config.rate if config.loop == "open" else None
        client = Client(base, deals, rate, config.players, lockstep=config.lockstep, seed=config.seed)
        result.update(asyncio.run(client.run(config.warmup, config.seconds, process.pid, samples)))
        result["rss_series"] = [(round(t, 1), round(kib / 1024, 1)) for t, kib in samples]
        lines = logfile.read_text(encoding="utf-8", errors="replace").splitlines()
        result["server_log_lines"] = len(lines)
        result["server_log_sample"] = lines[:5]  # what they were (warnings and errors only)
    return result


def baseline_tree(revision: str, into: Path) -> Path:
    """The source of ``revision`` (``git archive``) in ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "shared", "server", "client"], check=True, capture_output=True
    ).stdout
    tar_path = into / "tree.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    return into


def draw_chart(results: list[dict[str, Any]], svg: Path) -> None:
    """Two panels against players (closed loop, log scale): the acknowledgement p99 (ms, log
    scale) and the server's RSS growth per player over the run (KiB), before and after; each
    point the median of its runs. A hand-written SVG (no plotting library)."""
    import math

    runs = [r for r in results if r.get("config", {}).get("loop") == "closed"]
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        grouped.setdefault((run.get("label", "after"), run["players"]), []).append(run)

    def median_of(key: tuple[str, int], read: Any) -> float | None:
        values = [v for v in (read(r) for r in grouped[key]) if v is not None]
        return statistics.median(values) if values else None

    panels = [
        ("acknowledgement p99 (ms, log scale)", lambda r: r["ack_ms"]["p99"], True),
        ("RSS growth per player over the run (KiB)", lambda r: r["rss_kib_per_player"], False),
    ]
    labels = sorted({label for label, _ in grouped}, reverse=True)  # before, after
    xs = sorted({players for _, players in grouped}) or [1]
    width, height, left, top, plot_w, plot_h = 720, 310, 70, 40, 250, 200
    colours = {"before": "#c0392b", "after": "#2471a3"}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        ' font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]

    def x_at(players: int) -> float:
        if len(xs) == 1:
            return plot_w / 2
        return (math.log10(players) - math.log10(xs[0])) / (math.log10(xs[-1]) - math.log10(xs[0])) * plot_w

    for index, (title, read, log_scale) in enumerate(panels):
        series = {
            label: [(p, v) for p in xs if (label, p) in grouped and (v := median_of((label, p), read)) is not None]
            for label in labels
        }
        values = [max(0.01, v) for points in series.values() for _, v in points] or [1.0]
        if log_scale:
            low, high = 10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values)))
            high = high if high > low else low * 10
            ticks = [low * 10**k for k in range(round(math.log10(high / low)) + 1)]
        else:
            low, high = 0.0, max(values) * 1.1
            ticks = [high * k / 4 for k in range(5)]

        def y_at(v: float, low: float = low, high: float = high, log_scale: bool = log_scale) -> float:
            if log_scale:
                span = math.log10(high) - math.log10(low)
                return plot_h - (math.log10(max(v, low)) - math.log10(low)) / span * plot_h
            return plot_h - (v - low) / (high - low) * plot_h

        ox = left + index * (plot_w + 110)
        parts.append(f'<g transform="translate({ox},{top})">')
        parts.append(f'<text x="0" y="-14" font-weight="bold">{title}</text>')
        parts.append(f'<rect width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>')
        for tick in ticks:
            y = y_at(tick)
            parts.append(f'<line x1="-4" x2="{plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
            parts.append(f'<text x="-6" y="{y + 4:.1f}" text-anchor="end">{tick:,.0f}</text>')
        for players in xs:
            parts.append(f'<text x="{x_at(players):.1f}" y="{plot_h + 14}" text-anchor="middle">{players:,}</text>')
        parts.append(f'<text x="{plot_w / 2}" y="{plot_h + 30}" text-anchor="middle">players (closed loop)</text>')
        for label, points in series.items():
            colour = colours.get(label, "#555")
            xy = [(x_at(p), y_at(max(0.01, v))) for p, v in points]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for (x, y), (_, v) in zip(xy, points, strict=True):
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
                parts.append(f'<text x="{x + 5:.1f}" y="{y - 5:.1f}" fill="{colour}">{v:,.0f}</text>')
        parts.append("</g>")
    for k, label in enumerate(labels):
        x = left + 140 * k
        colour = colours.get(label, "#555")
        parts.append(f'<rect x="{x}" y="{height - 22}" width="10" height="10" fill="{colour}"/>')
        name = {"before": "before (issue 15)", "after": "after"}.get(label, label)
        parts.append(f'<text x="{x + 16}" y="{height - 13}">{name}</text>')
    parts.append("</svg>")
    svg.write_text("\n".join(parts) + "\n", encoding="utf-8")


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the repeated runs of one configuration on one tree."""
    keys = (
        "moves_per_s_median",
        "server_cpu_us_per_move",
        "msgs_per_s_median",
        "server_cpu_us_per_msg",
        "rss_kib_per_player",
        "rss_mib_end",
    )
    summary: dict[str, Any] = {}
    for key in keys:
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            summary[key] = statistics.median(values)
    for key in ("ack_ms", "game_over_ms"):
        for stat in ("p50", "p99", "max"):
            values = [r[key][stat] for r in runs if r.get(key) and r[key][stat] is not None]
            if values:
                summary[f"{key}_{stat}"] = statistics.median(values)
    summary["failed_stores"] = sum(r.get("failed_stores", 0) for r in runs)
    return summary


def side_by_side(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``--peers``: each configuration's medians over its rounds, and Half Moon's (its closed or open
    loop) against each other server's: its moves/s over theirs (the echo's messages/s), its CPU per
    move over theirs (the echo's per message), and in an open loop its players per core over theirs.
    Players per core, in an open loop: the players over the share of its core the server took
    (computed from the measured CPU: the machine need not hold that many connections), and
    ``kept_up`` whether every round acknowledged 95 % of the moves due."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    failed: dict[str, list[str]] = {}
    for run in runs:
        if "failed" in run:
            failed.setdefault(run["config"]["name"], []).append(run["failed"])
        else:
            by_name.setdefault(run["config"]["name"], []).append(run)
    medians: dict[str, dict[str, Any]] = {name: summarise(group) for name, group in by_name.items()}
    for name, reasons in failed.items():
        medians.setdefault(name, {})["failed_runs"] = reasons
    for name, group in by_name.items():
        due = group[0]["config"]["rate"]
        shares = [r["players"] / r["server_cpu_share"] for r in group if due and r.get("server_cpu_share")]
        if shares:
            medians[name]["players_per_core"] = round(statistics.median(shares))
            medians[name]["kept_up"] = all(r["moves_per_s_mean"] >= 0.95 * due for r in group)
    ours_name = next(
        (name for name, group in by_name.items() if group[0]["config"]["loop"] in ("closed", "open")), None
    )
    ratios: dict[str, dict[str, float]] = {}
    for name, theirs in medians.items():
        if ours_name is None or name == ours_name:
            continue
        ours = medians[ours_name]
        pairs = {
            "moves_per_s": ("moves_per_s_median", theirs.get("moves_per_s_median") or theirs.get("msgs_per_s_median")),
            "server_cpu_per_move": (
                "server_cpu_us_per_move",
                theirs.get("server_cpu_us_per_move") or theirs.get("server_cpu_us_per_msg"),
            ),
            "players_per_core": ("players_per_core", theirs.get("players_per_core")),
        }
        ratios[name] = {
            key: round(ours[mine] / value, 3) for key, (mine, value) in pairs.items() if value and ours.get(mine)
        }
    return {"rounds": max(len(group) for group in by_name.values()), "medians": medians, "halfmoon/": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", action="store_true", help="the whole matrix (100/1k/10k, open loop, memory)")
    parser.add_argument("--quick", action="store_true", help="a few seconds on 8 players (CI: the benchmark runs)")
    parser.add_argument("--only", nargs="*", help="run only the configurations of these names (of the set chosen)")
    parser.add_argument(
        "--peers",
        nargs="?",
        const="saturated",
        choices=("saturated", "human", "bots"),
        help="Half Moon, the ceilings and the Node peers side by side, --repeat rounds: saturated (closed loop,"
        " 1,000 players; the default), or open loop at a human's or the bots' pace (10,000 players)",
    )
    parser.add_argument(
        "--peers-players", type=int, metavar="N", help="with --peers: N players instead (the pace's rate scales)"
    )
    parser.add_argument("--players", type=int, nargs="*", help="closed-loop runs on these numbers of players")
    parser.add_argument("--rate", type=float, help="with --players: open loop at this many moves/s in all")
    parser.add_argument(
        "--seconds", type=float, help="seconds measured (--players: 10; otherwise each run's own unless given)"
    )
    parser.add_argument(
        "--warmup", type=float, help="seconds before measuring (--players: 3; otherwise each run's own unless given)"
    )
    parser.add_argument("--memory-minutes", type=float, default=10.0, help="the memory run's length")
    parser.add_argument(
        "--compare",
        metavar="REV|DIR",
        help="also run git revision REV (or the tree in DIR) first, interleaved (A/B)",
    )
    parser.add_argument(
        "--before-env", nargs="*", default=[], metavar="VAR=VALUE", help="server environment of the --compare runs"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each configuration (and tree)")
    parser.add_argument("--env", nargs="*", default=[], metavar="VAR=VALUE", help="extra server environment")
    parser.add_argument(
        "--lockstep",
        action="store_true",
        help="open loop: every table starts at once (the shape before December 7, 2026: all games end together)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="open loop: the draw of the tables' arrival times (which sit down, and end, close together)",
    )
    parser.add_argument("--out", type=Path, help="write every result (JSON) here")
    parser.add_argument("--chart", nargs=2, type=Path, metavar=("RESULTS", "SVG"), help="draw the chart and stop")
    parser.add_argument(
        "--gc-pause", nargs=2, type=int, metavar=("ROOMS", "MOVES"), help="time a full collection of such a heap"
    )
    parser.add_argument(
        "--room-footprint",
        nargs=2,
        type=int,
        metavar=("ROOMS", "MOVES"),
        help="the memory each such room holds (48 moves: finished races)",
    )
    parser.add_argument("--echo-serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_serve:
        serve_echo(args.echo_serve)
        return 0
    if args.gc_pause:
        print(json.dumps(gc_pause(*args.gc_pause)))
        return 0
    if args.room_footprint:
        print(json.dumps(room_footprint(*args.room_footprint)))
        return 0
    if args.chart:
        draw_chart(json.loads(args.chart[0].read_text()), args.chart[1])
        return 0
    if args.peers and args.compare:
        parser.error("--peers runs the working tree beside the peers; --compare is for two trees")
    if args.peers_players and not args.peers:
        parser.error("--peers-players goes with --peers")
    if args.quick:
        configs = QUICK_PEERS if args.peers else QUICK
    elif args.players:
        loop = "open" if args.rate else "closed"
        configs = [
            Config(f"{loop}-{n}", n, loop, rate=args.rate, seconds=args.seconds or 10.0, warmup=args.warmup or 3.0)
            for n in args.players
        ]
    elif args.peers:
        configs = side_by_side_configs(args.peers, args.peers_players)
    else:
        configs = matrix(args.memory_minutes)
    if args.only:
        unknown = sorted(set(args.only) - {c.name for c in configs})
        if unknown:
            parser.error(f"--only: no such configuration here: {', '.join(unknown)}")
        configs = [c for c in configs if c.name in args.only]
    if args.seconds is not None or args.warmup is not None:
        configs = [
            replace(c, seconds=args.seconds or c.seconds, warmup=c.warmup if args.warmup is None else args.warmup)
            for c in configs
        ]
    if args.lockstep or args.peers:  # (the Colyseus load client sits every table down at once)
        configs = [replace(c, lockstep=True) for c in configs]
    if args.seed:
        configs = [replace(c, seed=args.seed) for c in configs]
    missing = peers_missing()
    if missing and any(c.loop in PEERS for c in configs):
        if args.peers or args.only:
            parser.error(f"the Node.js peers cannot run: {missing}")
        print(f"load.py: the Node.js peers left out: {missing}", file=sys.stderr)
        configs = [c for c in configs if c.loop not in PEERS]
    env = dict(item.split("=", 1) for item in args.env)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if len(pin(1)) and not args.quick:
        os.sched_setaffinity(0, {1})
    deals = winnable_deals(2 if args.quick else 8)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="halfmoon-base-") as base_dir:
        runs: list[tuple[str, Path, dict[str, str]]] = [("after", ROOT, env)]
        if args.compare:
            before_tree = Path(args.compare) if Path(args.compare).is_dir() else None
            before_tree = before_tree or baseline_tree(args.compare, Path(base_dir))
            before_env = {**env, **dict(item.split("=", 1) for item in args.before_env)}
            runs.insert(0, ("before", before_tree, before_env))
        if args.peers:  # round after round, each configuration once a round: side by side
            for _ in range(args.repeat):
                for config in configs:
                    try:
                        result = run_config(config, ROOT, deals, env)
                    except PeerFailed as failure:  # a peer that falls over is a result: the others still run
                        result = {"config": asdict(config), "tree": str(ROOT), "label": "after", "failed": str(failure)}
                    results.append(result)
                    print(json.dumps({k: v for k, v in result.items() if k != "rss_series"}), flush=True)
            summary = side_by_side([r for r in results if "config" in r])
            results.append({"summary": summary})
            print(json.dumps(summary), flush=True)
            configs = []
        for config in configs:
            by_label: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in runs}
            for _ in range(args.repeat):
                for label, tree, run_env in runs if config.loop not in (*CEILINGS, *PEERS) else runs[-1:]:
                    result = run_config(config, tree, deals, run_env, label)
                    results.append(result)
                    by_label[label].append(result)
                    print(json.dumps({k: v for k, v in result.items() if k != "rss_series"}), flush=True)
            if args.compare and config.loop not in (*CEILINGS, *PEERS):
                before, after = summarise(by_label["before"]), summarise(by_label["after"])
                ratios = {key: round(after[key] / before[key], 3) for key in after if before.get(key)}
                summary = {"config": config.name, "before": before, "after": after, "after/before": ratios}
                results.append({"summary": summary})
                print(json.dumps(summary), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
