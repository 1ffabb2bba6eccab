"""Pages a player reaches outside a game: a replay that cannot open says why in the player's
language (never the server's English reason) inside a panel with a way home; the English rules
speak to players, not about the repository's files, and both quote the seed's last rule word for
word; the Examples page's buttons stop at the ends."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Route, expect
from websockets.sync.client import connect

from tests.conftest import ROOT
from tests.web.conftest import PHONE, Pages, screenshot, wait_stored

#: The seed's last rule, word for word, in the seed's Italian and its English rendering.
LAST_RULE = {
    "it-IT": (
        "000_c026d1baf5ef2d78.txt",
        "Non ci sono né un risolutore né un pulsante per i suggerimenti: "
        "l’app non indica se una smazzata si può vincere.",
    ),
    "en-US": (
        "RULES-en.md",
        "There is neither a solver nor a hint button: the app does not say whether a deal can be won.",
    ),
}


@pytest.mark.parametrize(
    ("locale", "text", "home"),
    [("it-IT", "Questa partita non esiste.", "Inizio"), ("en-US", "There is no such game.", "Home")],
)
def test_a_replay_of_an_unknown_game_says_so_in_a_panel_with_a_way_home(
    pages: Pages, locale: str, text: str, home: str
) -> None:
    page = pages.new("/replay/PS-nosuchgame", locale=locale, viewport=PHONE)
    panel = page.locator("section.panel.replay-error")
    # (after a few seconds: a game just finished may not be stored yet, a 404 is asked again)
    expect(panel).to_be_visible(timeout=10_000)
    expect(panel.get_by_role("alert")).to_have_text(text)
    expect(panel).not_to_contain_text("there is no game")  # the server's English reason
    expect(panel).not_to_contain_text("Errore:")
    link = panel.get_by_role("link", name=home)
    expect(link).to_have_attribute("href", "/")
    screenshot(page, f"replay-unknown-{locale}")
    link.click()
    expect(page.locator("#new-solo")).to_be_visible()


def test_a_game_told_over_before_it_is_stored_opens_once_it_is(pages: Pages, server: str) -> None:
    """game_over (and race_over) go out before the game is stored, a moment later: its replay, a
    compare page and a ghost race against it ask again on a 404 for a few seconds instead of
    saying at once there is no such game. The server's first two answers are stood in for by 404s."""
    code = "HM1-N-AAAAAAB"
    with connect(server.replace("http", "ws") + "/ws", origin=server) as ws:
        ws.send(json.dumps({"type": "solo", "v": 1, "name": "Ugo", "code": code}))
        ws.send(json.dumps({"type": "move", "v": 1, "positions": _any_move(code)}))
        ws.send(json.dumps({"type": "give_up", "v": 1}))
        game = str(_next_of(ws, "game_over")["game"])
    wait_stored(server, game)
    missing = {"error": {"code": "no_such_game", "message": f"there is no game {game!r}"}}
    page = pages.new("/", viewport=PHONE, settings={"lang": "it", "name": "Ada"})
    refused: list[str] = []

    def not_yet(route: Route) -> None:
        if len(refused) < 2:
            refused.append(route.request.url)
            route.fulfill(status=404, json=missing)
        else:
            route.continue_()

    page.route(f"**/api/games/{game}", not_yet)
    for path, shown in [
        (f"/replay/{game}", page.locator('.replay [data-stat="code"]')),
        (f"/compare/{game}/{game}", page.locator(".compare-line h2").first),
        (f"/play/{code}?ghost={game}", page.locator('.track .lane[data-player="ghost"] .who')),
    ]:
        refused.clear()
        page.goto(path)
        expect(shown, path).to_contain_text(code if path.startswith("/replay/") else "Ugo")
        assert len(refused) == 2, (path, refused)


def test_a_daily_game_before_the_reveal_is_not_linked_and_its_replay_says_when_it_opens(pages: Pages) -> None:
    # the server's answers are stood in for: a real daily attempt here would take one of the
    # address's three ranked attempts of the day, which the daily tests count on
    hidden = {
        "error": {
            "code": "daily_hidden",
            "message": "game 'PS-daily1' is a daily-challenge game; its record opens when every attempt "
            "of today has ended",
        }
    }
    entry = {"rank": 1, "name": "Ugo", "score": 0, "moves": 0, "time_ms": 2000, "outcome": "gave_up"}
    entry["game"] = "PS-daily1"
    page = pages.new("/", viewport=PHONE, settings={"lang": "it", "name": "Ugo"})
    page.route("**/api/games/PS-daily1", lambda route: route.fulfill(status=403, json=hidden))
    page.route("**/api/daily/*/leaderboard", lambda route: route.fulfill(json={"entries": [{**entry, "others": []}]}))
    today = page.request.get("/api/daily").json()["date"]
    # the day's leaderboard offers no «Rivedi» yet, and says when the games open
    page.goto(f"/leaderboard/daily/{today}")
    expect(page.locator("table.results")).to_contain_text("Ugo")
    assert page.locator('main a[href^="/replay/"]').count() == 0
    expect(page.locator("main")).to_contain_text("quando saranno finiti tutti i tentativi del giorno")
    # a past day's games are linked
    page.goto("/leaderboard/daily/2026-01-05")
    expect(page.locator('main a[href="/replay/PS-daily1"]')).to_have_text("Rivedi")
    # a link kept from elsewhere (the end box's) opens a page that says when, in Italian, with a way home
    page.goto("/replay/PS-daily1")
    panel = page.locator("section.panel.replay-error")
    expect(panel.get_by_role("alert")).to_have_text(
        "La partita si potrà rivedere quando saranno finiti tutti i tentativi del giorno."
    )
    expect(panel).not_to_contain_text("daily-challenge")
    expect(panel.get_by_role("link", name="Inizio")).to_have_attribute("href", "/")
    screenshot(page, "replay-daily-hidden-it")


def test_the_english_rules_speak_to_players(pages: Pages) -> None:
    page = pages.new("/rules", locale="en-US")
    rules = page.locator(".rules")
    expect(page.locator("h1")).to_have_text("The rules of Half Moon")
    expect(rules).to_contain_text("The Italian text is the original")
    expect(rules).to_contain_text("Two 52-card decks shuffled together")
    body = rules.inner_text()
    assert "000_c026" not in body and "beside this one" not in body and "English rendering" not in body
    # the note switches to the Italian original
    rules.get_by_role("link", name="Read it in Italian").click()
    expect(page.locator("h1")).to_have_text("Le regole di Half Moon")
    expect(rules).to_contain_text("La somma deve essere uguale a 11")


@pytest.mark.parametrize("locale", ["it-IT", "en-US"])
def test_the_rules_page_quotes_the_seeds_last_rule_word_for_word(pages: Pages, locale: str) -> None:
    seed_file, sentence = LAST_RULE[locale]
    seed = ROOT.parent / "shared" / "seed" / seed_file  # beside the work tree, where there is one
    if seed.is_file():
        assert sentence in " ".join(seed.read_text(encoding="utf-8").split())
    page = pages.new("/rules", locale=locale)
    expect(page.locator(".rules li", has_text=sentence[:30])).to_have_text(sentence)


@pytest.mark.parametrize("locale", ["it-IT", "en-US"])
def test_the_examples_buttons_stop_at_the_ends(pages: Pages, locale: str) -> None:
    page = pages.new("/examples", locale=locale, viewport=PHONE)
    heading = page.locator(".examples h1")
    expect(heading).to_have_text("Esempi" if locale == "it-IT" else "Examples")
    box = heading.bounding_box()
    assert box is not None and box["width"] > 20 and box["height"] > 10, "the title is visible"
    prev, next_ = page.locator('[data-step="prev"]'), page.locator('[data-step="next"]')
    counter = page.locator(".replay-controls .counter")
    expect(counter).to_have_text("1 / 9")
    expect(prev).to_be_disabled()
    expect(next_).to_be_enabled()
    # the counter sits between the two buttons
    order = page.eval_on_selector(
        ".examples .replay-controls", "el => [...el.children].map(c => c.dataset.step || 'counter')"
    )
    assert order == ["prev", "counter", "next"]
    for _ in range(8):
        next_.click()
    expect(counter).to_have_text("9 / 9")
    expect(next_).to_be_disabled()
    expect(prev).to_be_enabled()
    prev.click()
    expect(counter).to_have_text("8 / 9")
    expect(next_).to_be_enabled()


def test_a_deal_codes_board_says_plainly_it_is_casual_in_italian_and_english(pages: Pages, server: str) -> None:
    """A per-deal board lists games whose code their players could know before the start: the
    page says so, in both languages; the daily's board (ranked) does not."""
    code = "HM1-N-CASUALB"
    with connect(server.replace("http", "ws") + "/ws", origin=server) as ws:
        ws.send(json.dumps({"type": "solo", "v": 1, "name": "Ugo", "code": code}))
        ws.send(json.dumps({"type": "give_up", "v": 1}))
        over = _next_of(ws, "game_over")
    wait_stored(server, str(over["game"]))  # the board is read once
    page = pages.new(f"/leaderboard/{code}", viewport=PHONE, settings={"lang": "it", "name": "Ugo"})
    notice = page.locator("p.casual-board")
    expect(page.locator("table.results")).to_contain_text("Ugo")
    expect(notice).to_have_text(re.compile(r"^Classifica amichevole: il codice di questa smazzata era noto prima"))
    page.get_by_role("button", name="EN").click()
    english = re.compile(r"^A casual board: whoever played this deal knew its code")
    expect(page.locator("p.casual-board")).to_have_text(english)
    screenshot(page, "leaderboard-casual-en")
    expect(page.locator("main")).not_to_contain_text("null")  # nothing left out is drawn as a word
    page.goto("/leaderboard/daily/2026-01-05")
    expect(page.locator("main h2")).to_be_visible()
    assert page.locator("p.casual-board").count() == 0


def test_a_sealed_deals_board_marks_its_ranked_results_and_does_not_call_them_casual(pages: Pages, server: str) -> None:
    """A sealed race's deal has a board too, once its code is out: the racers' results there are
    ranked (nobody knew the cards before the start), games typed on the code afterwards are not.
    The notice does not call every result on it unranked, each ranked row is marked «in
    classifica» / «ranked», and the long code in the heading is not cut on a phone."""
    base = server.replace("http", "ws") + "/ws"
    with connect(base, origin=server) as ws:  # a sealed race (no code chosen), started and given up
        ws.send(json.dumps({"type": "join", "v": 1, "room": _sealed_room(server), "name": "Ada"}))
        ws.send(json.dumps({"type": "start", "v": 1}))
        _next_of(ws, "started")
        ws.send(json.dumps({"type": "give_up", "v": 1}))
        over = _next_of(ws, "game_over")
    assert over["ranked"] is True and over["code"].startswith("HM1-S-"), over
    code = over["code"]
    with connect(base, origin=server) as ws:  # the same deal typed afterwards: casual
        ws.send(json.dumps({"type": "solo", "v": 1, "name": "Ugo", "code": code}))
        ws.send(json.dumps({"type": "move", "v": 1, "positions": _any_move(code)}))
        ws.send(json.dumps({"type": "give_up", "v": 1}))
        casual = _next_of(ws, "game_over")
    assert casual["ranked"] is False
    for game in (over["game"], casual["game"]):  # both stored: the board is read once
        wait_stored(server, str(game))
    page = pages.new(f"/leaderboard/{code}", viewport=PHONE, settings={"lang": "it", "name": "Ugo"})
    rows = page.locator("table.results tbody tr")
    expect(rows).to_have_count(2)
    ada, ugo = rows.filter(has_text="Ada"), rows.filter(has_text="Ugo")
    expect(ada.locator(".tag.ranked")).to_have_text("in classifica")
    expect(ugo.locator(".tag.ranked")).to_have_count(0)
    notice = page.locator("p.casual-board")
    expect(notice).not_to_contain_text("questi risultati non sono in classifica")
    expect(notice).to_contain_text("«in classifica»")
    heading = page.locator("main h2").bounding_box()
    assert heading is not None and heading["x"] + heading["width"] <= PHONE["width"], heading
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"], "the page scrolls sideways"
    page.get_by_role("button", name="EN").click()
    expect(page.locator("p.casual-board")).not_to_contain_text("these results are not ranked")
    expect(page.locator("p.casual-board")).to_contain_text("«ranked»")
    expect(ada.locator(".tag.ranked")).to_have_text("ranked")
    screenshot(page, "leaderboard-sealed-deal-en")


def _sealed_room(server: str) -> str:
    import urllib.request

    request = urllib.request.Request(
        f"{server}/api/rooms", data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        room: str = json.loads(answer.read())["room"]
    return room


def _next_of(ws: object, kind: str) -> dict[str, object]:
    while True:
        message: dict[str, object] = json.loads(ws.recv(timeout=10))  # type: ignore[attr-defined]
        assert message["type"] != "error", message
        if message["type"] == kind:
            return message


def _any_move(code: str) -> list[str]:
    from halfmoon.game import Game

    return list(next(iter(Game.from_code(code).legal_moves())).names())
