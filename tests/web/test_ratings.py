"""Ratings in real browsers: after a sealed race between two players with a key, each end box
shows the rating's change once the server's ratings job has rated the race (it polls: ratings are
updated off the path that stores a game); the ratings leaderboard (a tab beside the others) lists
both, provisional; the player's page shows the rating and its history — in Italian and English,
on a phone (390×844) and a desktop (1280×800)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from halfmoon.cards import Card
from tests.web.conftest import TOPS_JS, Pages, running_server, screenshot, tap

pytestmark = pytest.mark.browser

PHONE_390: ViewportSize = {"width": 390, "height": 844}
DESKTOP_1280: ViewportSize = {"width": 1280, "height": 800}


@pytest.fixture
def own_pages(browser: Browser, tmp_path: Path) -> Iterator[Pages]:
    """Pages on a server of this test's own (its ratings start empty)."""
    with running_server(tmp_path) as base:
        opened = Pages(browser, base)
        yield opened
        opened.close()
        assert not opened.errors, f"JavaScript errors in the page: {opened.errors}"


def remove_a_pair(page: Page) -> bool:
    """Tap two visible cards that make 11 (what a player sees; the deal is sealed); False when
    none shows."""
    score = page.locator('[data-stat="score"]')
    before = int(score.inner_text())
    tops = {pos: Card.parse(name) for pos, name in page.evaluate(TOPS_JS).items() if name}
    for a, first in tops.items():
        for b, second in tops.items():
            if a < b and first.rank + second.rank == 11:
                tap(page, a)
                tap(page, b)
                expect(score).not_to_have_text(str(before))
                return True
    return False


def give_up(page: Page, words: str) -> None:
    page.locator(".bar").get_by_role("button", name=words).click()
    page.locator("dialog.confirm").get_by_role("button", name=words).click()


def test_a_rated_race_shows_the_change_the_board_and_the_history(own_pages: Pages) -> None:
    for _attempt in range(5):  # a sealed deal may show no pair at all: another race then
        ada = own_pages.new("/", viewport=DESKTOP_1280, settings={"name": "Ada", "lang": "it", "moveErrors": False})
        ada.click("#create-race")
        ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
        room = ada.url.rsplit("/", 1)[1]
        bob_settings = {"name": "Bob", "lang": "en", "moveErrors": False}
        bob = own_pages.new(f"/r/{room}", viewport=PHONE_390, settings=bob_settings)
        expect(ada.locator(".players li")).to_have_count(2)
        ada.get_by_role("button", name="Via!").click()
        expect(ada.locator(".board")).to_be_visible()
        expect(bob.locator(".board")).to_be_visible()
        if remove_a_pair(ada) and remove_a_pair(bob):
            break
        give_up(ada, "Abbandona")
        give_up(bob, "Give up")
    else:
        pytest.fail("no sealed deal showed a pair to both players")
    remove_a_pair(ada)  # Ada removes more: she places first (if no second pair shows, the time decides)
    give_up(ada, "Abbandona")
    give_up(bob, "Give up")

    # the end boxes: «due» first (maybe too briefly to see), then the change, once the job has rated the race
    ada_line, bob_line = ada.locator(".endbox .rating"), bob.locator(".endbox .rating")
    expect(ada_line).to_have_attribute("data-status", "rated", timeout=15_000)
    expect(bob_line).to_have_attribute("data-status", "rated", timeout=15_000)
    expect(ada_line).to_have_text(re.compile(r"^Valutazione: 1000 → 1\d{3} \(\+\d+\) · provvisoria$"))
    expect(bob_line).to_have_text(re.compile(r"^Rating: 1000 → \d{3} \(−\d+\) · provisional$"))
    expect(ada_line).to_have_class(re.compile(r"\bup\b"))
    expect(bob_line).to_have_class(re.compile(r"\bdown\b"))
    ada_after = int(re.findall(r"→ (\d+)", ada_line.inner_text())[0])
    screenshot(ada, "rating-end-1280x800")
    screenshot(bob, "rating-end-390x844")

    # the ratings leaderboard: a tab beside the deal's and the day's boards
    ada.goto("/leaderboard")
    ada.get_by_role("link", name="★ Valutazioni").click()
    ada.wait_for_url(re.compile(r"/leaderboard/ratings$"))
    expect(ada.locator("#lb-code")).to_have_value("")  # (no deal code named «ratings»)
    rows = ada.locator("table.ratings tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("Ada")
    expect(rows.nth(0)).to_contain_text(str(ada_after))
    expect(rows.nth(0).locator(".tag.provisional")).to_have_text("provvisoria")
    expect(rows.nth(1)).to_contain_text("Bob")
    screenshot(ada, "ratings-board-1280x800")
    bob.goto("/leaderboard/ratings")
    expect(bob.locator("table.ratings tbody tr")).to_have_count(2)
    expect(bob.locator("table.ratings thead")).to_contain_text("Rating")
    screenshot(bob, "ratings-board-390x844")
    assert bob.evaluate("() => document.documentElement.scrollWidth") <= 390, "the board scrolls sideways"

    # the player's page: the rating now and the race that moved it
    ada.goto("/me")
    section = ada.locator("section.rating-history")
    expect(section.locator('[data-stat="rating"] .value')).to_have_text(str(ada_after))
    expect(section.locator('[data-stat="rated-games"] .value')).to_have_text("1")
    expect(section).to_contain_text("Valutazione provvisoria: ancora 4 gare valutate")
    expect(section.locator("tbody tr")).to_have_count(1)
    expect(section.locator("tbody tr td").nth(2)).to_have_text(re.compile(r"^\+\d+$"))
    section.scroll_into_view_if_needed()
    screenshot(ada, "rating-history-1280x800")
    bob.goto("/me")
    bob_section = bob.locator("section.rating-history")
    expect(bob_section.locator("h2")).to_have_text("Your rating")
    expect(bob_section.locator("tbody tr td").nth(2)).to_have_text(re.compile(r"^−\d+$"))
    bob_section.scroll_into_view_if_needed()
    screenshot(bob, "rating-history-390x844")
    assert bob.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"


def test_the_ratings_tab_looks_selected_only_on_the_ratings_board(pages: Pages) -> None:
    """On /leaderboard the «Ratings» tab is a quiet button; on /leaderboard/ratings it is the gold
    one and the current page (before, it was gold on both: nothing showed where the player was)."""
    background = "el => getComputedStyle(el).backgroundColor"
    page = pages.new("/leaderboard", viewport=PHONE_390, settings={"lang": "en", "name": "Ann"})
    tab = page.locator(".board-tabs a")
    expect(tab).to_have_text("★ Ratings")
    expect(tab).not_to_have_attribute("aria-current", "page")
    other = tab.evaluate(background)
    tab.click()
    page.wait_for_url("**/leaderboard/ratings")
    expect(tab).to_have_attribute("aria-current", "page")
    assert tab.evaluate(background) == "rgb(255, 210, 74)" != other  # the gold of the selected tab
