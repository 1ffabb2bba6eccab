"""The server's usual paths make no cyclic garbage: what it frees, it frees by reference count.

A reference cycle is freed only by a collection, and each one a connection leaves holds the whole
connection until then (``halfmoon_server.web.cycles``). A real ``halfmoon serve`` process, collecting
its whole heap every half second, plays whole races of bots with a spectator, a player who drops
and resumes, refused moves, bad frames, a solo game and a daily attempt, and REST reads; its
collections (``halfmoon_gc_collected_objects_total``) find nothing more after them than before.
``test_gc_cycles_dropped_and_refused.py`` holds more paths to it (peers gone mid-frame, heartbeat drops, joins
refused as applied) and names those aiohttp still leaves cycles on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from halfmoon_client.bots import run_bots
from halfmoon_client.rest import create_room
from halfmoon_client.terminal import watch_room
from tests.client.support import RecordingScreen
from tests.server.instances import Instance

pytestmark = pytest.mark.slow  # a real server collecting its whole heap

#: How often the server under test collects its whole heap (``--gc-collect``).
COLLECT_S = 0.5


async def collected(base: str) -> float:
    """Every unreachable object the server's collections have freed so far, all generations."""
    async with aiohttp.ClientSession() as http:
        text = await (await http.get(f"{base}/metrics")).text()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "halfmoon_gc_collected_objects_total"
    )


async def after_full_collections(base: str) -> float:
    """:func:`collected`, once two full collections have run since the call."""
    await asyncio.sleep(2.5 * COLLECT_S)
    return await collected(base)


async def until_message(ws: aiohttp.ClientWebSocketResponse, kind: str) -> None:
    async with asyncio.timeout(10):
        while (await ws.receive_json())["type"] != kind:
            pass


async def a_bit_of_everything(server: Instance, seed: int) -> None:
    """Whole races of bots in two rooms, one watched; a player who drops in the lobby and
    resumes; refused and malformed messages; a solo game and a daily attempt given up; REST reads."""
    room = (await create_room(server.base)).room
    screen = RecordingScreen()
    watcher = asyncio.create_task(watch_room(server.base, room, screen, tick_s=0.05))
    racing = asyncio.create_task(run_bots(server.base, players=3, room=room, think_ms=0, seed=seed))
    more = asyncio.create_task(run_bots(server.base, players=4, think_ms=0, seed=seed + 100))
    async with aiohttp.ClientSession() as http:
        other = (await create_room(server.base)).room
        ws = await http.ws_connect(server.ws)
        await ws.send_json({"type": "join", "v": 1, "room": other, "name": f"Ada{seed}"})
        welcome = await ws.receive_json(timeout=10)
        assert welcome["type"] == "welcome", welcome
        await ws.send_json({"type": "move", "v": 1, "cards": ["P1", "P2"], "id": 1})  # the race has not started
        await ws.send_str("{not json")
        await ws.send_bytes(b"\x00binary")
        await ws.send_json({"type": "teleport", "v": 1})
        for _ in range(4):
            assert (await ws.receive_json(timeout=10))["type"] == "error"
        await ws.close()  # dropped: the seat is kept
        again = await http.ws_connect(server.ws)
        await again.send_json({"type": "resume", "v": 1, "room": other, "token": welcome["token"]})
        assert (await again.receive_json(timeout=10))["type"] == "welcome"
        await again.send_json({"type": "leave", "v": 1})
        await again.close()
        for start in ({"type": "solo", "v": 1, "name": f"Bo{seed}"}, {"type": "daily", "v": 1, "name": f"Cy{seed}"}):
            alone = await http.ws_connect(server.ws)
            await alone.send_json(start)
            await until_message(alone, "welcome")
            await alone.send_json({"type": "give_up", "v": 1})
            await until_message(alone, "game_over")
            await alone.close()
        for path in (f"/api/rooms/{room}", "/api/rooms/NOSUCH", "/api/daily", "/healthz", "/api/games/nope"):
            async with http.get(server.base + path) as response:
                await response.read()
    await asyncio.wait_for(asyncio.gather(racing, more), 60)
    await asyncio.wait_for(watcher, 20)


async def test_races_spectators_drops_and_bad_input_leave_no_cyclic_garbage(tmp_path: Path) -> None:
    server = await Instance(tmp_path, args=("--gc-freeze", "0.1", "--gc-collect", str(COLLECT_S))).start()
    try:
        await a_bit_of_everything(server, seed=1)  # the first time: imports, caches, compiled queries
        before = await after_full_collections(server.base)
        for seed in (2, 3, 4):
            await a_bit_of_everything(server, seed)
        after = await after_full_collections(server.base)
    finally:
        server.stop()
    assert after - before == 0, f"the server's full collections freed {after - before:g} objects in cycles"
