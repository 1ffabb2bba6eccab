"""The shipped nginx configuration (deploy/nginx.conf) in front of real ``halfmoon serve``
instances, through outages: with PostgreSQL cut, every WebSocket handshake and every room
creation still gets through (a 503 from a database-backed answer marks no instance down, and is
not retried past the database's time-out); a draining instance (SIGTERM) takes no new WebSocket,
so its players resume on the other instance and nobody is closed twice.

The uptime checks an operator runs (``/healthz``, ``/readyz``) are polled through nginx all
along, as the fault audit did: a steady 503 there is what marked every instance down before."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy.engine import make_url

from halfmoon.game import Move
from halfmoon_server.web.app import begin_draining
from tests.conftest import ROOT
from tests.ports import free_port
from tests.server.conftest import StartServer
from tests.server.instances import Instance, RedisServer, wait_healthy
from tests.server.support import WsClient, won_record
from tests.server.system.test_deploy import nginx_config

sys.path.insert(0, str(ROOT / "bench"))
from tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow  # nginx in front of real instances through outages: ~20 s

CODE = str(won_record().code)
LINE = [step for step in won_record().moves if isinstance(step, Move)]
#: How long the database stays cut while players come and go.
CUT_S = 6.0


@pytest.fixture
def pg_proxy(pg_database: str) -> Iterator[tuple[TcpProxy, str]]:
    url = make_url(pg_database)
    with TcpProxy(url.port or 5432, url.host or "127.0.0.1") as proxy:
        yield proxy, url.set(port=proxy.port).render_as_string(hide_password=False)


@pytest.fixture
async def nginx(nginx_path: str, tmp_path: Path) -> AsyncIterator[Any]:
    """Start deploy/nginx.conf in front of the given instance ports; its base URL."""
    started: list[asyncio.subprocess.Process] = []

    async def start(ports: list[int]) -> str:
        port = free_port()
        config = nginx_config(ports, port, tmp_path)
        started.append(await asyncio.create_subprocess_exec(nginx_path, "-c", str(config), "-p", str(tmp_path)))
        base = f"http://127.0.0.1:{port}"
        await wait_healthy(base)
        return base

    yield start
    for process in started:
        process.terminate()
        await process.wait()


async def handshake(base: str) -> str:
    """A WebSocket through nginx and a solo game started on it: ``"ok"``, or what went wrong."""
    try:
        async with aiohttp.ClientSession() as http, http.ws_connect(f"{base}/ws", headers={"Origin": base}) as ws:
            await ws.send_str(json.dumps({"type": "solo", "v": 1, "name": "Ada"}))
            message = await ws.receive(timeout=5)
            if message.type is not aiohttp.WSMsgType.TEXT:
                return f"closed: {message.type.name} {message.data}"
            kind = json.loads(message.data)["type"]
            return "ok" if kind == "welcome" else kind
    except aiohttp.WSServerHandshakeError as exc:
        return f"handshake refused: {exc.status}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return f"failed: {exc!r}"


async def create_room(http: aiohttp.ClientSession, base: str) -> str:
    async with http.post(f"{base}/api/rooms", json={"code": CODE}) as response:
        return "ok" if response.status == 201 else f"{response.status}: {await response.text()}"


@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["reset", "blackhole"])
async def test_nginx_lets_every_player_in_while_postgresql_is_cut(
    tmp_path: Path, pg_proxy: tuple[TcpProxy, str], nginx: Any, mode: str
) -> None:
    proxy, db_url = pg_proxy
    instances = [Instance(tmp_path / f"instance{k}", db=db_url) for k in range(3)]
    await asyncio.gather(*(inst.start() for inst in instances))
    try:
        base = await nginx([inst.port for inst in instances])
        async with aiohttp.ClientSession() as http:
            assert await handshake(base) == "ok" and await create_room(http, base) == "ok"
            proxy.cut(mode)  # type: ignore[arg-type]
            over = time.monotonic() + CUT_S
            health: list[int] = []
            ready: list[int] = []

            async def uptime_checks() -> None:  # an operator's monitoring, through the balancer
                while time.monotonic() < over:
                    for path, seen in (("/healthz", health), ("/readyz", ready)):
                        async with http.get(f"{base}{path}") as response:
                            seen.append(response.status)
                    await asyncio.sleep(0.1)

            async def players() -> list[str]:
                outcomes = []
                while time.monotonic() < over:
                    outcomes += await asyncio.gather(handshake(base), create_room(http, base))
                return outcomes

            async def leaderboard() -> tuple[int, float]:
                started = time.perf_counter()
                async with http.get(f"{base}/api/leaderboard/{CODE}") as response:
                    return response.status, time.perf_counter() - started

            await asyncio.sleep(0.5)  # the cut has been noticed
            outcomes, _, board = await asyncio.gather(players(), uptime_checks(), leaderboard())
            proxy.restore()
        refused = [outcome for outcome in outcomes if outcome != "ok"]
        assert len(outcomes) >= 20 and refused == [], f"{len(refused)} of {len(outcomes)} refused: {refused[:5]}"
        assert set(health) == {200}, "liveness asks no database"
        assert set(ready) == {503}, "not ready for new games: the database is down"
        # one instance's answer, not three in a row: within the database's time-out (3 s) and a margin
        assert board[0] == 503 and board[1] < 4.5, f"the leaderboard answered {board[0]} after {board[1]:.1f} s"
    finally:
        for inst in instances:
            inst.stop()


class Player:
    """A solo game through nginx that reconnects and resumes as the browser client does: on a
    close it connects again (a refused handshake is tried again a moment later) and sends
    ``resume`` with its token. Counts the closes it met."""

    def __init__(self, base: str, name: str) -> None:
        self.base = base
        self.name = name
        self.closes = 0
        self.room = ""
        self.token = ""
        self.seq = 0
        self.session = aiohttp.ClientSession()
        self.ws: aiohttp.ClientWebSocketResponse | None = None

    async def start(self) -> None:
        self.ws = await self.session.ws_connect(f"{self.base}/ws", headers={"Origin": self.base})
        await self.ws.send_str(json.dumps({"type": "solo", "v": 1, "name": self.name, "code": CODE}))
        welcome = await self.next("welcome")
        self.room, self.token, self.seq = welcome["room"]["room"], welcome["token"], welcome["seq"]

    async def next(self, *types: str, timeout: float = 10.0) -> dict[str, Any]:
        assert self.ws is not None
        async with asyncio.timeout(timeout):
            while True:
                message = await self.ws.receive()
                if message.type is not aiohttp.WSMsgType.TEXT:
                    raise ConnectionResetError(f"closed: {message.type.name} {message.data}")
                data = json.loads(message.data)
                if isinstance(data.get("seq"), int):
                    self.seq = max(self.seq, data["seq"])
                if data["type"] in types:
                    return dict(data)

    async def stay(self, until: asyncio.Event) -> None:
        """Keep connected until ``until`` is set: wait for a close, then resume."""
        assert self.ws is not None
        while not until.is_set():
            closed = asyncio.ensure_future(self.ws.receive())
            done, _ = await asyncio.wait({closed, asyncio.ensure_future(until.wait())}, return_when="FIRST_COMPLETED")
            if closed not in done:
                closed.cancel()
                return
            message = closed.result()
            if message.type is aiohttp.WSMsgType.TEXT:
                continue
            self.closes += 1
            await self.resume()

    async def resume(self) -> None:
        async with asyncio.timeout(20):
            while True:
                try:
                    self.ws = await self.session.ws_connect(f"{self.base}/ws", headers={"Origin": self.base})
                    break
                except (aiohttp.WSServerHandshakeError, aiohttp.ClientConnectionError):
                    await asyncio.sleep(0.2)
        resume = {"type": "resume", "v": 1, "room": self.room, "token": self.token, "since": self.seq}
        await self.ws.send_str(json.dumps(resume))
        await self.next("welcome")

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        await self.session.close()


@pytest.mark.redis
@pytest.mark.postgres
async def test_a_draining_instance_sends_its_players_to_the_other_one_through_nginx(
    tmp_path: Path, redis_server: RedisServer, pg_database: str, nginx: Any
) -> None:
    one, two = (Instance(tmp_path / f"instance{k}", db=pg_database, redis=redis_server.url) for k in range(2))
    await asyncio.gather(one.start(), two.start())
    players: list[Player] = []
    try:
        base = await nginx([one.port, two.port])
        players = [Player(base, f"P{k}") for k in range(12)]
        for player in players:  # one after the other: round robin puts half on each instance
            await player.start()
        steady = asyncio.Event()
        staying = [asyncio.ensure_future(player.stay(steady)) for player in players]
        assert one.process is not None
        one.process.send_signal(signal.SIGTERM)  # draining: a rolling restart's first step
        await asyncio.to_thread(one.process.wait, 30)
        one.process = None
        await asyncio.sleep(1.0)  # the last resumes land
        steady.set()
        await asyncio.gather(*staying)
        moved = [player for player in players if player.closes]
        assert moved, "some players were on the instance that stopped"
        assert all(player.closes <= 1 for player in players), {p.name: p.closes for p in players if p.closes > 1}
        for player in players:  # every game goes on, on the instance that stayed
            assert player.ws is not None
            await player.ws.send_str(json.dumps({"type": "move", "v": 1, "positions": LINE[0].names()}))
            await player.next("moved")
    except Exception:
        for instance in (one, two):  # (shown with the failure: what each instance said meanwhile)
            if instance.log.exists():
                said = instance.log.read_text(errors="replace")[-6000:]
                print(f"--- {instance.log.name}, its last lines:\n{said}")
        raise
    finally:
        for player in players:
            await player.close()
        one.stop()
        two.stop()


async def test_a_draining_server_refuses_new_websockets_and_resumes_and_says_so(start_server: StartServer) -> None:
    """From the stop signal on (``begin_draining``, then the drain closes every socket with
    1012): a new WebSocket — a reconnection's resume included — is refused before the upgrade
    with 503 ``shutting_down``, and ``/readyz`` says ``draining``; liveness still answers."""
    server = await start_server()
    player = await WsClient.connect(server, "Ada")
    await player.send("solo", name="Ada", code=CODE)
    welcome = await player.next("welcome")
    begin_draining(server.app)
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(server.make_url("/ws"))
        assert refused.value.status == 503 and refused.value.headers is not None
        assert refused.value.headers.get("Retry-After") == "1"
        async with http.get(server.make_url("/readyz")) as ready:
            assert ready.status == 503 and (await ready.json())["checks"]["draining"].startswith("down: ")
        async with http.get(server.make_url("/healthz")) as health:
            assert health.status == 200
        async with http.post(server.make_url("/api/rooms"), json={"code": CODE}) as created:
            assert created.status == 503 and (await created.json())["error"]["code"] == "shutting_down"
    # the player's own connection stays until the drain closes it (1012, "connect again")
    await player.send("move", positions=LINE[0].names())
    assert (await player.next("moved"))["seq"] > welcome["seq"]
    await player.close()
