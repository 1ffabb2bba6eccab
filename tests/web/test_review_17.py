"""Review of issue 17 in real browsers, as a player sees it: what a racer who sits a rematch out
is shown (not an empty board with a score of 0), at a phone's size and a desktop's."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from tests.web.conftest import Pages, screenshot

pytestmark = pytest.mark.browser

PHONE: ViewportSize = {"width": 390, "height": 844}
SMALL_PHONE: ViewportSize = {"width": 360, "height": 640}
DESKTOP: ViewportSize = {"width": 1366, "height": 768}


def give_up(page: Page, label: str = "Abbandona") -> None:
    button = page.locator(".bar").get_by_role("button", name=label)
    expect(button).to_be_enabled()
    button.click()
    page.locator("dialog.confirm").get_by_role("button", name=label).click()


def test_a_racer_who_sits_the_rematch_out_follows_the_track_and_can_propose_the_next(pages: Pages) -> None:
    ada = pages.new("/", viewport=DESKTOP)
    ada.fill("#name", "Ada")
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    bob = pages.new(f"/r/{room}", viewport=PHONE, name="Bob")
    cy = pages.new(f"/r/{room}", viewport=SMALL_PHONE, settings={"name": "Cy", "lang": "en"})
    expect(ada.locator(".players li")).to_have_count(3)
    ada.get_by_role("button", name="Via!").click()
    give_up(ada)
    give_up(bob)
    give_up(cy, "Give up")
    expect(cy.locator("table.results tbody tr")).to_have_count(3)
    # Ada proposes the rematch, Bob takes his place, Cy does not: she sits race 2 out
    ada.locator(".endbox").get_by_role("button", name="Rivincita").click()
    bob.get_by_role("button", name="Accetta la rivincita").click()
    expect(ada.locator(".players li")).to_have_count(2)
    ada.get_by_role("button", name="Via!").click()
    expect(ada.locator(".bar [data-stat=code]")).to_contain_text("sigillato")
    note = cy.locator(".sitting-out")
    expect(note).to_have_text(re.compile(r"^You are sitting this race out"))
    # no empty board, no score or moves of hers, no Undo or Give up: the track, with both racers
    expect(cy.locator(".board-wrap")).to_be_hidden()
    for stat in ("score", "moves"):
        expect(cy.locator(f".bar [data-stat={stat}]")).to_be_hidden()
    expect(cy.locator(".bar").get_by_role("button")).to_have_count(0)  # (and «Copy» waits for the code)
    expect(cy.locator(".track .lane")).to_have_count(2)
    box = cy.locator(".opponents").bounding_box()
    assert box is not None and box["height"] > 150, box  # the track gets the room the board had
    screenshot(cy, "sitting-out-360x640")
    cy.set_viewport_size(DESKTOP)
    expect(note).to_be_visible()
    screenshot(cy, "sitting-out-1366x768")
    give_up(ada)
    give_up(bob)
    # the results: she says so in the past, and the rematch button is hers to press (by keyboard too)
    expect(cy.locator("table.results tbody tr")).to_have_count(2)
    expect(note).to_have_text(re.compile(r"^You sat this race out"))
    expect(cy.locator(".bar [data-stat=time]")).to_be_hidden()  # the race's clock would run on
    screenshot(cy, "sat-out-results-1366x768")
    rematch = cy.get_by_role("button", name="Rematch")
    expect(rematch).to_be_visible()
    rematch.focus()
    cy.keyboard.press("Enter")
    expect(cy.locator(".lobby h1")).to_contain_text("race 3")
    expect(ada.get_by_role("button", name="Accetta la rivincita")).to_be_visible()


def test_the_history_pages_check_mark_columns_say_what_they_mean_and_the_streak_is_not_a_series(
    pages: Pages,
) -> None:
    # a race given up: one game in the player's history (the race's code is out with its results)
    ada = pages.new("/", viewport=PHONE)
    ada.fill("#name", "Ada")
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    ada.get_by_role("button", name="Via!").click()
    give_up(ada)
    expect(ada.locator("table.results tbody tr")).to_have_count(1)
    ada.goto("/me")
    expect(ada.locator("h1")).to_contain_text("Le tue partite")
    # «Serie» is a series of races now: the days-in-a-row figure has a name of its own
    expect(ada.locator('[data-stat="streak"] .name')).to_have_text("Giorni di fila")
    expect(ada.locator("main")).not_to_contain_text("serie")
    # the «✓» column is read aloud for what it means, not as "check mark"
    expect(ada.get_by_role("columnheader", name="vinta senza annullare")).to_have_count(1)
    screenshot(ada, "review17-me-390x844")
    ada.evaluate("() => localStorage.setItem('halfmoon.settings', JSON.stringify({name: 'Ada', lang: 'en'}))")
    ada.set_viewport_size(DESKTOP)
    ada.reload()
    expect(ada.locator('[data-stat="streak"] .name')).to_have_text("Daily streak")
    expect(ada.get_by_role("columnheader", name="won without an undo")).to_have_count(1)
    screenshot(ada, "review17-me-1366x768")
