"""``halfmoon join`` and ``halfmoon watch`` on a real terminal: lines in, screens out.

Everything here is I/O glue: lines come from an :class:`asyncio.Queue` (filled from standard
input without blocking the event loop, or by a test), screens go to a :class:`Screen`
(:class:`AnsiScreen` draws in place; both are shared with ``halfmoon play``), messages
go through a :class:`~halfmoon_client.connection.Link`. What to send and what to draw is
decided by :class:`~halfmoon_client.racer.Racer` and :mod:`halfmoon_client.screens`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from halfmoon.cli.screen import AnsiScreen, Screen
from halfmoon.protocol import Queue, Unqueue
from halfmoon_client.connection import Backoff, Link, enter_room, wall_ms
from halfmoon_client.errors import ProtocolError, RefusedError
from halfmoon_client.ghost import Ghost
from halfmoon_client.racer import Racer
from halfmoon_client.screens import queue_screen, watch_pages, watch_screen
from halfmoon_client.seats import SeatBook
from halfmoon_client.session import Message, Session
from halfmoon_client.words import say

Clock = Callable[[], int]


def stdin_lines(stream: TextIO | None = None) -> asyncio.Queue[str | None]:
    """Lines typed on standard input (or ``stream``), read without blocking the event loop;
    ``None`` marks the end.

    Uses ``loop.add_reader`` on the descriptor; where that cannot watch it (a regular file),
    a daemon thread reads it instead.
    """
    stream = stream or sys.stdin
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    fd = stream.fileno()
    buffer = bytearray()

    def readable() -> None:
        chunk = os.read(fd, 4096)
        if not chunk:
            loop.remove_reader(fd)
            if buffer:
                queue.put_nowait(buffer.decode(errors="replace"))
            queue.put_nowait(None)
            return
        buffer.extend(chunk)
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            queue.put_nowait(line.decode(errors="replace"))

    try:
        loop.add_reader(fd, readable)
    except (OSError, NotImplementedError, ValueError):

        def read_all() -> None:
            try:
                for line in stream:
                    loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\n"))
                loop.call_soon_threadsafe(queue.put_nowait, None)
            except (RuntimeError, ValueError, OSError):  # the loop or the stream is closed: the command ended
                return

        threading.Thread(target=read_all, name="stdin", daemon=True).start()
    return queue


class _StaleSeat(RefusedError):
    """A token kept from an earlier run that the server refused before letting the player in."""


def _refused_text(code: str, message: str, room: str) -> str:
    if code == "no_such_room":
        return f"no room {room} on this server"
    if code == "bad_token":
        return f"room {room} no longer knows this player (did the server restart?): {message}"
    return message


async def play_race(
    server: str,
    room: str,
    name: str,
    lines: asyncio.Queue[str | None],
    screen: Screen,
    *,
    lang: str = "en",
    move_errors: bool = False,
    color: bool = False,
    clock: Clock = wall_ms,
    tick_s: float = 1.0,
    backoff: Backoff | None = None,
    time_limit_s: int | None = None,
    seats: SeatBook | None = None,
    series: int | None = None,
    stay: bool = False,
    player_key: str | None = None,
    ghost: Ghost | None = None,
) -> Racer:
    """Race in room ``room`` as ``name`` until the race is over or the racer quits (``stay``:
    until the racer quits, or their input ends after a race — the room's rematches are raced
    too: ``r`` proposes one, ``a`` accepts one). ``series``: the host's ``s`` asks for a series.

    With a seat book, a token kept from an earlier run resumes that player (a token the server
    no longer knows is dropped, and the racer joins afresh), the token of this run is kept as
    soon as the server gives it, and the seat is dropped when the race is over or the racer
    leaves. ``player_key``: sent with ``join``, so the game joins the player's history.
    ``ghost``: a stored game whose run is drawn under the track, on the race's clock. Raises
    :class:`~halfmoon_client.errors.UnreachableError`, :class:`RefusedError`
    (with a message naming the room) or :class:`ProtocolError`.
    """
    race = functools.partial(
        _race,
        server,
        room,
        name,
        lines,
        screen,
        lang=lang,
        move_errors=move_errors,
        color=color,
        clock=clock,
        tick_s=tick_s,
        backoff=backoff,
        time_limit_s=time_limit_s,
        seats=seats,
        series=series,
        stay=stay,
        player_key=player_key,
        ghost=ghost,
    )
    kept = seats.token(server, room, name) if seats is not None else None
    if kept is not None:
        try:
            return await race(token=kept)
        except _StaleSeat:
            pass  # the server no longer knows that player (the seat is dropped): join as a new one
    return await race(token=None)


async def _race(
    server: str,
    room: str,
    name: str,
    lines: asyncio.Queue[str | None],
    screen: Screen,
    *,
    token: str | None,
    lang: str,
    move_errors: bool,
    color: bool,
    clock: Clock,
    tick_s: float,
    backoff: Backoff | None,
    time_limit_s: int | None,
    seats: SeatBook | None,
    series: int | None = None,
    stay: bool = False,
    player_key: str | None = None,
    ghost: Ghost | None = None,
) -> Racer:
    racer = Racer(lang=lang, move_errors=move_errors, time_limit_s=time_limit_s, series=series, stay=stay, ghost=ghost)
    session = racer.session
    if token is not None:  # a seat kept from an earlier run: the first hello resumes it
        session.room = room
        session.token = token
    kept = token

    def hello() -> Message:
        if session.token:
            return session.resume_message()
        return session.join_message(room, name, player_key, session.contribute())

    def on_event(kind: str, data: dict[str, Any]) -> None:
        racer.message = say(kind, lang, **data)
        screen.draw(racer.screen(clock(), color=color))

    link = Link(server, hello=hello, on_event=on_event, backoff=backoff, room=room)

    def feed(message: Message) -> None:
        nonlocal kept
        racer.receive(message, clock())
        if seats is not None and session.welcomed and session.token and session.token != kept:
            kept = session.token
            seats.keep(server, room, name, kept)

    async def read_input() -> None:
        while not racer.done:
            line = await lines.get()
            if line is None:
                racer.input_closed = True
                if racer.session.race_over:  # a stay after the race: nothing more will be typed
                    await link.close()
                return  # no more input: keep watching until the race is over
            for message in racer.command(line):
                await link.send(message)
            if racer.quit:
                await link.close()  # ends the message loop below: nothing more will come
                return
            screen.draw(racer.screen(clock(), color=color), full=True)  # the Enter moved the cursor

    async def tick() -> None:
        while True:
            await asyncio.sleep(tick_s)
            screen.draw(racer.screen(clock(), color=color))

    tasks: list[asyncio.Task[None]] = []
    try:
        async for _message in enter_room(link, session, feed):
            if not tasks:
                tasks = [asyncio.create_task(read_input()), asyncio.create_task(tick())]
            screen.draw(racer.screen(clock(), color=color))
            if racer.done:
                break
            if tasks[0].done():
                if racer.quit:
                    break
                tasks[0].result()  # re-raise a failure of the input task
    except RefusedError as exc:
        if seats is not None and exc.code in ("bad_token", "no_such_room"):
            seats.drop(server, room)  # the server forgot this room or this player
        if exc.code == "bad_token" and token is not None and not session.welcomed:
            raise _StaleSeat(exc.code, str(exc)) from None  # play_race joins afresh
        raise RefusedError(exc.code, _refused_text(exc.code, str(exc), room)) from None
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await link.close()
    if seats is not None and racer.done:
        seats.drop(server, room)  # the race is over, or the racer left: nothing to resume
    screen.draw(racer.screen(clock(), color=color))
    return racer


async def watch_room(
    server: str,
    room: str,
    screen: Screen,
    *,
    lang: str = "en",
    clock: Clock = wall_ms,
    tick_s: float = 1.0,
    page_s: float = 5.0,
    height: int = 24,
    backoff: Backoff | None = None,
) -> Session:
    """Spectate room ``room`` until the race is over; players are cycled a page at a time
    when they do not fit. Raises like :func:`play_race`."""
    session = Session()
    page = 0
    state = {"message": ""}

    def draw() -> None:
        text = watch_screen(session, local_ms=clock(), lang=lang, page=page, height=height)
        if state["message"]:
            text += "\n" + state["message"]
        screen.draw(text)

    def hello() -> Message:
        return session.watch_message(room)

    def on_event(kind: str, data: dict[str, Any]) -> None:
        state["message"] = say(kind, lang, **data)
        draw()

    link = Link(server, hello=hello, on_event=on_event, backoff=backoff, room=room)

    async def tick() -> None:
        nonlocal page
        elapsed = 0.0
        while True:
            await asyncio.sleep(tick_s)
            elapsed += tick_s
            if elapsed >= page_s:
                elapsed = 0.0
                page = (page + 1) % watch_pages(session, height=height)
            draw()

    ticker: asyncio.Task[None] | None = None
    try:
        async for message in enter_room(link, session, lambda m: session.receive(m, clock())):
            if ticker is None:
                ticker = asyncio.create_task(tick())
            if message.get("type") == "welcome":
                state["message"] = ""
            draw()
            if session.race_over:
                break
    except RefusedError as exc:
        raise RefusedError(exc.code, _refused_text(exc.code, str(exc), room)) from None
    finally:
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        await link.close()
    return session


async def wait_in_queue(
    server: str,
    name: str,
    player_key: str,
    lines: asyncio.Queue[str | None],
    screen: Screen,
    *,
    lang: str = "en",
    clock: Clock = wall_ms,
    tick_s: float = 1.0,
    backoff: Backoff | None = None,
) -> tuple[str, str] | None:
    """Wait in the quick-race queue (docs/protocol.md, "Quick races") as ``name`` until the queue
    matches a race: its room id, and the name to join it under (``name``, or with a number added
    when another player of the race has it too). The screen shows how many are in and the countdown; alone long
    enough, the offer (Enter keeps waiting). ``q`` leaves the queue: None. A reconnection queues
    again. Raises :class:`RefusedError` for a refused ``queue`` (``already_queued``,
    ``rate_limited``…) and :class:`~halfmoon_client.errors.UnreachableError`."""
    state: dict[str, Any] = {"count": 1, "starts_at": None, "offer": False, "ghost": None}
    queue = Queue(name, player_key).to_json()
    link = Link(server, hello=lambda: queue, backoff=backoff)
    left = False

    def draw() -> None:
        screen.draw(queue_screen(state["count"], state["starts_at"], state["offer"], state["ghost"],
                                 local_ms=clock(), lang=lang))  # fmt: skip

    async def read_input() -> None:
        nonlocal left
        while True:
            line = await lines.get()
            if line is None:
                return  # no more input: keep waiting
            if line.strip().lower() == "q":
                left = True
                await link.send(Unqueue().to_json())
                await link.close()
                return
            if state["offer"]:
                await link.send(queue)  # keep waiting

    async def tick() -> None:
        while True:
            await asyncio.sleep(tick_s)
            draw()

    await link.connect()
    draw()
    tasks = [asyncio.create_task(read_input()), asyncio.create_task(tick())]
    try:
        async for message in link.messages():
            kind = message.get("type")
            if kind == "queued":
                starts_in = message.get("starts_in_ms")
                state["starts_at"] = None if starts_in is None else clock() + int(starts_in)
                state.update(count=int(message.get("count") or 1), offer=bool(message.get("offer")))
                state["ghost"] = message.get("ghost")
                draw()
            elif kind == "matched":
                return str(message["room"]), str(message.get("name") or name)
            elif kind == "error":
                code = str(message.get("code"))
                raise RefusedError(code, str(message.get("message") or code))
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await link.close()
    if left:
        screen.draw(say("quick_left", lang))
    return None


__all__ = ["AnsiScreen", "ProtocolError", "Screen", "play_race", "stdin_lines", "wait_in_queue", "watch_room"]
