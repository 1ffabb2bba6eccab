"""The browser client in a real chromium against a real server: the board as the seed draws
it at phone and desktop sizes, a complete won game by clicks, every tap case of the shared
vectors, both settings, undo, a stall, keyboard play, the languages and a reconnect."""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any

import pytest
from playwright.sync_api import FloatRect, Page, WebSocketRoute, expect

from halfmoon.game import Game, Move
from halfmoon.positions import POSITION_NAMES
from halfmoon.taps import matching_positions
from tests.web.conftest import (
    DESKTOP,
    PHONE,
    Pages,
    ended_game,
    load_vector,
    play,
    screenshot,
    tap,
    wait_board,
    wait_stored,
)

pytestmark = pytest.mark.browser

#: The client's WebSocket, with or without the room it names (``/ws?room=ID``).
WS_URL = re.compile(r"/ws(\?.*)?$")

WON = load_vector("won_game_browser.json")


def selected(page: Page) -> set[str]:
    return set(page.eval_on_selector_all('.board [aria-pressed="true"]', "els => els.map(e => e.dataset.pos)"))


def dimmed(page: Page) -> set[str]:
    return set(page.eval_on_selector_all(".board .dim", "els => els.map(e => e.dataset.pos)"))


def box(page: Page, name: str) -> FloatRect:
    found = page.locator(f'.board [data-pos="{name}"] .face').bounding_box()
    assert found is not None
    return found


# -- the board ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_board_is_the_seeds_arc_and_fits_without_scrolling(pages: Pages, size: str) -> None:
    viewport = PHONE if size == "phone" else DESKTOP
    page = pages.new(f"/play/{WON['code']}", viewport=viewport, name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    expect(page.locator('[data-stat="code"]')).to_have_text(WON["code"])
    b = {name: box(page, name) for name in POSITION_NAMES}
    cx = {n: v["x"] + v["width"] / 2 for n, v in b.items()}
    cy = {n: v["y"] + v["height"] / 2 for n, v in b.items()}
    # piles 1-3 up the left side, 1 at the bottom
    assert cy["1"] > cy["2"] > cy["3"] and abs(cx["1"] - cx["3"]) < 1
    # piles 4-10 along the top, left to right, above everything else
    assert all(cx[str(i)] < cx[str(i + 1)] for i in range(4, 10))
    assert all(abs(cy[str(i)] - cy["4"]) < 1 for i in range(4, 11))
    assert cy["4"] < min(cy[n] for n in POSITION_NAMES if n not in {str(i) for i in range(4, 11)})
    # piles 11-12 down the right side, below the corner
    assert cy["10"] < cy["11"] < cy["12"] and abs(cx["11"] - cx["12"]) < 1 and cx["11"] > cx["10"]
    # the reserve in the middle of the arc, R1-R4 over R5-R8
    for row in (["R1", "R2", "R3", "R4"], ["R5", "R6", "R7", "R8"]):
        assert all(cx[a] < cx[b_] for a, b_ in itertools.pairwise(row))
        assert all(cx["3"] < cx[r] < cx["11"] for r in row)
    assert cy["R1"] < cy["R5"] and cy["R1"] > cy["4"]
    assert abs((cx["R2"] + cx["R3"]) / 2 - (cx["4"] + cx["10"]) / 2) < 2, "the reserve is centred under the top row"
    # nothing overlaps, everything is inside the window, nothing scrolls
    faces = list(b.values())
    for i, one in enumerate(faces):
        assert one["x"] >= 0 and one["x"] + one["width"] <= viewport["width"]
        assert one["y"] >= 0 and one["y"] + one["height"] <= viewport["height"]
        for other in faces[i + 1 :]:
            assert (
                one["x"] + one["width"] <= other["x"]
                or other["x"] + other["width"] <= one["x"]
                or one["y"] + one["height"] <= other["y"]
                or other["y"] + other["height"] <= one["y"]
            )
    sizes = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.scrollHeight, innerWidth, innerHeight]"
    )
    assert sizes[0] <= sizes[2] and sizes[1] <= sizes[3], f"the page scrolls: {sizes}"
    # a thumb can hit a card: the whole button (card and label) is at least 36 px wide and 48 tall
    hit = page.locator('.board [data-pos="5"]').bounding_box()
    assert hit is not None and hit["width"] >= 36 and hit["height"] >= 48
    if size == "desktop":
        assert b["5"]["height"] >= 150, "a desktop board uses the room it has"
    else:
        # a portrait phone's width bounds a card's width; its height is used for taller cards
        assert b["5"]["height"] >= 1.6 * b["5"]["width"], b["5"]
    # the header's and the bar's buttons are thumb-sized (the copy button by its hit area)
    for selector in (".top nav button", ".top nav a", ".bar .actions button"):
        for found in page.locator(selector).all():
            bounds = found.bounding_box()
            assert bounds is not None and bounds["height"] >= 40, (selector, bounds)
    copy = page.locator(".bar .copy")
    assert copy.evaluate("b => parseFloat(getComputedStyle(b, '::after').height)") >= 40
    # each card is a button named by card and position; Italian letters for face cards
    first = game.card_at(0)
    assert first is not None
    expect(page.locator('.board [data-pos="1"]')).to_have_attribute(
        "aria-label", f"{first.symbol(lang='it')} 1·8 (pila 1, 8 carte)"
    )
    assert page.locator(".board button[data-pos]").count() == 20
    # a player's own board is big enough for the pip in the middle of each card
    expect(page.locator('.board [data-pos="5"] .pip')).to_be_visible()
    screenshot(page, f"game-{size}")


def test_a_complete_won_game_by_clicks(pages: Pages) -> None:
    settings = {"moveErrors": False, "placementHelp": False, "lang": "it", "name": "Vinny"}
    page = pages.new(f"/play/{WON['code']}", settings=settings)
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    for names in WON["moves"]:
        play(page, game, names)
    assert game.is_won
    win = page.locator('.endbox [data-outcome="won"]')
    expect(win).to_be_visible()
    expect(win.locator('[data-result="score"]')).to_have_text("520")
    expect(win.locator('[data-result="moves"]')).to_have_text("48")
    expect(win.locator('[data-result="time"]')).to_have_text(page.locator('[data-stat="time"]').text_content() or "")
    assert page.locator(".board .slot.empty").count() == 20
    expect(page.get_by_role("button", name="Annulla")).to_be_disabled()
    # the replay of the finished game steps through it on the board (once stored: the replay
    # page asks again for a few seconds, a test need not count on it)
    wait_stored(pages.base, ended_game(page))
    page.click("text=Rivedi la partita")
    expect(page.locator('[data-stat="moves"]')).to_have_text("0")
    expect(page.locator(".replay .bar")).to_contain_text("Vinny")  # whose game this was
    replayed = Game.from_code(WON["code"])
    wait_board(page, replayed)
    page.click('[data-step="next"]')
    first_move = Game.from_code(WON["code"])
    named = " + ".join(
        f"{first_move.card_at(POSITION_NAMES.index(n)).symbol(lang='it')} (pila {n})"  # type: ignore[union-attr]
        for n in WON["moves"][0]
    )
    # the step is told as the seed's examples tell it, and the removed cards are ringed where
    # they lay (not the cards they uncover), then leave the board
    expect(page.locator(".step")).to_have_text(f"Mossa 1 / 48: {named}")
    removed = {n: first_move.card_at(POSITION_NAMES.index(n)).name for n in WON["moves"][0]}  # type: ignore[union-attr]
    ringed = page.eval_on_selector_all(
        '.board [aria-pressed="true"]', "els => els.map(e => [e.dataset.pos, e.dataset.card])"
    )
    assert dict(ringed) == removed
    replayed.push(Move.from_names(WON["moves"][0]))
    wait_board(page, replayed)
    assert selected(page) == set()
    expect(page.locator('[data-stat="score"]')).to_have_text(str(replayed.score))
    page.click('[data-step="last"]')
    expect(page.locator('[data-stat="score"]')).to_have_text("520")
    expect(page.locator(".board .slot.empty")).to_have_count(20)


# -- taps and settings ---------------------------------------------------------------------------


def run_tap_vector(page: Page, vector: dict[str, Any]) -> None:
    settings = {"moveErrors": vector["move_errors"], "placementHelp": True, "lang": "it", "name": "Tapper"}
    # a fresh game each time: forget the tab's running game (else the address resumes it)
    page.evaluate(
        "s => { localStorage.setItem('halfmoon.settings', JSON.stringify(s)); sessionStorage.clear() }", settings
    )
    page.goto(f"/play/{vector['code']}")
    game = Game.from_code(vector["code"])
    wait_board(page, game)
    for names in vector["setup"]:
        play(page, game, names)
    toast = page.locator("#toast")
    for i, step in enumerate(vector["steps"]):
        where = f"{vector['name']}, step {i + 1}"
        tap(page, step["tap"])
        if step["removed"]:
            game.push(Move.from_names(step["removed"]))
            expect(page.locator('[data-stat="moves"]')).to_have_text(str(game.move_count))
        wait_board(page, game)
        assert selected(page) == set(step["selection"]), where
        if step["message"]:
            expect(toast).to_have_text(step["message"]["it"])
        elif not vector["move_errors"]:
            assert toast.is_hidden(), f"{where}: no message with «Errori di mossa» off"
        selection = tuple(POSITION_NAMES.index(n) for n in step["selection"])
        want_dim = set()
        if selection:
            ok = matching_positions(game, selection)
            want_dim = {POSITION_NAMES[p] for p in game.playable() if p not in ok and p not in selection}
        assert dimmed(page) == want_dim, f"{where}: «Aiuto al posizionamento»"
        assert sorted(want_dim | set(step["selection"]) | set(step["matching"])) == sorted(
            {POSITION_NAMES[p] for p in game.playable()} if selection else set(step["matching"])
        )


def test_every_tap_case_of_the_shared_vectors(pages: Pages) -> None:
    vectors = load_vector("taps.json")["vectors"]
    assert len(vectors) >= 15
    page = pages.new("/rules")
    for vector in vectors:
        run_tap_vector(page, vector)


def test_settings_are_switched_in_the_dialog_and_remembered(pages: Pages) -> None:
    page = pages.new(f"/play/{WON['code']}", viewport=PHONE, name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    toast = page.locator("#toast")
    pile1 = game.card_at(0)
    assert pile1 is not None and not pile1.is_face
    bad = next(  # a number card that does not sum to 11 with pile 1's
        POSITION_NAMES[p] for p, c in game.playable().items() if p != 0 and not c.is_face and c.rank + pile1.rank != 11
    )
    # off at first: a bad selection is cancelled without a word, and nothing is dimmed
    tap(page, "1")
    assert dimmed(page) == set()
    tap(page, bad)
    assert selected(page) == set()
    assert toast.is_hidden()
    # switch both on
    page.get_by_role("button", name="Impostazioni").click()
    page.get_by_label("Errori di mossa").check()
    page.get_by_label("Aiuto al posizionamento").check()
    page.get_by_role("button", name="Chiudi").click()
    tap(page, "1")
    ok = matching_positions(game, (0,))
    assert dimmed(page) == {POSITION_NAMES[p] for p in game.playable() if p not in ok and p != 0}
    assert dimmed(page), "pile 1's card cannot pair with everything"
    tap(page, bad)
    expect(toast).to_have_text("La somma deve essere uguale a 11")
    # remembered after a reload
    page.reload()
    page.get_by_role("button", name="Impostazioni").click()
    expect(page.get_by_label("Errori di mossa")).to_be_checked()
    expect(page.get_by_label("Aiuto al posizionamento")).to_be_checked()
    page.get_by_label("Errori di mossa").uncheck()
    page.get_by_role("button", name="Chiudi").click()
    page.reload()
    page.get_by_role("button", name="Impostazioni").click()
    expect(page.get_by_label("Errori di mossa")).not_to_be_checked()


def test_language_follows_the_browser_and_can_be_switched(pages: Pages) -> None:
    code = "HM1-N-AAAAAEK"  # the seed's two K♥ are on its table
    game = Game.from_code(code)
    king = next(p for p, c in game.playable().items() if c.name == "KH")
    name = POSITION_NAMES[king]
    page = pages.new(f"/play/{code}", locale="en-US", name="Tess")
    wait_board(page, game)
    card = page.locator(f'.board [data-pos="{name}"]')
    count = game.count_at(king)
    where = f"{'pile' if king < 12 else 'reserve slot'} {name}"
    cards = "card" if count == 1 else "cards"
    expect(card).to_have_attribute("aria-label", f"K♥ {name}·{count} ({where}, {count} {cards})")
    expect(card.locator(".corner")).to_have_text("K♥")
    expect(page.get_by_role("button", name="Undo")).to_be_visible()
    page.locator("button.lang").click()
    expect(card.locator(".corner")).to_have_text("R♥")
    expect(page.get_by_role("button", name="Annulla")).to_be_visible()
    page.reload()
    expect(page.locator(f'.board [data-pos="{name}"] .corner')).to_have_text("R♥")
    page.goto("/rules")
    expect(page.locator("h1")).to_have_text("Le regole di Half Moon")
    expect(page.locator(".rules")).to_contain_text("La somma deve essere uguale a 11")
    page.locator("button.lang").click()
    expect(page.locator(".rules")).to_contain_text("Two 52-card decks shuffled together")
    expect(page.locator(".rules h2").first).to_have_text("Setup")


# -- undo, stall, keyboard, reconnect ------------------------------------------------------------


def test_undo_puts_the_cards_back(pages: Pages) -> None:
    page = pages.new(f"/play/{WON['code']}", name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    start = Game.from_code(WON["code"])
    # the code's copy button puts the code on the clipboard
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=pages.base)
    page.get_by_role("button", name="Copia Codice").click()
    expect(page.locator("#toast")).to_have_text(f"Copiato: {WON['code']}")
    assert page.evaluate("navigator.clipboard.readText()") == WON["code"]
    undo = page.get_by_role("button", name="Annulla")
    expect(undo).to_be_disabled()
    play(page, game, WON["moves"][0])
    play(page, game, WON["moves"][1])
    undo.click()
    game.undo()
    expect(page.locator('[data-stat="moves"]')).to_have_text("1")
    expect(page.locator('[data-stat="score"]')).to_have_text(str(game.score))
    wait_board(page, game)
    page.keyboard.press("u")  # the keyboard shortcut
    expect(page.locator('[data-stat="moves"]')).to_have_text("0")
    wait_board(page, start)
    expect(undo).to_be_disabled()


def find_stall(code: str, seed: int) -> list[list[str]]:
    """A line of legal moves from the deal to a stall, by seeded random play (the shortest of a few)."""
    rng = random.Random(seed)
    best: list[list[str]] | None = None
    for _ in range(200):
        game = Game.from_code(code)
        line: list[list[str]] = []
        while not game.is_won and not game.is_stalled:
            move = rng.choice(list(game.legal_moves()))
            game.push(move)
            line.append(move.names())
        if game.is_stalled and (best is None or len(line) < len(best)):
            best = line
    assert best is not None
    return best


def test_a_stall_is_announced_with_undo_and_new_game(pages: Pages) -> None:
    code = "HM1-N-AAAAAAC"
    line = find_stall(code, seed=5)
    page = pages.new(f"/play/{code}", viewport=PHONE, name="Tess")
    game = Game.from_code(code)
    wait_board(page, game)
    for names in line:
        play(page, game, names)
    assert game.is_stalled
    stall = page.locator(".endbox .stall")
    expect(stall).to_contain_text("Stallo")
    expect(stall).to_contain_text("Puoi annullare o iniziare una nuova partita.")
    screenshot(page, "stall-phone")
    page.locator(".endbox").get_by_role("button", name="Annulla").click()
    game.undo()
    expect(page.locator('[data-stat="moves"]')).to_have_text(str(game.move_count))
    expect(stall).to_be_hidden()
    wait_board(page, game)
    play(page, game, line[-1])
    expect(stall).to_be_visible()
    page.locator(".endbox").get_by_role("button", name="Nuova partita").click()
    # a game under way is thrown away only once the player says so
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Nuova partita").click()
    expect(page.locator('[data-stat="moves"]')).to_have_text("0")
    expect(page.locator('[data-stat="code"]')).not_to_have_text(code)
    expect(page).to_have_url(re.compile(r"/play/HM1-N-[A-Z]{7}$"))
    assert not page.url.endswith(code)


def test_keyboard_play(pages: Pages) -> None:
    page = pages.new(f"/play/{WON['code']}", name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    first, second = WON["moves"][1]  # a pair
    page.locator(f'.board [data-pos="{first}"]').focus()
    page.keyboard.press("Enter")
    assert selected(page) == {first}
    page.keyboard.press("Escape")
    assert selected(page) == set()
    page.keyboard.press("Space")
    assert selected(page) == {first}
    page.locator(f'.board [data-pos="{second}"]').focus()
    page.keyboard.press("Enter")
    game.push(Move.from_names([first, second]))
    expect(page.locator('[data-stat="moves"]')).to_have_text("1")
    wait_board(page, game)
    # arrow keys walk the arc: from pile 4 right is pile 5, down from pile 3 is pile 2
    page.locator('.board [data-pos="4"]').focus()
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.pos") == "5"
    page.locator('.board [data-pos="3"]').focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.pos") == "2"
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.pos") == "R5"


def test_a_reload_resumes_and_a_dropped_connection_reconnects(pages: Pages) -> None:
    page = pages.new("/", viewport=PHONE, name="Tess")
    refuse = [False]
    routes: list[WebSocketRoute] = []

    def handler(route: WebSocketRoute) -> None:
        if refuse[0]:
            route.close()
            return
        route.connect_to_server()
        routes.append(route)

    page.route_web_socket(WS_URL, handler)
    page.get_by_role("button", name="Nuova partita").click()
    page.wait_for_url("**/play/HM1-N-*")
    code = page.locator('[data-stat="code"]').text_content() or ""
    game = Game.from_code(code)
    wait_board(page, game)
    for _ in range(2):
        move = next(game.legal_moves(), None)
        assert move is not None
        play(page, game, move.names())
    # a reload continues the same game where it was
    page.reload()
    expect(page.locator('[data-stat="moves"]')).to_have_text("2")
    expect(page.locator('[data-stat="score"]')).to_have_text(str(game.score))
    wait_board(page, game)
    # the connection drops and cannot come back at once: the client says so and retries
    refuse[0] = True
    for route in routes:
        route.close()
    banner = page.locator("#banner")
    expect(banner).to_have_text("Connessione persa: riconnessione in corso…")
    refuse[0] = False
    expect(banner).to_be_hidden(timeout=10000)
    move = next(game.legal_moves())
    play(page, game, move.names())
    expect(page.locator('[data-stat="moves"]')).to_have_text("3")


def test_a_refused_move_is_taken_back(pages: Pages) -> None:
    """The removal is drawn at once; when the server refuses the move, the cards come back."""
    page = pages.new("/", viewport=PHONE, name="Tess")
    refuse = [True]

    def handler(route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def from_page(message: str | bytes) -> None:
            frame = json.loads(message)
            if frame.get("type") == "move" and refuse[0]:
                # the server never sees it: answer as a server refusing it would
                refusal = {
                    "type": "error",
                    "v": 1,
                    "code": "illegal_move",
                    "reason": "not_a_match",
                    "message": "refused for the test",
                    "id": frame["id"],
                }
                route.send(json.dumps(refusal))
                return
            server.send(message)

        route.on_message(from_page)

    page.route_web_socket(WS_URL, handler)
    page.goto(f"/play/{WON['code']}")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    first, second = WON["moves"][1]
    page.evaluate(  # note every score the bar shows
        """() => { const score = document.querySelector('[data-stat=score]'); window.seen = [];
        new MutationObserver(() => window.seen.push(score.textContent))
          .observe(score, {childList: true, characterData: true, subtree: true}) }"""
    )
    tap(page, first)
    tap(page, second)
    expect(page.locator("#toast")).to_have_text("refused for the test")
    expect(page.locator('[data-stat="score"]')).to_have_text("0")
    wait_board(page, game)
    assert "10" in page.evaluate("window.seen"), "the removal was drawn before the answer"
    refuse[0] = False
    play(page, game, [first, second])
