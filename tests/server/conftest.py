"""Fixtures for the server tests: a manual clock and a real server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from halfmoon_server import create_app
from halfmoon_server.clock import ManualClock
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
