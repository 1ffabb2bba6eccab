"""Ghosts in a real browser (issue 17): Gus plays a few moves of a solo game on a bare WebSocket,
a step every 0.6 s, and gives up; its replay page offers «Sfida il fantasma», which starts a solo
game on the same deal with Gus's game as the ghost. Once Ada's clock runs (at her first move) the
ghost's marker advances through Gus's steps in time with it, and ends with his result; the track
shows no card of his (only Ada's own board is on the page)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from halfmoon.game import Game
from tests.web.conftest import Pages, load_vector, play, screenshot, wait_board
from tests.web.test_track import DESKTOP, PHONE, wire

pytestmark = pytest.mark.browser

WON = load_vector("won_game_browser.json")
GHOST_MOVES = WON["moves"][:5]
STEP_S = 0.6
GHOST_LANE = '.track .lane[data-player="ghost"]'


def stored_game(base: str, game_id: str) -> dict[str, Any]:
    """The stored game once its recording is in (it is written just after game_over)."""
    for _ in range(50):
        try:
            with urllib.request.urlopen(f"{base}/api/games/{game_id}", timeout=5) as response:
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
        time.sleep(0.1)
    raise AssertionError(f"game {game_id} was never stored")


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
