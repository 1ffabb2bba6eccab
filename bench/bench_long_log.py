"""A room with a long log, before and after snapshots: ``python bench/bench_long_log.py [--pairs
10000] [--reads 15] [--quick] [--modes 0,200] [--cold] [--tree DIR]``.

A client once appended 20,007 move/undo entries to a solo room in 14 s; every read of the
sleeping room then replayed them all on the event loop. This builds such a room honestly — a
solo game and ``--pairs`` move/undo pairs through the room's real path (``Room.submit``, as the
WebSocket handler calls it), given up and put to sleep — in a real server (``create_app``, the
room log in memory, HTTP on 127.0.0.1 ports 23100-23101; ``--quick``: 23102-23103) twice in one
run: ``--snapshot-every 0`` (before: no snapshots) and ``--snapshot-every 200`` (after). Then, on
each:

- ``GET /api/rooms/{id}`` of the sleeping room, ``--reads`` times: the first read's wall time,
  CPU time and the event loop's longest stall during it (a task sleeping 1 ms at a time: how late
  it woke), then the medians over the reads and the longest stall of all. ``--cold``: the lobby's
  read copies are dropped before each read, so each is a first read (a rebuild from the
  snapshot); without it the reads after the first find the copy kept;
- a rebuild as a takeover or a restart does it (``Lobby._load`` held: ``RoomLog.load``, a
  restore from the snapshot if any, the entries after it replayed), ``--reads`` times: median.

``--modes 200`` measures only the second; ``--tree DIR`` measures another checkout's code with
this script (an A/B: ``--tree /path/to/main``, then this tree, alternately). Prints one JSON line
per mode, then (both modes) a summary line with the ratios. Figures go in
docs/benchmarks.md ("A room with a long log"). ``--quick`` (1,000 pairs, 3 reads) is run by
tests/bench/test_bench_long_log.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: the source tree measured: this one, or another checkout's (``--tree``: an A/B in one sitting,
#: the same bench against both)
TREE = Path(sys.argv[sys.argv.index("--tree") + 1]).resolve() if "--tree" in sys.argv[:-1] else ROOT
for part in ("shared", "server", "client"):
    if str(TREE / part) not in sys.path:
        sys.path.insert(0, str(TREE / part))

import aiohttp  # noqa: E402
from aiohttp.test_utils import TestServer  # noqa: E402

from halfmoon.codes import DealCode  # noqa: E402
from halfmoon_server.rooms.lobby import Lobby  # noqa: E402
from halfmoon_server.rooms.room import Room  # noqa: E402
from halfmoon_server.settings import Settings  # noqa: E402
from halfmoon_server.web import keys  # noqa: E402
from halfmoon_server.web.app import create_app  # noqa: E402

#: a deal and a first move on it (any legal move does: it is taken back at once)
CODE = "HM1-N-AAAAAAB"
#: the two servers' ports (``--quick`` uses the next two: a test's run beside a manual one)
PORT = 23100


class _Nobody:
    """The player's connection, which keeps nothing (the bench reads the room through REST)."""

    room: str | None = None
    player_id: str | None = None
    closed = False

    def send(self, frame: bytes) -> None:
        return None

    def close(self, code: int, reason: str) -> None:
        return None


def first_move() -> list[str]:
    from halfmoon.game import Game

    game = Game.from_code(CODE)
    return next(game.legal_moves()).names()


async def build_room(lobby: Lobby, pairs: int) -> str:
    """The solo room and its history (the room's real path), given up, recorded and asleep."""
    room, player = await lobby.solo(_Nobody(), "Ada", DealCode.parse(CODE), "198.51.100.7")
    move = first_move()
    for pair in range(pairs):
        await room.submit({"k": "move", "p": player, "m": move})
        await room.submit({"k": "undo", "p": player})
        if pair % 100 == 0:
            await asyncio.sleep(0)  # (the loop turns, as between a client's messages)
    await room.submit({"k": "give_up", "p": player})
    room.outboxes.clear()
    for _ in range(1000):
        if room.idle and not room.race.unrecorded:
            break
        await asyncio.sleep(0.01)
    await room.services.tasks.settle()
    await lobby._put_to_sleep(room, lobby.clock.now_ms())
    assert room.id not in lobby.rooms, "the room must be asleep"
    return room.id


async def reads(url: str, count: int, lobby: Lobby, cold: bool) -> dict[str, float]:
    """``count`` GETs, one after the other, with a task watching the loop's stalls (each read's
    longest). ``cold``: the lobby's read copies dropped before each, so every read is a first
    read of the sleeping room (without it, the reads after the first find the copy kept)."""
    walls: list[float] = []
    cpus: list[float] = []
    stalls: list[float] = []
    worst = 0.0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal worst
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - before - 0.001)

    watcher = asyncio.get_running_loop().create_task(watch())
    await asyncio.sleep(0.02)
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            if cold:
                lobby._read_copies.clear()
            worst = 0.0
            wall, cpu = time.perf_counter(), time.process_time()
            async with session.get(url) as response:
                assert response.status == 200, await response.text()
                body = await response.json()
                assert body["phase"] == "finished", body
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            await asyncio.sleep(0.005)  # (a stall that ends just after the answer is the read's)
            stalls.append(worst)
            await asyncio.sleep(0.015)
    done.set()
    await watcher
    return {
        "first_get_ms": walls[0] * 1000,
        "first_get_cpu_ms": cpus[0] * 1000,
        "first_stall_ms": stalls[0] * 1000,
        "get_median_ms": statistics.median(walls) * 1000,
        "get_cpu_median_ms": statistics.median(cpus) * 1000,
        "stall_median_ms": statistics.median(stalls) * 1000,
        "loop_stall_max_ms": max(stalls) * 1000,
    }


async def rebuilds(lobby: Lobby, room_id: str, count: int, snapshots: bool) -> float:
    """Median ms of a held load as a takeover or a restart does it (the log read included)."""
    times: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        loaded = await lobby.log.load(room_id, snapshot=snapshots)
        assert loaded is not None
        room = Room(loaded.header, lobby.services)
        if loaded.snapshot is not None:
            room.restore(loaded.snapshot)
        room.rebuild(loaded.entries, live=False)
        times.append(time.perf_counter() - started)
        assert room.race.results is not None
    return statistics.median(times) * 1000


async def measure(
    snapshot_every: int, pairs: int, count: int, data_dir: Path, port: int, cold: bool = False
) -> dict[str, Any]:
    settings = Settings(
        data_dir=data_dir,
        db_url="memory://",
        secret=b"bench-long-log-secret-0123456789abcdef",
        solver_workers=0,
        daily_requires_winnable=False,
        tick_s=3600.0,
        rate_burst=1_000_000,
        rate_per_s=1_000_000,
        snapshot_every=snapshot_every,
    )
    server = TestServer(create_app(settings), host="127.0.0.1", port=port)
    await server.start_server()
    try:
        lobby: Lobby = server.app[keys.LOBBY]
        built = time.perf_counter()
        room_id = await build_room(lobby, pairs)
        build_s = time.perf_counter() - built
        loaded = await lobby.log.load(room_id)
        assert loaded is not None
        await asyncio.sleep(0.5)  # (the build's garbage and tasks settle before the reads)
        figures = await reads(f"{server.make_url('')}/api/rooms/{room_id}", count, lobby, cold)
        figures["rebuild_median_ms"] = await rebuilds(lobby, room_id, count, snapshot_every > 0)
        return {
            "tree": str(TREE),
            "cold": cold,
            "snapshot_every": snapshot_every,
            "entries": loaded.base + len(loaded.entries),
            "replayed_on_load": len(loaded.entries),
            "build_s": round(build_s, 2),
            **{key: round(value, 2) for key, value in figures.items()},
        }
    finally:
        await server.close()


async def main(
    pairs: int, count: int, port: int = PORT, modes: tuple[int, ...] = (0, 200), cold: bool = False
) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="hm-long-log-") as folder:
        for offset, every in enumerate(modes):
            result = await measure(every, pairs, count, Path(folder) / str(every), port + offset, cold)
            print(json.dumps(result), flush=True)
            results.append(result)
    if len(results) != 2:
        return results
    before, after = results
    summary = {
        "get_speedup": round(before["get_median_ms"] / max(after["get_median_ms"], 1e-6), 1),
        "rebuild_speedup": round(before["rebuild_median_ms"] / max(after["rebuild_median_ms"], 1e-6), 1),
        "stall_before_ms": before["loop_stall_max_ms"],
        "stall_after_ms": after["loop_stall_max_ms"],
    }
    print(json.dumps(summary), flush=True)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10_000, help="move/undo pairs in the room's history")
    parser.add_argument("--reads", type=int, default=15, help="GETs and rebuilds measured per mode")
    parser.add_argument("--quick", action="store_true", help="1,000 pairs, 3 reads (the test's run)")
    parser.add_argument(
        "--modes", default="0,200", help="the --snapshot-every values measured, in order (default: 0,200)"
    )
    parser.add_argument(
        "--cold", action="store_true", help="every read a first read (the lobby's read copies dropped before each)"
    )
    parser.add_argument("--tree", type=Path, default=ROOT, help="the source tree measured (default: this one)")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.reads = 1_000, 3
    modes = tuple(int(every) for every in args.modes.split(","))
    asyncio.run(main(args.pairs, args.reads, PORT + 2 if args.quick else PORT, modes, args.cold))
