"""Layout on a 360 px phone and a desktop in a real chromium: no page wider than the screen in
either language, thumb-sized links, a decorative board out of the Tab order, a leaderboard
table that fits, the end box's figures on one row, the replay slider on a row of its own."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from halfmoon.game import Game
from tests.web.conftest import DESKTOP, PHONE, Pages, ended_game, load_vector, play, screenshot, wait_board, wait_stored

WON = load_vector("won_game_browser.json")
LOCALES = {"en": "en-US", "it": "it-IT"}

SCROLL_WIDTH_JS = "() => document.documentElement.scrollWidth"
#: Visible links inside <main> whose box is shorter than 44 px: [text, height].
SMALL_LINKS_JS = """() => [...document.querySelectorAll('main a')]
  .filter(a => a.getClientRects().length > 0)
  .map(a => [a.innerText.trim().slice(0, 30), a.getBoundingClientRect().height])
  .filter(([, h]) => h < 44)"""


def _settle(page: Page) -> None:
    page.wait_for_selector("main > :not(p.center)")
    page.wait_for_timeout(300)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_no_page_is_wider_than_a_360_px_phone(pages: Pages, lang: str) -> None:
    for path in ("/", "/play", "/no/such/page", "/rules", "/examples", "/leaderboard"):
        page = pages.new(path, viewport=PHONE, locale=LOCALES[lang], settings={"lang": lang, "name": "Ann"})
        _settle(page)
        assert page.evaluate(SCROLL_WIDTH_JS) <= PHONE["width"], f"{lang} {path} scrolls sideways"
        # the settings button is wholly on the screen
        gear = page.locator("header.top nav button").last.bounding_box()
        assert gear is not None and gear["x"] + gear["width"] <= PHONE["width"], (lang, path, gear)
        if path in ("/", "/rules", "/examples", "/no/such/page"):
            assert page.evaluate(SMALL_LINKS_JS) == [], f"{lang} {path}: links under 44 px"
        page.context.close()


def test_the_decorative_home_board_is_not_in_the_tab_order(pages: Pages) -> None:
    page = pages.new("/", viewport=DESKTOP, settings={"lang": "en", "name": "Ann"})
    page.wait_for_selector(".home-board .slot")
    focusable = page.evaluate(
        "() => [...document.querySelectorAll('[aria-hidden=\"true\"] .slot')]"
        ".filter(b => b.tabIndex >= 0 && !b.closest('[inert]')).length"
    )
    assert focusable == 0
    # Tab from the top never lands on a card of the picture
    for _ in range(8):
        page.keyboard.press("Tab")
        assert page.evaluate("() => !document.activeElement.closest('.home-board')")
    # bigger than a thumbnail on a desktop, and no position labels running together
    face = page.locator(".home-board .slot .face").first.bounding_box()
    assert face is not None and face["width"] >= 32, face
    assert page.locator(".home-board .label").first.is_hidden()


def _win(page: Page) -> None:
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    for names in WON["moves"]:
        play(page, game, names)
    expect(page.locator('.endbox [data-outcome="won"]')).to_be_visible()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_end_box_figures_make_one_row(pages: Pages, size: str) -> None:
    viewport = PHONE if size == "phone" else DESKTOP
    settings = {"moveErrors": False, "placementHelp": False, "lang": "it", "name": "Lina"}
    page = pages.new(f"/play/{WON['code']}", viewport=viewport, settings=settings)
    _win(page)
    tops = page.eval_on_selector_all(".endbox dd", "els => els.map(e => e.offsetTop)")
    assert len(tops) >= 3 and len(set(tops)) == 1, tops
    screenshot(page, f"layout-endbox-{size}")
    if size == "phone":
        # the leaderboard of this deal (once the game is stored): its table fits the phone, «Rivedi» included
        wait_stored(pages.base, ended_game(page))
        page.goto(f"/leaderboard/{WON['code']}")
        page.wait_for_selector("table.results")
        wrap = page.locator(".scroll-x").first
        widths = wrap.evaluate("w => [w.scrollWidth, w.clientWidth]")
        assert widths[0] <= widths[1] + 1, widths
        replay = page.locator("table.results a").first
        box = replay.bounding_box()
        assert box is not None and box["height"] >= 44 and box["x"] + box["width"] <= PHONE["width"], box
        # the replay: the slider alone on a full-width row, the buttons on one row under it
        replay.click()
        page.wait_for_selector('.replay-controls input[type="range"]')
        rows = page.eval_on_selector_all(
            ".replay-controls > button", "els => [...new Set(els.map(e => Math.round(e.getBoundingClientRect().top)))]"
        )
        assert len(rows) == 1, rows
        slider = page.locator('.replay-controls input[type="range"]').bounding_box()
        button = page.locator(".replay-controls > button").first.bounding_box()
        assert slider is not None and button is not None
        assert slider["y"] + slider["height"] <= button["y"] and slider["width"] >= 300, (slider, button)
        assert page.evaluate(SCROLL_WIDTH_JS) <= PHONE["width"]


def test_a_message_stays_while_the_pointer_rests_on_it_and_goes_once_it_leaves(pages: Pages) -> None:
    """A toast is read where a magnifier's user points: it lasts 4 s at least, longer while the
    pointer rests on it, and goes once the pointer has left."""
    page = pages.new("/", settings={"lang": "en", "name": "Ada"}, viewport=PHONE)
    page.get_by_role("button", name="Watch", exact=True).click()
    toast = page.locator("#toast")
    expect(toast).to_be_visible()
    expect(toast).to_contain_text("race's id")
    toast.hover()
    page.wait_for_timeout(5500)  # past the 4 s a message lasts, and past its length's time
    expect(toast).to_be_visible()
    page.mouse.move(5, 5)
    expect(toast).to_be_hidden(timeout=9000)


@pytest.mark.parametrize("width", [360, 390, 430, 1366])
def test_the_home_link_is_a_44_pixel_target_at_every_width(pages: Pages, width: int) -> None:
    page = pages.new("/rules", settings={"lang": "en", "name": "Ada"}, viewport={"width": width, "height": 800})
    box = page.locator(".top .brand").bounding_box()
    assert box is not None and box["height"] >= 44, box


#: The home's links row: for each «·» separator, whether it sits on the line of the link before it.
SEPARATORS_ON_THEIR_LINE_JS = """() => (() => {
  const walker = document.createTreeWalker(document.querySelector('.home-links'), NodeFilter.SHOW_TEXT);
  const texts = [];
  while (walker.nextNode()) texts.push(walker.currentNode);
  return texts;
}).call().filter(n => n.textContent.includes('·'))
  .map(n => {
    const range = document.createRange();
    const at = n.textContent.indexOf('·');
    range.setStart(n, at); range.setEnd(n, at + 1);
    const dot = range.getBoundingClientRect(), link = n.previousSibling.getClientRects();
    const last = link[link.length - 1];
    return Math.abs((dot.top + dot.bottom) / 2 - (last.top + last.bottom) / 2) < 8;
  })"""


@pytest.mark.parametrize(("lang", "width"), [("it", 390), ("it", 360), ("en", 360)])
def test_the_home_links_row_never_starts_a_line_with_a_separator(pages: Pages, lang: str, width: int) -> None:
    page = pages.new("/", viewport={"width": width, "height": 800}, locale=LOCALES[lang],
                     settings={"lang": lang, "name": "Ann"})
    page.wait_for_selector(".home-links a[href='/account']")
    on_their_line = page.evaluate(SEPARATORS_ON_THEIR_LINE_JS)
    assert len(on_their_line) == 4 and all(on_their_line), on_their_line
