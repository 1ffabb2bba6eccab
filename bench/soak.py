"""Soak run, by hand: ``python bench/soak.py --bots 2000 --minutes 5`` (``--quick``: a few bots, ~20 s).

Issue 14's last proof, on loopback and bounded in time. It starts a real server
(``python -m halfmoon serve``, pinned to CPU 0) whose PostgreSQL — a fresh database made for the
run and dropped after it — is reached through :class:`tcp_proxy.TcpProxy`, and runs thousands of
bots from this one process (one event loop, pinned to CPU 1) with the terminal client's own code
(:class:`halfmoon_client.bots.BotBrain` over a :class:`halfmoon_client.connection.Link`):

- race slots of 2–8 bots each create a room (``POST /api/rooms``), join it, race to the end,
  then start a new room, until the run's time is up; solo slots play solo games the same way;
- every so often a **reconnect storm**: 30 % of the bots whose game is running drop their socket
  at once (no close frame) and come back with ``resume`` and their token, and must carry on;
- a **database outage** in the middle: the proxy resets every connection (a database that went
  down), later blackholes them (one that froze), each for ``--outage`` seconds, then restores.

Every ``--every`` seconds it records the server's RSS and CPU, this process's RSS, the open
connections and rooms (``/metrics``), the games finished and the errors the bots saw. A bot
whose link is down waits, as a player's screen would, for its resume's ``welcome`` (and the
catch-up behind it) before it moves again. An error is any wire ``error`` a bot was sent —
except the refusal of a move it chose before that ``welcome`` reached it (from a board that
missed its own last move: counted apart as ``expected``) —, any close the run did not cause, a
refused entry, any HTTP status other than 201 from ``POST /api/rooms``, a race that ended
without its player's ``game_over``, and a bot still playing when the run gives up waiting for
it. The first bots an error surprised leave their last frames in the result (``diagnostics``).

At the end, once the server's outbox has drained (``halfmoon_recording_backlog`` at 0 and every
result in the database, waited for at most ``--drain``), it checks that **no result was lost**:
every game id a bot saw in a ``game_over`` is in the ``games`` table once, with the outcome, score
and moves the bot was told. The server's log must hold no traceback. It writes a JSON result
(``bench/results/soak-<UTC time>.json``) and an SVG chart (``docs/soak.svg``; a ``--quick`` run's
beside its result: memory and games per second over time, the outages and storms marked), and
exits 1 when an error, a lost result or a traceback was found. Figures go in docs/benchmarks.md ("Soak (issue 14)").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import secrets
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from benchlib import cpu_seconds, free_port, wait_up
from halfmoon.protocol import Solo
from halfmoon_client.bots import BotBrain
from halfmoon_client.connection import Backoff, Link, enter_room, wall_ms
from halfmoon_client.errors import ClientError, RefusedError
from halfmoon_client.session import Message
from halfmoon_client.strategy import STRATEGIES
from halfmoon_server.adapters.storage import DEFAULT_TIMEOUT_S
from tcp_proxy import Mode, TcpProxy

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = os.environ.get("HALFMOON_BENCH_DB", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
#: Refusals a bot may get for a move it chose from a board its resume's catch-up had not reached yet.
STALE_AFTER_RESUME = frozenset({"illegal_move", "not_playing", "nothing_to_undo"})
#: How long after a resume's welcome a refusal without a message id (``give_up``) counts as stale.
STALE_WINDOW_S = 3.0
#: Frames kept per bot for a diagnosis, and bots diagnosed at most.
HISTORY = 40
DIAGNOSED = 5
#: Reconnection schedule of the bots: a storm's 30 % come back within about half a second.
BACKOFF = Backoff(first=0.5, factor=2.0, cap=5.0, jitter=0.25, attempts=20)


# -- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run does and when (times in seconds from the start)."""

    bots: int
    duration_s: float
    think_ms: int
    solo_share: float
    storm_share: float
    storms: tuple[float, ...]
    outages: tuple[tuple[float, float, Mode], ...]  # (start, end, mode)
    every_s: float
    grace_s: float
    drain_s: float
    finished_ttl_s: float
    pin: bool
    server_args: tuple[str, ...] = ()

    @classmethod
    def make(cls, args: argparse.Namespace) -> Plan:
        """Storms at 15, 45 and 80 % of the run; a reset outage from 30 %, a blackhole one from 60 %
        (only the reset when the run is too short for both, 2 s apart, ending by 90 %)."""
        duration = args.minutes * 60.0
        outage = args.outage
        outages: list[tuple[float, float, Mode]] = [(0.30 * duration, 0.30 * duration + outage, "reset")]
        if 0.60 * duration >= 0.30 * duration + outage + 2 and 0.60 * duration + outage <= 0.9 * duration:
            outages.append((0.60 * duration, 0.60 * duration + outage, "blackhole"))
        return cls(
            bots=args.bots,
            duration_s=duration,
            think_ms=args.think,
            solo_share=args.solo_share,
            storm_share=args.storm_share,
            storms=tuple(share * duration for share in (0.15, 0.45, 0.80)),
            outages=tuple(outages),
            every_s=args.every,
            grace_s=args.grace,
            drain_s=args.drain,
            finished_ttl_s=args.finished_ttl,
            pin=args.pin,
            server_args=tuple(shlex.split(args.server_args)),
        )


# -- what the bots saw ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeenGame:
    """A ``game_over`` as a bot was told it."""

    outcome: str
    score: int
    moves: int
    mode: str


@dataclass(slots=True)
class Storm:
    at_s: float
    dropped: int = 0
    resumed: int = 0
    resume_ms: list[float] = field(default_factory=list)
    finished_after: int = 0  # victims whose game then ended with its game_over
    ended_offline: int = 0  # victims whose race ended on frames received before the drop: no resume needed


@dataclass(slots=True)
class Sample:
    t_s: float
    server_rss_mib: float
    server_anon_mib: float
    server_cpu_share: float
    bots_rss_mib: float
    bots_cpu_share: float
    connections: float | None
    rooms: float | None
    backlog: float | None
    loop_lag_ms: float | None
    bots_live: int
    games: int
    games_per_s: float
    moves_per_s: float
    errors: int


class Tally:
    """Everything the run counts, shared by every bot."""

    def __init__(self) -> None:
        self.games: dict[str, SeenGame] = {}
        self.game_overs = 0  # game_over messages with an id (a resume may replay one: counted once per id)
        self.races = 0
        self.solos = 0
        self.moves = 0
        self.errors: Counter[str] = Counter()
        self.error_examples: dict[str, str] = {}
        self.expected: Counter[str] = Counter()
        self.http: Counter[int] = Counter()
        self.storms: list[Storm] = []
        self.unexpected_drops = 0
        #: the first bots' histories (what they received and sent) when a wire error surprised them
        self.diagnostics: list[dict[str, Any]] = []

    def error(self, kind: str, example: str) -> None:
        self.errors[kind] += 1
        self.error_examples.setdefault(kind, example[:300])

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


class SoakLink(Link):
    """A bot's link that the run can cut like a network would: no close frame, the socket just goes."""

    @property
    def connected(self) -> bool:
        return self._ws is not None

    def drop(self) -> bool:
        """Abort the open connection (the link then reconnects and resumes); False if none is open."""
        ws = self._ws
        if ws is None or ws.transport is None or ws.transport.is_closing():
            return False
        ws.transport.abort()
        return True


class SoakBot:
    """One bot's game: a reader (the link's messages into the brain) and a player (a move every think)."""

    def __init__(self, run: SoakRun, name: str, hello: Message, brain: BotBrain, mode: str) -> None:
        self.run = run
        self.name = name
        self.brain = brain
        self.mode = mode
        self.rng = brain.rng
        self.first_hello = hello
        self.link = SoakLink(run.http_url, hello=self.hello, backoff=BACKOFF, open_timeout=30.0)
        self.link.on_event = self.on_event
        self.welcomed = asyncio.Event()
        self.game_over = False
        self.storm: Storm | None = None  # the storm that dropped it, until it is back
        self.dropped_at = 0.0
        self.resumed_at = -1e9
        self.resyncing = False  # its link is down, or back but the resume's welcome has not come yet
        self.welcome_at = -1e9
        self.last_id_before_welcome = 0  # moves with an id up to this were chosen before the last welcome
        self.victim_of: Storm | None = None  # the last storm that dropped it (for finished_after)
        self.history: deque[str] = deque(maxlen=HISTORY)  # its last frames in and out, for a diagnosis

    def hello(self) -> Message:
        session = self.brain.session
        return session.resume_message() if session.token else self.first_hello

    @property
    def running(self) -> bool:
        session = self.brain.session
        return session.phase == "running" and session.playing and self.link.connected

    def note(self, what: str) -> None:
        self.history.append(f"{self.run.now():.2f} {what}")

    def on_event(self, kind: str, data: dict[str, Any]) -> None:
        self.brain.waiting = False  # a move lost with the connection is answered by the resume
        self.note(f"link {kind} {data}")
        self.resyncing = True
        if kind == "reconnecting" and self.storm is None and data.get("attempt") == 1:
            self.run.tally.unexpected_drops += 1
            self.run.tally.error("unexpected_close", f"{self.name}: {data.get('reason')}")
        if kind == "reconnected":
            self.resumed_at = time.monotonic()
            if self.storm is not None:
                self.storm.resumed += 1
                self.storm.resume_ms.append(1000 * (self.resumed_at - self.dropped_at))
                self.storm = None

    def receive(self, message: Message) -> None:
        tally = self.run.tally
        kind = self.brain.receive(message, wall_ms())
        self.note(summary(message))
        if kind == "welcome":
            self.resyncing = False
            self.welcome_at = time.monotonic()
            self.last_id_before_welcome = self.brain.session.last_move_id
        if kind == "error":
            code, msg_id = str(message.get("code")), message.get("id")
            stale = self.link.reconnects > 0 and (
                msg_id <= self.last_id_before_welcome
                if isinstance(msg_id, int)
                else time.monotonic() - self.welcome_at < STALE_WINDOW_S
            )
            if code in STALE_AFTER_RESUME and stale:
                tally.expected[code] += 1
            elif code == "unavailable" and not self.brain.session.welcomed:
                # an entry the server could not take during an outage (a ranked name is checked in
                # the database): nothing changed, and the client asks again (enter_room)
                tally.expected["entry_unavailable"] += 1
            else:
                tally.error(f"wire:{code}", f"{self.name}: {message}")
                self.diagnose(f"wire:{code}")
        elif kind == "game_over":
            self.saw_game_over(message)
        elif kind == "welcome":
            snapshot = message.get("room")
            if isinstance(snapshot, dict) and isinstance(snapshot.get("game_over"), dict):
                self.saw_game_over(snapshot["game_over"])  # resumed after its own end

    def diagnose(self, why: str) -> None:
        """Keep this bot's state and last frames in the result (the first few bots only)."""
        tally, session = self.run.tally, self.brain.session
        if len(tally.diagnostics) >= DIAGNOSED or any(d["bot"] == self.name for d in tally.diagnostics):
            return
        me = session.me
        tally.diagnostics.append(
            {"bot": self.name, "why": why, "room": session.room, "you": session.you, "phase": session.phase,
             "status": me.status if me else None, "moves": me.moves if me else None, "waiting": self.brain.waiting,
             "resyncing": self.resyncing, "connected": self.link.connected, "reconnects": self.link.reconnects,
             "storm_victim": self.victim_of is not None, "history": list(self.history)}
        )  # fmt: skip

    def saw_game_over(self, body: dict[str, Any]) -> None:
        tally = self.run.tally
        game = body.get("game")
        if not isinstance(game, str):
            tally.error("game_over_without_id", f"{self.name}: {body}")
            return
        seen = SeenGame(str(body["outcome"]), int(body["score"]), int(body["moves"]), self.mode)
        earlier = tally.games.get(game)
        if earlier is not None and earlier != seen:
            tally.error("game_over_changed", f"{self.name}: {game} was {earlier}, now {seen}")
        if earlier is None:
            tally.games[game] = seen
            tally.game_overs += 1
            self.run.finished_at.append(time.monotonic())
        if not self.game_over and self.victim_of is not None:
            self.victim_of.finished_after += 1
        self.game_over = True

    async def play(self) -> None:
        """Play until the race is over; every failure is counted, none is raised."""
        session = self.brain.session
        player: asyncio.Task[None] | None = None
        self.run.live.add(self)
        try:
            async for message in enter_room(self.link, session, self.receive):
                if message["type"] == "welcome" and session.role != "player":
                    self.run.tally.error("entered_as_spectator", f"{self.name}: {message}")
                    return
                self.welcomed.set()
                if player is None:
                    player = asyncio.create_task(self.keep_playing())
                if session.race_over:
                    break
                if session.phase == "lobby":  # the host starts once its whole team is in
                    start = self.brain.next_message()
                    if start is not None:
                        await self.link.send(start)
            if session.race_over and not self.game_over:
                self.run.tally.error("race_over_without_game_over", f"{self.name} in {session.room}")
        except RefusedError as exc:
            self.run.tally.error(f"refused:{exc.code}", f"{self.name}: {exc}")
        except ClientError as exc:
            self.run.tally.error(type(exc).__name__, f"{self.name}: {exc}")
        except asyncio.CancelledError:
            self.run.tally.error("unfinished", f"{self.name} in {session.room}, phase {session.phase}")
            self.diagnose("unfinished")
            raise
        finally:
            if self.storm is not None and session.race_over:
                self.storm.ended_offline += 1  # its race ended on frames already received
                self.storm = None
            self.welcomed.set()  # nobody waits for a bot that failed to enter
            self.run.live.discard(self)
            if player is not None:
                player.cancel()
            await self.link.close()

    async def keep_playing(self) -> None:
        """A move (or ``give_up`` once stalled) every think time, chosen on the freshest board."""
        session = self.brain.session
        think = self.run.plan.think_ms / 1000
        while not session.race_over:
            await asyncio.sleep(think * self.rng.uniform(0.5, 1.5))
            if not session.playing or self.resyncing:
                continue  # as a player's screen would: wait for the resume's welcome and catch-up
            message = self.brain.next_message()
            if message is None:
                continue
            sent = await self.link.send(message)
            self.note(f"sent {message['type']} {message.get('positions', '')} id={message.get('id')} {sent}")
            if sent and message["type"] == "move":
                self.run.tally.moves += 1


def summary(message: Message) -> str:
    """A received frame in a few words (for a diagnosis): its type, seq, player, and for one's own
    move the positions it changed."""
    kind = message.get("type")
    words = [f"got {kind} seq={message.get('seq')}"]
    if kind == "welcome":
        words.append("catch-up" if message.get("room") is None else "snapshot")
    if kind == "moved":
        words.append(f"player={message.get('player')} id={message.get('id')}")
        if message.get("changes"):
            words.append(" ".join(f"{c['pos']}:{c['card']}/{c['count']}" for c in message["changes"]))
    if kind == "error":
        words.append(f"{message.get('code')}: {message.get('message')}")
    return " ".join(words)


# -- the run -------------------------------------------------------------------------------------


class SoakRun:
    """The bots, the storms, the outages and the samples of one run."""

    def __init__(self, plan: Plan, http_url: str, server_pid: int, proxy: TcpProxy, seed: int) -> None:
        self.plan = plan
        self.http_url = http_url
        self.server_pid = server_pid
        self.proxy = proxy
        self.rng = random.Random(seed)
        self.tally = Tally()
        self.live: set[SoakBot] = set()
        self.finished_at: list[float] = []
        self.samples: list[Sample] = []
        self.outages_done: list[dict[str, Any]] = []
        self.t0 = 0.0
        self.stopping = asyncio.Event()
        self.gate = asyncio.Semaphore(50)  # bots knocking at once (connect, hello, welcome)
        self.http: aiohttp.ClientSession | None = None
        self.last_cpu = 0.0  # the server's CPU seconds, ours and the moves at the last sample
        self.last_own_cpu = 0.0
        self.last_moves = 0

    def now(self) -> float:
        return time.monotonic() - self.t0

    async def play(self) -> dict[str, Any]:
        """Run the slots until the time is up, let the games in flight end (at most ``grace_s``)."""
        plan = self.plan
        self.t0 = time.monotonic()
        self.last_cpu, self.last_own_cpu = cpu_seconds(self.server_pid), time.process_time()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=50)) as http:
            self.http = http
            sizes = self.slot_sizes()
            slots = [asyncio.create_task(self.race_slot(k, size)) for k, size in enumerate(sizes) if size > 1]
            slots += [asyncio.create_task(self.solo_slot(k)) for k, size in enumerate(sizes) if size == 1]
            sampler = asyncio.create_task(self.sample_forever())
            conductor = asyncio.create_task(self.conduct())
            await asyncio.sleep(plan.duration_s)
            self.stopping.set()
            ended_at = self.now()
            await conductor  # ends with the proxy restored
            _done, pending = await asyncio.wait(slots, timeout=plan.grace_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*slots, return_exceptions=True)
            tail_s = self.now() - ended_at
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            await self.sample(final=True)
        return {"slots": len(sizes), "race_slots": sum(1 for s in sizes if s > 1), "tail_s": round(tail_s, 1)}

    def slot_sizes(self) -> list[int]:
        """The bots split into solo slots (``solo_share``) and race slots of 2–8."""
        solo = round(self.plan.bots * self.plan.solo_share)
        left = self.plan.bots - solo
        sizes = [1] * solo
        while left > 0:
            size = min(left, self.rng.randint(2, 8))
            if size == 1:  # one bot left over: it joins the last race slot when there is room
                if sizes and 1 < sizes[-1] < 8:
                    sizes[-1] += 1
                else:
                    sizes.append(1)
                break
            sizes.append(size)
            left -= size
        return sizes

    def brain(self, team: frozenset[str] = frozenset()) -> BotBrain:
        return BotBrain(STRATEGIES["greedy"], random.Random(self.rng.random()), team=team)

    async def race_slot(self, slot: int, size: int) -> None:
        """Rooms of ``size`` bots, one race after another, until the run stops."""
        assert self.http is not None
        round_ = 0
        while not self.stopping.is_set():
            round_ += 1
            try:
                async with self.http.post(f"{self.http_url}/api/rooms", json={}) as response:
                    status = response.status
                    body: Any = await response.json() if status == 201 else await response.text()
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.tally.error("rest_unreachable", f"POST /api/rooms: {exc!r}")
                await asyncio.sleep(1)
                continue
            self.tally.http[status] += 1
            if status != 201:
                self.tally.error(f"http:{status}", f"POST /api/rooms: {str(body)[:200]}")
                await asyncio.sleep(1)
                continue
            room = str(body["room"])
            names = [f"r{slot}-{round_}-{i}" for i in range(size)]
            team = frozenset(names)
            bots = [SoakBot(self, name, {"type": "join", "v": 1, "room": room, "name": name}, self.brain(team), "race")
                    for name in names]  # fmt: skip
            tasks = [asyncio.create_task(self.enter(bots[0]))]
            await bots[0].welcomed.wait()  # the first in is the host
            tasks += [asyncio.create_task(self.enter(bot)) for bot in bots[1:]]
            await asyncio.gather(*tasks)
            if any(bot.brain.session.race_over for bot in bots):
                self.tally.races += 1

    async def solo_slot(self, slot: int) -> None:
        """Solo games, one after another, until the run stops."""
        round_ = 0
        while not self.stopping.is_set():
            round_ += 1
            name = f"s{slot}-{round_}"
            bot = SoakBot(self, name, Solo(name).to_json(), self.brain(), "solo")
            await self.enter(bot)
            if bot.brain.session.race_over:
                self.tally.solos += 1

    async def enter(self, bot: SoakBot) -> None:
        """Play ``bot``; at most ``gate`` bots are between their connect and their welcome at once."""
        async with self.gate:
            task = asyncio.create_task(bot.play())
            await bot.welcomed.wait()
        await task

    # -- storms and outages ----------------------------------------------------------------------

    async def conduct(self) -> None:
        """Play the plan's storms and outages at their times; the proxy is restored when it ends."""
        events: list[tuple[float, str, Any]] = [(t, "storm", None) for t in self.plan.storms]
        for start, end, mode in self.plan.outages:
            events += [(start, "cut", mode), (end, "restore", mode)]
        try:
            for at, kind, mode in sorted(events, key=lambda e: e[0]):
                await asyncio.sleep(max(0.0, at - self.now()))
                if kind == "storm":
                    self.storm()
                elif kind == "cut":
                    await asyncio.to_thread(self.proxy.cut, mode)
                    self.outages_done.append({"mode": mode, "start_s": round(self.now(), 1)})
                else:
                    await asyncio.to_thread(self.proxy.restore)
                    self.outages_done[-1]["end_s"] = round(self.now(), 1)
        finally:
            if self.proxy.cut_mode is not None:
                await asyncio.to_thread(self.proxy.restore)

    def storm(self) -> None:
        """Drop ``storm_share`` of the bots whose game is running, all at once."""
        storm = Storm(round(self.now(), 1))
        running = [bot for bot in self.live if bot.running]
        victims = self.rng.sample(running, round(len(running) * self.plan.storm_share))
        at = time.monotonic()
        for bot in victims:
            bot.storm, bot.victim_of, bot.dropped_at = storm, storm, at
            bot.note("storm: drop")
            if bot.link.drop():
                storm.dropped += 1
            else:
                bot.storm = None
        self.tally.storms.append(storm)

    # -- samples ---------------------------------------------------------------------------------

    async def sample_forever(self) -> None:
        while True:
            await asyncio.sleep(self.plan.every_s)
            await self.sample()

    async def sample(self, *, final: bool = False) -> None:
        metrics = await self.metrics()
        t = self.now()
        cpu, own_cpu = cpu_seconds(self.server_pid), time.process_time()
        previous = self.samples[-1] if self.samples else None
        dt = t - (previous.t_s if previous else 0.0)
        if dt <= 0 or (final and dt < self.plan.every_s / 2):
            return  # too short a window for a rate
        games = len(self.finished_at)
        moves = self.tally.moves
        sample = Sample(
            t_s=round(t, 1),
            server_rss_mib=round(rss_kib(self.server_pid) / 1024, 1),
            server_anon_mib=round(rss_kib(self.server_pid, "RssAnon") / 1024, 1),
            server_cpu_share=round((cpu - self.last_cpu) / dt, 3),
            bots_rss_mib=round(rss_kib(os.getpid()) / 1024, 1),
            bots_cpu_share=round((own_cpu - self.last_own_cpu) / dt, 3),
            connections=metrics.get("halfmoon_connections"),
            rooms=metrics.get("halfmoon_rooms"),
            backlog=metrics.get("halfmoon_recording_backlog"),
            loop_lag_ms=None if "halfmoon_event_loop_lag_seconds" not in metrics
            else round(1000 * metrics["halfmoon_event_loop_lag_seconds"], 1),
            bots_live=len(self.live),
            games=games,
            games_per_s=round((games - (previous.games if previous else 0)) / dt, 2),
            moves_per_s=round((moves - self.last_moves) / dt, 1),
            errors=self.tally.error_count,
        )  # fmt: skip
        self.last_cpu, self.last_own_cpu, self.last_moves = cpu, own_cpu, moves
        self.samples.append(sample)
        if not final:
            print(
                f"  {sample.t_s:6.0f} s: server {sample.server_rss_mib:.0f} MiB, CPU {sample.server_cpu_share:.0%}; "
                f"bots {sample.bots_live} live, {sample.bots_rss_mib:.0f} MiB, CPU {sample.bots_cpu_share:.0%}; "
                f"connections {sample.connections}, rooms {sample.rooms}; "
                f"{sample.games_per_s:.1f} games/s, {sample.moves_per_s:.0f} moves/s; errors {sample.errors}",
                flush=True,
            )

    async def metrics(self) -> dict[str, float]:
        """``/metrics``, each series summed over its labels ({} when the scrape fails)."""
        if self.http is None:
            return {}
        try:
            async with self.http.get(f"{self.http_url}/metrics", timeout=aiohttp.ClientTimeout(total=5)) as response:
                return parse_metrics(await response.text())
        except (aiohttp.ClientError, TimeoutError):
            self.tally.expected["metrics_scrape_failed"] += 1
            return {}


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text → {series name: value summed over its labels}.

    >>> parse_metrics('# HELP x y\\nhalfmoon_connections{role="player"} 3.0\\nhalfmoon_connections{role="idle"} 1.0')
    {'halfmoon_connections': 4.0}
    """
    sums: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        name = name.split("{", 1)[0]
        try:
            sums[name] = sums.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return sums


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory in KiB: all of it (``VmRSS``), or its anonymous part
    (``RssAnon``: the heap, what a leak would grow — not the mapped files and libraries)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


# -- the server, its database, the checks ------------------------------------------------------------


def asyncpg_dsn(url: str, database: str | None = None, port: int | None = None) -> str:
    """A SQLAlchemy URL (``postgresql+asyncpg://…``) as a plain libpq DSN for asyncpg."""
    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    if port is not None:
        parsed = parsed.set(port=port)
    return parsed.render_as_string(hide_password=False)


@contextlib.contextmanager
def fresh_database(admin_url: str, keep: bool) -> Iterator[str]:
    """A new database ``soak_<random>`` on the server ``admin_url`` names; dropped after (unless ``keep``)."""
    name = f"soak_{secrets.token_hex(4)}"

    async def admin(statement: str) -> None:
        conn = await asyncpg.connect(asyncpg_dsn(admin_url), timeout=10)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield name
    finally:
        if not keep:
            asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def pin(cpu: int, enabled: bool) -> list[str]:
    """A command prefix pinning a child to ``cpu`` (when asked and the machine has two CPUs)."""
    return ["taskset", "-c", str(cpu)] if enabled and shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []


@contextlib.contextmanager
def server(plan: Plan, db_url: str, data: Path, log_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``halfmoon serve`` on a free port, its log in ``log_path``; stopped with SIGTERM after."""
    port = free_port()
    command = [
        *pin(0, plan.pin), sys.executable, "-m", "halfmoon", "serve", "--port", str(port),
        "--data-dir", str(data), "--db", db_url, "--countdown", "1", "--solver-workers", "0",
        "--no-winnable-daily", "--log-level", "INFO", "--metrics-on-app-port",
        # every bot comes from 127.0.0.1: lift the per-address caps (the per-connection rates stay)
        "--max-connections-per-address", "0", "--room-burst", "1000000000", "--room-per-min", "1000000000",
        "--max-rooms", "1000000", "--finished-ttl", str(plan.finished_ttl_s), *plan.server_args,
    ]  # fmt: skip
    path = os.pathsep.join(str(ROOT / part) for part in ("shared", "server", "client", ""))
    env = {**os.environ, "PYTHONPATH": path}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            asyncio.run(wait_up(url, process))
        except RuntimeError as exc:
            tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
            raise RuntimeError(f"{exc}; the end of its log:\n" + "\n".join(tail)) from None
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


async def drain_and_check(run: SoakRun, dsn: str) -> dict[str, Any]:
    """Wait (at most ``drain_s``) for the outbox to drain, then compare the database with what the bots saw."""
    ids = list(run.tally.games)
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        started = time.monotonic()
        backlog: float | None = None
        stored = 0
        async with aiohttp.ClientSession() as http:
            run.http = http
            while True:
                metrics = await run.metrics()
                backlog = metrics.get("halfmoon_recording_backlog")
                stored = await conn.fetchval("SELECT count(*) FROM games WHERE id = ANY($1::text[])", ids)
                if (backlog == 0 and stored == len(ids)) or time.monotonic() - started > run.plan.drain_s:
                    break
                await asyncio.sleep(1.0)
            run.http = None
        drain_s = time.monotonic() - started
        rows = await conn.fetch("SELECT id, outcome, score, moves, mode FROM games WHERE id = ANY($1::text[])", ids)
        total = await conn.fetchval("SELECT count(*) FROM games")
        distinct = await conn.fetchval("SELECT count(DISTINCT id) FROM games")
    finally:
        await conn.close()
    found = {row["id"]: row for row in rows}
    lost = [game for game in ids if game not in found]
    differ = [
        {"game": game, "bot": asdict(seen), "db": dict(found[game])}
        for game, seen in run.tally.games.items()
        if game in found
        and (found[game]["outcome"], found[game]["score"], found[game]["moves"], found[game]["mode"])
        != (seen.outcome, seen.score, seen.moves, seen.mode)
    ]
    return {
        "games_seen": len(ids),
        "games_in_db": total,
        "duplicates_in_db": total - distinct,
        "lost": len(lost),
        "lost_ids": lost[:20],
        "differ": len(differ),
        "differ_examples": differ[:5],
        "stored_but_unseen": total - len(found),
        "drain_s": round(drain_s, 1),
        "backlog_at_end": backlog,
        "db_write_errors": metrics.get("halfmoon_db_write_errors_total"),
        "games_ended_in_outages": sum(
            1 for at in run.finished_at for outage in run.outages_done if write_fails_in(outage, at - run.t0)
        ),
    }


def write_fails_in(outage: dict[str, Any], at_s: float) -> bool:
    """Whether the write of a game whose ``game_over`` came ``at_s`` into the run was bound to fail
    in ``outage``: it came while the database was cut, up to a second before it came back — and,
    in a blackhole, early enough for the write to run out of the database's time (``--db-timeout``,
    the default here): one still waiting when the blackhole lifts is taken by a fresh connection
    (the pool's pre-ping replaces the one the blackhole held), and succeeds."""
    end = outage.get("end_s", outage["start_s"]) - 1.0
    if outage["mode"] == "blackhole":
        end -= DEFAULT_TIMEOUT_S
    return bool(outage["start_s"] <= at_s <= end)


#: the chart docs/benchmarks.md shows: a full run's (``--bots 2000 --minutes 5``)
DOCS_CHART = ROOT / "docs" / "soak.svg"


def chart_path(given: Path | None, quick: bool, out: Path) -> Path:
    """Where a run draws its chart: where ``--svg`` says, else the docs' chart — but a ``--quick``
    run's beside its result, never over the docs' chart of a full run."""
    if given is not None:
        return given
    return out.with_suffix(".svg") if quick else DOCS_CHART


def read_log(path: Path) -> dict[str, Any]:
    """The server log's tracebacks, errors and warnings (grouped with their numbers and ids blanked)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    warnings: Counter[str] = Counter()
    errors: list[str] = []
    for line in lines:
        if " WARNING " in line or " ERROR " in line or " CRITICAL " in line:
            message = re.sub(r"^\S+ \S+ ", "", line)  # the timestamp
            shape = re.sub(r"\b[A-Z2-9]{6}\b|[\w.-]*\d[\w.-]*", "…", message)  # room ids, numbers
            warnings[shape[:160]] += 1
            if " WARNING " not in line:
                errors.append(line[:300])
    blocks: list[str] = []  # each traceback with the log line that announced it
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)") and len(blocks) < 5:
            end = next((j for j in range(i + 1, len(lines)) if re.match(r"\d{4}-\d\d-\d\d ", lines[j])), len(lines))
            blocks.append("\n".join(lines[max(0, i - 1) : min(end, i + 60)]))
    return {
        "lines": len(lines),
        "tracebacks": text.count("Traceback (most recent call last)"),
        "traceback_examples": blocks,
        "error_lines": len(errors),
        "error_examples": errors[:10],
        "warnings_by_kind": dict(warnings.most_common(15)),
        "gc_collections": [line[:200] for line in lines if "gc: full collection" in line],
    }


# -- the chart -------------------------------------------------------------------------------------


def chart_svg(samples: list[Sample], plan: Plan, outages: list[dict[str, Any]], storms: list[Storm]) -> str:
    """Three panels over time: memory (the server's RSS and its anonymous part, the bots' RSS; MiB),
    games finished per second, the server's open WebSockets and rooms; the outages shaded, the
    storms as dashed lines, the end of new games as a dotted line."""
    width, left, right, top0, panel_h, gap = 900, 64, 24, 50, 150, 44
    panels: list[tuple[str, list[tuple[str, list[float], str, str]]]] = [
        (
            "memory (MiB RSS)",
            [
                ("server", [s.server_rss_mib for s in samples], "#1f77b4", ""),
                ("server, heap (RssAnon)", [s.server_anon_mib for s in samples], "#1f77b4", ' stroke-dasharray="2 2"'),
                ("bots (the soak process)", [s.bots_rss_mib for s in samples], "#ff7f0e", ' stroke-dasharray="6 3"'),
            ],
        ),
        ("games finished / s", [("games/s", [s.games_per_s for s in samples], "#2ca02c", "")]),
        (
            "the server's open WebSockets and rooms",
            [
                ("WebSockets", [s.connections or 0.0 for s in samples], "#8c564b", ""),
                ("rooms held (live and finished)", [s.rooms or 0.0 for s in samples], "#17becf", ""),
            ],
        ),
    ]
    height = top0 + len(panels) * (panel_h + gap) + 10
    t_max = max([s.t_s for s in samples] + [plan.duration_s, 1.0])
    x_scale = (width - left - right) / t_max
    span = f"{plan.duration_s / 60:g} min" if plan.duration_s >= 120 else f"{plan.duration_s:g} s"

    def x(t: float) -> float:
        return left + t * x_scale

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="#fff"/>',
        f'<text x="{left}" y="20" font-size="14" font-weight="bold">Soak: {plan.bots} bots, {span} of new games, '
        f"{len(outages)} database outages, {len(storms)} reconnect storms</text>",
    ]
    for index, (title, series) in enumerate(panels):
        top = top0 + index * (panel_h + gap)
        y_max = nice_ceiling(max([v for _, values, _, _ in series for v in values] + [1.0]))

        def y(v: float, top: int = top, y_max: float = y_max) -> float:
            return top + panel_h - v / y_max * panel_h

        for outage in outages:
            start, end, mode = outage["start_s"], outage.get("end_s", t_max), outage["mode"]
            fill = "#d62728" if mode == "reset" else "#7f7f7f"
            out.append(
                f'<rect x="{x(start):.1f}" y="{top}" width="{x(end) - x(start):.1f}" height="{panel_h}" '
                f'fill="{fill}" fill-opacity="0.15"/>'
            )
            if index == 1:  # the labels where they hide no line
                out.append(f'<text x="{x(start) + 3:.1f}" y="{top + 14}" fill="{fill}">DB {mode}</text>')
        for storm in storms:
            out.append(
                f'<line x1="{x(storm.at_s):.1f}" y1="{top}" x2="{x(storm.at_s):.1f}" y2="{top + panel_h}" '
                'stroke="#9467bd" stroke-dasharray="4 3"/>'
            )
            if index == 0:
                out.append(
                    f'<text x="{x(storm.at_s) + 3:.1f}" y="{top + panel_h - 6}" fill="#9467bd">'
                    f"storm: {storm.dropped} dropped</text>"
                )
        end_x = x(plan.duration_s)
        out.append(f'<line x1="{end_x:.1f}" y1="{top}" x2="{end_x:.1f}" y2="{top + panel_h}" stroke="#000" '
                   'stroke-dasharray="1 3"/>')  # fmt: skip
        for k in range(5):
            v = y_max * k / 4
            out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
            out.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{width - right}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(
            f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{panel_h}" fill="none" stroke="#000"/>'
        )
        out.append(f'<text x="{left}" y="{top - 6}" font-weight="bold">{title}</text>')
        legend_x = width - right
        for label, values, color, dash in series:
            points = " ".join(f"{x(s.t_s):.1f},{y(v):.1f}" for s, v in zip(samples, values, strict=True))
            out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>')
            out.append(f'<text x="{legend_x}" y="{top - 6}" text-anchor="end" fill="{color}">{label}</text>')
            legend_x -= 7 * len(label) + 20
    axis_y = top0 + len(panels) * (panel_h + gap) - gap
    step = nice_ceiling(t_max / 8)
    t = 0.0
    while t <= t_max + 1e-9:
        out.append(f'<text x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle">{t:g}</text>')
        t += step
    out.append(f'<text x="{(width + left) / 2:.0f}" y="{axis_y + 34}" text-anchor="middle">seconds '
               "(dotted line: no new games after it; the games in flight end)</text>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out) + "\n"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above ``value``.

    >>> [nice_ceiling(v) for v in (0.3, 7, 12, 230)]
    [0.5, 10.0, 20.0, 250.0]
    """
    power = 10 ** int(f"{value:e}".split("e")[1])
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * power:
            return float(m * power)
    return float(10 * power)


# -- the command ----------------------------------------------------------------------------------


def summarize(samples: list[Sample], plan: Plan) -> dict[str, Any]:
    """Memory at steady state: the server's RSS after the ramp (a quarter in) and at the end of the
    run, and its slope over the second half (least squares, MiB a minute)."""
    body = [s for s in samples if s.t_s <= plan.duration_s]
    if len(body) < 4:
        return {}
    quarter = next((s for s in body if s.t_s >= plan.duration_s / 4), body[0])
    half = [s for s in body if s.t_s >= plan.duration_s / 2]
    slope = 0.0
    if len(half) >= 2:
        ts = [s.t_s for s in half]
        rs = [s.server_rss_mib for s in half]
        mt, mr = statistics.fmean(ts), statistics.fmean(rs)
        slope = sum((t - mt) * (r - mr) for t, r in zip(ts, rs, strict=True)) / max(
            1e-9, sum((t - mt) ** 2 for t in ts)
        )
    return {
        "server_rss_mib_after_ramp": quarter.server_rss_mib,
        "server_rss_mib_end": body[-1].server_rss_mib,
        "server_rss_mib_max": max(s.server_rss_mib for s in samples),
        "server_anon_mib_after_ramp": quarter.server_anon_mib,
        "server_anon_mib_end": body[-1].server_anon_mib,
        "server_rss_slope_mib_per_min_second_half": round(slope * 60, 2),
        "server_rss_mib_by_minute": {
            f"{minute}": next(s.server_rss_mib for s in samples if s.t_s >= 60 * minute)
            for minute in range(1, int(samples[-1].t_s // 60) + 1)
        },
        "bots_rss_mib_max": max(s.bots_rss_mib for s in samples),
        "server_cpu_share_median": statistics.median(s.server_cpu_share for s in body),
        "bots_cpu_share_median": statistics.median(s.bots_cpu_share for s in body),
        "rooms_max": max((s.rooms or 0) for s in samples),
        "games_per_s_median": statistics.median(s.games_per_s for s in body),
        "moves_per_s_median": statistics.median(s.moves_per_s for s in body),
        "connections_max": max((s.connections or 0) for s in samples),
        "event_loop_lag_ms_max": max((s.loop_lag_ms or 0) for s in samples),
    }


def run(plan: Plan, admin_url: str, keep_db: bool, seed: int, log_copy: Path) -> dict[str, Any]:
    """One whole soak run; returns its result (see the module docstring). The server's whole log
    is copied to ``log_copy`` when it holds a traceback or an error."""
    target = make_url(admin_url)
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp, fresh_database(admin_url, keep_db) as database:
        proxy = TcpProxy(target.port or 5432, target.host or "127.0.0.1").start()
        try:
            server_url = make_url(admin_url).set(host="127.0.0.1", port=proxy.port, database=database)
            log_path = Path(tmp) / "server.log"
            with server(plan, server_url.render_as_string(hide_password=False), Path(tmp) / "data", log_path) as (
                url,
                process,
            ):
                if plan.pin and (os.cpu_count() or 1) > 1:
                    os.sched_setaffinity(0, {1})
                soak = SoakRun(plan, url, process.pid, proxy, seed)
                print(f"# soak: {plan.bots} bots, {plan.duration_s:g} s, server {url}, database {database}", flush=True)
                played = asyncio.run(soak.play())
                check = asyncio.run(drain_and_check(soak, asyncpg_dsn(admin_url, database=database)))
                process.send_signal(signal.SIGTERM)
                exit_code = process.wait(60)
            log = read_log(log_path)
            if log["tracebacks"] or log["error_lines"]:
                log_copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(log_path, log_copy)
                log["copied_to"] = str(log_copy)
            data_bytes = sum(p.stat().st_size for p in (Path(tmp) / "data").rglob("*") if p.is_file())
        finally:
            proxy.stop()
    tally = soak.tally
    storms = [
        {**asdict(s), "resume_ms": None, "resume_ms_median": statistics.median(s.resume_ms) if s.resume_ms else None,
         "resume_ms_max": max(s.resume_ms, default=None)}
        for s in tally.storms
    ]  # fmt: skip
    errors = tally.error_count + check["lost"] + check["differ"] + check["duplicates_in_db"] + log["tracebacks"]
    return {
        "command": " ".join(["python", "bench/soak.py", *sys.argv[1:]]),
        "started": started.isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": [round(v, 2) for v in load_before],
            "load_after": [round(v, 2) for v in os.getloadavg()],
            "pinned": plan.pin and (os.cpu_count() or 1) > 1,
        },
        "plan": {**asdict(plan), "outages": [list(o) for o in plan.outages]},
        "ok": errors == 0,
        "errors": tally.error_count,
        "errors_by_kind": dict(tally.errors),
        "error_examples": tally.error_examples,
        "expected_refusals": dict(tally.expected),
        "unexpected_closes": tally.unexpected_drops,
        "diagnostics": tally.diagnostics,
        "lost": check["lost"],
        "check": check,
        "games": {"seen": len(tally.games), "races": tally.races, "solo": tally.solos, "moves_sent": tally.moves},
        "http_statuses": {str(k): v for k, v in tally.http.items()},
        "storms": storms,
        "outages": soak.outages_done,
        "server": {"exit_code": exit_code, "log": log, "data_dir_bytes": data_bytes},
        "run": played,
        "summary": summarize(soak.samples, plan),
        "samples": [asdict(s) for s in soak.samples],
        "_chart": chart_svg(soak.samples, plan, soak.outages_done, tally.storms),
    }


def redraw(result: dict[str, Any]) -> str:
    """The chart of a saved JSON result."""
    plan = Plan(**{**result["plan"], "storms": tuple(result["plan"]["storms"]),
                   "outages": tuple(tuple(o) for o in result["plan"]["outages"])})  # fmt: skip
    samples = [Sample(**sample) for sample in result["samples"]]
    storms = [Storm(s["at_s"], s["dropped"], s["resumed"], [], s["finished_after"], s.get("ended_offline", 0))
              for s in result["storms"]]  # fmt: skip
    return chart_svg(samples, plan, result["outages"], storms)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=2000, help="bots playing at once (default 2000)")
    parser.add_argument("--minutes", type=float, default=5.0, help="how long new games start (default 5)")
    parser.add_argument("--quick", action="store_true", help="a few bots for ~20 s, short outages (a test's run)")
    parser.add_argument("--think", type=int, default=2000, help="a bot's mean ms between moves (default 2000)")
    parser.add_argument("--solo-share", type=float, default=0.1, help="share of the bots playing solo (0.1)")
    parser.add_argument("--storm-share", type=float, default=0.3, help="share of running bots a storm drops (0.3)")
    parser.add_argument("--outage", type=float, default=25.0, help="seconds each database outage lasts (25)")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples (5)")
    parser.add_argument("--grace", type=float, default=240.0, help="seconds the races in flight may take at the end")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds the outbox may take to drain at the end")
    parser.add_argument("--finished-ttl", type=float, default=60.0, help="server: seconds a finished room is kept")
    parser.add_argument("--pg", default=DEFAULT_PG, help="a PostgreSQL URL; the run makes its own database there")
    parser.add_argument(
        "--server-args", default="", metavar="FLAGS", help="more flags for halfmoon serve, e.g. '--gc-collect 60'"
    )
    parser.add_argument("--keep-db", action="store_true", help="do not drop the run's database")
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin the server and bots to CPUs")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--out", type=Path, help="the JSON result (default bench/results/soak-<UTC time>.json)")
    parser.add_argument(
        "--svg",
        type=Path,
        help="the chart (default docs/soak.svg; --quick: beside the result, the docs show a full run)",
    )
    parser.add_argument("--redraw", type=Path, metavar="RESULT", help="only draw the chart again from a JSON result")
    args = parser.parse_args()
    if args.redraw:
        args.svg = args.svg or DOCS_CHART
        args.svg.write_text(redraw(json.loads(args.redraw.read_text(encoding="utf-8"))), encoding="utf-8")
        return 0
    if args.quick:
        args.bots, args.minutes, args.think, args.outage = min(args.bots, 16), 20 / 60, 250, 3.0
        args.every, args.grace, args.drain, args.finished_ttl = 1.0, 60.0, 60.0, 5.0
    plan = Plan.make(args)
    out = args.out or ROOT / "bench" / "results" / f"soak-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    args.svg = chart_path(args.svg, args.quick, out)
    result = run(plan, args.pg, args.keep_db, args.seed, out.with_suffix(".server.log"))
    chart = result.pop("_chart")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(chart, encoding="utf-8")
    summary = result["summary"]
    print(
        f"# {'OK' if result['ok'] else 'FAILED'}: errors {result['errors']} {result['errors_by_kind']}, "
        f"lost {result['lost']}, differ {result['check']['differ']}, "
        f"tracebacks {result['server']['log']['tracebacks']}; "
        f"games {result['games']['seen']} (drained in {result['check']['drain_s']} s); "
        f"storms {[(s['dropped'], s['resumed']) for s in result['storms']]}; outages {result['outages']}; "
        f"server RSS {summary.get('server_rss_mib_after_ramp')} → {summary.get('server_rss_mib_end')} MiB "
        f"(slope {summary.get('server_rss_slope_mib_per_min_second_half')} MiB/min); "
        f"expected refusals {result['expected_refusals']}\n# result: {out}\n# chart: {args.svg}"
    )
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
