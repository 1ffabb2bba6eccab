"""The divergence view in real browsers: two racers play one deal, the same first three
moves, then different fourth moves; once the race is over the results link to /compare/{a}/{b},
which shows where the two lines parted (the first differing move), both boards side by side
(stacked on a phone) stepped on together, and what each line led to. While the deal is still in
play the view says so (the server's 403); two games of different deals are refused plainly."""

from __future__ import annotations

import re
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from halfmoon.game import Game, Move
from tests.web.conftest import Pages, load_vector, play, screenshot, tops_of, wait_board, wait_stored
from tests.web.test_rematch import give_up
from tests.web.test_track import new_room, wire

pytestmark = pytest.mark.browser

WON = load_vector("won_game_browser.json")
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1366, "height": 768}
SHARED = 3  # the moves both racers play before they part


def line_tops(page: Page, line: str) -> dict[str, str | None]:
    return dict(
        page.eval_on_selector_all(
            f'.compare-line[data-line="{line}"] .board [data-pos]',
            "els => els.map(b => [b.dataset.pos, b.dataset.card || null])",
        )
    )


def ringed(page: Page, line: str) -> list[str]:
    return page.eval_on_selector_all(
        f'.compare-line[data-line="{line}"] .board .selected', "els => els.map(b => b.dataset.pos)"
    )


def expect_line(page: Page, line: str, game: Game, next_move: list[str] | None) -> None:
    """The line's board shows `game`'s table (tops and counts), its next move ringed."""
    page.wait_for_function(
        "([line, want]) => [...document.querySelectorAll(`.compare-line[data-line='${line}'] .board [data-pos]`)]"
        ".every(b => (b.dataset.card || null) === want[b.dataset.pos])",
        arg=[line, tops_of(game)],
    )
    assert line_tops(page, line) == tops_of(game)
    assert sorted(ringed(page, line)) == sorted(next_move or [])


def test_the_results_open_where_two_racers_lines_parted(pages: Pages) -> None:
    room = new_room(pages.base, WON["code"])
    ada = pages.new(f"/r/{room}", viewport=DESKTOP, name="Ada")
    expect(ada.locator(".players li")).to_have_count(1)
    with wire(pages.base) as bob:
        bob.send("join", room=room, name="Bob")
        bob.next("welcome")
        expect(ada.locator(".players li")).to_have_count(2)
        ada.get_by_role("button", name="Via!").click()
        bob.next("started")
        game_ada, game_bob, shared = (Game.from_code(WON["code"]) for _ in range(3))
        wait_board(ada, game_ada)
        for names in WON["moves"][:SHARED]:
            play(ada, game_ada, names)
            bob.send("move", positions=names)
            bob.next("moved")
            game_bob.push(Move.from_names(names))
            shared.push(Move.from_names(names))
        # then they part: Ada plays the won game's fourth move, Bob another one
        ada_fourth = WON["moves"][SHARED]
        bob_fourth = next(m.names() for m in game_bob.legal_moves() if sorted(m.names()) != sorted(ada_fourth))
        play(ada, game_ada, ada_fourth)
        bob.send("move", positions=bob_fourth)
        bob.next("moved")
        game_bob.push(Move.from_names(bob_fourth))
        bob.send("give_up")
        bob_game = bob.next("game_over")["game"]
        # Ada still plays the deal: the view says the games open once everyone has finished
        # (Bob's game stored first: the server says no such game until then)
        status, body = wait_stored(pages.base, bob_game)
        assert status == 403, body
        early = pages.new(f"/compare/{bob_game}/{bob_game}", viewport=DESKTOP)
        expect(early.locator('.compare-error[data-error="game_hidden"] [role="alert"]')).to_have_text(
            "La partita si potrà rivedere quando avranno finito tutti i giocatori della sua gara."
        )
        assert not early.locator(".compare-line").count()
        give_up(ada)
        over = bob.next("race_over")
    games: dict[str, Any] = {line["name"]: line["game"] for line in over["results"]}
    assert games["Bob"] == bob_game and games["Ada"]
    for game in games.values():
        wait_stored(pages.base, game)
    # the results link Ada's game to Bob's
    link = ada.locator(".compare-links a")
    expect(link).to_have_text("Ada ⇄ Bob")
    expect(ada.locator(".compare-links")).to_contain_text("Confronta le mosse:")
    link.click()
    ada.wait_for_url(re.compile(f"/compare/{games['Ada']}/{games['Bob']}$"))
    parted = ada.locator(".parted")
    expect(parted).to_have_text("Stesse prime 3 mosse: le due partite si separano alla mossa 4.")
    expect(parted).to_have_attribute("data-divergence", str(SHARED))
    expect(ada.locator(".compare .note")).to_contain_text("in un altro ordine")
    # at the divergence both boards show the same table, each with its own next move ringed
    expect_line(ada, "a", shared, ada_fourth)
    expect_line(ada, "b", shared, bob_fourth)
    expect(ada.locator(".compare-line h2")).to_have_text(["A · Ada", "B · Bob"])
    expect(ada.locator(".compare .counter")).to_have_text("Mossa 3 / 4")
    # what each line led to
    for line, game in (("a", game_ada), ("b", game_bob)):
        results = ada.locator(f'.compare-line[data-line="{line}"] dd')
        expect(results).to_have_text(
            ["ha abbandonato", str(game.score), str(game.cards_left), "4", re.compile(r"^\d+:\d\d$")]
        )
    screenshot(ada, "compare-1366x768")
    # the step buttons work from the keyboard: Enter on «Avanti», then the arrow keys
    ada.locator('[data-step="next"]').focus()
    ada.keyboard.press("Enter")
    expect(ada.locator(".compare .counter")).to_have_text("Mossa 4 / 4")
    expect(ada.locator('[data-step="next"]')).to_be_disabled()
    expect_line(ada, "a", game_ada, None)
    expect_line(ada, "b", game_bob, None)
    expect(ada.locator('.compare-line[data-line="a"] .step')).to_have_text("La partita finisce qui.")
    ada.locator('[data-step="prev"]').focus()
    ada.keyboard.press("ArrowLeft")
    ada.keyboard.press("ArrowLeft")
    expect(ada.locator(".compare .counter")).to_have_text("Mossa 2 / 4")
    ada.locator('[data-step="split"]').click()
    expect(ada.locator(".compare .counter")).to_have_text("Mossa 3 / 4")
    expect_line(ada, "b", shared, bob_fourth)
    # both boards side by side on a desktop; one under the other on a phone, each as wide as the screen
    a_box, b_box = (ada.locator(f'.compare-line[data-line="{x}"] .board').bounding_box() for x in "ab")
    assert a_box and b_box and a_box["x"] + a_box["width"] <= b_box["x"] and abs(a_box["y"] - b_box["y"]) < 2
    ada.set_viewport_size(PHONE)
    a_box, b_box = (ada.locator(f'.compare-line[data-line="{x}"] .board').bounding_box() for x in "ab")
    assert a_box and b_box and a_box["y"] + a_box["height"] <= b_box["y"]
    assert b_box["x"] >= 0 and b_box["x"] + b_box["width"] <= PHONE["width"]
    controls = ada.locator(".compare .replay-controls").evaluate("c => [c.scrollWidth, c.clientWidth]")
    assert controls[0] <= controls[1], controls  # the step buttons fit on one row
    screenshot(ada, "compare-390x844")
    # in English
    english = pages.new(f"/compare/{games['Ada']}/{games['Bob']}", viewport=DESKTOP, settings={"lang": "en"})
    expect(english.locator(".parted")).to_have_text("Same first 3 moves: the two games part at move 4.")
    expect(english.locator('.compare-line[data-line="b"] dd').first).to_have_text("gave up")
    # a game of another deal cannot be compared with these
    with wire(pages.base) as cy:
        cy.send("solo", name="Cy", code="HM1-N-AAAAAAA")
        cy.next("welcome")
        cy.send("give_up")
        other_deal = cy.next("game_over")["game"]
    wait_stored(pages.base, other_deal)
    refused = pages.new(f"/compare/{games['Ada']}/{other_deal}", viewport=DESKTOP)
    expect(refused.locator('.compare-error[data-error="other_deal"] [role="alert"]')).to_contain_text(
        "non sono sulla stessa smazzata"
    )
    # the server answers the page's address as one of the app's routes (200), not with its 404
    with urllib.request.urlopen(f"{pages.base}/compare/{games['Ada']}/{games['Bob']}", timeout=5) as response:
        assert response.status == 200
    # and an address with one id only is the app's 404 page
    missing = pages.new(f"/compare/{games['Ada']}", viewport=DESKTOP)
    expect(missing.locator('[data-page="404"]')).to_be_visible()
