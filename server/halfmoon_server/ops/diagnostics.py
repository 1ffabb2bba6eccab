"""What a running server is doing, for an operator: every asyncio task with the chain of
coroutines it is waiting in, and every thread's stack. ``kill -USR1 <pid>`` writes it to the
log (docs/runbook.md, "A server that does not stop"); a shutdown that overruns
``--shutdown-timeout`` writes it before it gives up waiting."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import traceback
from types import FrameType
from typing import Any

log = logging.getLogger("halfmoon_server.diagnostics")

#: Frames shown per task or thread (the innermost, where it waits, matter most).
DEPTH = 12
#: Awaits followed down a task's chain at most.
MAX_WALK = 200
#: Distinct await chains shown at most (a record the size of a page, not of the server).
MAX_CHAINS = 60


def _where(frame: FrameType) -> str:
    code = frame.f_code
    return f"{code.co_filename}:{frame.f_lineno} in {code.co_qualname}"


def await_chain(coro: Any) -> list[str]:
    """Where a coroutine waits: its frame, then the frame of each coroutine it awaits in turn
    (``Task.get_stack`` shows only the outermost one of a suspended task)."""
    where: list[str] = []
    while coro is not None and len(where) < MAX_WALK:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            where.append(_where(frame))
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return where[-DEPTH:]  # the innermost: where it waits


def describe_tasks(loop: asyncio.AbstractEventLoop | None = None) -> str:
    """Every unfinished task of ``loop`` (the running one) and where it waits: one block per
    distinct await chain, naming how many tasks wait there (10,000 WebSockets' handlers wait in
    a handful of places), at most ``MAX_CHAINS`` blocks, the most crowded first."""
    chains: dict[tuple[str, ...], list[str]] = {}
    for task in asyncio.all_tasks(loop):
        if not task.done():
            chains.setdefault(tuple(await_chain(task.get_coro())), []).append(task.get_name())
    blocks = []
    for chain, names in sorted(chains.items(), key=lambda item: (-len(item[1]), sorted(item[1])[0])):
        named = sorted(names)
        more = ", …" if len(named) > 3 else ""
        head = f"task {named[0]}:" if len(named) == 1 else f"{len(named)} tasks ({', '.join(named[:3])}{more}):"
        blocks.append("\n".join([head, *(f"  {line}" for line in chain or ("(running)",))]))
    if len(blocks) > MAX_CHAINS:
        blocks = [*blocks[:MAX_CHAINS], f"… and {len(blocks) - MAX_CHAINS} more await chains"]
    return "\n".join(blocks) if blocks else "(no task)"


def describe_threads() -> str:
    """Every thread's stack, innermost frame last."""
    frames = sys._current_frames()
    blocks = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident) if thread.ident is not None else None
        if frame is None:
            continue
        stack = traceback.format_stack(frame, limit=DEPTH)
        blocks.append(f"thread {thread.name}:\n" + "".join(stack).rstrip())
    return "\n".join(blocks)


def log_state(reason: str) -> None:
    """Write the tasks and threads to the log at WARNING (one record)."""
    log.warning("%s: what is running now\n%s\n%s", reason, describe_tasks(), describe_threads())
