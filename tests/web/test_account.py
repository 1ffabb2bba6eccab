"""Accounts with passkeys in Chromium, through the DevTools virtual authenticator (CDP
``WebAuthn.enable``, ``WebAuthn.addVirtualAuthenticator``: CTAP2, internal transport, resident
keys, user verification) against ``http://localhost:PORT`` (an IP address cannot be a relying
party): a phone registers a passkey and keeps its games; a desktop signs in with the same passkey
copied to its own authenticator (a synced passkey: ``WebAuthn.getCredentials`` /
``WebAuthn.addCredential``) and sees both devices' games; a one-time link adds a third device; a
terminal's short code is approved on the phone; the phone revokes the desktop, which is signed
out. The daily challenge follows the account: a phone starts today's ranked attempt and moves,
the desktop signed in to the account continues that attempt (same board, moves and clock) and
gets no second ranked one; the first device, told its attempt is played elsewhere, cannot play
its stale board and takes the attempt back with «Play here». Signed in, /me is the account's and
says so; unlinking a device leaves the focus on the words saying it. axe-core checks the page
signed out and in; screenshots at phone (390×844) and desktop (1280×800) sizes."""

from __future__ import annotations

import base64
import json
import re
import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, CDPSession, Page, Route, ViewportSize, expect

from halfmoon.codes import daily_code
from halfmoon.game import Game
from tests.conftest import ROOT
from tests.ports import free_port
from tests.web.audits import AXE_JS, axe_violations, require_tool
from tests.web.conftest import load_vector, play, screenshot, stop_process, wait_answering, wait_board
from tests.web.test_history import ws_game

pytestmark = pytest.mark.browser

WON = load_vector("won_records.json")["records"][0]
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 800}

SECRET = b"browser-tests-daily-secret-32-bytes"
_RUNNER = f"""
import sys
from pathlib import Path
from aiohttp import web
from halfmoon_server import Settings, create_app
SECRET = {SECRET!r}
port, data = int(sys.argv[1]), Path(sys.argv[2])
settings = Settings.from_env(port=port, db_url=f"sqlite+aiosqlite:///{{data / 'halfmoon.db'}}", data_dir=data,
                             secret=SECRET, solver_workers=0,
                             daily_requires_winnable=False, public_url=f"http://localhost:{{port}}",
                             room_burst=1000.0, rate_burst=1000.0, rate_per_s=1000.0,
                             account_burst=1000.0, account_per_min=1000.0)  # (the limit: test_accounts.py)
web.run_app(create_app(settings), host="127.0.0.1", port=port, print=None)
"""


@pytest.fixture(scope="module")
def localhost_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose public URL is http://localhost:PORT: the passkeys' origin, RP id localhost."""
    tmp = tmp_path_factory.mktemp("accounts")
    port = free_port()
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", _RUNNER, str(port), str(tmp)], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://localhost:{port}"
    if not wait_answering(f"http://127.0.0.1:{port}/healthz", proc, 20):
        proc.kill()
        log.close()
        pytest.fail("the server did not start:\n" + (tmp / "server.log").read_text()[-3000:])
    try:
        yield base
    finally:
        stop_process(proc)
        log.close()


class Device:
    """A browser context with a virtual platform authenticator of its own."""

    def __init__(self, browser: Browser, base: str, viewport: ViewportSize, lang: str = "it") -> None:
        self.lang = lang
        self.context: BrowserContext = browser.new_context(
            viewport=viewport, locale="it-IT" if lang == "it" else "en-GB", base_url=base
        )
        self.context.set_default_timeout(10_000)
        settings = json.dumps(json.dumps({"lang": lang}))
        self.context.add_init_script(
            f"if (!localStorage.getItem('halfmoon.settings')) localStorage.setItem('halfmoon.settings', {settings});"
        )
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.cdp: CDPSession = self.context.new_cdp_session(self.page)
        self.cdp.send("WebAuthn.enable")
        options = {"protocol": "ctap2", "transport": "internal", "hasResidentKey": True,
                   "hasUserVerification": True, "isUserVerified": True}
        self.authenticator = self.cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})["authenticatorId"]

    def register(self, name: str) -> None:
        """Make an account of this name with this device's passkey (the /account page's form)."""
        self.page.goto("/account")
        self.page.fill("#account-name", name)
        self.page.locator("#account-register button").click()
        expect(self.page.locator("#account-status")).to_contain_text(
            "Account creato" if self.lang == "it" else "Account created"
        )

    def credentials(self) -> list[dict[str, Any]]:
        return list(self.cdp.send("WebAuthn.getCredentials", {"authenticatorId": self.authenticator})["credentials"])

    def add_credential(self, credential: dict[str, Any]) -> None:
        self.cdp.send("WebAuthn.addCredential", {"authenticatorId": self.authenticator, "credential": credential})

    def key(self) -> str:
        key = self.page.evaluate("() => localStorage.getItem('halfmoon.playerKey')")
        assert isinstance(key, str)
        return key

    def close(self) -> None:
        self.context.close()
        assert not self.errors, f"JavaScript errors in the page: {self.errors}"


def terminal_code(base: str, key: str) -> str:
    """A code as ``halfmoon link`` gets it for its player key."""
    request = urllib.request.Request(f"{base}/api/account/terminal", data=b"{}", method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["code"])


def linked_account(base: str, key: str) -> str:
    request = urllib.request.Request(f"{base}/api/account/player", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["account"])


def history_games(device: Device) -> list[str]:
    device.page.goto("/me")
    expect(device.page.locator("section.history table").first).to_be_visible()
    return [str(g) for g in device.page.locator("tr[data-game]").evaluate_all("rows => rows.map(r => r.dataset.game)")]


def check_axe(page: Page, state: str) -> None:
    source = require_tool("axe-core (npm)", AXE_JS).read_text(encoding="utf-8")
    page.wait_for_timeout(300)
    violations = axe_violations(page, source)
    assert not violations, (state, violations)


def test_a_passkey_made_on_a_phone_signs_in_a_desktop_which_the_phone_then_revokes(
    browser: Browser, localhost_server: str
) -> None:
    base = localhost_server
    phone = Device(browser, base, PHONE, "it")
    desktop = Device(browser, base, DESKTOP, "en")
    tv = Device(browser, base, DESKTOP, "en")
    try:
        # a game on each device first, under each one's own player key
        phone.page.goto("/account")
        expect(phone.page.locator("#account-register")).to_be_visible()
        check_axe(phone.page, "signed out (it, phone)")
        desktop.page.goto("/account")
        expect(desktop.page.locator("#account-signin")).to_be_visible()
        screenshot(desktop.page, "account-signed-out-1280x800")
        phone_game = str(ws_game(base, phone.key(), WON["code"], undo_first=False, win=False)["game"])
        desktop_game = str(ws_game(base, desktop.key(), WON["code"], undo_first=False, win=False)["game"])

        # the phone registers a passkey: an account named Ada, this device linked
        phone.page.fill("#account-name", "Ada")
        screenshot(phone.page, "account-signed-out-390x844")
        phone.page.locator("#account-register button").click()
        expect(phone.page.locator("#account-status")).to_contain_text("Account creato")
        expect(phone.page.locator("#devices li")).to_have_count(1)
        assert len(phone.credentials()) == 1
        assert history_games(phone) == [phone_game]

        # the desktop gets the same passkey (synced) and signs in: both devices' games are its history
        credential = phone.credentials()[0]
        assert credential["isResidentCredential"] and credential["rpId"] == "localhost"
        desktop.add_credential(credential)
        desktop.page.goto("/account")
        desktop.page.locator("#account-signin").click()
        expect(desktop.page.locator("#account-status")).to_contain_text("Signed in")
        expect(desktop.page.locator("#devices li")).to_have_count(2)
        check_axe(desktop.page, "signed in (en, desktop)")
        screenshot(desktop.page, "account-signed-in-1280x800")
        assert sorted(history_games(desktop)) == sorted([phone_game, desktop_game])
        cookies = [c for c in desktop.context.cookies() if c["name"] == "hm_session"]
        assert len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
        assert desktop.page.evaluate("() => document.cookie") == ""  # no script reads the session

        # a one-time link from the phone signs a third device in; the link works once
        phone.page.goto("/account")
        phone.page.locator("#account-link").click()
        link = phone.page.locator("#device-link-url").input_value()
        assert "/account#link=" in link
        screenshot(phone.page, "account-signed-in-390x844")
        tv.page.goto(link)
        expect(tv.page.locator("#account-status")).to_contain_text("linked")
        assert "#link=" not in tv.page.url
        expect(tv.page.locator("#devices li")).to_have_count(3)

        # a terminal's code (halfmoon link) approved on the phone: the terminal's key is the account's
        terminal_key = secrets.token_urlsafe(32)
        code = terminal_code(base, terminal_key)
        phone.page.fill("#terminal-code", code.lower().replace("-", ""))
        phone.page.locator("#terminal-approve button").click()
        expect(phone.page.locator("#account-status")).to_contain_text("Terminale collegato")
        assert linked_account(base, terminal_key) == "Ada"

        # the phone revokes the desktop: the desktop is signed out
        phone.page.goto("/account")
        expect(phone.page.locator("#devices li")).to_have_count(3)
        desktop_row = phone.page.locator("#devices li").nth(1)
        desktop_row.locator("button").click()
        expect(phone.page.locator("#devices li")).to_have_count(2)
        desktop.page.goto("/account")
        expect(desktop.page.locator("#account-signin")).to_be_visible()
        assert history_games(desktop) == [desktop_game]  # its own key's games only, signed out
        # the used link again: refused, nothing signed in
        again = Device(browser, base, PHONE, "en")
        try:
            again.page.goto(link)
            expect(again.page.locator("#account-status")).to_contain_text("no longer works")
            expect(again.page.locator("#account-signin")).to_be_visible()
        finally:
            again.close()
    finally:
        for device in (phone, desktop, tv):
            device.close()


def test_a_second_passkey_added_on_another_authenticator_signs_in_and_the_first_once_unlinked_does_not(
    browser: Browser, localhost_server: str
) -> None:
    base = localhost_server
    phone = Device(browser, base, PHONE, "en")
    laptop = Device(browser, base, DESKTOP, "en")
    old_device = Device(browser, base, DESKTOP, "en")
    try:
        phone.register("Grace")
        expect(phone.page.locator("#passkeys li")).to_have_count(1)
        first = phone.credentials()[0]

        # the phone's platform authenticator goes (a new phone); a security key takes its place, and
        # "Add a passkey" (just after the account was made: a fresh sign-in) registers on it
        phone.cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": phone.authenticator})
        options = {"protocol": "ctap2", "transport": "usb", "hasResidentKey": True,
                   "hasUserVerification": True, "isUserVerified": True}
        added = phone.cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})
        phone.authenticator = added["authenticatorId"]
        phone.page.locator("#account-add-passkey").click()
        expect(phone.page.locator("#account-status")).to_contain_text("Passkey added")
        expect(phone.page.locator("#passkeys li")).to_have_count(2)
        second = phone.credentials()[0]
        assert second["credentialId"] != first["credentialId"]
        check_axe(phone.page, "two passkeys (en, phone)")

        # the new passkey alone signs another device in to the same account
        laptop.add_credential(second)
        laptop.page.goto("/account")
        laptop.page.locator("#account-signin").click()
        expect(laptop.page.locator("#account-status")).to_contain_text("Signed in")
        expect(laptop.page.locator("#passkeys li")).to_have_count(2)

        # the first passkey unlinked from the laptop: it signs nobody in any more
        # (the page names a passkey by its base64url id; DevTools gives the credential's in base64)
        first_id = base64.urlsafe_b64encode(base64.b64decode(first["credentialId"])).decode().rstrip("=")
        laptop.page.locator(f"#passkeys li[data-passkey='{first_id}'] button").click()
        expect(laptop.page.locator("#passkeys li")).to_have_count(1)
        old_device.add_credential(first)
        old_device.page.goto("/account")
        old_device.page.locator("#account-signin").click()
        expect(old_device.page.locator("#account-status")).to_contain_text("no account here")
        expect(old_device.page.locator("#account-signin")).to_be_visible()
        # and the one left still does: the laptop is signed in with it
        laptop.page.goto("/account")
        expect(laptop.page.locator("#passkeys li")).to_have_count(1)
    finally:
        for device in (phone, laptop, old_device):
            device.close()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_chromiums_own_assertion_replayed_forged_or_from_another_origin_signs_nobody_in(
    browser: Browser, localhost_server: str
) -> None:
    """The virtual authenticator's real assertions, taken on their way to the server: the one that
    signed in, sent again; one whose signature is bent; one whose client data names another origin;
    and a genuine one posted from another site's page (its Origin header). Each is refused with
    what it is, and nothing is signed in by any of them."""
    base = localhost_server
    phone = Device(browser, base, PHONE, "en")
    desktop = Device(browser, base, DESKTOP, "en")
    try:
        phone.register("Lin")
        desktop.add_credential(phone.credentials()[0])

        sent: list[dict[str, Any]] = []
        bend: dict[str, Any] = {"how": None}

        def on_signin(route: Route) -> None:
            body = json.loads(route.request.post_data or "{}")
            sent.append(json.loads(json.dumps(body)))
            response = body["credential"]["response"]
            if bend["how"] == "forged":
                signature = bytearray(_unb64url(response["signature"]))
                signature[-1] ^= 0x01
                response["signature"] = _b64url(bytes(signature))
            elif bend["how"] == "origin":
                client_data = json.loads(_unb64url(response["clientDataJSON"]))
                client_data["origin"] = "http://evil.example"
                response["clientDataJSON"] = _b64url(json.dumps(client_data).encode())
            route.continue_(post_data=json.dumps(body))

        desktop.page.route("**/api/account/signin", on_signin)
        desktop.page.goto("/account")

        def signed_out() -> None:
            me = desktop.page.request.get(f"{base}/api/account")
            assert me.status == 401, me.text()

        for how, said in (("forged", "signature"), ("origin", "origin")):
            bend["how"] = how
            with desktop.page.expect_response(f"{base}/api/account/signin") as refused:
                desktop.page.locator("#account-signin").click()
            error = refused.value.json()["error"]
            assert (refused.value.status, error["code"]) == (401, "passkey_refused"), (how, error)
            assert said in error["message"], (how, error)
            expect(desktop.page.locator("#account-status")).not_to_have_text("")
            expect(desktop.page.locator("#account-signin")).to_be_visible()
            signed_out()
            answer = desktop.page.request.post(
                f"{base}/api/account/signin", data=json.dumps(sent[-1]),
                headers={"Origin": base, "Content-Type": "application/json"})
            assert answer.status == 400, (how, answer.text())  # that ceremony is spent either way

        # the genuine assertion signs in once; sent again it is refused, its ceremony spent
        bend["how"] = None
        desktop.page.locator("#account-signin").click()
        expect(desktop.page.locator("#account-status")).to_contain_text("Signed in")
        desktop.page.request.post(f"{base}/api/account/signout", headers={"Origin": base})
        signed_out()
        replayed = desktop.page.request.post(
            f"{base}/api/account/signin", data=json.dumps(sent[-1]),
            headers={"Origin": base, "Content-Type": "application/json"})
        assert (replayed.status, replayed.json()["error"]["code"]) == (400, "bad_ceremony")
        signed_out()

        # a genuine ceremony posted from another site's page: refused before it is looked at
        options = desktop.page.request.post(f"{base}/api/account/signin/options", data="{}",
                                            headers={"Origin": base, "Content-Type": "application/json"})
        assert options.status == 200
        elsewhere = desktop.page.request.post(
            f"{base}/api/account/signin", data=json.dumps({**sent[-1], "ceremony": options.json()["ceremony"]}),
            headers={"Origin": "http://evil.example", "Content-Type": "application/json"})
        assert (elsewhere.status, elsewhere.json()["error"]["code"]) == (403, "forbidden_origin")
        signed_out()
    finally:
        for device in (phone, desktop):
            device.close()


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_name_field_for_a_new_account_is_wide_on_a_phone_in_both_languages(
    browser: Browser, localhost_server: str, lang: str
) -> None:
    """The field is never squeezed beside its button (the Italian «Crea con una passkey» left it
    a third of the screen): at least 12rem wide, the button under it when both do not fit."""
    phone = Device(browser, localhost_server, PHONE, lang)
    try:
        phone.page.goto("/account")
        field = phone.page.locator("#account-name").bounding_box()
        button = phone.page.locator("#account-register button").bounding_box()
        assert field is not None and button is not None
        assert field["width"] >= 12 * 16, field
        under = button["y"] >= field["y"] + field["height"]
        assert under or button["x"] >= field["x"] + field["width"], (field, button)
    finally:
        phone.close()


def todays_deal() -> Game:
    """Today's daily deal as this module's server deals it (no solver: the plain daily code)."""
    return Game.from_code(str(daily_code(datetime.now(UTC).date(), SECRET, long=True)))


def test_a_daily_attempt_begun_on_a_phone_is_continued_on_a_signed_in_desktop_and_not_given_twice(
    browser: Browser, localhost_server: str
) -> None:
    base = localhost_server
    phone = Device(browser, base, PHONE, "it")
    desktop = Device(browser, base, DESKTOP, "en")
    try:
        phone.register("Bea")
        desktop.add_credential(phone.credentials()[0])
        desktop.page.goto("/account")
        desktop.page.locator("#account-signin").click()
        expect(desktop.page.locator("#account-status")).to_contain_text("Signed in")
        for device, lang in ((phone, "it"), (desktop, "en")):
            device.page.evaluate(
                "lang => localStorage.setItem('halfmoon.settings', JSON.stringify({lang, name: 'Bea'}))", lang
            )

        # the phone starts today's attempt (ranked) and makes a move
        game = todays_deal()
        phone.page.goto("/daily")
        wait_board(phone.page, game)
        expect(phone.page.locator(".daily-line")).to_have_attribute("data-ranked", "true")
        play(phone.page, game, list(next(iter(game.legal_moves())).names()))
        phone_clock = phone.page.locator('[data-stat="time"]').text_content()

        # the desktop, signed in to the same account, opens the daily: the phone's attempt goes on
        # there — the same board and moves, the clock still running, said in words
        desktop.page.goto("/daily")
        wait_board(desktop.page, game)
        expect(desktop.page.locator('[data-stat="moves"]')).to_have_text("1")
        expect(desktop.page.locator('[data-stat="score"]')).to_have_text(str(game.score))
        line = desktop.page.locator(".daily-line")
        expect(line).to_have_attribute("data-ranked", "true")
        expect(line.locator(".daily-continued")).to_have_text(
            "You are continuing the attempt started on another device of your account"
        )
        assert (desktop.page.locator('[data-stat="time"]').text_content() or "") >= (phone_clock or "")
        # the phone is told its game is open elsewhere
        expect(phone.page.locator("#banner")).to_contain_text("su un altro dispositivo")
        screenshot(phone.page, "daily-taken-elsewhere-390x844")
        check_axe(desktop.page, "the daily continued (en, desktop)")
        screenshot(desktop.page, "daily-continued-1280x800")
        # the desktop plays on: the same game
        play(desktop.page, game, list(next(iter(game.legal_moves())).names()))

        # in Italian on the phone, once it takes the attempt back (a reload: it still holds the seat)
        phone.page.reload()
        wait_board(phone.page, game)
        expect(phone.page.locator('[data-stat="moves"]')).to_have_text("2")
        expect(phone.page.locator(".daily-line .daily-continued")).to_have_count(0)  # its own seat: nothing to say

        # the desktop gives the attempt up; asking for the daily again is no second ranked attempt
        desktop.page.goto("/daily")
        expect(desktop.page.locator(".daily-continued")).to_be_visible()
        desktop.page.locator(".bar").get_by_role("button", name="Give up").click()
        desktop.page.locator("dialog.confirm").get_by_role("button", name="Give up").click()
        expect(desktop.page.locator(".endbox")).to_be_visible()
        desktop.page.goto("/")
        desktop.page.goto("/daily")
        again = desktop.page.locator(".daily-line")
        expect(again).to_have_attribute("data-ranked", "false")
        expect(again).to_contain_text("by your account")
        expect(desktop.page.locator('[data-stat="moves"]')).to_have_text("0")
    finally:
        for device in (phone, desktop):
            device.close()


def test_a_device_whose_daily_goes_on_elsewhere_cannot_play_its_stale_board_and_takes_it_back_with_one_button(
    browser: Browser, localhost_server: str
) -> None:
    """The first device is told its attempt is being played elsewhere and that the clock runs;
    its stale board, Undo and Give up are disabled (a tap there would be lost: its socket is
    closed); «Play here» takes the attempt back without a reload, the focus on the board again."""
    base = localhost_server
    phone = Device(browser, base, PHONE, "en")
    desktop = Device(browser, base, DESKTOP, "en")
    try:
        phone.register("Cleo")
        desktop.add_credential(phone.credentials()[0])
        desktop.page.goto("/account")
        desktop.page.locator("#account-signin").click()
        expect(desktop.page.locator("#account-status")).to_contain_text("Signed in")
        settings = "() => localStorage.setItem('halfmoon.settings', JSON.stringify({lang: 'en', name: 'Cleo'}))"
        for device in (phone, desktop):
            device.page.evaluate(settings)

        game = todays_deal()
        phone.page.goto("/daily")
        wait_board(phone.page, game)
        play(phone.page, game, list(next(iter(game.legal_moves())).names()))
        phone.page.locator('.board [data-pos="1"]').focus()  # the keyboard player's focus on a card
        desktop.page.goto("/daily")
        wait_board(desktop.page, game)
        play(desktop.page, game, list(next(iter(game.legal_moves())).names()))

        banner = phone.page.locator("#banner")
        expect(banner).to_contain_text("being played elsewhere")
        expect(banner).to_contain_text("clock keeps running")
        bar = phone.page.locator(".bar")
        expect(bar.get_by_role("button", name="Undo")).to_be_disabled()
        expect(bar.get_by_role("button", name="Give up")).to_be_disabled()
        assert phone.page.locator(".board button:enabled").count() == 0
        expect(phone.page.locator('[data-stat="moves"]')).to_have_text("1")  # stale, and nothing to press on it
        play_here = banner.get_by_role("button", name="Play here")
        expect(play_here).to_be_focused()  # (its card went disabled under it)

        phone.page.keyboard.press("Enter")
        expect(banner).to_be_hidden()
        wait_board(phone.page, game)
        expect(phone.page.locator('[data-stat="moves"]')).to_have_text("2")
        expect(bar.get_by_role("button", name="Give up")).to_be_enabled()
        expect(phone.page.locator(".board button:focus")).to_have_count(1)
        expect(desktop.page.locator("#banner").get_by_role("button", name="Play here")).to_be_visible()
        play(phone.page, game, list(next(iter(game.legal_moves())).names()))
        # the desktop, now the one told, switches to Italian: the banner is said again in Italian
        desktop.page.locator("button.lang").click()
        expect(desktop.page.locator("#banner")).to_contain_text("si gioca altrove")
        expect(desktop.page.locator("#banner").get_by_role("button", name="Gioca qui")).to_be_visible()
    finally:
        for device in (phone, desktop):
            device.close()


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_history_page_of_a_signed_in_device_says_it_is_the_accounts_and_links_to_its_devices(
    browser: Browser, localhost_server: str, lang: str
) -> None:
    """/me signed in never says «Niente account» / "No account": it names the account, says its
    games, streak and rating are the account's, and links to /account; signed out (after
    signing out) it says no account again, and links to /account to make one or sign in."""
    phone = Device(browser, localhost_server, PHONE, lang)
    try:
        name = f"Dora{lang}"
        phone.page.goto("/account")
        phone.page.fill("#account-name", name)
        phone.page.locator("#account-register button").click()
        expect(phone.page.locator("#devices li")).to_have_count(1)
        phone.page.goto("/me")
        note = phone.page.locator("section.history .note").last
        expect(note).to_have_attribute("data-account", "signed-in")
        expect(note).to_contain_text(f"«{name}»" if lang == "it" else f"“{name}”")
        expect(note).not_to_contain_text("Niente account" if lang == "it" else "No account")
        link = note.get_by_role("link", name="Dispositivi e passkey" if lang == "it" else "Devices and passkeys")
        screenshot(phone.page, f"me-signed-in-{lang}-390x844")
        link.click()
        expect(phone.page.locator("#devices li")).to_have_count(1)
        # and /account's sentence that leads back to /me ends as a sentence
        back = phone.page.locator("section.account p").filter(has=phone.page.locator('a[href="/me"]'))
        expect(back).to_have_text(re.compile(r"\.$"))
        phone.page.locator("#devices li button").click()  # this device unlinked: signed out
        expect(phone.page.locator("#account-signin")).to_be_visible()
        phone.page.goto("/me")
        signed_out = phone.page.locator("section.history .note").last
        expect(signed_out).to_have_attribute("data-account", "none")
        # signed out, the note shows the way to an account (and the phone's page has a link to
        # Tab to: its <main> scrolls, axe's scrollable-region-focusable)
        expect(signed_out.get_by_role("link", name="Account")).to_have_attribute("href", "/account")
        check_axe(phone.page, f"/me signed out ({lang}, phone)")
    finally:
        phone.close()


def test_unlinking_a_device_by_keyboard_leaves_the_focus_on_the_words_that_say_it_was_unlinked(
    browser: Browser, localhost_server: str
) -> None:
    """The list is drawn afresh without the device, and its button with it: the focus goes to
    the status line, not lost to the page."""
    phone = Device(browser, localhost_server, PHONE, "it")
    desktop = Device(browser, localhost_server, DESKTOP, "it")
    try:
        phone.page.goto("/account")
        phone.page.fill("#account-name", "Elsa")
        phone.page.locator("#account-register button").click()
        expect(phone.page.locator("#devices li")).to_have_count(1)
        desktop.add_credential(phone.credentials()[0])
        desktop.page.goto("/account")
        desktop.page.locator("#account-signin").click()
        expect(desktop.page.locator("#devices li")).to_have_count(2)
        phone.page.goto("/account")
        phone.page.locator("#devices li").nth(1).locator("button").focus()
        phone.page.keyboard.press("Enter")
        expect(phone.page.locator("#devices li")).to_have_count(1)
        status = phone.page.locator("#account-status")
        expect(status).to_have_text("Scollegato.")
        expect(status).to_be_focused()
    finally:
        for device in (phone, desktop):
            device.close()
