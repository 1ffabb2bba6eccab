"""Races in real browsers: two players race while a third browser spectates; the lobby, the
host's start and countdown, live progress, the results table everywhere, the placing, the
leaderboards and the daily challenge."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from websockets.sync.client import connect

from halfmoon.game import Game, Move
from halfmoon.positions import POSITION_NAMES
from tests.web.conftest import (
    DESKTOP,
    PHONE,
    Pages,
    ended_game,
    load_vector,
    play,
    running_server,
    screenshot,
    wait_board,
    wait_stored,
)

pytestmark = pytest.mark.browser

WON = load_vector("won_game_browser.json")


def results_rows(page: Page) -> list[list[str]]:
    table = page.locator("table.results").first
    expect(table).to_be_visible()
    return [
        [cell.strip() for cell in row]
        for row in table.locator("tbody tr").evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    ]


def test_two_players_race_while_a_third_browser_watches(pages: Pages) -> None:
    # Ada creates a race on a known deal from the home screen
    ada = pages.new("/", viewport=DESKTOP)
    ada.fill("#name", "Ada")
    ada.fill("#code", WON["code"])
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    expect(ada.locator(".lobby h1")).to_contain_text(room)
    expect(ada.locator(".lobby a.share")).to_have_text(f"{pages.base}/r/{room}")
    # Bob follows the link on a phone and gives his name; a spectator opens /watch/{room}
    bob = pages.new(f"/r/{room}", viewport=PHONE)
    bob.get_by_label("Il tuo nome").fill("Bob")
    bob.get_by_role("button", name="Entra").click()
    expect(bob.locator(".players li")).to_have_count(2)
    expect(bob.locator(".lobby")).to_contain_text("In attesa che l'organizzatore dia il via")
    expect(bob.get_by_role("button", name="Via!")).to_be_hidden()
    watcher = pages.new(f"/watch/{room}", viewport=DESKTOP)
    expect(ada.locator(".players li")).to_have_count(2)
    expect(ada.locator(".players")).to_contain_text("Bob")
    expect(ada.locator('.players li[data-player="p1"]')).to_contain_text("organizzatore")
    screenshot(bob, "lobby-phone")
    # the host starts: a countdown, then everyone's game
    ada.fill("#time-limit", "10")
    ada.get_by_role("button", name="Via!").click()
    expect(bob.locator(".countdown")).to_contain_text("Si parte tra")
    game_ada = Game.from_code(WON["code"])
    game_bob = Game.from_code(WON["code"])
    wait_board(ada, game_ada)
    wait_board(bob, game_bob)
    expect(watcher.locator(".watch-player")).to_have_count(2)
    # Bob makes a move and Ada sees his progress; the spectator sees Bob's board change
    play(bob, game_bob, WON["moves"][0])
    bob_row = ada.locator('.opponents [data-player="p2"]')
    expect(bob_row).to_contain_text(f"Punteggio {game_bob.score} · Mosse 1")
    expect(bob_row.locator("progress")).to_have_attribute("value", str(104 - game_bob.cards_left))
    # (the card Bob uncovered stays face down for spectators: Ada, still racing, has not seen it —
    # a racer watching from another tab must not learn what lies under their own piles)
    bob_board = watcher.locator('.watch-player[data-player="p2"] .board')
    changed = next(name for name in WON["moves"][0] if POSITION_NAMES.index(name) < 12)
    pile = POSITION_NAMES.index(changed)
    top = game_bob.card_at(pile)
    assert top is not None
    expect(bob_board.locator(f'[data-pos="{changed}"]')).to_have_class(re.compile(r"\bdown\b"))
    expect(bob_board.locator(f'[data-pos="{changed}"]')).not_to_have_attribute("data-card", top.name)
    # Ada plays her winning game: once she has uncovered that card too, the spectator sees Bob's
    play(ada, game_ada, WON["moves"][0])
    expect(bob_board.locator(f'[data-pos="{changed}"]')).to_have_attribute("data-card", top.name)
    # half-way through, the spectator sees of her board what Bob (one move in) has seen too: her
    # moves up to the first that removed a card Bob has not uncovered (a move tells its cards:
    # they pair to 11), the cards on top that he has not uncovered face down
    for names in WON["moves"][1:24]:
        play(ada, game_ada, names)
    shown_ada = Game.from_code(WON["code"])
    for names in WON["moves"][:24]:
        move = Move.from_names(names)
        if any(p < 12 and shown_ada.count_at(p) < game_bob.count_at(p) for p in move.positions):
            break
        shown_ada.push(move)
    ada_board = watcher.locator('.watch-player[data-player="p1"] .board')
    expect(watcher.locator('.watch-player[data-player="p1"]')).to_contain_text(f"Punteggio {game_ada.score}")
    hidden = 0
    for p, name in enumerate(POSITION_NAMES):
        card = shown_ada.card_at(p)
        slot = ada_board.locator(f'[data-pos="{name}"]')
        if card is None:
            continue
        if p < 12 and shown_ada.count_at(p) < game_bob.count_at(p):
            hidden += 1
            expect(slot).to_have_class(re.compile(r"\bdown\b"))
            expect(slot).to_have_attribute("aria-label", re.compile("carta coperta"))
        else:
            expect(slot).to_have_attribute("data-card", card.name)
    assert hidden > 0, "Ada has dug deeper than Bob: some of her cards are not shown yet"
    expect(watcher.locator(".watch-head")).to_contain_text("Le carte coperte restano coperte")
    assert watcher.locator(".board [aria-disabled='true']").count() == 40, "the spectator's boards are read-only"
    screenshot(watcher, "spectator-desktop")
    screenshot(bob, "race-phone")
    # Bob gives up (the bar's button asks first); Ada finishes
    bob.locator(".bar").get_by_role("button", name="Abbandona").click()
    bob.locator("dialog.confirm").get_by_role("button", name="Abbandona").click()
    expect(ada.locator('.opponents [data-player="p2"]')).to_contain_text("ha abbandonato")
    # with Bob out, nobody still racing can learn from Ada's board: the spectator sees all of it
    for p, name in enumerate(POSITION_NAMES):
        card = game_ada.card_at(p)
        if card is not None:
            expect(ada_board.locator(f'[data-pos="{name}"]')).to_have_attribute("data-card", card.name)
    # the seed: no screen says whether the deal can or could be won, not even after the game
    expect(bob.locator(".endbox")).to_be_visible()
    for page in (ada, bob):
        text = page.locator("body").inner_text().lower()
        assert "vincere" not in text and "winnable" not in text and "could be won" not in text, text
    for names in WON["moves"][24:]:
        play(ada, game_ada, names)
    win = ada.locator('.endbox [data-outcome="won"]')
    expect(win.locator('[data-result="score"]')).to_have_text("520")
    expect(win.locator('[data-result="moves"]')).to_have_text("48")
    expect(win.locator('[data-result="place"]')).to_have_text("1 su 2")
    screenshot(ada, "race-desktop")
    # the results table, the same in all three browsers
    for page in (ada, bob, watcher):
        assert not re.search(r"\b(null|undefined|NaN)\b", page.inner_text("main"))
        rows = results_rows(page)
        assert [r[:5] for r in rows] == [
            ["1", "Ada", "vinto", "520", "48"],
            ["2", "Bob", "ha abbandonato", str(game_bob.score), "1"],
        ], rows
    # on Bob's phone his result box and the results table sit one under the other, both whole
    expect(bob.locator(".endbox h2")).to_have_text("Hai abbandonato")
    over = bob.locator(".endbox").bounding_box()
    table = bob.locator("table.results").bounding_box()
    assert over is not None and table is not None
    assert over["y"] + over["height"] <= table["y"], (over, table)
    assert over["y"] >= 0 and over["y"] + over["height"] <= PHONE["height"]
    # on Ada's desktop the opponents sit beside her board, and her result box over her board
    wrap = ada.locator(".board-wrap").bounding_box()
    side = ada.locator(".opponents").bounding_box()
    won_box = ada.locator(".endbox").bounding_box()
    assert wrap is not None and side is not None and won_box is not None
    assert wrap["x"] + wrap["width"] <= side["x"] + 1 and abs(wrap["y"] - side["y"]) < 1, (wrap, side)
    assert wrap["x"] <= won_box["x"] and won_box["x"] + won_box["width"] <= wrap["x"] + wrap["width"], (won_box, wrap)
    # the host's desktop sidebar shows every column of the results table
    width = ada.evaluate("document.querySelector('.opponents').clientWidth")
    assert ada.evaluate("document.querySelector('table.results').offsetWidth") <= width
    # the deal's leaderboard lists the race's games, with replays (once both are stored: the
    # board is read once)
    for page in (ada, bob):
        wait_stored(pages.base, ended_game(page))
    board = pages.new(f"/leaderboard/{WON['code']}")
    expect(board.locator("main h2")).to_contain_text(WON["code"])
    names = board.locator("table.results tbody tr td:nth-child(2)").all_text_contents()
    assert "Ada" in names and "Bob" in names
    ada_row = board.locator("table.results tbody tr", has_text="Ada").first
    expect(ada_row).to_contain_text("520")
    ada_row.get_by_role("link", name="Rivedi").click()
    expect(board.locator('[data-stat="code"]')).to_have_text(WON["code"])
    board.click('[data-step="last"]')
    expect(board.locator('[data-stat="score"]')).to_have_text("520")


def test_a_late_joiner_becomes_a_spectator(pages: Pages) -> None:
    ada = pages.new("/", viewport=DESKTOP)
    ada.fill("#name", "Ada")
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    ada.get_by_role("button", name="Via!").click()
    expect(ada.locator(".board")).to_be_visible()
    late = pages.new(f"/r/{room}", settings={"moveErrors": False, "placementHelp": False, "lang": "en", "name": "Cy"})
    expect(late.locator(".watch")).to_contain_text("The race has already started: you are watching it.")
    expect(late.locator(".watch-player")).to_have_count(1)


def test_the_daily_challenge_hides_its_code_until_the_attempt_ends(pages: Pages) -> None:
    page = pages.new("/", settings={"moveErrors": False, "placementHelp": False, "lang": "it", "name": "Dora"})
    page.get_by_role("button", name="Sfida del giorno").click()
    page.wait_for_url(re.compile(r"/daily$"))
    expect(page.locator(".board")).to_be_visible()
    expect(page.locator('[data-stat="code"]')).to_have_text("a fine giornata")
    expect(page.locator(".bar")).to_contain_text("Sfida del giorno")
    # the browser keeps today's commitment and tomorrow's, published a day ahead: tomorrow's attempt
    # (its reveal) is held to the one seen now, not to whatever the server says then
    day = datetime.now(UTC).date()
    kept = "JSON.parse(localStorage.getItem('halfmoon.dailyCommitments') || '{}')"
    page.wait_for_function(f"Object.keys({kept}).length === 2")
    assert sorted(page.evaluate(kept)) == [day.isoformat(), (day + timedelta(days=1)).isoformat()]
    # one stray tap on «Abbandona» does not end the ranked attempt: the bar's button asks first
    page.locator(".bar").get_by_role("button", name="Abbandona").click()
    confirm = page.locator("dialog.confirm")
    expect(confirm).to_contain_text("tentativo in classifica")
    screenshot(page, "give-up-confirm")
    confirm.get_by_role("button", name="Continua a giocare").click()
    expect(confirm).to_be_hidden()
    expect(page.locator('[data-stat="code"]')).to_have_text("a fine giornata")
    assert page.locator(".endbox [data-outcome]").count() == 0
    page.locator(".bar").get_by_role("button", name="Abbandona").click()
    confirm.get_by_role("button", name="Abbandona").click()
    over = page.locator('.endbox [data-outcome="gave_up"]')
    expect(over).to_be_visible()
    # not even now: the day's code opens once every attempt of the day has ended (docs/security.md)
    expect(page.locator('[data-stat="code"]')).to_have_text("a fine giornata")
    expect(page.locator(".endbox")).to_contain_text("quando saranno finiti tutti i tentativi del giorno")
    assert page.locator('.endbox a[href^="/replay/"]').count() == 0, "the record opens with the day's code"
    # a reload (or reopening /daily later today) brings the end box back, and says the attempt is over
    page.reload()
    expect(page.locator('.endbox [data-outcome="gave_up"]')).to_be_visible()
    expect(page.locator(".daily-line")).to_contain_text("Tentativo concluso")
    expect(page.locator('[data-stat="code"]')).to_have_text("a fine giornata")
    today = datetime.now(UTC).date().isoformat()
    page.goto(f"/leaderboard/daily/{today}")
    expect(page.locator("main h2")).to_contain_text(today)
    expect(page.locator("table.results tbody")).to_contain_text("Dora")


def test_a_daily_attempt_past_the_addresss_ranked_attempts_does_not_say_the_name_already_played(
    browser: Browser, tmp_path: Path
) -> None:
    """Every browser here comes from 127.0.0.1, which starts at most 3 ranked daily attempts a day
    on a server of the default settings (docs/security.md, "One player, one ranked daily"): a new
    name from it past those plays unranked. It has not played today: the page must not tell it «you
    already played today under this name» — it says the day's ranked attempt was played under this
    name or from this network. (A server of its own: the shared one ranks every name's first.)"""
    with running_server(tmp_path, daily_ranked_per_address=3) as base:
        pages = Pages(browser, base)
        try:
            _past_the_address_cap(pages)
        finally:
            pages.close()
        assert not pages.errors, f"JavaScript errors in the page: {pages.errors}"


def _past_the_address_cap(pages: Pages) -> None:
    for n in range(5):  # new names until one is past the address's ranked attempts
        page = pages.new("/daily", settings={"lang": "en", "name": f"Newcomer{n}"})
        line = page.locator(".daily-line")
        expect(line).to_be_visible()
        if line.get_attribute("data-ranked") == "false":
            break
        page.context.close()
    else:
        pytest.fail("no daily attempt from 127.0.0.1 was past the address's ranked attempts")
    expect(line).not_to_contain_text("you already played")
    expect(line).to_contain_text("from this network")
    page.get_by_role("button", name="IT").click()
    expect(page.locator(".daily-line")).not_to_contain_text("hai già giocato")
    expect(page.locator(".daily-line")).to_contain_text("da questa rete")
    page.locator(".bar").get_by_role("button", name="Abbandona").click()
    page.locator("dialog.confirm").get_by_role("button", name="Abbandona").click()
    expect(page.locator(".endbox")).to_contain_text("da questa rete")
    screenshot(page, "daily-past-the-address-cap")


def test_a_bad_room_and_a_bad_code_say_what_is_wrong(pages: Pages) -> None:
    english = {"moveErrors": False, "placementHelp": False, "lang": "en", "name": "Eve"}
    page = pages.new("/watch/ZZZZZZ", settings=english)
    expect(page.get_by_role("alert")).to_have_text("There is no race ZZZZZZ (it may have ended).")
    page.goto("/play/HM1-N-AAA")
    bad_code = "HM1-N-AAA is not a valid deal code: a code looks like HM1-N-AAAAAAB."
    expect(page.get_by_role("alert")).to_have_text(bad_code)
    # joining or watching with nothing typed says what to type
    page.goto("/")
    page.get_by_role("button", name="Watch").click()
    expect(page.locator("#toast")).to_have_text("Type the race's id (6 characters, like K7WQ2M) or paste its link.")
    # in Italian the refusal is in Italian, not the server's English
    italian = pages.new("/r/ZZZZZZ", settings={**english, "lang": "it"})
    expect(italian.get_by_role("alert")).to_have_text("La gara ZZZZZZ non esiste (forse è già finita).")
    italian.goto("/leaderboard/HM1-N-AAA")
    expect(italian.get_by_role("alert")).to_contain_text("Il codice HM1-N-AAA non è valido")


def test_a_name_already_taken_in_the_room_asks_for_another(pages: Pages) -> None:
    ada = pages.new("/", settings={"moveErrors": False, "placementHelp": False, "lang": "it", "name": "Ada"})
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    expect(ada.locator(".players li")).to_have_count(1)
    twin = pages.new(f"/r/{room}", settings={"moveErrors": False, "placementHelp": False, "lang": "it", "name": "ada"})
    expect(twin.get_by_role("alert")).to_be_visible()
    twin.get_by_label("Il tuo nome").fill("Bea")
    twin.get_by_role("button", name="Entra").click()
    expect(twin.locator(".players li")).to_have_count(2)
    expect(ada.locator(".players")).to_contain_text("Bea")


def test_a_refused_name_says_why_in_italian_and_can_be_fixed_on_the_spot(pages: Pages) -> None:
    page = pages.new("/play", settings={"moveErrors": False, "placementHelp": False, "lang": "it", "name": "Ada ❤"})
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("Il nome «Ada ❤» non va bene: da 1 a 20 caratteri, lettere, cifre, spazi e _-.'")
    page.get_by_label("Il tuo nome").fill("Ada")
    page.get_by_role("button", name="Gioca").click()
    expect(page.locator('[data-stat="moves"]')).to_have_text("0")
    expect(page).to_have_url(re.compile(r"/play/HM1-N-[A-Z]{7}$"))
    assert page.evaluate("JSON.parse(localStorage.getItem('halfmoon.settings')).name") == "Ada"


def test_when_the_host_drops_in_the_lobby_the_next_player_can_start(pages: Pages) -> None:
    ada = pages.new("/", viewport=DESKTOP)
    ada.fill("#name", "Ada")
    ada.click("#create-race")
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    bob = pages.new(f"/r/{room}", viewport=PHONE)
    bob.get_by_label("Il tuo nome").fill("Bob")
    bob.get_by_role("button", name="Entra").click()
    expect(bob.locator(".players li")).to_have_count(2)
    expect(bob.get_by_role("button", name="Via!")).to_be_hidden()
    ada.close()  # the host's tab goes away without a word
    expect(bob.get_by_role("button", name="Via!")).to_be_visible()
    expect(bob.locator('.players li[data-player="p2"]')).to_contain_text("organizzatore")
    bob.get_by_role("button", name="Via!").click()
    expect(bob.locator(".board")).to_be_visible()


def test_a_sealed_race_shows_sealed_then_its_code_checked_against_the_commitment(pages: Pages) -> None:
    """A race on a deal the server drew: the bar says «sigillato» until nobody plays it any more,
    then shows the code, checked in the browser against the commitment given at the start."""
    ada = pages.new("/", viewport=DESKTOP, settings={"name": "Ada", "lang": "it"})
    ada.click("#create-race")  # no code typed: the server draws the deal and seals it
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    bob = pages.new(f"/r/{room}", viewport=PHONE, settings={"name": "Bob", "lang": "it"})
    expect(ada.locator(".players li")).to_have_count(2)
    ada.get_by_role("button", name="Via!").click()
    expect(ada.locator(".board")).to_be_visible()
    expect(bob.locator(".board")).to_be_visible()
    expect(ada.locator('[data-stat="code"]')).to_have_text("sigillato")
    for page in (ada, bob):
        page.locator(".bar").get_by_role("button", name="Abbandona").click()
        page.locator("dialog.confirm").get_by_role("button", name="Abbandona").click()
    for page in (ada, bob):
        expect(page.locator('[data-stat="code"]')).to_have_text(re.compile(r"^HM1-S-[A-Z]{7}(-[A-Z]{7}){3} ✓$"))
        expect(page.locator('[data-stat="code"]')).to_have_attribute("data-verified", "true")


def test_a_bot_is_labelled_and_the_end_box_says_whether_the_result_is_ranked(pages: Pages, server: str) -> None:
    """A bot (a player that says so when it joins) carries a visible «bot» label in the lobby and
    the results; the end box says the result is ranked in a sealed race, and why not in an open
    race (its code was known before the start) — in Italian and in English."""
    ada = pages.new("/", viewport=DESKTOP, settings={"name": "Ada", "lang": "it"})
    ada.click("#create-race")  # a sealed race: the server draws the deal
    ada.wait_for_url(re.compile(r"/r/[A-Z0-9]{6}$"))
    room = ada.url.rsplit("/", 1)[1]
    expect(ada.locator(".players li")).to_have_count(1)  # Ada is in (and hosts) before the bot comes
    with connect(server.replace("http", "ws") + "/ws", origin=server) as bot:
        bot.send(json.dumps({"type": "join", "v": 1, "room": room, "name": "bot-1", "bot": True}))
        row = ada.locator('.players li[data-player="p2"]')
        expect(row.locator(".tag.bot")).to_have_text("bot")
        expect(row.locator(".tag.bot")).to_have_attribute("title", re.compile("programma"))
        ada.get_by_role("button", name="Via!").click()
        expect(ada.locator(".board")).to_be_visible()
        expect(ada.locator('.lane[data-player="p2"] .tag.bot')).to_have_text("bot")
        bot.send(json.dumps({"type": "give_up", "v": 1}))
        ada.locator(".bar").get_by_role("button", name="Abbandona").click()
        ada.locator("dialog.confirm").get_by_role("button", name="Abbandona").click()
        ranking = ada.locator(".endbox .ranking")
        expect(ranking).to_have_text("Risultato in classifica.")
        expect(ranking).to_have_attribute("data-ranked", "true")
        bot_line = [line for line in results_rows(ada) if "bot-1" in line[1]]
        assert bot_line and bot_line[0][1] == "bot-1bot", bot_line  # the name, then its label
    # an open race on a code typed in advance: casual, and the end box says why, in English
    created = ada.request.post("/api/rooms", data={"code": "HM1-N-OPENRCE"}).json()
    bea = pages.new(f"/r/{created['room']}", viewport=PHONE, settings={"name": "Bea", "lang": "en"})
    bea.get_by_role("button", name="Start").click()
    expect(bea.locator(".board")).to_be_visible()
    bea.locator(".bar").get_by_role("button", name="Give up").click()
    bea.locator("dialog.confirm").get_by_role("button", name="Give up").click()
    expect(bea.locator(".endbox .ranking")).to_have_text("Not ranked: this deal's code was known before the start.")
    expect(bea.locator(".endbox .ranking")).to_have_attribute("data-reason", "casual")
    screenshot(bea, "end-casual-390x844")
