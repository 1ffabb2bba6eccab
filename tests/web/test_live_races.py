"""The home page's live races in real browsers, at phone (390×844) and desktop (1280×800) size: a
public race in progress appears on a second browser's home page, the most watched one featured;
its Watch button opens the spectator view, which shows the racer's moves; a private race in
progress never appears; with none, the list says so. The phone's visitor reads Italian, the desktop's English.
Screenshots: docs/screenshots/live-home-*.png and live-watch-*.png (with
HALFMOON_SCREENSHOTS=docs/screenshots)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from halfmoon.game import Game
from tests.web.conftest import Pages, load_vector, play, screenshot, wait_board

pytestmark = pytest.mark.browser

WON = load_vector("won_game_browser.json")
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 800}


def new_race(pages: Pages, name: str, *, listed: bool, code: str | None = None) -> tuple[Page, str]:
    """``name`` makes a race from the home page (public if ``listed``) and starts it alone."""
    host = pages.new("/", viewport=DESKTOP)
    host.fill("#name", name)
    if code:
        host.fill("#code", code)
    if listed:
        host.get_by_label("Gara pubblica").check()
    host.click("#create-race")
    host.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = host.url.rsplit("/", 1)[1]
    host.get_by_role("button", name="Via!").click()
    expect(host.locator(".board")).to_be_visible()
    return host, room


def shown_again(page: Page) -> None:
    """The page is shown again (another tab was in front): the list is read at once."""
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")


#: The visitor's words: the phone in Italian, the desktop in English.
WORDS = {
    "it": {"heading": "Gare in diretta", "racing": "1 in gara", "watching": "1 spettatore",
           "watch": "Guarda la gara di Ada", "score": "Punteggio"},
    "en": {"heading": "Live races", "racing": "1 racing", "watching": "1 spectator",
           "watch": "Watch the race of Ada", "score": "Score"},
}  # fmt: skip


@pytest.mark.parametrize(("size", "viewport", "lang"), [("phone", PHONE, "it"), ("desktop", DESKTOP, "en")])
def test_a_public_race_is_featured_on_a_strangers_home_and_watch_opens_it_a_private_one_never_shows(
    pages: Pages, size: str, viewport: ViewportSize, lang: str
) -> None:
    words = WORDS[lang]
    visitor = pages.new("/", viewport=viewport, locale="it-IT" if lang == "it" else "en-GB")
    expect(visitor.get_by_role("heading", name=words["heading"])).to_be_visible()
    ada, watched = new_race(pages, "Ada", listed=True, code=WON["code"])
    cy, other = new_race(pages, "Cy", listed=True)
    _, private = new_race(pages, "Eve", listed=False)
    # someone already watches Ada's race: it is the most watched, so it is featured
    pages.new(f"/watch/{watched}", viewport=DESKTOP).locator(".watch-player").wait_for()
    featured = visitor.locator(f'.live-featured[data-room="{watched}"]')
    for _ in range(20):  # listed within the server's tick (0.5 s); the page reads it when shown again
        shown_again(visitor)
        if featured.count() and visitor.locator(f'.live-list [data-room="{other}"]').count():
            break
        visitor.wait_for_timeout(300)
    expect(featured).to_contain_text("Ada")
    expect(featured).to_contain_text(words["racing"])
    expect(featured).to_contain_text(words["watching"])
    expect(visitor.locator(f'.live-list [data-room="{other}"]')).to_contain_text("Cy")
    expect(visitor.locator(f'[data-room="{private}"]')).to_have_count(0)  # a private race: never
    assert "Eve" not in visitor.locator("#live-races").inner_text()
    visitor.locator(".live-races").scroll_into_view_if_needed()
    screenshot(visitor, f"live-home-{size}")
    # Watch opens the spectator view, which shows Ada's moves
    featured.get_by_role("link", name=words["watch"]).click()
    visitor.wait_for_url(re.compile(f"/watch/{watched}$"))
    expect(visitor.locator(".watch-player")).to_have_count(1)
    game = Game.from_code(WON["code"])
    wait_board(ada, game)
    for names in WON["moves"][:3]:
        play(ada, game, names)
    expect(visitor.locator('.watch-player[data-player="p1"]')).to_contain_text(f"{words['score']} {game.score}")
    screenshot(visitor, f"live-watch-{size}")
    # the races end: off the list (the visitor's home says there is none of theirs)
    for page in (ada, cy):
        page.locator(".bar").get_by_role("button", name="Abbandona").click()
        page.locator("dialog.confirm").get_by_role("button", name="Abbandona").click()
        expect(page.locator(".endbox")).to_be_visible()
    visitor.goto("/")
    for _ in range(20):
        shown_again(visitor)
        if not visitor.locator(f'#live-races [data-room="{watched}"], #live-races [data-room="{other}"]').count():
            break
        visitor.wait_for_timeout(300)
    expect(visitor.locator(f'#live-races [data-room="{watched}"]')).to_have_count(0)


def test_the_home_page_says_when_no_public_race_is_in_play_in_both_languages(pages: Pages) -> None:
    """(Only this module's races are public on the shared server, and the test above ends its own.)"""
    for locale, heading, empty in (
        ("it-IT", "Gare in diretta", "Nessuna gara pubblica in corso"),
        ("en-GB", "Live races", "No public race right now"),
    ):
        page = pages.new("/", viewport=PHONE, locale=locale)
        expect(page.get_by_role("heading", name=heading)).to_be_visible()
        expect(page.locator("#live-races")).to_contain_text(empty)


def test_a_live_list_the_server_cannot_read_says_so_and_shows_again_when_it_can(pages: Pages) -> None:
    page = pages.new("/", viewport=PHONE, locale="en-GB")
    expect(page.locator("#live-races")).to_contain_text("No public race right now")
    body = '{"error": {"code": "unavailable", "message": "the live list cannot be read right now; try again"}}'
    page.route("**/api/live", lambda route: route.fulfill(status=503, content_type="application/json", body=body))
    shown_again(page)
    expect(page.locator("#live-races")).to_contain_text("The list of live races is not available right now")
    page.unroute("**/api/live")
    shown_again(page)
    expect(page.locator("#live-races")).to_contain_text("No public race right now")


def test_the_watch_link_keeps_the_keyboard_focus_when_the_list_is_read_again(pages: Pages) -> None:
    """The list is redrawn every 15 s: a keyboard player on «Watch» stays on it (before, the
    redraw dropped the focus to the page's top), and Enter then opens that race."""
    visitor = pages.new("/", viewport=PHONE, locale="en-GB", settings={"lang": "en", "name": "Val"})
    _, room = new_race(pages, "Ada", listed=True)
    link = visitor.locator(f'#live-races [data-watch="{room}"]')
    for _ in range(20):
        shown_again(visitor)
        if link.count():
            break
        visitor.wait_for_timeout(300)
    link.focus()
    visitor.evaluate("document.querySelector('#live-races h3').dataset.drawnBefore = 'yes'")
    shown_again(visitor)  # read again and redrawn
    expect(visitor.locator("#live-races h3")).not_to_have_attribute("data-drawn-before", "yes")
    expect(link).to_be_focused()
    visitor.keyboard.press("Enter")
    visitor.wait_for_url(re.compile(f"/watch/{room}$"))
