"""Fixtures for the server tests: a manual clock, a real server on 127.0.0.1, and a fresh
PostgreSQL database."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from halfmoon_server import create_app
from halfmoon_server.clock import ManualClock
from tests.conftest import require_service
from tests.server.instances import RedisServer
from tests.server.redis_cluster import RedisClusterNodes, require_redis_cluster
from tests.server.support import T0, make_settings

StartServer = Callable[..., Awaitable[TestServer]]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def start_server(
    aiohttp_server: Callable[..., Awaitable[TestServer]], tmp_path: Path, clock: ManualClock
) -> StartServer:
    """Start a real server (``create_app``) on 127.0.0.1 with test settings (overridable)."""

    async def start(**changes: Any) -> TestServer:
        settings = make_settings(tmp_path / "data", clock, **changes)
        return await aiohttp_server(create_app(settings))

    return start


async def admin(postgres_url: str, statement: str) -> None:
    admin = create_async_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await admin.dispose()


def _run_aside(coro: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine on its own loop in a worker thread (from a synchronous fixture)."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()


@pytest.fixture
def pg_database(postgres_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database for one test (dropped afterwards), so reruns start clean."""
    name = f"hm_test_{secrets.token_hex(6)}"
    _run_aside(admin(postgres_url, f'CREATE DATABASE "{name}"'))
    try:
        yield f"{postgres_url.rsplit('/', 1)[0]}/{name}"
    finally:
        _run_aside(admin(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def redis_cluster(tmp_path: Path) -> AsyncIterator[RedisClusterNodes]:
    """A Redis Cluster of 3 masters and 3 replicas on ports of its own (skips where redis-server or
    redis-cli is missing, fails under CI=true)."""
    require_redis_cluster()
    nodes = await RedisClusterNodes(tmp_path / "redis-cluster").start()
    yield nodes
    nodes.stop()


@pytest.fixture
async def redis_server(tmp_path: Path) -> AsyncIterator[RedisServer]:
    """A ``redis-server`` of the test's own, on a free port (it may be killed and started again)."""
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    server = await RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.kill()
