"""Optional accounts with passkeys (``/api/account/…``, docs/protocol.md "Accounts"): registering
makes the account and keeps the device's player key history; a synced passkey signs a second device
in, whose key joins the history; sessions are opaque cookies (``HttpOnly``, ``SameSite=Strict``,
``Secure`` over TLS) stored hashed; every ceremony's challenge is used once and within its time; a
replayed, forged, cloned or wrong-origin assertion is refused; state changes need the page's own
``Origin``; devices and passkeys can be revoked; a one-time link adds a device, once."""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halfmoon.protocol import player_key_hash
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.accounts import CEREMONY_TTL_MS, DEVICE_LINK_TTL_MS, REAUTH_WINDOW_MS, SESSION_COOKIE
from halfmoon_server.ports import FinishedGame
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.passkeys import SoftPasskey
from tests.server.support import WsClient

ORIGIN = "http://localhost:8123"
RP_ID = "localhost"


def answer(options: dict[str, Any], credential: dict[str, Any]) -> dict[str, Any]:
    """The body that finishes a ceremony: its id and the browser's credential."""
    return {"ceremony": options["ceremony"], "credential": credential}


class Device:
    """One browser: its own cookies and player key; requests carry the page's ``Origin``."""

    def __init__(self, server: TestServer, *, origin: str = ORIGIN) -> None:
        self.server = server
        self.origin = origin
        self.key = secrets.token_urlsafe(32)
        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))  # 127.0.0.1 keeps cookies
        self.last_headers: Any = None

    async def call(
        self, method: str, path: str, body: Any = None, *, origin: str | None = "", key: bool = True
    ) -> tuple[int, Any]:
        headers = {}
        if origin is not None:
            headers["Origin"] = origin or self.origin
        if key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = None if body is None else json.dumps(body)
        async with self.http.request(method, self.server.make_url(path), data=data, headers=headers) as response:
            self.last_headers = response.headers
            return response.status, await response.json()

    async def register(self, passkey: SoftPasskey, name: str = "Ada", **bend: Any) -> tuple[int, Any]:
        status, options = await self.call("POST", "/api/account/register/options", {"name": name})
        assert status == 200, options
        credential = passkey.create(options["publicKey"], **bend)
        return await self.call("POST", "/api/account/register", answer(options, credential))

    async def sign_in(self, passkey: SoftPasskey, **bend: Any) -> tuple[int, Any]:
        status, options = await self.call("POST", "/api/account/signin/options")
        assert status == 200, options
        credential = passkey.get(options["publicKey"], **bend)
        return await self.call("POST", "/api/account/signin", answer(options, credential))

    def cookie(self) -> str | None:
        found = [c.value for c in self.http.cookie_jar if c.key == SESSION_COOKIE]
        return found[0] if found else None

    async def close(self) -> None:
        await self.http.close()


@pytest.fixture
async def server(start_server: StartServer) -> TestServer:
    return await start_server(public_url=ORIGIN, account_burst=1000.0)


@pytest.fixture
async def devices(server: TestServer) -> Any:
    made: list[Device] = []

    def make(**kwargs: Any) -> Device:
        made.append(Device(server, **kwargs))
        return made[-1]

    yield make
    for device in made:
        await device.close()


async def store_game(server: TestServer, game_id: str, player_key: str, minutes: int) -> None:
    game = FinishedGame(
        nickname="Ada", code="HM1-N-AAAAAAA", mode="solo", room="ABCDEF", score=520, moves=48, time_ms=60_000,
        outcome="won", record={"code": "HM1-N-AAAAAAA", "moves": []}, ranked=False, daily_date=None,
        finished_at=datetime(2026, 11, 28, 12, 0, tzinfo=UTC) + timedelta(minutes=minutes),
        player=player_key_hash(player_key), unranked_reason="casual",
    )
    await server.app[keys.STORAGE].save_game(game, game_id)


async def history_ids(device: Device, *, key: bool) -> list[str]:
    status, body = await device.call("GET", "/api/me/history", origin=None, key=key)
    assert status == 200, body
    return [line["game"] for line in body["recent"]]


async def test_registering_makes_an_account_keeps_the_keys_history_and_a_synced_passkey_signs_in_another_device(
    server: TestServer, devices: Any
) -> None:
    phone, laptop = devices(), devices()
    await store_game(server, "phone1", phone.key, 1)
    await store_game(server, "laptop1", laptop.key, 2)
    passkey = SoftPasskey(RP_ID, ORIGIN)
    status, body = await phone.register(passkey)
    assert status == 201, body
    assert body["account"]["name"] == "Ada" and body["player_linked"] is True
    assert [p["id"] for p in body["account"]["passkeys"]] == [passkey.id]
    # the phone's history, now without its key: the account's
    assert await history_ids(phone, key=False) == ["phone1"]
    # the laptop signs in with the same (synced) passkey: its own key is linked too
    status, body = await laptop.sign_in(passkey)
    assert status == 200, body
    assert body["player_linked"] is True and body["account"]["player_keys"] == 2
    assert await history_ids(laptop, key=False) == ["laptop1", "phone1"]
    assert await history_ids(phone, key=True) == ["laptop1", "phone1"]
    # someone else's key alone still sees only their own games
    stranger = devices()
    await store_game(server, "stranger1", stranger.key, 3)
    assert await history_ids(stranger, key=True) == ["stranger1"]
    status, account = await laptop.call("GET", "/api/account", origin=None)
    assert status == 200
    assert [d["current"] for d in account["devices"]] == [False, True]


async def test_the_session_cookie_is_httponly_strict_and_kept_only_hashed(
    server: TestServer, devices: Any, tmp_path: Path
) -> None:
    phone = devices()
    status, _ = await phone.register(SoftPasskey(RP_ID, ORIGIN))
    assert status == 201
    cookie = phone.last_headers["Set-Cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # served over plain http here
    secret = phone.cookie()
    assert secret is not None and len(secret) >= 40
    database = sqlite3.connect(tmp_path / "data" / "halfmoon.db")
    rows = database.execute("SELECT secret_hash, id FROM account_sessions").fetchall()
    database.close()
    assert len(rows) == 1 and secret not in rows[0] and rows[0][0] != secret


async def test_the_cookie_is_secure_when_the_origin_is_https(start_server: StartServer) -> None:
    server = await start_server(public_url="https://halfmoon.example")
    device = Device(server, origin="https://halfmoon.example")
    try:
        status, _ = await device.register(SoftPasskey("halfmoon.example", "https://halfmoon.example"))
        assert status == 201
        assert "Secure" in device.last_headers["Set-Cookie"]
    finally:
        await device.close()


async def test_a_replayed_forged_cloned_or_wrong_origin_assertion_is_refused(server: TestServer, devices: Any) -> None:
    phone, other = devices(), devices()
    passkey = SoftPasskey(RP_ID, ORIGIN)
    assert (await phone.register(passkey))[0] == 201
    # the same ceremony answered twice: the challenge is gone after the first answer
    status, options = await other.call("POST", "/api/account/signin/options")
    assertion = passkey.get(options["publicKey"])
    finished = answer(options, assertion)
    assert (await other.call("POST", "/api/account/signin", finished))[0] == 200
    status, body = await other.call("POST", "/api/account/signin", finished)
    assert (status, body["error"]["code"]) == (400, "bad_ceremony")
    # the same assertion against a fresh ceremony: not its challenge
    _, fresh = await other.call("POST", "/api/account/signin/options")
    status, body = await other.call("POST", "/api/account/signin", answer(fresh, assertion))
    assert (status, body["error"]["code"]) == (401, "passkey_refused"), body
    assert "challenge" in body["error"]["message"]
    refusals: dict[str, tuple[dict[str, Any], str]] = {
        "forged": ({"forge": True}, "signature"),
        "wrong origin": ({"origin": "http://evil.example:8123"}, "origin"),
        "wrong relying party": ({"rp_id": "evil.example"}, "RP ID"),
        "a counter that did not grow (a cloned authenticator)": ({"count": 1}, "sign count"),
    }
    for what, (bend, said) in refusals.items():
        status, body = await other.sign_in(passkey, **bend)
        assert (status, body["error"]["code"]) == (401, "passkey_refused"), what
        assert said in body["error"]["message"], (what, body)
    # a passkey of no account here
    status, body = await other.sign_in(SoftPasskey(RP_ID, ORIGIN))
    assert (status, body["error"]["code"]) == (401, "unknown_passkey")
    # the genuine passkey still signs in after all that
    assert (await other.sign_in(passkey))[0] == 200


async def test_a_registration_from_another_origin_or_after_its_time_is_refused(
    server: TestServer, devices: Any, clock: ManualClock
) -> None:
    phone = devices()
    status, body = await phone.register(SoftPasskey(RP_ID, ORIGIN), origin="http://evil.example")
    assert (status, body["error"]["code"]) == (400, "passkey_refused")
    status, options = await phone.call("POST", "/api/account/register/options", {"name": "Ada"})
    clock.advance(CEREMONY_TTL_MS + 1)
    credential = SoftPasskey(RP_ID, ORIGIN).create(options["publicKey"])
    status, body = await phone.call("POST", "/api/account/register", answer(options, credential))
    assert (status, body["error"]["code"]) == (400, "bad_ceremony")
    assert phone.cookie() is None
    assert (await phone.call("GET", "/api/account", origin=None))[0] == 401


async def test_a_name_that_looks_like_an_accounts_name_cannot_make_another_account(
    server: TestServer, devices: Any
) -> None:
    assert (await devices().register(SoftPasskey(RP_ID, ORIGIN), name="Ada"))[0] == 201
    status, body = await devices().call("POST", "/api/account/register/options", {"name": "ADA"})
    assert (status, body["error"]["code"]) == (409, "name_taken")
    status, body = await devices().call("POST", "/api/account/register/options", {"name": "a<b"})
    assert (status, body["error"]["code"]) == (400, "bad_name")


async def test_account_changes_need_the_pages_own_origin(server: TestServer, devices: Any) -> None:
    phone = devices()
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN)))[0] == 201
    for origin in (None, "http://evil.example", "http://localhost:8124", "null"):
        for path in ("/api/account/signout", "/api/account/links", "/api/account/register/options"):
            status, body = await phone.call("POST", path, {}, origin=origin)
            assert (status, body["error"]["code"]) == (403, "forbidden_origin"), (origin, path)
    # still signed in: nothing changed
    assert (await phone.call("GET", "/api/account", origin=None))[0] == 200


async def test_signing_out_ends_the_session_for_good(server: TestServer, devices: Any) -> None:
    phone = devices()
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN)))[0] == 201
    secret = phone.cookie()
    assert (await phone.call("POST", "/api/account/signout"))[0] == 200
    assert phone.cookie() is None
    thief = devices()
    thief.http.cookie_jar.update_cookies({SESSION_COOKIE: secret})
    status, body = await thief.call("GET", "/api/account", origin=None)
    assert (status, body["error"]["code"]) == (401, "not_signed_in")


async def test_revoking_a_device_or_a_passkey_signs_those_devices_out(server: TestServer, devices: Any) -> None:
    phone, laptop, tablet = devices(), devices(), devices()
    first, second = SoftPasskey(RP_ID, ORIGIN), SoftPasskey(RP_ID, ORIGIN)
    assert (await phone.register(first))[0] == 201
    # a second passkey for the same account, added from the signed-in phone
    status, options = await phone.call("POST", "/api/account/register/options", {})
    credential = second.create(options["publicKey"])
    status, body = await phone.call("POST", "/api/account/register", answer(options, credential))
    assert status == 201, body
    assert len(body["account"]["passkeys"]) == 2
    assert (await laptop.sign_in(first))[0] == 200
    assert (await tablet.sign_in(second))[0] == 200
    _, account = await phone.call("GET", "/api/account", origin=None)
    tablet_id = next(d["id"] for d in account["devices"] if d["passkey"] == second.id)
    status, _ = await phone.call("DELETE", f"/api/account/devices/{tablet_id}")
    assert status == 200
    assert (await tablet.call("GET", "/api/account", origin=None))[0] == 401
    assert (await laptop.call("GET", "/api/account", origin=None))[0] == 200
    # revoking the first passkey signs out every device it signed in (the phone and the laptop)
    assert (await tablet.sign_in(second))[0] == 200
    status, _ = await tablet.call("DELETE", f"/api/account/passkeys/{first.id}")
    assert status == 200
    assert (await laptop.call("GET", "/api/account", origin=None))[0] == 401
    assert (await phone.call("GET", "/api/account", origin=None))[0] == 401
    status, body = await laptop.sign_in(first)
    assert (status, body["error"]["code"]) == (401, "unknown_passkey")
    # the last passkey stays; another account's device or passkey is nobody's here
    status, body = await tablet.call("DELETE", f"/api/account/passkeys/{second.id}")
    assert (status, body["error"]["code"]) == (409, "last_passkey")
    status, body = await tablet.call("DELETE", "/api/account/devices/nosuchdevice")
    assert (status, body["error"]["code"]) == (404, "no_such_device")


async def test_a_one_time_link_adds_a_device_once_and_only_in_time(
    server: TestServer, devices: Any, clock: ManualClock
) -> None:
    phone, tv, thief = devices(), devices(), devices()
    await store_game(server, "tv1", tv.key, 1)
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN)))[0] == 201
    status, link = await phone.call("POST", "/api/account/links", {})
    assert status == 201 and link["url"] == f"{ORIGIN}/account#link={link['token']}"
    status, body = await tv.call("POST", "/api/account/links/redeem", {"token": link["token"], "label": "TV"})
    assert status == 201, body
    assert body["player_linked"] is True
    assert await history_ids(phone, key=False) == ["tv1"]
    status, body = await thief.call("POST", "/api/account/links/redeem", {"token": link["token"]})
    assert (status, body["error"]["code"]) == (400, "bad_link")
    _, late = await phone.call("POST", "/api/account/links", {})
    clock.advance(DEVICE_LINK_TTL_MS + 1)
    status, body = await thief.call("POST", "/api/account/links/redeem", {"token": late["token"]})
    assert (status, body["error"]["code"]) == (400, "bad_link")
    assert (await thief.call("GET", "/api/account", origin=None))[0] == 401
    # a link needs a signed-in device
    status, body = await thief.call("POST", "/api/account/links", {})
    assert (status, body["error"]["code"]) == (401, "not_signed_in")


async def test_accounts_are_off_without_a_host_name_and_follow_the_rp_id(start_server: StartServer) -> None:
    off = await start_server()
    device = Device(off)
    try:
        status, body = await device.call("POST", "/api/account/signin/options")
        assert (status, body["error"]["code"]) == (404, "accounts_off")
    finally:
        await device.close()


async def test_with_an_rp_id_and_no_public_url_the_requests_host_must_be_under_it(start_server: StartServer) -> None:
    server = await start_server(rp_id="localhost")
    port = server.port
    own = Device(server, origin=f"http://localhost:{port}")
    try:
        async with own.http.post(
            server.make_url("/api/account/signin/options"),
            headers={"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
        ) as response:
            assert response.status == 200
            assert (await response.json())["publicKey"]["rpId"] == "localhost"
        async with own.http.post(
            server.make_url("/api/account/signin/options"),
            headers={"Origin": f"http://evil.example:{port}", "Host": f"evil.example:{port}"},
        ) as response:
            assert response.status == 403
            assert (await response.json())["error"]["code"] == "forbidden_origin"
    finally:
        await own.close()


async def test_bad_input_is_a_clear_error_and_changes_nothing(server: TestServer, devices: Any) -> None:
    phone = devices()
    cases: list[tuple[str, Any, int, str]] = [
        ("/api/account/register", {"ceremony": "x"}, 400, "bad_request"),
        ("/api/account/register", {"ceremony": "x", "credential": {"id": "AAAA"}}, 400, "bad_ceremony"),
        ("/api/account/signin", {"ceremony": 5, "credential": {"id": "AAAA"}}, 400, "bad_request"),
        ("/api/account/signin", [], 400, "bad_json"),
        ("/api/account/links/redeem", {"token": ""}, 400, "bad_request"),
    ]
    for path, body, want_status, want_code in cases:
        status, refused = await phone.call("POST", path, body)
        assert (status, refused["error"]["code"]) == (want_status, want_code), (path, body, refused)
    # a credential that is no credential at all, for a real ceremony
    _, options = await phone.call("POST", "/api/account/register/options", {"name": "Ada"})
    junk = {
        "id": "AAAA", "rawId": "AAAA", "type": "public-key",
        "response": {"clientDataJSON": "!!", "attestationObject": 3},
    }
    status, body = await phone.call("POST", "/api/account/register", answer(options, junk))
    assert (status, body["error"]["code"]) == (400, "passkey_refused")
    status, body = await phone.call("POST", "/api/account/register/options", {"name": "Ada"}, key=False)
    assert status == 200
    phone.key = "not a key"
    status, body = await phone.register(SoftPasskey(RP_ID, ORIGIN))
    assert (status, body["error"]["code"]) == (401, "bad_player_key")
    assert (await phone.call("GET", "/api/account", origin=None, key=False))[0] == 401


async def test_an_accounts_name_is_refused_to_other_identities_in_ranked_play(server: TestServer, devices: Any) -> None:
    phone = devices()
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN), name="Ada"))[0] == 201
    stranger_key = secrets.token_urlsafe(32)
    clients: list[WsClient] = []

    async def enter(kind: str, name: str, key: str | None, **fields: Any) -> dict[str, Any]:
        client = await WsClient.connect(server, name)
        clients.append(client)
        extra = {} if key is None else {"player_key": key}
        await client.send(kind, name=name, **extra, **fields)
        return await client.next("welcome", "error")

    try:
        # the daily: a look-alike of the account's name, with another key or none, is refused
        for name, key in (("ADA", stranger_key), ("Ada", None), ("ada", stranger_key)):
            refused = await enter("daily", name, key)
            assert (refused["type"], refused.get("code")) == ("error", "name_reserved"), (name, refused)
            assert "belongs to an account" in refused["message"]
        # a sealed (ranked) race too; an open race's casual game is not ranked: no refusal
        async with aiohttp.ClientSession() as http:
            async with http.post(server.make_url("/api/rooms"), json={}) as response:
                sealed = (await response.json())["room"]
            async with http.post(server.make_url("/api/rooms"), json={"code": "HM1-N-AAAAAAB"}) as response:
                open_race = (await response.json())["room"]
        refused = await enter("join", "Ada", stranger_key, room=sealed)
        assert (refused["type"], refused.get("code")) == ("error", "name_reserved")
        assert (await enter("join", "Ada", stranger_key, room=open_race))["type"] == "welcome"
        assert (await enter("solo", "Ada", stranger_key, code="HM1-N-AAAAAAB"))["type"] == "welcome"
        # the account's own player key races under its name; another name is anybody's
        assert (await enter("join", "Ada", phone.key, room=sealed))["type"] == "welcome"
        assert (await enter("daily", "Ada", phone.key))["type"] == "welcome"
        assert (await enter("daily", "Bo", stranger_key))["type"] == "welcome"
    finally:
        for client in clients:
            await client.close()


async def test_ceremonies_from_one_address_are_rate_limited(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(public_url=ORIGIN, account_burst=3, account_per_min=6)
    device = Device(server)
    try:
        for _ in range(3):
            assert (await device.call("POST", "/api/account/signin/options"))[0] == 200
        status, body = await device.call("POST", "/api/account/register/options", {"name": "Ada"})
        assert (status, body["error"]["code"]) == (429, "rate_limited")
        status, body = await device.call("POST", "/api/account/links/redeem", {"token": "x" * 43})
        assert (status, body["error"]["code"]) == (429, "rate_limited")
        clock.advance(10_000)  # 6 a minute: one credit back
        assert (await device.call("POST", "/api/account/signin/options"))[0] == 200
        assert (await device.call("POST", "/api/account/signin/options"))[0] == 429
    finally:
        await device.close()


async def test_adding_a_passkey_needs_a_fresh_sign_in_and_signing_in_again_replaces_the_devices_session(
    server: TestServer, devices: Any, clock: ManualClock
) -> None:
    phone = devices()
    first = SoftPasskey(RP_ID, ORIGIN)
    assert (await phone.register(first))[0] == 201
    clock.advance(REAUTH_WINDOW_MS + 1)
    # a cookie alone (stolen, or just old) cannot plant a passkey
    status, body = await phone.call("POST", "/api/account/register/options", {})
    assert (status, body["error"]["code"]) == (401, "sign_in_again")
    # signing in again on this device: a fresh session replaces the old one (still one device)
    old = phone.cookie()
    assert (await phone.sign_in(first))[0] == 200
    assert phone.cookie() != old
    _, account = await phone.call("GET", "/api/account", origin=None)
    assert len(account["devices"]) == 1
    status, options = await phone.call("POST", "/api/account/register/options", {})
    assert status == 200
    credential = SoftPasskey(RP_ID, ORIGIN).create(options["publicKey"])
    status, body = await phone.call("POST", "/api/account/register", answer(options, credential))
    assert status == 201 and len(body["account"]["passkeys"]) == 2
    thief = devices()
    thief.http.cookie_jar.update_cookies({SESSION_COOKIE: old})
    assert (await thief.call("GET", "/api/account", origin=None))[0] == 401


async def test_on_postgresql_a_synced_passkey_signs_in_once_per_challenge_and_history_follows(
    start_server: StartServer, pg_database: str
) -> None:
    server = await start_server(public_url=ORIGIN, account_burst=1000.0, db_url=pg_database)
    phone, laptop = Device(server), Device(server)
    try:
        await store_game(server, "phone1", phone.key, 1)
        await store_game(server, "laptop1", laptop.key, 2)
        passkey = SoftPasskey(RP_ID, ORIGIN)
        assert (await phone.register(passkey))[0] == 201
        _, options = await laptop.call("POST", "/api/account/signin/options")
        finished = answer(options, passkey.get(options["publicKey"]))
        assert (await laptop.call("POST", "/api/account/signin", finished))[0] == 200
        status, body = await laptop.call("POST", "/api/account/signin", finished)
        assert (status, body["error"]["code"]) == (400, "bad_ceremony")
        assert await history_ids(laptop, key=False) == ["laptop1", "phone1"]
        status, body = await laptop.sign_in(passkey, count=1)
        assert (status, body["error"]["code"]) == (401, "passkey_refused")
    finally:
        await phone.close()
        await laptop.close()


async def test_a_terminal_is_linked_with_a_short_code_approved_once_in_a_signed_in_browser(
    server: TestServer, devices: Any, clock: ManualClock
) -> None:
    phone, terminal, other = devices(), devices(), devices()
    assert (await phone.register(SoftPasskey(RP_ID, ORIGIN), name="Ada"))[0] == 201
    await store_game(server, "term1", terminal.key, 1)
    status, body = await terminal.call("GET", "/api/account/player", origin=None)
    assert (status, body["error"]["code"]) == (404, "not_linked")
    status, shown = await terminal.call("POST", "/api/account/terminal", origin=None)
    assert status == 201 and re.fullmatch(r"[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}", shown["code"]), shown
    # a browser signed in nowhere cannot approve it; a mistyped code is refused and changes nothing
    status, body = await other.call("POST", "/api/account/terminal/approve", {"code": shown["code"]})
    assert (status, body["error"]["code"]) == (401, "not_signed_in")
    status, body = await phone.call("POST", "/api/account/terminal/approve", {"code": "AAAA-AAA0"})
    assert (status, body["error"]["code"]) == (400, "bad_terminal_code")
    # typed in lower case without the dash: approved, the terminal's key linked
    typed = shown["code"].replace("-", "").lower()
    assert (await phone.call("POST", "/api/account/terminal/approve", {"code": typed}))[0] == 200
    status, body = await terminal.call("GET", "/api/account/player", origin=None)
    assert (status, body) == (200, {"account": "Ada"})
    assert await history_ids(phone, key=False) == ["term1"]
    # once only
    status, body = await phone.call("POST", "/api/account/terminal/approve", {"code": shown["code"]})
    assert (status, body["error"]["code"]) == (400, "bad_terminal_code")
    # and within its time
    _, late = await other.call("POST", "/api/account/terminal", origin=None)
    clock.advance(DEVICE_LINK_TTL_MS + 1)
    status, body = await phone.call("POST", "/api/account/terminal/approve", {"code": late["code"]})
    assert (status, body["error"]["code"]) == (400, "bad_terminal_code")
    assert (await other.call("GET", "/api/account/player", origin=None))[0] == 404
    # a terminal code needs the terminal's player key
    status, body = await terminal.call("POST", "/api/account/terminal", origin=None, key=False)
    assert (status, body["error"]["code"]) == (401, "no_player_key")
