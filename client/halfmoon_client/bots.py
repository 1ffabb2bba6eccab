"""Bots: players that race for real over real connections, hundreds from one event loop.

A :class:`BotBrain` is sans I/O: fed the server's messages through its session, it says what
to send next — a move chosen by a strategy (:mod:`halfmoon_client.strategy`) among the legal
moves of the board the server showed it, ``give_up`` once it is stalled, ``start`` when it is
the host and every bot of its team has joined. :func:`run_bot` gives it one :class:`Link` and one coroutine;
no thread. :func:`run_bots` fills rooms (creating them with ``--create``) and waits for every
race to end.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from halfmoon.codes import DealCode
from halfmoon.errors import HalfMoonError
from halfmoon_client.connection import Backoff, Link, enter_room, wall_ms
from halfmoon_client.errors import ClientError, RefusedError
from halfmoon_client.rest import create_room
from halfmoon_client.session import Message, Session
from halfmoon_client.strategy import STRATEGIES, Strategy, legal_moves

MAX_PLAYERS = 8
T = TypeVar("T")


class BotBrain:
    """What one bot does next, from what its session knows.

    ``team`` names the bots run together into this room (this one included): whichever of them
    is the host — the first to join an empty room, or the one the host's seat passed to —
    starts the race once they are all in the lobby. A bot that is not the host never starts.
    """

    __slots__ = (
        "code",
        "gave_up",
        "moves_sent",
        "rng",
        "session",
        "started_by_me",
        "strategy",
        "team",
        "time_limit_s",
        "waiting",
    )

    def __init__(
        self,
        strategy: Strategy,
        rng: random.Random,
        *,
        team: frozenset[str] = frozenset(),
        time_limit_s: int | None = None,
    ) -> None:
        self.session = Session()
        self.time_limit_s = time_limit_s
        self.strategy = strategy
        self.rng = rng
        self.team = team
        self.waiting = False  # a move or undo is on the wire: wait for its answer
        self.started_by_me = False
        self.gave_up = False
        self.moves_sent = 0
        self.code: DealCode | None = None

    def receive(self, message: Message, local_ms: int) -> str:
        """Feed a server message; raises :class:`~halfmoon_client.errors.ProtocolError`."""
        kind = self.session.receive(message, local_ms)
        if (kind == "moved" and message.get("player") == self.session.you) or kind == "error":
            self.waiting = False
        if kind == "welcome" and self.session.code and self.code is None:
            self._read_code()
        if kind == "started":
            self._read_code()
        return kind

    def _read_code(self) -> None:
        try:
            self.code = DealCode.parse(self.session.code or "")
        except HalfMoonError:
            self.code = None

    def next_message(self) -> Message | None:
        """The next message to send, or None (nothing to do until the server says more)."""
        session = self.session
        if self.waiting:
            return None
        if (
            session.phase == "lobby"
            and session.is_host
            and not self.started_by_me
            and self.team
            and self.team <= {player.name for player in session.players.values()}
        ):
            self.started_by_me = True
            return session.start_message(self.time_limit_s)
        if not session.playing or session.board is None:  # the code may be sealed: the board is enough
            return None
        moves = legal_moves(session.board.view(), self.code)
        if not moves:
            self.gave_up = True
            self.waiting = True
            return session.give_up_message()
        move = self.strategy(session.board.view(), moves, self.rng)
        self.waiting = True
        self.moves_sent += 1
        return session.move_message(move.names())


@dataclass(slots=True)
class BotReport:
    name: str
    room: str
    session: Session
    error: str | None = None
    reconnects: int = 0


async def run_bot(
    server: str,
    room: str,
    name: str,
    brain: BotBrain,
    *,
    think_ms: int,
    backoff: Backoff | None = None,
    welcomed: asyncio.Event | None = None,
    clock: Callable[[], int] = wall_ms,
    open_timeout: float = 30.0,
) -> BotReport:
    """Play one bot in ``room`` until the race is over (results in its session).

    Raises :class:`~halfmoon_client.errors.ClientError` when it cannot enter the room or
    loses the server for good.
    """
    session = brain.session
    rng = brain.rng

    def hello() -> Message:
        # a bot says so: the server shows it as a bot to everyone and never ranks its result
        if session.token:
            return session.resume_message()
        return session.join_message(room, name, None, session.contribute(), bot=True)

    link = Link(server, hello=hello, backoff=backoff, open_timeout=open_timeout, room=room)

    def on_event(kind: str, data: dict[str, object]) -> None:
        brain.waiting = False  # a move lost with the connection is answered by the resume

    link.on_event = on_event
    try:
        async for message in enter_room(link, session, lambda m: brain.receive(m, clock())):
            kind = message["type"]
            if kind == "error" and message.get("code") == "rate_limited":
                await asyncio.sleep(0.2)
            if kind == "welcome" and session.role != "player":
                raise RefusedError("race_started", f"the race in room {room} has already started")
            if kind == "welcome" and welcomed is not None:
                welcomed.set()
            if session.race_over:
                break
            outgoing = brain.next_message()
            if outgoing is not None:
                if outgoing["type"] == "move" and think_ms:
                    await asyncio.sleep(think_ms * rng.uniform(0.5, 1.5) / 1000)
                await link.send(outgoing)
    except RefusedError as exc:
        raise RefusedError(exc.code, f"bot {name}: {exc}") from None
    finally:
        await link.close()
    return BotReport(name, room, session, reconnects=link.reconnects)


@dataclass(slots=True)
class RoomPlan:
    room: str
    names: list[str] = field(default_factory=list)


async def run_bots(
    server: str,
    *,
    players: int,
    room: str | None = None,
    strategy: str = "greedy",
    think_ms: int = 300,
    time_limit_s: int | None = None,
    per_room: int = MAX_PLAYERS,
    seed: int | None = None,
    connect_concurrency: int = 50,
    backoff: Backoff | None = None,
    on_room: Callable[[str, str, int], None] | None = None,
) -> list[BotReport]:
    """Run ``players`` bots: into ``room``, or (``room`` None) into as many new rooms as needed,
    ``per_room`` each, where the first bot joins first. A bot that is the host (of a new room, or
    of an existing room nobody was in yet) starts the race once all the bots of its room have
    joined; in a room with a human host, that host starts it.
    ``on_room(room, link, bots)`` hears of each room created, before its bots join.

    Returns one report per bot once every race is over. Raises
    :class:`~halfmoon_client.errors.ClientError` (unreachable server, refused entry…).
    """
    choose = STRATEGIES[strategy]
    master = random.Random(seed)
    tag = "".join(master.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(3))  # names unique across runs
    plans: list[tuple[str, int, bool]] = []  # (room, bots, host bot first?)
    if room is not None:
        plans.append((room, players, False))
    else:
        remaining = players
        while remaining > 0:
            size = min(per_room, remaining)
            created = await create_room(server)
            plans.append((created.room, size, True))
            if on_room is not None:
                on_room(created.room, created.url, size)
            remaining -= size
    gate = asyncio.Semaphore(connect_concurrency)

    async def one(room_id: str, name: str, brain: BotBrain, welcomed: asyncio.Event) -> BotReport:
        async with gate:  # at most `connect_concurrency` bots knocking at once
            task = asyncio.create_task(
                run_bot(server, room_id, name, brain, think_ms=think_ms, backoff=backoff, welcomed=welcomed)
            )
            try:
                await _first(task, welcomed)
            except BaseException:  # cancelled (another bot of the run failed): stop this one too
                await _stop(task)
                raise
        return await task

    async def room_bots(room_id: str, count: int, hosted: bool, first_index: int) -> list[BotReport]:
        names = [f"bot-{tag}-{first_index + i:03d}" for i in range(count)]
        team = frozenset(names)  # whichever of them is the host starts once they are all in
        brains = [
            BotBrain(choose, random.Random(master.random()), team=team, time_limit_s=time_limit_s) for _ in range(count)
        ]
        if not hosted:
            return await _all_or_first_error([one(room_id, names[i], brains[i], asyncio.Event()) for i in range(count)])
        host_in = asyncio.Event()  # the host joins first, so that it is the host
        host = asyncio.create_task(one(room_id, names[0], brains[0], host_in))
        try:
            await _first(host, host_in)
            if host.done():
                return [await host]
            others = [one(room_id, names[i], brains[i], asyncio.Event()) for i in range(1, count)]
            rest = await _all_or_first_error(others)
        except BaseException:  # (cancelled too while the host joins: another room of the run failed)
            await _stop(host)
            raise
        return [await host, *rest]

    index = 1
    jobs = []
    for room_id, count, hosted in plans:
        jobs.append(room_bots(room_id, count, hosted, index))
        index += count
    reports: list[BotReport] = []
    for group in await _all_or_first_error(jobs):
        reports.extend(group)
    return reports


async def _all_or_first_error(jobs: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Run ``jobs`` at once and return their results in order; at the first that raises, cancel
    the others, wait for them, and raise its error — so no bot is left running, and no error
    goes unretrieved (asyncio would print it with its traceback when the task is collected)."""
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            error = task.exception() if task in done and not task.cancelled() else None
            if error is not None:
                raise error
        return [task.result() for task in tasks]
    finally:
        await _stop(*tasks)


async def _stop(*tasks: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` and wait until each has ended, its outcome retrieved (none is printed)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _first(task: asyncio.Task[BotReport], event: asyncio.Event) -> None:
    """Wait until ``event`` is set or ``task`` is done, whichever comes first."""
    waiter = asyncio.create_task(event.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


__all__ = ["BotBrain", "BotReport", "ClientError", "run_bot", "run_bots"]
