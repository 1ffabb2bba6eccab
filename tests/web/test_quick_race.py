"""The quick-race queue in the browser («Gara veloce»), at phone and desktop size: the home
button, the waiting screen with how many are in and the countdown, a one-tap Leave, two and six
players matched into one race (the other racers are WebSocket clients), a player leaving the
queue, and the lone player's offer — keep waiting, race a ghost of a recent quick race, play solo.
A server of its own runs the queue with short times."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from halfmoon.view import BoardView
from halfmoon_client.strategy import legal_moves
from tests.web.audits import AXE_JS, VNU_JAR, NuChecker, axe_violations, require_tool
from tests.web.conftest import Pages, running_server, screenshot

SIZES: dict[str, ViewportSize] = {"390x844": {"width": 390, "height": 844}, "1280x800": {"width": 1280, "height": 800}}
QUICK_ENV = {"HALFMOON_QUICK_FILL_S": "4", "HALFMOON_QUICK_LONE_S": "2.5", "HALFMOON_QUICK_JOIN_S": "10"}


@pytest.fixture(scope="module")
def quick_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("quick"), env=QUICK_ENV) as base:
        yield base


@pytest.fixture
def quick_pages(browser: Browser, quick_server: str) -> Iterator[Pages]:
    opened = Pages(browser, quick_server)
    yield opened
    opened.close()
    assert not opened.errors, f"JavaScript errors in the page: {opened.errors}"


class Racer:
    """A WebSocket player of the quick-race queue (another racer the browser meets)."""

    def __init__(self, base: str, name: str) -> None:
        self.name = name
        self.key = secrets.token_urlsafe(32)
        self._opened = connect(base.replace("http", "ws") + "/ws", origin=Origin(base))
        self.ws: ClientConnection = self._opened.__enter__()  # (websockets wants its context entered)

    def send(self, kind: str, **fields: Any) -> None:
        self.ws.send(json.dumps({"type": kind, "v": 1, **fields}))

    def next(self, *kinds: str, timeout: float = 15.0) -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(self.ws.recv(timeout=timeout))
            if message["type"] in kinds:
                return message

    def queue(self) -> dict[str, Any]:
        self.send("queue", name=self.name, player_key=self.key)
        return self.next("queued", "matched")

    def join(self, matched: dict[str, Any]) -> None:
        self.send("join", room=matched["room"], name=matched["name"], player_key=self.key)
        assert self.next("welcome", "error")["type"] == "welcome"

    def close(self) -> None:
        self._opened.__exit__(None, None, None)


def open_queue(pages: Pages, size: str, name: str = "Ada", locale: str = "it-IT") -> Page:
    page = pages.new("/", viewport=SIZES[size], locale=locale, settings={"name": name, "lang": locale[:2]})
    page.locator("#quick-race").click()
    expect(page.locator("section.queue h1")).to_be_visible()
    return page


@pytest.mark.parametrize("size", SIZES)
def test_two_players_see_the_count_and_countdown_then_race(quick_pages: Pages, quick_server: str, size: str) -> None:
    page = open_queue(quick_pages, size)
    expect(page.locator("section.queue h1")).to_have_text("Gara veloce")
    expect(page.locator(".queue-status")).to_have_text("Aspettiamo un avversario…")
    bea = Racer(quick_server, "Bea")
    try:
        assert bea.queue()["count"] == 2
        expect(page.locator(".queue-count")).to_have_text("2 giocatori")
        expect(page.locator(".queue-status")).to_contain_text("Si parte tra")
        screenshot(page, f"quick-two-{size}")
        matched = bea.next("matched")
        page.wait_for_url(f"**/r/{matched['room']}")
        bea.join(matched)
        expect(page.locator(".board")).to_be_visible(timeout=15_000)  # it started by itself: no host's «Via!»
        assert bea.next("started")["code"] is None  # sealed: the deal is secret until the race is over
        screenshot(page, f"quick-race-{size}")
    finally:
        bea.close()


@pytest.mark.parametrize("size", SIZES)
def test_six_players_are_matched_at_once(quick_pages: Pages, quick_server: str, size: str) -> None:
    page = open_queue(quick_pages, size, locale="en-US")
    expect(page.locator("section.queue h1")).to_have_text("Quick race")
    others = [Racer(quick_server, f"Rival {n}") for n in range(1, 6)]
    try:
        for racer in others[:4]:
            racer.queue()
        expect(page.locator(".queue-count")).to_have_text("5 players")
        expect(page.locator(".queue-status")).to_contain_text("Starts in")
        screenshot(page, f"quick-five-{size}")
        matched = others[4].queue()
        assert matched["type"] == "matched" and matched["players"] == 6
        page.wait_for_url(f"**/r/{matched['room']}")
        for racer in others:
            racer.join(racer.next("matched") if racer is not others[4] else matched)
        expect(page.locator(".board")).to_be_visible(timeout=15_000)
        expect(page.locator(".opponents")).to_contain_text("Rival 5")
    finally:
        for racer in others:
            racer.close()


@pytest.mark.parametrize("size", SIZES)
def test_a_player_leaving_and_the_leave_button(quick_pages: Pages, quick_server: str, size: str) -> None:
    page = open_queue(quick_pages, size)
    bea = Racer(quick_server, "Bea")
    try:
        bea.queue()
        expect(page.locator(".queue-count")).to_have_text("2 giocatori")
        bea.send("unqueue")
        bea.next("unqueued")
        expect(page.locator(".queue-status")).to_have_text("Aspettiamo un avversario…")
        expect(page.locator(".queue-count")).to_have_text("1 giocatore")
        page.get_by_role("button", name="Esci dalla coda").click()
        expect(page.locator("#quick-race")).to_be_visible()  # home, out of the queue in one tap
        assert bea.queue()["count"] == 1  # nobody else is in it
    finally:
        bea.close()


def race_to_the_end(base: str) -> None:
    """Two WebSocket players race a quick race: each plays one move and gives up (a recent race
    whose deal is out: a ghost to offer)."""
    ann, bob = Racer(base, "Ann"), Racer(base, "Bob")
    try:
        ann.queue()
        bob.queue()
        for racer in (ann, bob):
            racer.join(racer.next("matched"))
        for racer in (ann, bob):
            started = racer.next("started")
            view = BoardView.from_json(started["board"])
            racer.send("move", positions=legal_moves(view)[0].names())
            racer.next("moved")
            racer.send("give_up")
        ann.next("race_over", timeout=20)
    finally:
        ann.close()
        bob.close()


@pytest.mark.parametrize("size", SIZES)
def test_a_lone_player_is_offered_to_keep_waiting_race_a_ghost_or_play_solo(
    quick_pages: Pages, quick_server: str, size: str
) -> None:
    race_to_the_end(quick_server)
    page = open_queue(quick_pages, size)
    offer = page.locator(".queue-offer")
    expect(offer).to_be_visible(timeout=10_000)
    expect(offer.get_by_role("heading")).to_have_text("Nessun avversario per ora")
    ghost = offer.locator("#race-ghost")
    expect(ghost).to_have_text(re.compile(r"^Sfida il fantasma di (Ann|Bob)$"))
    screenshot(page, f"quick-offer-{size}")
    page.get_by_role("button", name="Continua ad aspettare").click()
    expect(offer).to_be_hidden()
    expect(offer).to_be_visible(timeout=10_000)  # offered again later
    ghost.click()
    page.wait_for_url("**/play/HM1-S-*?ghost=*")
    expect(page.locator(".board")).to_be_visible()
    # and the solo way out, from a second lone wait
    page = open_queue(quick_pages, size, name="Cleo")
    expect(page.locator(".queue-offer")).to_be_visible(timeout=10_000)
    page.get_by_role("button", name="Gioca da solo").click()
    page.wait_for_url("**/play/HM1-*")
    expect(page.locator(".board")).to_be_visible()


@pytest.mark.parametrize(("lang", "locale"), [("it", "it-IT"), ("en", "en-GB")])
def test_with_no_ghost_the_offer_promises_none_keep_waiting_keeps_the_focus_and_a_second_tab_says_why(
    browser: Browser, tmp_path: Path, lang: str, locale: str
) -> None:
    """On a server with no recent quick race the offer names no ghost; «Keep waiting» taken with
    the keyboard leaves the focus on Leave (not on the page's top); the same player's second tab
    is refused and says so on its screen (not «waiting for a rival»)."""
    words = {
        "it": ("Puoi continuare ad aspettare o giocare da solo.", "Continua ad aspettare", "Non sei in coda.",
               "già in coda", "Inizio"),
        "en": ("You can keep waiting or play solo.", "Keep waiting", "You are not in the queue.",
               "queue already", "Home"),
    }[lang]
    with running_server(tmp_path, env=QUICK_ENV) as base:
        pages = Pages(browser, base)
        try:
            page = open_queue(pages, "390x844", locale=locale)
            offer = page.locator(".queue-offer")
            expect(offer).to_be_visible(timeout=10_000)
            expect(offer.locator("p")).to_have_text(words[0])
            expect(offer.locator("#race-ghost")).to_have_count(0)
            offer.get_by_role("button", name=words[1]).focus()
            page.keyboard.press("Enter")
            expect(offer).to_be_hidden()
            expect(page.locator("#leave-queue")).to_be_focused()
            second = page.context.new_page()
            second.goto("/quick")
            status = second.locator(".queue-status")
            expect(status).to_contain_text(words[2])
            expect(status).to_contain_text(words[3])
            expect(second.locator("#leave-queue")).to_have_text(words[4])  # not «Leave the queue»: it is in none
            second.wait_for_timeout(4000)  # (the toast is gone by now: the screen still says it)
            expect(status).to_contain_text(words[2])
        finally:
            pages.close()
        assert not pages.errors, f"JavaScript errors in the page: {pages.errors}"


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_waiting_screen_and_the_offer_pass_axe_core_and_the_nu_html_checker(
    quick_pages: Pages, quick_server: str, lang: str
) -> None:
    source = require_tool("axe-core (npm)", AXE_JS).read_text(encoding="utf-8")
    checker = NuChecker(require_tool("the Nu HTML checker (npm vnu-jar)", VNU_JAR, "java"))
    found: dict[str, Any] = {}
    try:
        page = open_queue(quick_pages, "390x844", locale="it-IT" if lang == "it" else "en-US")
        expect(page.locator(".queue-offer")).to_be_visible(timeout=10_000)
        found["offer"] = axe_violations(page, source), checker.messages(page.content())
        bea = Racer(quick_server, "Bea")
        try:
            bea.queue()
            expect(page.locator(".queue-offer")).to_be_hidden()
            found["two in the queue"] = axe_violations(page, source), checker.messages(page.content())
        finally:
            bea.close()
    finally:
        checker.close()
    assert {state: said for state, said in found.items() if said[0] or said[1]} == {}
