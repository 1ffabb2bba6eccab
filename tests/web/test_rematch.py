"""Rematches and series in real browsers: two racers rematch on a new sealed deal from
the results; a series of three races ends with its points table, shown between races too."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from tests.web.conftest import Pages, screenshot

pytestmark = pytest.mark.browser

#: the issue's two sizes (the screenshots in docs/screenshots are named by them)
PHONE: ViewportSize = {"width": 390, "height": 844}
SMALL_PHONE: ViewportSize = {"width": 360, "height": 640}
DESKTOP: ViewportSize = {"width": 1366, "height": 768}


def open_race(pages: Pages) -> tuple[Page, Page, str]:
    """Ada (desktop) makes a sealed race from the home screen; Bob (phone) joins by its link."""
    ada = pages.new("/", viewport=DESKTOP)
    ada.fill("#name", "Ada")
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    bob = pages.new(f"/r/{room}", viewport=PHONE)
    bob.get_by_label("Il tuo nome").fill("Bob")
    bob.get_by_role("button", name="Entra").click()
    expect(ada.locator(".players li")).to_have_count(2)
    return ada, bob, room


def give_up(page: Page, label: str = "Abbandona") -> None:
    """Give up from the bar (it asks first), once the race is on (``label``: the button's, in the
    page's language)."""
    button = page.locator(".bar").get_by_role("button", name=label)
    expect(button).to_be_enabled()
    button.click()
    page.locator("dialog.confirm").get_by_role("button", name=label).click()


def race_to_the_results(host: Page, other: Page) -> None:
    """The host starts; both give up (the host first: no moves, so the shorter time ranks first)."""
    host.get_by_role("button", name="Via!").click()
    for page in (host, other):
        expect(page.locator(".bar [data-stat=code]")).to_contain_text("sigillato")
    give_up(host)
    give_up(other)
    for page in (host, other):
        expect(page.locator("table.results tbody tr")).to_have_count(2)


def test_two_racers_rematch_on_a_new_sealed_deal(pages: Pages) -> None:
    ada, bob, room = open_race(pages)
    race_to_the_results(ada, bob)
    first_code = ada.locator(".bar [data-stat=code]").text_content() or ""
    assert re.match(r"HM1-S-", first_code)
    # one tap proposes: Bob is in, and hosts the rematch; Ada is asked. (He taps twice: the second
    # `rematch` goes before the first's answer and is refused; the deal holds his first contribution.)
    bob.get_by_role("button", name="Rivincita").dblclick()
    expect(bob.locator(".lobby h1")).to_contain_text(f"{room} · gara 2")
    expect(bob.get_by_role("button", name="Via!")).to_be_visible()
    expect(ada.locator(".lobby")).to_contain_text("Bob propone la rivincita su una nuova smazzata")
    expect(ada.locator(".lobby")).to_contain_text("Non ancora dentro: Ada")
    accept = ada.get_by_role("button", name="Accetta la rivincita")
    expect(accept).to_be_visible()
    waiting = ada.get_by_text("In attesa che l'organizzatore")
    expect(waiting).to_be_hidden()  # she is asked, not kept waiting
    screenshot(ada, "rematch-offer-1366x768")
    accept.click()
    expect(bob.locator(".players li")).to_have_count(2)
    expect(accept).to_be_hidden()
    expect(waiting).to_be_visible()
    screenshot(bob, "rematch-lobby-390x844")
    # the link is the same room: the rematch runs there, on another (sealed) deal
    assert bob.url.endswith(f"/r/{room}") and ada.url.endswith(f"/r/{room}")
    race_to_the_results(bob, ada)
    second_code = ada.locator(".bar [data-stat=code]").text_content() or ""
    assert re.match(r"HM1-S-", second_code) and second_code != first_code
    expect(ada.locator(".bar [data-stat=code]")).to_contain_text("✓")  # checked against its commitment
    expect(bob.locator(".bar [data-stat=code]")).to_contain_text("✓")  # his own contribution in, though sent twice
    rows = ada.locator("table.results tbody tr")
    expect(rows.first).to_contain_text("Bob")  # he gave up first this time


def test_a_series_of_three_races_ends_with_its_points_table(pages: Pages) -> None:
    ada, bob, room = open_race(pages)
    ada.fill("#series", "3")
    race_to_the_results(ada, bob)
    for page in (ada, bob):
        expect(page.locator("table.series caption")).to_have_text("Serie: gara 1/3")
    for number in (2, 3):
        ada.get_by_role("button", name="Rivincita").click()
        expect(ada.locator(".lobby h1")).to_contain_text(f"gara {number}")
        # between races the lobby shows the table so far; a second series cannot be asked for
        expect(ada.locator(".lobby table.series caption")).to_have_text(f"Serie: gara {number}/3")
        expect(ada.locator("#series")).to_be_hidden()
        if number == 2:
            screenshot(ada, "series-between-races-1366x768")
        bob.get_by_role("button", name="Accetta la rivincita").click()
        expect(ada.locator(".players li")).to_have_count(2)
        race_to_the_results(ada, bob)
    # Ada gave up first every time: 1 point a race (of 2 racers the first gets 1), Bob 0
    for page in (ada, bob):
        table = page.locator("table.series")
        expect(table.locator("caption")).to_have_text("Serie finita: gara 3/3")
        expect(table.locator("tbody tr")).to_have_count(2)
        expect(table.locator("tbody tr").first).to_contain_text("Ada")
        expect(table.locator("tbody tr").first.locator("td").nth(2)).to_have_text("3")
        expect(table.locator("tbody tr").nth(1).locator("td").nth(2)).to_have_text("0")
    bob.locator("table.series").scroll_into_view_if_needed()
    screenshot(bob, "series-final-390x844")
    screenshot(ada, "series-final-1366x768")
    assert ada.url.endswith(f"/r/{room}")


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
