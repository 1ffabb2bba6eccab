"""Ghosts in a real browser: Gus plays a few moves of a solo game on a bare WebSocket,
a step every 0.6 s, and gives up; its replay page offers «Sfida il fantasma», which starts a solo
game on the same deal with Gus's game as the ghost. Once Ada's clock runs (at her first move) the
ghost's marker advances through Gus's steps in time with it, and ends with his result; the track
shows no card of his (only Ada's own board is on the page)."""

from __future__ import annotations

import json
import re
import secrets
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from itertools import combinations
from typing import Any

import pytest
from playwright.sync_api import ViewportSize, expect
from websockets.sync.client import connect

from halfmoon.cards import Card, is_pair, is_triple
from halfmoon.game import Game
from halfmoon.positions import POSITION_NAMES
from tests.web.conftest import Pages, load_vector, play, screenshot, stored_game, wait_board, wait_stored
from tests.web.test_track import DESKTOP, PHONE, Wire, wire

pytestmark = pytest.mark.browser

WON = load_vector("won_game_browser.json")
GHOST_MOVES = WON["moves"][:5]
STEP_S = 0.6
GHOST_LANE = '.track .lane[data-player="ghost"]'
TALL_PHONE: ViewportSize = {"width": 390, "height": 844}


def ghost_game(base: str) -> tuple[str, dict[str, Any]]:
    with wire(base) as gus:
        gus.send("solo", name="Gus", code=WON["code"])
        gus.next("welcome")
        for i, names in enumerate(GHOST_MOVES):
            if i:
                time.sleep(STEP_S)
            gus.send("move", positions=names)
            gus.next("moved")
        time.sleep(STEP_S)
        gus.send("give_up")
        over = gus.next("game_over")
    return str(over["game"]), stored_game(base, str(over["game"]))


def test_a_ghost_race_moves_the_ghost_in_time_and_shows_none_of_its_cards(pages: Pages) -> None:
    game_id, stored = ghost_game(pages.base)
    assert stored["moves"] == GHOST_MOVES and len(stored["times"]) == len(GHOST_MOVES)
    assert stored["times"][0] == 0 and stored["times"] == sorted(stored["times"])
    final = sum(len(names) for names in GHOST_MOVES)

    ada = pages.new(f"/replay/{game_id}", viewport=PHONE, name="Ada")
    ada.get_by_role("button", name="Sfida il fantasma").click()
    expect(ada).to_have_url(re.compile(rf"/play/{WON['code']}\?ghost={game_id}$"))
    game = Game.from_code(WON["code"])
    wait_board(ada, game)
    ghost = ada.locator(GHOST_LANE)
    expect(ghost.locator(".who")).to_have_text("Gus (fantasma)")
    expect(ghost.locator("progress")).to_have_attribute("value", "0")  # your clock starts at your first move
    # sample the ghost's marker as it runs, from Ada's first move to the ghost's end
    ada.evaluate(
        "sel => { window.seen = []; setInterval(() => { const p = document.querySelector(sel + ' progress');"
        " if (p) window.seen.push(Number(p.value)); }, 100); }",
        f"{GHOST_LANE}",
    )
    play(ada, game, WON["moves"][0])
    ada.wait_for_function("final => window.seen.some(v => v > 0 && v < final)", arg=final)
    screenshot(ada, "ghost-390x844")
    expect(ada.locator(".ghost-end")).to_have_attribute("data-ghost", "gave_up", timeout=10_000)
    expect(ada.locator(".ghost-end")).to_contain_text("Il fantasma ha finito: ha abbandonato")
    expect(ghost.locator("progress")).to_have_attribute("value", str(final))
    expect(ghost).to_have_attribute("data-leads", "true")  # 5 moves to Ada's 1: the ghost leads
    expect(ada.locator('.track .lane[data-leads="true"]')).to_have_count(1)
    seen: list[int] = ada.evaluate("window.seen")
    assert seen == sorted(seen), "the ghost never undid a move: its marker only moves on"
    assert len({v for v in seen if 0 < v < final}) >= 2, f"the marker passed through the ghost's steps: {seen}"

    # the ghost's cards are nowhere: one board (Ada's, as her own game has it), no card in the track
    assert ada.locator(".board").count() == 1
    wait_board(ada, game)
    assert ada.locator(".opponents [data-card]").count() == 0
    assert not re.search("[♠♥♦♣]", ada.locator(".opponents").inner_text())
    ada.set_viewport_size(DESKTOP)
    screenshot(ada, "ghost-1366x768")


def daily_attempt(base: str, name: str, source: str, *, key: str | None = None, moves: int = 0) -> str:
    """Today's daily attempt on a bare WebSocket from another loopback address (``source``: the
    page's own address keeps its ranked attempts for the other daily tests): up to ``moves`` moves
    found from the board's visible tops, a step every 0.6 s, then given up; returns its game id,
    once stored (its record stays hidden till the day ends: a 403)."""
    url = base.replace("http", "ws") + "/ws"
    with connect(url, source_address=(source, 0)) as ws:
        racer = Wire(ws)
        racer.send("daily", name=name, **({"player_key": key} if key else {}))
        tops = dict(zip(POSITION_NAMES, racer.next("welcome")["room"]["board"]["tops"], strict=True))
        done = 0
        while done < moves:
            shown = [(p, Card.parse(c)) for p, c in tops.items() if c]
            pairs = [[p, q] for (p, a), (q, b) in combinations(shown, 2) if is_pair(a, b)]
            triples = [[p, q, r] for (p, a), (q, b), (r, c) in combinations(shown, 3) if is_triple(a, b, c)]
            if not pairs + triples:
                break
            if done:
                time.sleep(STEP_S)
            racer.send("move", positions=(pairs + triples)[0])
            moved = racer.next("moved")
            tops.update({change["pos"]: change["card"] for change in moved["changes"]})
            done += 1
        racer.send("give_up")
        game = str(racer.next("game_over")["game"])
    wait_stored(base, game)
    return game


def daily_ghost(base: str, game: str, key: str) -> dict[str, Any]:
    """The daily ghost once both games are stored (each is written just after its game_over)."""
    today = datetime.now(UTC).date().isoformat()
    url = f"{base}/api/daily/{today}/ghosts/{game}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    for _ in range(50):
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            if exc.code not in (403, 404):
                raise
        time.sleep(0.1)
    raise AssertionError(f"daily game {game} never became a ghost")


def test_after_the_daily_attempt_the_leaderboard_races_a_ghost_in_an_unranked_attempt(pages: Pages) -> None:
    key = secrets.token_urlsafe(32)
    gus = daily_attempt(pages.base, "Gus Daily", "127.0.0.2", moves=3)
    ada = pages.new("/", viewport=TALL_PHONE, name="Ada Daily")
    ada.evaluate("key => localStorage.setItem('halfmoon.playerKey', key)", key)
    today = datetime.now(UTC).date().isoformat()
    # before her own attempt has ended: the leaderboard offers no ghost
    ada.goto(f"/leaderboard/daily/{today}")
    expect(ada.locator("table.results tbody")).to_contain_text("Gus Daily")
    assert ada.locator("a[data-ghost]").count() == 0
    daily_attempt(pages.base, "Ada Daily", "127.0.0.3", key=key)  # her ranked attempt, under her key
    steps = daily_ghost(pages.base, gus, key)["steps"]
    assert len(steps) == 3 and all(s["cards"] in (2, 3) for s in steps), steps
    final = sum(s["cards"] for s in steps)

    ada.goto(f"/leaderboard/daily/{today}")
    ada.locator(f'a[data-ghost="{gus}"]').click()
    expect(ada).to_have_url(re.compile(rf"/daily\?ghost={gus}$"))
    expect(ada.locator(".daily-line")).to_have_attribute("data-ranked", "false")  # the ranked one stays hers
    ghost = ada.locator(GHOST_LANE)
    expect(ghost.locator(".who")).to_contain_text("Gus Daily (fantasma)")
    ada.evaluate(
        "sel => { window.seen = []; setInterval(() => { const p = document.querySelector(sel + ' progress');"
        " if (p) window.seen.push(Number(p.value)); }, 100); }",
        GHOST_LANE,
    )
    expect(ada.locator(".board [data-card]")).to_have_count(20)  # her own board, dealt
    # the ghost runs on Ada's clock, which a daily attempt starts at once: its marker passes its steps
    ada.wait_for_function("final => window.seen.some(v => v > 0 && v < final)", arg=final, timeout=10_000)
    screenshot(ada, "daily-ghost-390x844")
    ada.locator(".bar").get_by_role("button", name="Abbandona").click()
    ada.locator("dialog.confirm").get_by_role("button", name="Abbandona").click()
    expect(ghost.locator("progress")).to_have_attribute("value", str(final))
    seen: list[int] = ada.evaluate("window.seen")
    assert seen == sorted(seen), f"the ghost never undid a move: its marker only moves on ({seen})"
    assert ada.locator(".opponents [data-card]").count() == 0
    assert not re.search("[♠♥♦♣]", ada.locator(".opponents").inner_text())
