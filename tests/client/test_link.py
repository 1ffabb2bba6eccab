"""``halfmoon link``: the terminal shows a short code, a browser signed in to the account approves
it, and the terminal's player key is then the account's (its games join the account's history, the
account's name is its own in ranked play); a code nobody approves expires."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halfmoon_client import cli
from halfmoon_client.seats import SeatBook
from halfmoon_server import create_app
from halfmoon_server.settings import Settings
from tests.server.passkeys import SoftPasskey


@pytest.fixture
async def localhost_url(aiohttp_server: Callable[..., Awaitable[TestServer]], tmp_path: Path) -> str:
    """A server whose passkeys belong to ``localhost`` (no public URL: the request's own origin)."""
    settings = Settings(
        data_dir=tmp_path, db_url=f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}", secret=b"client-tests",
        solver_workers=0, daily_requires_winnable=False, rp_id="localhost",
    )
    server = await aiohttp_server(create_app(settings))
    return f"http://localhost:{server.port}"


async def signed_in_browser(base: str) -> aiohttp.ClientSession:
    """A browser's session signed in to a new account «Ada» (a passkey registered)."""
    http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True), headers={"Origin": base})
    async with http.post(f"{base}/api/account/register/options", json={"name": "Ada"}) as response:
        options = await response.json()
    credential = SoftPasskey("localhost", base).create(options["publicKey"])
    body = {"ceremony": options["ceremony"], "credential": credential}
    async with http.post(f"{base}/api/account/register", json=body) as response:
        assert response.status == 201, await response.text()
    return http


def link_command(server: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="halfmoon")
    cli.register_link(parser.add_subparsers(dest="command"))
    return parser.parse_args(["link", "--server", server, "--lang", "en"])


async def test_a_code_shown_by_halfmoon_link_and_approved_in_a_browser_links_the_terminal(
    localhost_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "LINK_POLL_S", 0.05)
    browser = await signed_in_browser(localhost_url)
    try:
        args = link_command(localhost_url)
        command = asyncio.ensure_future(asyncio.to_thread(args.func, args))
        shown = ""
        async with asyncio.timeout(10):
            while "type the code" not in shown:
                await asyncio.sleep(0.05)
                shown += capsys.readouterr().out
        code = shown.split("type the code ")[1].split(" ")[0]
        async with browser.post(f"{localhost_url}/api/account/terminal/approve", json={"code": code}) as response:
            assert response.status == 200, await response.text()
        assert await asyncio.wait_for(command, 10) == 0
        out = shown + capsys.readouterr().out
        assert "Done: this terminal is linked to the account “Ada”." in out
        # the key it linked is the terminal's own, kept in the state directory
        key = SeatBook.default().player_key(localhost_url, create=False)
        assert key is not None
        async with aiohttp.ClientSession() as http:
            headers = {"Authorization": f"Bearer {key}"}
            async with http.get(f"{localhost_url}/api/account/player", headers=headers) as response:
                assert (response.status, await response.json()) == (200, {"account": "Ada"})
        # asked again: linked already, no new code
        assert await asyncio.to_thread(args.func, args) == 0
        assert "linked to the account “Ada” already" in capsys.readouterr().out
    finally:
        await browser.close()


async def test_a_code_nobody_approves_expires_and_the_command_says_so(
    localhost_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = SeatBook.default().player_key(localhost_url)
    assert key is not None
    # a clock already past every code's expiry: the code is shown, then it has expired
    linked: Any = await cli.link_terminal(localhost_url, key, "it", now_ms=lambda: 10**15, poll_s=0.01)
    assert linked is False
    out = capsys.readouterr().out
    assert "scrivi il codice" in out and "Il codice è scaduto senza approvazione" in out


async def test_a_server_without_accounts_is_one_clear_line(capsys: pytest.CaptureFixture[str], server_url: str) -> None:
    args = link_command(server_url)
    assert await asyncio.to_thread(args.func, args) == 1
    err = capsys.readouterr().err
    assert err.startswith("halfmoon link: ") and "accounts are off" in err and "Traceback" not in err
