"""Issue 12, the player-facing pass, in a real chromium: the seed exactly (no word on whether a
deal can be won; the layout diagram; the Examples page; the app's 404 page), each numbered
defect, and the screenshots of every screen at 360×640, 390×844 and 1366×768."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect
from websockets.sync.client import ClientConnection, connect

from halfmoon.game import Game, Move
from halfmoon.positions import POSITION_NAMES
from tests.web.conftest import PHONE, Pages, load_vector, play, screenshot, tap, wait_board, wait_stored
from tests.web.test_browser import find_stall

pytestmark = pytest.mark.browser

WON = load_vector("won_game_browser.json")
SIZES: dict[str, ViewportSize] = {
    "360x640": {"width": 360, "height": 640},
    "390x844": {"width": 390, "height": 844},
    "1366x768": {"width": 1366, "height": 768},
}
WINNABILITY = re.compile(r"vincere|vinceva|winnable|could be won|can be won|risolutore dice", re.IGNORECASE)


# -- a player over a plain WebSocket (to make rooms and stored games quickly) ---------------------


class Wire:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    def send(self, kind: str, **fields: Any) -> None:
        self.ws.send(json.dumps({"type": kind, "v": 1, **fields}))

    def next(self, kind: str) -> dict[str, Any]:
        while True:
            message = json.loads(self.ws.recv(timeout=10))
            if message["type"] == kind:
                return message
            assert message["type"] != "error", message


@contextmanager
def wire(base: str) -> Iterator[Wire]:
    with connect(base.replace("http", "ws") + "/ws") as ws:
        yield Wire(ws)


def new_room(base: str, code: str) -> str:
    request = urllib.request.Request(
        f"{base}/api/rooms", data=json.dumps({"code": code}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return str(json.loads(response.read())["room"])


def stored_game(base: str, moves: int) -> str:
    """A finished solo game of WON's deal (``moves`` moves, then given up): its id, once stored."""
    with wire(base) as ada:
        ada.send("solo", name="Ada", code=WON["code"])
        ada.next("welcome")
        for names in WON["moves"][:moves]:
            ada.send("move", positions=names)
            ada.next("moved")
        ada.send("give_up")
        game = str(ada.next("game_over")["game"])
    wait_stored(base, game)
    return game


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"] + 0.5
        or b["x"] + b["width"] <= a["x"] + 0.5
        or a["y"] + a["height"] <= b["y"] + 0.5
        or b["y"] + b["height"] <= a["y"] + 0.5
    )


def assert_endbox_clear_of_the_board(page: Page) -> None:
    end = page.locator(".endbox").bounding_box()
    assert end is not None
    for slot in page.locator(".board-wrap .board .slot").all():
        found = slot.bounding_box()
        if found is not None and found["width"] > 0:
            assert not overlaps(end, found), f"the end box covers {slot.get_attribute('data-pos')}"


# -- the seed ----------------------------------------------------------------------------------------


def test_no_screen_says_whether_a_deal_can_be_won(pages: Pages) -> None:
    """Stalled, then given up (solo) and a finished race: no word on winnability, no
    `analysis` in game_over."""
    code = "HM1-N-AAAAAAB"
    line = find_stall(code, seed=5)
    page = pages.new(f"/play/{code}", viewport=PHONE, name="Tess")
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(str(f))))
    page.reload()
    game = Game.from_code(code)
    wait_board(page, game)
    for names in line:
        play(page, game, names)
    expect(page.locator(".endbox .stall")).to_be_visible()
    assert not WINNABILITY.search(page.locator("body").inner_text())
    assert all('"analysis"' not in f for f in frames)


def test_rules_draw_the_layout_and_link_to_the_examples_which_step_through_the_seeds_examples(pages: Pages) -> None:
    page = pages.new("/rules")
    figure = page.locator(".rules .diagram-figure")
    expect(figure).to_be_visible()
    labels = figure.locator(".slot .label").all_text_contents()
    assert labels == [f"{name}·{1 if name.startswith('R') else 8}" for name in POSITION_NAMES]
    assert figure.locator('.slot[data-pos="1"]').get_attribute("data-card") == "5S"
    assert figure.locator('.slot[data-pos="8"]').get_attribute("data-card") == "6D"
    page.locator('.rules a[href="/examples"]').first.click()
    expect(page).to_have_url(re.compile(r"/examples$"))
    step = page.locator(".examples .step")
    expect(step).to_contain_text("12 pile da 8")
    said = []
    for _ in range(8):
        page.click('[data-step="next"]')
        said.append((step.text_content() or "", sorted(page.eval_on_selector_all(
            '.board [aria-pressed="true"]', "els => els.map(e => e.dataset.pos + ':' + e.dataset.card)"))))
    assert said[0][1] == ["1:5S"]
    assert "5♠ (pila 1)" in said[1][0] and "A♥" in said[1][0] and "non è 11" in said[1][0]
    assert "R♥ (pila 3)" in said[2][0]
    assert said[3][1] and said[3][1][0].endswith(":KH") and "la seconda diventa la carta selezionata" in said[3][0]
    assert said[4][1] == ["1:5S", "8:6D"] and "5 + 6 = 11" in said[4][0]
    assert said[5][1] == ["3:KH", "5:QH", "8:JC"] and "V♣" in said[5][0]
    assert "25 punti" in said[6][0]
    assert "520 punti" in said[7][0]
    expect(page.locator(".board .slot.empty")).to_have_count(20)


def test_an_unknown_address_is_the_apps_own_404_page_with_a_way_home(pages: Pages) -> None:
    page = pages.new("/")
    response = page.goto("/no/such/page")
    assert response is not None and response.status == 404
    assert "text/html" in (response.headers.get("content-type") or "")
    box = page.locator('[data-page="404"]')
    expect(box).to_contain_text("Questa pagina non esiste.")
    expect(box).to_contain_text("There is no such page.")
    box.get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/$"))


def test_no_link_in_the_app_leads_to_a_404(pages: Pages) -> None:
    page = pages.new("/", name="Tess")
    seen: set[str] = set()
    for start in ("/", "/rules", "/examples", "/leaderboard"):
        page.goto(start)
        page.wait_for_selector("main h1", state="attached")
        for href in page.eval_on_selector_all("a[href^='/']", "els => els.map(e => e.getAttribute('href'))"):
            if href in seen:
                continue
            seen.add(href)
            assert page.request.get(href).status == 200, href
    assert {"/rules", "/examples", "/leaderboard"} <= seen


# -- the numbered defects -----------------------------------------------------------------------------


def test_1_daily_second_tab_resumes_and_the_screen_says_whether_it_is_ranked(pages: Pages) -> None:
    first = pages.new("/daily", viewport=PHONE, name="Rita")
    line = first.locator(".daily-line")
    expect(line).to_contain_text("È il tuo tentativo in classifica")
    expect(line).to_contain_text("Prossima sfida tra")
    expect(line).to_contain_text(re.compile(r"\d{4}"))  # today's date
    expect(first.locator('[data-stat="moves"]')).to_have_text("0")
    tops = first.eval_on_selector_all(".board [data-pos]", "els => els.map(e => [e.dataset.pos, e.dataset.card])")
    cards = {pos: card for pos, card in tops if card}
    move = next([a, b] for a in cards for b in cards if a != b and _sum11(cards[a], cards[b]))
    for name in move:
        tap(first, name)
    expect(first.locator('[data-stat="moves"]')).to_have_text("1")
    # a second tab of the same browser takes the same attempt up where it is
    second = first.context.new_page()
    second.goto("/daily")
    expect(second.locator('[data-stat="moves"]')).to_have_text("1")
    expect(second.locator(".daily-line")).to_contain_text("È il tuo tentativo in classifica")
    expect(first.locator("#banner")).to_contain_text("un'altra scheda")
    screenshot(second, "daily-phone")
    # the same name in another browser, in another letter case: told before the first move
    again = pages.new("/daily", viewport=PHONE, name="RITA")
    expect(again.locator(".daily-line")).to_have_attribute("data-ranked", "false")
    expect(again.locator(".daily-line")).to_contain_text("fuori classifica")
    expect(again.locator('[data-stat="moves"]')).to_have_text("0")


def _sum11(a: str, b: str) -> bool:
    """Two card names (5S, AH, 10D) that make a pair."""
    value = {"A": 1, **{str(n): n for n in range(2, 11)}}
    return value.get(a[:-1], 99) + value.get(b[:-1], 99) == 11


def test_2_new_game_mid_solo_asks_first(pages: Pages) -> None:
    page = pages.new(f"/play/{WON['code']}", name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    play(page, game, WON["moves"][0])
    page.locator(".bar").get_by_role("button", name="Nuova partita").click()
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Iniziare una nuova partita?")
    dialog.get_by_role("button", name="Continua a giocare").click()
    expect(page.locator('[data-stat="moves"]')).to_have_text("1")
    assert page.url.endswith(WON["code"])
    page.locator(".bar").get_by_role("button", name="Nuova partita").click()
    dialog.get_by_role("button", name="Nuova partita").click()
    expect(page.locator('[data-stat="moves"]')).to_have_text("0")
    expect(page).not_to_have_url(re.compile(WON["code"]))


def test_3_no_invented_names_and_each_players_best_game(pages: Pages) -> None:
    page = pages.new("/play")  # no name chosen yet
    ask = page.locator(".ask-name")
    expect(ask).to_contain_text("Il nome compare nelle classifiche")
    expect(page.locator(".board")).to_have_count(0)
    ask.get_by_label("Il tuo nome").fill("Nina")
    ask.get_by_role("button", name="Gioca").click()
    expect(page.locator('[data-stat="moves"]')).to_have_text("0")
    # two games under one name: one row, the other a tap away
    stored_game(pages.base, 2)
    stored_game(pages.base, 1)
    page.goto(f"/leaderboard/{WON['code']}")
    rows = page.locator("table.results tbody tr:not(.other)")
    expect(rows.filter(has_text="Ada")).to_have_count(1)
    more = rows.filter(has_text="Ada").get_by_role("button")
    other = page.locator("table.results tbody tr.other").filter(has_text="Ada").first
    expect(other).to_be_hidden()
    more.click()
    expect(other).to_be_visible()
    assert not page.locator("table.results").filter(has_text=re.compile(r"Giocatore \d{3}")).count()


def test_4_the_solo_clock_starts_at_the_first_move_and_stands_still_while_stalled(pages: Pages) -> None:
    code = "HM1-N-AAAAAAB"
    line = find_stall(code, seed=5)
    page = pages.new(f"/play/{code}", viewport=PHONE, name="Tess")
    game = Game.from_code(code)
    wait_board(page, game)
    clock = page.locator('[data-stat="time"]')
    page.wait_for_timeout(2200)
    expect(clock).to_have_text("0:00")
    for names in line:
        play(page, game, names)
    expect(page.locator(".endbox .stall")).to_be_visible()
    still = clock.text_content()
    page.wait_for_timeout(2200)
    expect(clock).to_have_text(still or "")
    page.locator(".endbox").get_by_role("button", name="Annulla").click()
    page.wait_for_timeout(2300)
    assert clock.text_content() != still, "the clock goes on after an undo"


def test_5_replay_rings_the_removed_cards(pages: Pages) -> None:
    game_id = stored_game(pages.base, 3)
    page = pages.new(f"/replay/{game_id}")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    for names in WON["moves"][:2]:
        page.click('[data-step="next"]')
        ringed = dict(page.eval_on_selector_all(
            '.board [aria-pressed="true"]', "els => els.map(e => [e.dataset.pos, e.dataset.card])"))
        assert ringed == {n: game.card_at(POSITION_NAMES.index(n)).name for n in names}  # type: ignore[union-attr]
        game.push(Move.from_names(names))
        wait_board(page, game)
    expect(page.locator(".replay .bar")).not_to_contain_text("Replay")


def test_6_phone_spectator_one_board_large_ring_labels_end_box_and_touch_targets(pages: Pages) -> None:
    room = new_room(pages.base, WON["code"])
    with wire(pages.base) as ada, wire(pages.base) as bob:
        ada.send("join", room=room, name="Ada")
        ada.next("welcome")
        bob.send("join", room=room, name="Bob")
        bob.next("welcome")
        ada.send("start", time_limit_s=600)
        ada.next("started")
        watcher = pages.new(f"/watch/{room}", viewport=PHONE)
        players = watcher.locator(".watch-player")
        expect(players).to_have_count(2)
        big = watcher.locator(".watch-player.focus .board .face").first.bounding_box()
        assert big is not None and big["width"] >= 30, big
        expect(watcher.locator(".watch-player:not(.focus) .board")).to_be_hidden()
        watcher.locator('.watch-player[data-player="p2"] > .who').click()
        expect(watcher.locator('.watch-player[data-player="p2"]')).to_have_class(re.compile("focus"))
        expect(watcher.locator('.watch-player[data-player="p1"] .board')).to_be_hidden()
    # the selection ring stays inside the card: the label above stays readable
    page = pages.new(f"/play/{WON['code']}", viewport=PHONE, name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    tap(page, "1")
    ring = page.locator('.board [data-pos="1"] .face').bounding_box()
    label = page.locator('.board [data-pos="2"] .label').bounding_box()
    assert ring is not None and label is not None and ring["y"] >= label["y"] + label["height"]
    # thumb-sized targets: the header's and bar's buttons, and the copy button's hit area
    for button in page.locator(".top nav button, .top nav a, .bar .actions button").all():
        found = button.bounding_box()
        assert found is not None and found["height"] >= 44, button.text_content()
    copy = page.locator(".bar .copy").bounding_box()
    assert copy is not None
    cx, cy = copy["x"] + copy["width"] / 2, copy["y"] + copy["height"] / 2
    for dx, dy in ((0, -21), (0, 21), (-21, 0), (21, 0)):
        hit = page.evaluate(f"document.elementFromPoint({cx + dx}, {cy + dy}).closest('.copy') !== null")
        assert hit, (dx, dy)


def test_7_a_nonexistent_room_says_so_before_asking_a_name(pages: Pages) -> None:
    page = pages.new("/r/ZZZZZZ")
    expect(page.get_by_role("alert")).to_have_text("La gara ZZZZZZ non esiste (forse è già finita).")
    expect(page.get_by_label("Il tuo nome")).to_have_count(0)


def test_8_italian_words(pages: Pages) -> None:
    page = pages.new("/")
    assert page.locator("#room").get_attribute("placeholder") == "codice o link"
    page.get_by_role("button", name="Impostazioni").click()
    dialog = page.locator("dialog.settings")
    text = dialog.inner_text()
    # the settings' names without literal «», each with a line on what it does
    names = dialog.locator(".toggle strong").all_text_contents()
    assert names == ["Errori di mossa", "Aiuto al posizionamento", "Suono", "Annunci brevi"]
    for line in ("Errori di mossa", "Spiega perché", "Aiuto al posizionamento", "oscura", "Suono"):
        assert line in text, line
    expect(dialog.get_by_label("Suono")).not_to_be_checked()  # off until switched on
    game_id = stored_game(pages.base, 1)
    page.goto(f"/replay/{game_id}")
    expect(page.locator(".replay .bar")).to_contain_text("Giocatore")
    assert "replay" not in page.locator("main").inner_text().lower()


# -- beyond the fixes ---------------------------------------------------------------------------------


def test_motion_feedback_and_reduced_motion(pages: Pages) -> None:
    page = pages.new(f"/play/{WON['code']}", name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    one = game.card_at(0)
    assert one is not None
    bad = next(
        POSITION_NAMES[p] for p, c in game.playable().items()
        if p and not c.is_face and not one.is_face and c.rank + one.rank != 11
    )
    tap(page, "1")
    tap(page, bad)  # «Errori di mossa» is off: the card shakes all the same
    expect(page.locator(f'.board [data-pos="{bad}"]')).to_have_class(re.compile("shake"))
    name = page.eval_on_selector(f'.board [data-pos="{bad}"] .face', "e => getComputedStyle(e).animationName")
    assert name == "shake"
    page.emulate_media(reduced_motion="reduce")
    name = page.eval_on_selector(f'.board [data-pos="{bad}"] .face', "e => getComputedStyle(e).animationName")
    assert name == "none"


def test_the_end_screen_shares_and_offers_the_same_deal(pages: Pages) -> None:
    page = pages.new(f"/play/{WON['code']}", name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    page.evaluate("navigator.share = undefined")  # no Web Share here: the summary is copied
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    for names in WON["moves"]:
        play(page, game, names)
    box = page.locator(".endbox")
    expect(box.locator('[data-outcome="won"]')).to_be_visible()
    assert_endbox_clear_of_the_board(page)
    box.get_by_role("button", name="Condividi").click()
    expect(page.locator("#toast")).to_have_text("Copiato")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "520" in copied and f"/play/{WON['code']}" in copied
    box.get_by_role("button", name="Sfida qualcuno su questa smazzata").click()
    expect(page).to_have_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    expect(page.locator(".lobby")).to_be_visible()


def test_home_says_what_half_moon_is(pages: Pages) -> None:
    page = pages.new("/", viewport=PHONE)
    expect(page.locator(".home .pitch li")).to_have_count(3)
    expect(page.locator(".home .board .slot")).to_have_count(20)
    for button in ("#new-solo", "#daily", "#create-race"):
        expect(page.locator(button)).to_be_visible()


# -- screenshots --------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", list(SIZES))
def test_screenshots_of_every_screen(pages: Pages, size: str) -> None:
    viewport = SIZES[size]
    home = pages.new("/", viewport=viewport)
    expect(home.locator(".home .board")).to_be_visible()
    screenshot(home, f"home-{size}")
    rules = pages.new("/rules", viewport=viewport)
    rules.locator(".diagram-figure").scroll_into_view_if_needed()
    screenshot(rules, f"rules-{size}")
    examples = pages.new("/examples", viewport=viewport)
    for _ in range(5):
        examples.click('[data-step="next"]')
    screenshot(examples, f"examples-{size}")
    game_page = pages.new(f"/play/{WON['code']}", viewport=viewport, name="Tess")
    game = Game.from_code(WON["code"])
    wait_board(game_page, game)
    for names in WON["moves"][:3]:
        play(game_page, game, names)
    tap(game_page, WON["moves"][3][0])
    screenshot(game_page, f"game-{size}")
    game_page.keyboard.press("Escape")
    for names in WON["moves"][3:]:
        play(game_page, game, names)
    expect(game_page.locator(".endbox .win")).to_be_visible()
    assert_endbox_clear_of_the_board(game_page)
    game_page.wait_for_timeout(1300)  # the celebration settles
    screenshot(game_page, f"end-{size}")
    room = new_room(pages.base, WON["code"])
    with wire(pages.base) as ada:
        ada.send("join", room=room, name="Ada")
        ada.next("welcome")
        racer = pages.new(f"/r/{room}", viewport=viewport, name="Bea")
        expect(racer.locator(".players li")).to_have_count(2)
        ada.send("start", time_limit_s=600)
        ada.next("started")
        race_game = Game.from_code(WON["code"])
        wait_board(racer, race_game)
        for names in WON["moves"][:4]:
            ada.send("move", positions=names)
            ada.next("moved")
        play(racer, race_game, WON["moves"][0])
        watcher = pages.new(f"/watch/{room}", viewport=viewport)
        expect(watcher.locator(".watch-player")).to_have_count(2)
        expect(racer.locator(".opponents")).to_contain_text("Ada")
        screenshot(racer, f"race-{size}")
        screenshot(watcher, f"spectator-{size}")
