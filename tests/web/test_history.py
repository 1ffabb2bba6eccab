"""«Le tue partite» (/me) in the browser: the page keeps a player key in localStorage (made once,
sent with every game, never in a URL), and after three games shows them — counts, the clean win
marked, the best time of the deal — in Italian and English, on a phone and a desktop."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect
from websockets.sync.client import connect

from halfmoon.game import Game
from tests.web.conftest import Pages, ended_game, load_vector, play, screenshot, wait_board, wait_stored

WON = load_vector("won_records.json")["records"][0]
PHONE_390: ViewportSize = {"width": 390, "height": 844}
DESKTOP_1366: ViewportSize = {"width": 1366, "height": 768}
KEY_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")


def key_of(page: Page) -> str:
    key = page.evaluate("() => localStorage.getItem('halfmoon.playerKey')")
    assert isinstance(key, str) and KEY_RE.fullmatch(key), key
    return key


def ws_game(base: str, key: str, code: str, *, undo_first: bool, win: bool) -> dict[str, Any]:
    """A solo game over the WebSocket with the browser's key, as a second device of the same
    player would play it: won (with one undo first, if asked), or given up after one move. Its
    game_over, once the game is stored (a history read before would not list it)."""
    moves = WON["moves"] if win else [next(iter(Game.from_code(code).legal_moves())).names()]
    with connect(base.replace("http", "ws") + "/ws", origin=base) as ws:

        def send(kind: str, **fields: Any) -> None:
            ws.send(json.dumps({"type": kind, "v": 1, **fields}))

        def next_of(kind: str) -> dict[str, Any]:
            while True:
                message = json.loads(ws.recv(timeout=10))
                assert message["type"] != "error", message
                if message["type"] == kind:
                    return message

        send("solo", name="Ugo", code=code, player_key=key)
        next_of("welcome")
        if undo_first:
            send("move", positions=moves[0])
            next_of("moved")
            send("undo")
            next_of("moved")
        for i, names in enumerate(moves):
            if i >= 15:
                time.sleep(0.11)  # no faster than the rate limit lets a connection (10 a second)
            send("move", positions=names)
            next_of("moved")
        if not win:
            send("give_up")
        over = next_of("game_over")
    wait_stored(base, str(over["game"]))
    return over


def test_the_history_page_after_three_games(pages: Pages, server: str) -> None:
    settings = {"moveErrors": False, "placementHelp": False, "lang": "it", "name": "Ugo"}
    page = pages.new("/me", settings=settings, viewport=PHONE_390)
    requests: list[tuple[str, str | None]] = []
    page.on("request", lambda r: requests.append((r.url, r.headers.get("authorization"))))
    expect(page.locator("section.history")).to_contain_text("Nessuna partita ancora")
    key = key_of(page)
    # game 1, in the browser: a won game by clicks, no undo
    page.goto(f"/play/{WON['code']}")
    game = Game.from_code(WON["code"])
    wait_board(page, game)
    for names in WON["moves"]:
        play(page, game, names)
    expect(page.locator('.endbox [data-outcome="won"]')).to_be_visible()
    wait_stored(server, ended_game(page))
    # games 2 and 3: the same player key from elsewhere — a win with an undo, a game given up
    ws_game(server, key, WON["code"], undo_first=True, win=True)
    ws_game(server, key, "HM1-N-AAAAAAB", undo_first=False, win=False)

    assert page.request.get("/me").status == 200  # an address of the app, not its 404 page
    page.goto("/")
    page.get_by_role("link", name="Le tue partite").click()  # from home
    history = page.locator("section.history")
    # three solo games: casual (their code was known before the start) — the ranked counts, the
    # streak and the ranked bests leave them out; they are counted apart
    ranked, casual = history.locator('[data-kind="ranked"]'), history.locator('[data-kind="casual"]')
    expect(ranked.locator('[data-stat="games"] .value')).to_have_text("0")
    expect(ranked.locator('[data-stat="wins"] .value')).to_have_text("0")
    expect(ranked.locator('[data-stat="streak"] .value')).to_have_text("0")  # no daily played
    expect(casual.locator('[data-stat="games"] .value')).to_have_text("3")
    expect(casual.locator('[data-stat="wins"] .value')).to_have_text("2")
    expect(casual.locator('[data-stat="clean"] .value')).to_have_text("1")
    expect(history).to_contain_text("Ancora nessuna vittoria.")  # no ranked win
    rows = history.locator("tbody tr[data-game]")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("abbandonato")  # newest first
    expect(rows.nth(0)).to_contain_text("HM1-N-AAAAAAB")
    expect(rows.nth(0)).to_contain_text("amichevole")
    expect(history.locator('tr[data-ranked="false"]')).to_have_count(3)
    expect(rows.locator(".clean")).to_have_count(1)  # the win by clicks; the other had an undo
    # the best time of the deal is the faster of its two wins (clean or not), as the server says
    data = page.request.get("/api/me/history", headers={"Authorization": f"Bearer {key}"}).json()
    won = [g for g in data["recent"] if g["outcome"] == "won"]
    fastest = min(won, key=lambda g: g["time_ms"])
    best = history.locator('tr[data-best="casual"]')
    expect(best).to_have_count(1)
    expect(best).to_contain_text(WON["code"])
    expect(best.locator("td").nth(1)).to_have_text(page.evaluate(
        "ms => `${Math.floor(ms / 60000)}:${String(Math.floor(ms / 1000) % 60).padStart(2, '0')}`", fastest["time_ms"]
    ))
    expect(best.locator(".clean")).to_have_count(1 if fastest["clean"] else 0)
    expect(history.get_by_role("link", name="Rivedi").first).to_have_attribute("href", re.compile(r"^/replay/"))
    screenshot(page, "history-390x844")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"

    # the key travels in the Authorization header only, and stays the same across visits
    reads = [(url, auth) for url, auth in requests if "/api/me/history" in url]
    assert reads and all(auth == f"Bearer {key}" for _, auth in reads)
    assert not any(key in url for url, _ in requests)
    assert key_of(page) == key

    page.set_viewport_size(DESKTOP_1366)
    page.get_by_role("button", name="EN").click()
    expect(history.locator("h1")).to_contain_text("Your games")
    expect(page.locator("section.history h2").first).to_have_text("Best time per deal")
    expect(history.locator("h2").nth(1)).to_have_text("Casual games")
    expect(rows.nth(0)).to_contain_text("casual")
    screenshot(page, "history-1366x768")


def test_a_new_browser_has_its_own_key_and_an_empty_history(pages: Pages) -> None:
    first = pages.new("/me", locale="en-US", settings={"name": "Zed"})
    expect(first.locator("section.history")).to_contain_text("No games yet")
    second = pages.new("/me", locale="en-US", settings={"name": "Zed"})
    expect(second.locator("section.history")).to_contain_text("No games yet")
    assert key_of(first) != key_of(second)
    # a damaged key is replaced by a fresh one, not sent
    first.evaluate("() => localStorage.setItem('halfmoon.playerKey', 'not a key')")
    first.reload()
    expect(first.locator("section.history")).to_contain_text("No games yet")
    key_of(first)


def ws_sealed_race_given_up(base: str, key: str) -> dict[str, Any]:
    """A sealed race (the server draws the deal: a long ``HM1-S-…`` code) over the WebSocket
    with the browser's key, started and given up at once: a ranked result. Its game_over, once
    the game is stored."""
    request = urllib.request.Request(
        f"{base}/api/rooms", data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        created = json.loads(answer.read())
    with connect(base.replace("http", "ws") + "/ws", origin=base) as ws:

        def next_of(kind: str) -> dict[str, Any]:
            while True:
                message = json.loads(ws.recv(timeout=10))
                assert message["type"] != "error", message
                if message["type"] == kind:
                    return message

        ws.send(json.dumps({"type": "join", "v": 1, "room": created["room"], "name": "Ugo", "player_key": key}))
        next_of("welcome")
        ws.send(json.dumps({"type": "start", "v": 1}))
        next_of("started")
        ws.send(json.dumps({"type": "give_up", "v": 1}))
        over = next_of("game_over")
    wait_stored(base, str(over["game"]))
    return over


def test_whether_each_game_is_ranked_shows_without_scrolling_sideways_on_a_phone(pages: Pages, server: str) -> None:
    """A sealed race's code is long (``HM1-S-`` and four groups of 7 letters): in «Ultime partite»
    it wraps at its dashes, so the «Classifica» column — whether each game is ranked — stays on a
    360-pixel phone's screen, as it does on a desktop, the replay link too."""
    page = pages.new("/me", settings={"lang": "it", "name": "Ugo"}, viewport={"width": 360, "height": 640})
    expect(page.locator("section.history")).to_contain_text("Nessuna partita ancora")
    over = ws_sealed_race_given_up(server, key_of(page))
    assert over["ranked"] is True, over
    ws_game(server, key_of(page), "HM1-N-AAAAAAB", undo_first=False, win=False)  # casual: «amichevole»
    page.reload()
    rows = page.locator("section.history tbody tr[data-game]")
    expect(rows).to_have_count(2)
    expect(page.locator('section.history tbody tr[data-ranked="true"]')).to_contain_text("HM1-S-")
    for width in (360, 1366):
        page.set_viewport_size({"width": width, "height": 768})
        panel = page.locator("section.history").bounding_box()
        assert panel is not None
        for n in range(2):
            row = rows.nth(n)
            for cell in (row.locator("td").nth(5), row.get_by_role("link", name="Rivedi")):
                box = cell.bounding_box()
                assert box is not None and box["x"] + box["width"] <= min(width, panel["x"] + panel["width"]) + 1, (
                    width, n, box, panel
                )
        screenshot(page, f"history-sealed-{width}")


def give_up(page: Page, label: str = "Abbandona") -> None:
    button = page.locator(".bar").get_by_role("button", name=label)
    expect(button).to_be_enabled()
    button.click()
    page.locator("dialog.confirm").get_by_role("button", name=label).click()


@pytest.mark.browser
def test_the_history_pages_check_mark_columns_say_what_they_mean_and_the_streak_is_not_a_series(
    pages: Pages,
) -> None:
    # a race given up: one game in the player's history (the race's code is out with its results)
    ada = pages.new("/", viewport=PHONE_390)
    ada.fill("#name", "Ada")
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    ada.get_by_role("button", name="Via!").click()
    give_up(ada)
    expect(ada.locator("table.results tbody tr")).to_have_count(1)
    wait_stored(pages.base, ended_game(ada))
    ada.goto("/me")
    expect(ada.locator("h1")).to_contain_text("Le tue partite")
    # «Serie» is a series of races now: the days-in-a-row figure has a name of its own
    expect(ada.locator('[data-stat="streak"] .name')).to_have_text("Giorni di fila")
    expect(ada.locator("main")).not_to_contain_text("serie")
    # the «✓» column is read aloud for what it means, not as "check mark"
    expect(ada.get_by_role("columnheader", name="vinta senza annullare")).to_have_count(1)
    screenshot(ada, "history-check-marks-390x844")
    ada.evaluate("() => localStorage.setItem('halfmoon.settings', JSON.stringify({name: 'Ada', lang: 'en'}))")
    ada.set_viewport_size(DESKTOP_1366)
    ada.reload()
    expect(ada.locator('[data-stat="streak"] .name')).to_have_text("Daily streak")
    expect(ada.get_by_role("columnheader", name="won without an undo")).to_have_count(1)
    screenshot(ada, "history-check-marks-1366x768")
