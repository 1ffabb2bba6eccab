"""The embedded journal's group-commit rounds on its thread (``--journal-commit thread``, and
``auto`` whenever the loop may not commit): a move that arrives alone costs no timer, no task
and no future of the journal's own beyond its answer, and the one watchdog that gives up a
stalled round measures each round's time-out from that round's own start. (Commits on the
loop's thread: test_journal_commits_on_the_loop.py.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from halfmoon_server.adapters import journal
from halfmoon_server.adapters.journal import JournalLog
from halfmoon_server.errors import LogUnavailable
from tests.server.adapters.test_journal import _Room


async def _journal_with_a_room(path: Path) -> tuple[JournalLog, Any]:
    room_log = JournalLog(path, commit="thread")
    await room_log.open()
    room: Any = _Room("R1")
    assert await room_log.create({"room": room.id, "v": 1})
    room_log.follow(room)
    return room_log, room


async def test_lone_moves_arm_no_timer_and_start_no_task_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each move alone in its round (the next appended once the last is committed): one timer
    in all (the watchdog, armed by the first round), no task started by the journal."""
    room_log, room = await _journal_with_a_room(tmp_path / "journal.db")
    loop = asyncio.get_running_loop()
    timers: list[float] = []
    tasks: list[Any] = []
    call_at, create_task = loop.call_at, loop.create_task

    def counting_call_at(when: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        timers.append(when)
        return call_at(when, *args, **kwargs)

    def counting_create_task(coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        tasks.append(coro)
        return create_task(coro, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting_call_at)
    monkeypatch.setattr(loop, "create_task", counting_create_task)
    try:
        for n in range(1, 51):
            assert await room_log.append(room.id, {"k": "move", "n": n}) == n
    finally:
        monkeypatch.undo()
        await room_log.close()
    assert [number for number, _ in room.delivered] == list(range(1, 51))
    assert len(timers) == 1, f"{len(timers)} timers armed for 50 lone moves"
    assert tasks == []


@pytest.mark.slow
@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_each_round_times_out_from_its_own_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watchdog armed by an earlier round fires while a later round is younger than the
    time-out: that round is not given up (it lands and is acknowledged); a round that stalls
    past its own time-out is given up (``certain=False``: it may land yet) once the watchdog
    comes back for it."""
    monkeypatch.setattr(journal, "COMMIT_TIMEOUT_S", 1.0)
    room_log, room = await _journal_with_a_room(tmp_path / "journal.db")
    commit = room_log._commit
    stalls: list[float] = []

    def stalled(rows: Any) -> None:
        if stalls:
            time.sleep(stalls.pop())
        commit(rows)

    monkeypatch.setattr(room_log, "_commit", stalled)
    try:
        assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1  # arms the watchdog for +1.0 s
        await asyncio.sleep(0.6)
        stalls.append(0.5)  # lands at +1.1 s: after the watchdog's first look, before its own time-out
        began = time.monotonic()
        assert await room_log.append(room.id, {"k": "move", "n": 2}) == 2
        assert time.monotonic() - began >= 0.5

        stalls.append(2.5)
        began = time.monotonic()
        with pytest.raises(LogUnavailable) as refused:
            await room_log.append(room.id, {"k": "move", "n": 3})
        waited = time.monotonic() - began
        assert not refused.value.certain
        assert 0.9 <= waited < 2.0, f"given up after {waited:.2f} s (its time-out: 1.0 s)"
        await asyncio.sleep(2.0)  # the stalled round lands meanwhile
        assert await room_log.append(room.id, {"k": "move", "n": 4}) == 4  # numbered after the landed one
    finally:
        await room_log.close()
    assert [number for number, _ in room.delivered] == [1, 2, 4]


@pytest.mark.interpreted  # (JournalLog._commit replaced)
async def test_moves_woken_with_a_rounds_answer_go_in_the_next_round_together(tmp_path: Path) -> None:
    """Two moves whose senders are woken in the loop turn where a round's answer arrives (the
    moves read with it) share the next round: it starts after them, not before the first."""
    room_log, room = await _journal_with_a_room(tmp_path / "journal.db")
    commit = room_log._commit
    rounds: list[int] = []

    def counted(rows: Any) -> None:
        rounds.append(len(rows))
        commit(rows)

    room_log._commit = counted  # type: ignore[method-assign]
    first_delivered = asyncio.Event()
    deliver = room.deliver

    def delivering(number: int, entry: dict[str, Any]) -> None:
        deliver(number, entry)
        first_delivered.set()

    room.deliver = delivering

    async def woken_then_move(n: int) -> int:
        await first_delivered.wait()
        return await room_log.append(room.id, {"k": "move", "n": n})

    try:
        later = [asyncio.create_task(woken_then_move(n)) for n in (2, 3)]
        assert await room_log.append(room.id, {"k": "move", "n": 1}) == 1
        assert sorted(await asyncio.gather(*later)) == [2, 3]
    finally:
        await room_log.close()
    assert rounds == [1, 2]
