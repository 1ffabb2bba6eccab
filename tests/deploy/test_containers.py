"""The container path, run for real: the images from deploy/Dockerfile and deploy/services.Dockerfile
on a base built on this machine (.ci/base-image: debootstrap + docker import, so Docker Hub need
not be reachable), the server's holding the compiled build (its default); the compose stack of
deploy/compose.yaml up — three instances, nginx, Redis and PostgreSQL, every one on the host's
network — a race played through nginx, and one instance's container killed mid-race: every
acknowledged move is in the results, every game stored once.

Needs dockerd and docker-compose (Debian's docker.io and docker-compose); skips with a reason
where they are missing, except under CI=true (.ci/run installs and starts them)."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio
import redis.exceptions

from halfmoon.game import Move
from tests.conftest import ROOT, require_service
from tests.server.support import WsClient, won_record
from tests.server.system.test_cluster import race_through_a_balancer
from tests.server.system.test_durability import play

pytestmark = pytest.mark.slow  # builds the images and starts the compose stack: minutes

#: The ports deploy/compose.yaml takes on the host: nginx, the instances, their metrics,
#: PostgreSQL and Redis.
PORTS = (8000, 8081, 8082, 8083, 18081, 18082, 18083, 5433, 6380)
PROJECT = "halfmoon-ci"
BASE = "http://127.0.0.1:8000"
CODE = str(won_record().code)
LINE = [step for step in won_record().moves if isinstance(step, Move)]
#: Building the images (the base, then three services and the server) and starting the stack.
BUILD_TIMEOUT_S = 1200


def _docker_works() -> bool:
    docker = shutil.which("docker")
    if docker is None or shutil.which("docker-compose") is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, timeout=60).returncode == 0


def _port_taken(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def compose(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    command = ["docker-compose", "-p", PROJECT, "-f", str(ROOT / "deploy" / "compose.yaml"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def make_secrets(folder: Path) -> None:
    """The five secret files deploy/RUNBOOK.md has the operator make, owned by the containers'
    users (the server's uid 10001, PostgreSQL's 10002; Redis's entrypoint reads its own as root),
    readable by them alone."""
    folder.mkdir()
    password, redis_password = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
    files = {
        "halfmoon_secret": (secrets.token_urlsafe(32), 10001),
        "halfmoon_db": (f"postgresql+asyncpg://halfmoon:{password}@127.0.0.1:5433/halfmoon", 10001),
        "postgres_password": (password, 10002),
        "halfmoon_redis": (f"redis://:{redis_password}@127.0.0.1:6380/0", 10001),
        "redis_password": (redis_password, 0),
    }
    for name, (value, uid) in files.items():
        path = folder / name
        path.write_text(value + "\n")
        os.chown(path, uid, 0)
        path.chmod(0o400)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    require_service("dockerd and docker-compose", _docker_works(), "apt-get install docker.io docker-compose; dockerd")
    inspect = subprocess.run(["docker", "image", "inspect", "halfmoon-base:bookworm"], capture_output=True)
    buildable = inspect.returncode == 0 or shutil.which("debootstrap") is not None
    require_service("the base image (or debootstrap to build it)", buildable, "apt-get install debootstrap")
    taken = [port for port in PORTS if _port_taken(port)]
    assert not taken, f"deploy/compose.yaml needs these ports of 127.0.0.1, taken here: {taken}"
    env = {**os.environ, "HALFMOON_BASE": "halfmoon-base:bookworm", "HALFMOON_IMAGE_COMPILE": "1"}
    env["HALFMOON_SECRETS"] = str(tmp_path_factory.mktemp("compose") / "secrets")
    make_secrets(Path(env["HALFMOON_SECRETS"]))
    started = time.monotonic()
    base = subprocess.run([str(ROOT / ".ci" / "base-image")], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert base.returncode == 0, base.stdout + base.stderr
    compose("down", "-v", "--remove-orphans", env=env)  # what a run cut short left
    up = compose("up", "-d", "--build", env=env, timeout=BUILD_TIMEOUT_S)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    print(f"containers: built and started in {time.monotonic() - started:.0f} s")
    try:
        yield env
    finally:
        logs = compose("logs", "--no-color", "--tail", "200", env=env)
        down = compose("down", "-v", "--remove-orphans", env=env)
        assert down.returncode == 0, down.stderr
        (Path(env["HALFMOON_SECRETS"]).parent / "compose.log").write_text(logs.stdout + logs.stderr)


async def ready(url: str, timeout: float = 120.0) -> None:
    async with aiohttp.ClientSession() as http, asyncio.timeout(timeout):
        while True:
            try:
                async with http.get(url) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.25)


async def a_local_program_without_the_password_cannot_read_the_live_rooms() -> None:
    """Redis on the host's network answers anything on 127.0.0.1; its live rooms hold a sealed
    race's seed and contributions before the start. The instances are ready (they have the
    password); a client without it is refused."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=6380, socket_timeout=5)
    try:
        with pytest.raises(redis.exceptions.AuthenticationError):
            await client.keys("hm:*")
    finally:
        await client.aclose()


async def test_a_race_through_the_compose_stack_survives_a_killed_container(stack: dict[str, str]) -> None:
    for port in (8081, 8082, 8083):
        await ready(f"http://127.0.0.1:{port}/readyz")
    await ready(f"{BASE}/readyz")
    await a_local_program_without_the_password_cannot_read_the_live_rooms()
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{BASE}/metrics") as metrics:
            assert metrics.status == 404, "nginx does not proxy /metrics"
        for port in (18081, 18082, 18083):
            async with http.get(f"http://127.0.0.1:{port}/metrics") as metrics:
                assert metrics.status == 200, "each instance's own metrics port"
                text = await metrics.text()
            # the image holds the compiled build (deploy/Dockerfile's default)
            assert 'compiled="true"' in text.split("halfmoon_build_info{", 1)[1].split("}", 1)[0], port
        async with http.post(f"{BASE}/api/rooms", json={"code": CODE}) as created:
            assert created.status == 201, await created.text()
            room = (await created.json())["room"]
    names = ["Ada", "Bob", "Cy", "Di", "Eve", "Flo"]  # round robin: each instance gets players
    clients, tokens = await race_through_a_balancer("ws://127.0.0.1:8000/ws", BASE, room, names)

    killed = subprocess.run(["docker", "kill", f"{PROJECT}_server1_1"], capture_output=True, text=True, timeout=60)
    assert killed.returncode == 0, killed.stderr
    await asyncio.sleep(1.0)
    dropped = [k for k, client in enumerate(clients) if client.closed]
    assert dropped, "some players were on the killed instance"
    for k in dropped:  # they connect again to nginx, which sends them to another instance
        again = await WsClient.connect_url("ws://127.0.0.1:8000/ws", names[k], headers={"Origin": BASE})
        await again.send("resume", room=room, token=tokens[k], since=clients[k].seq)
        assert (await again.next("welcome"))["you"] == f"p{k + 1}"
        await clients[k].close()
        clients[k] = again
    for client in clients:
        await play(client, LINE[2:4], 3)
        await client.send("give_up")
        await client.next("game_over")
    results = (await clients[0].next("race_over", timeout=20))["results"]
    assert sorted((r["name"], r["moves"]) for r in results) == sorted((name, 4) for name in names)
    games = {r["game"] for r in results}
    for client in clients:
        await client.close()
    async with aiohttp.ClientSession() as http, asyncio.timeout(30):  # stored in PostgreSQL, each once
        while True:
            async with http.get(f"{BASE}/api/leaderboard/{CODE}") as response:
                board = await response.json() if response.status == 200 else {"entries": []}
            stored = [g["game"] for e in board["entries"] for g in (e, *e["others"])]
            if games <= set(stored):
                break
            await asyncio.sleep(0.5)
    assert len(stored) == len(set(stored)) and games <= set(stored)
