"""The Node.js peers still run: ``bench/load.py --quick --peers`` drives the ``ws`` game-like server
(bench/peers/gamelike.mjs, through load.py's own client) and the Colyseus room (through
bench/peers/colyseus-load.mjs) for a second each, and both answer the moves, play whole games
and report in load.py's shape; the ws server sends bench/gamelike.py's very frames. Figures are
measured by hand (docs/benchmarks.md, "Peers"), never asserted here.

Needs node and ``npm ci --prefix bench/peers``: skipped without them, a failure under CI=true."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, require_service

sys.path.insert(0, str(ROOT / "bench"))
try:
    import load
finally:
    sys.path.remove(str(ROOT / "bench"))


def test_each_peer_answers_the_moves_and_reports_in_the_load_shape(tmp_path: Path) -> None:
    missing = load.peers_missing()
    require_service("node with bench/peers' packages", missing is None, str(missing))
    out = tmp_path / "peers.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALFMOON_")}
    command = [sys.executable, str(ROOT / "bench" / "load.py"), "--quick", "--peers"]
    command += ["--only", "node-gamelike", "colyseus", "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    runs = {r["config"]["loop"]: r for r in results if "config" in r}
    assert set(runs) == {"node-gamelike", "colyseus"}
    for loop, run in runs.items():
        assert run["errors"] == {}, (loop, run["errors"])
        assert (run["players"], run["spectators"]) == (8, 1), loop  # two tables of 4, one watched
        assert run["ack_ms"]["n"] > 0 and run["ack_ms"]["p50"] is not None, loop  # moves answered
        assert run["moves_per_s_median"] > 0 and run["server_cpu_us_per_move"] > 0, loop  # its CPU read
        assert run["games"] > 0 and run["failed_stores"] == 0, loop  # whole games, each to its game_over
    summary = results[-1]["summary"]  # the side-by-side medians, with no Half Moon run to compare
    assert set(summary["medians"]) == {"node-gamelike", "colyseus"} and summary["halfmoon/"] == {}


async def _a_whole_race(base: str) -> list[list[str]]:
    """A room, 4 players and a spectator; each player in turn plays 48 moves, each once the last
    was answered: every frame each connection received, in order."""
    import asyncio

    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/api/rooms", json={"code": "HM1-N-AAAAAAB"}) as response:
            room = (await response.json())["room"]
        sockets = [await http.ws_connect(base.replace("http", "ws", 1) + "/ws") for _ in range(5)]
        frames: list[list[str]] = [[] for _ in sockets]

        async def next_frame(k: int) -> str:
            frame = await sockets[k].receive_str(timeout=5)
            frames[k].append(frame)
            return frame

        for k in range(4):
            await sockets[k].send_json({"type": "join", "v": 1, "room": room, "name": f"n{k}"})
            await next_frame(k)
        await sockets[4].send_json({"type": "watch", "v": 1, "room": room})
        await next_frame(4)
        await sockets[0].send_json({"type": "start", "v": 1})
        for k in range(4):
            await next_frame(k)
        for k in range(4):
            for number in range(1, 49):
                await sockets[k].send_json({"type": "move", "v": 1, "positions": ["R4", str(number)], "id": number})
                while '"id":' not in await next_frame(k):
                    pass  # a room mate's summary before this move's answer
        for k in range(5):
            with contextlib.suppress(asyncio.TimeoutError):
                while True:  # what is still on its way: the last summaries, game_over, race_over
                    await asyncio.wait_for(next_frame(k), 0.3)
        for ws in sockets:
            await ws.close()
    return frames


def test_the_node_game_like_server_sends_what_bench_gamelike_py_sends_byte_for_byte() -> None:
    import asyncio

    missing = load.peers_missing()
    require_service("node with bench/peers' packages", missing is None, str(missing))
    sent = {}
    for name, command in (("aiohttp", load.GAMELIKE), ("node", load.node_command("gamelike.mjs"))):
        with load.ceiling_server(command) as (base, _process):
            sent[name] = asyncio.run(_a_whole_race(base))
    assert sent["node"] == sent["aiohttp"]
    players, spectator = sent["aiohttp"][:4], sent["aiohttp"][4]
    assert all(sum('"type":"moved"' in f for f in frames) == 4 * 48 for frames in players)
    assert all(frames[-1] == '{"type":"race_over","v":1}' for frames in players)
    assert len(spectator) == 1 + 4 * 48  # its welcome, then every player's every move


def test_the_node_game_like_server_keeps_an_idle_keep_alive_connection_past_nodes_default() -> None:
    # load.py's tables reuse a pooled connection for each race's POST /api/rooms; Node's default
    # keep-alive (5 s) closed it between two slow races and the next POST met a reset
    import asyncio

    from yarl import URL

    missing = load.peers_missing()
    require_service("node with bench/peers' packages", missing is None, str(missing))
    body = b'{"code":"HM1-N-AAAAAAB"}'
    request = b"POST /api/rooms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    request += b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    async def two_posts_on_one_connection_6_s_apart(port: int) -> list[bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answers = []
        for pause in (0, 6):
            await asyncio.sleep(pause)
            writer.write(request)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            assert head.startswith(b"HTTP/1.1 200"), head
            assert b"Keep-Alive: timeout=75\r\n" in head, head  # Node's default says timeout=5
            while True:
                size = (await reader.readline()).strip()
                if size == b"0":
                    await reader.readline()
                    break
                answers.append((await reader.readexactly(int(size, 16) + 2))[:-2])
        writer.close()
        return answers

    with load.ceiling_server(load.node_command("gamelike.mjs")) as (base, _process):
        port = URL(base).port
        assert port is not None
        first, second = asyncio.run(two_posts_on_one_connection_6_s_apart(port))
    assert json.loads(first)["room"] != json.loads(second)["room"]  # both answered on the same socket
