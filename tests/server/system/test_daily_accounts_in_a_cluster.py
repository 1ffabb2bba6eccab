"""The daily challenge and accounts across real ``halfmoon serve --redis … --db postgresql…``
processes: a device signed in to an account that reaches another instance than the one owning
the account's daily attempt is relayed there with its session, and continues the attempt; two
devices of the account asking at once on two instances get one ranked attempt between them (the
database's unique (day, account) decides, not an instance's memory).

Each test starts its own ``redis-server`` and a fresh PostgreSQL database; they skip where those
are missing, except under CI=true."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from yarl import URL

from halfmoon_server.core.accounts import SESSION_COOKIE
from tests.server.instances import Instance, RedisServer, tracebacks
from tests.server.passkeys import SoftPasskey
from tests.server.support import WsClient
from tests.server.web.test_accounts import Device


class _At:
    """What :class:`Device` needs of a server: its URLs (an instance as ``localhost``: the RP id)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def make_url(self, path: str) -> URL:
        return URL(self.base + path)


@pytest.fixture
async def two(tmp_path: Path, redis_server: RedisServer, pg_database: str) -> AsyncIterator[list[Instance]]:
    instances = [
        Instance(tmp_path / f"instance{k}", db=pg_database, redis=redis_server.url, env={"HALFMOON_RP_ID": "localhost"})
        for k in range(2)
    ]
    await asyncio.gather(*(inst.start() for inst in instances))
    yield instances
    for inst in instances:
        inst.stop()


async def account_devices(one: Instance) -> tuple[Device, Device]:
    """A phone that made an account on ``one`` and a laptop signed in to it with the same passkey."""
    origin = f"http://localhost:{one.port}"
    passkey = SoftPasskey("localhost", origin)
    phone, laptop = Device(_At(origin), origin=origin), Device(_At(origin), origin=origin)  # type: ignore[arg-type]
    assert (await phone.register(passkey, name="Ada"))[0] == 201
    assert (await laptop.sign_in(passkey))[0] == 200
    return phone, laptop


async def ask_daily(inst: Instance, device: Device, name: str, *, signed_in: bool = True) -> tuple[WsClient, Any]:
    cookie = device.cookie() if signed_in else None
    headers = {} if cookie is None else {"Cookie": f"{SESSION_COOKIE}={cookie}"}
    client = await WsClient.connect_url(f"ws://localhost:{inst.port}/ws", name, headers=headers)
    await client.send("daily", name=name, player_key=device.key)
    return client, await client.next("welcome", "error", timeout=20)


async def test_a_signed_in_device_on_another_instance_is_relayed_to_the_attempt_and_continues_it(
    two: list[Instance],
) -> None:
    one, other = two
    phone, laptop = await account_devices(one)
    clients: list[WsClient] = []
    try:
        on_phone, started = await ask_daily(one, phone, "Ada")
        clients.append(on_phone)
        assert started["type"] == "welcome" and started["ranked"] is True, started
        on_laptop, resumed = await ask_daily(other, laptop, "Ada's laptop")
        clients.append(on_laptop)
        assert resumed["type"] == "welcome", resumed
        assert (resumed["room"]["room"], resumed["you"]) == (started["room"]["room"], started["you"])
        assert "token" not in resumed and resumed["room"]["started_at"] == started["room"]["started_at"]
    finally:
        for client in clients:
            await client.close()
        await phone.close()
        await laptop.close()


async def test_two_devices_of_an_account_on_two_instances_at_once_get_one_ranked_attempt(
    two: list[Instance],
) -> None:
    one, other = two
    phone, laptop = await account_devices(one)
    clients: list[WsClient] = []
    try:
        # not signed in (their keys are linked all the same): no resume, two attempts, one ranked
        answers = await asyncio.gather(
            ask_daily(one, phone, "Ada", signed_in=False), ask_daily(other, laptop, "Ada two", signed_in=False)
        )
        clients += [client for client, _ in answers]
        welcomes = [welcome for _, welcome in answers]
        assert all(w["type"] == "welcome" for w in welcomes), welcomes
        assert sorted(w["ranked"] for w in welcomes) == [False, True], welcomes
    finally:
        for client in clients:
            await client.close()
        await phone.close()
        await laptop.close()


async def test_a_cookie_that_cannot_be_a_session_is_not_carried_to_the_rooms_owner(two: list[Instance]) -> None:
    """A quoted cookie that unquotes to a line break (``"\\015\\012…"``) would be a header of its
    own in the relay's request to the room's owner: it is no session, so the relay carries no
    cookie, and the connection is relayed like any other (no failure, no traceback)."""
    one, other = two
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(f"{one.base}/api/rooms", json={})).json())["room"]
    clients: list[WsClient] = []
    try:
        ada = await WsClient.connect_url(one.ws, "ada")
        clients.append(ada)
        await ada.send("join", room=room, name="Ada")
        await ada.next("welcome")
        headers = {"Cookie": f'{SESSION_COOKIE}="ab\\015\\012X-Injected: 1"'}
        bob = await WsClient.connect_url(f"{other.ws}?room={room}", "bob", headers=headers)
        clients.append(bob)
        await bob.send("join", room=room, name="Bob")
        welcome = await bob.next("welcome", "error", timeout=20)
        assert welcome["type"] == "welcome", welcome
        assert [p["name"] for p in welcome["room"]["players"]] == ["Ada", "Bob"]
    finally:
        for client in clients:
            await client.close()
    assert tracebacks(other) == [] and tracebacks(one) == []
