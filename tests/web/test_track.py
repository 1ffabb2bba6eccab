"""The race track and the splits in real browsers: during a race every racer is a
marker at the cards they removed of 104, the leader marked, for the racers and the spectators;
the results show each racer's time at moves 12, 24, 36 and 48. Two racers play in browsers (a
desktop and a phone), a third on a bare WebSocket wins the race, and a spectator watches."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect
from websockets.sync.client import ClientConnection, connect

from halfmoon.game import Game, Move
from tests.web.conftest import Pages, load_vector, play, screenshot, wait_board

pytestmark = pytest.mark.browser

WON = load_vector("won_game_browser.json")
PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1366, "height": 768}
ITALIAN_CAPTION = "Parziali: il tempo alla 12ª, 24ª, 36ª e 48ª mossa (— non raggiunta)"
ENGLISH_CAPTION = "Splits: the time at moves 12, 24, 36 and 48 (— not reached)"


class Wire:
    """A racer on a bare WebSocket: as fast as the server lets it."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    def send(self, kind: str, **fields: Any) -> None:
        self.ws.send(json.dumps({"type": kind, "v": 1, **fields}))

    def next(self, kind: str) -> dict[str, Any]:
        while True:
            message = json.loads(self.ws.recv(timeout=10))
            assert message["type"] != "error", message
            if message["type"] == kind:
                return message


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


def lane(page: Page, player: str) -> Any:
    return page.locator(f'.track .lane[data-player="{player}"]')


def marker_x(page: Page, player: str) -> float:
    box = lane(page, player).locator(".marker").bounding_box()
    rail = lane(page, player).locator(".rail").bounding_box()
    assert box is not None and rail is not None
    return box["x"] - rail["x"]


def m_ss(ms: int) -> str:
    return f"{ms // 60_000}:{ms // 1000 % 60:02d}"


def test_the_track_moves_with_every_move_and_the_results_show_the_splits(pages: Pages) -> None:
    room = new_room(pages.base, WON["code"])
    ada = pages.new(f"/r/{room}", viewport=DESKTOP, name="Ada")
    expect(ada.locator(".players li")).to_have_count(1)
    with wire(pages.base) as bob:
        bob.send("join", room=room, name="Bob")
        bob.next("welcome")
        eve = pages.new(f"/r/{room}", viewport=PHONE, name="Eve")
        expect(ada.locator(".players li")).to_have_count(3)
        watcher = pages.new(f"/watch/{room}", viewport=DESKTOP)
        ada.get_by_role("button", name="Via!").click()
        bob.next("started")
        game_ada, game_bob, game_eve = (Game.from_code(WON["code"]) for _ in range(3))
        wait_board(ada, game_ada)
        wait_board(eve, game_eve)
        # everyone on the track at the start, in the order they joined, nobody leading
        for page in (ada, eve, watcher):
            expect(page.locator(".track .lane")).to_have_count(3)
            expect(page.locator(".track")).to_have_attribute("aria-label", "Pista: carte tolte su 104")
            order = page.locator(".track .lane").evaluate_all("lanes => lanes.map(l => l.dataset.player)")
            assert order == ["p1", "p2", "p3"]
            assert page.locator('.track .lane[data-leads="true"]').count() == 0
        start = marker_x(ada, "p2")
        # Bob moves: his summary reaches every browser (no card with it); his marker moves, he leads
        bob.send("move", positions=WON["moves"][0])
        bob.next("moved")
        game_bob.push(Move.from_names(WON["moves"][0]))
        for page in (ada, eve, watcher):
            expect(lane(page, "p2").locator("progress")).to_have_attribute("value", str(104 - game_bob.cards_left))
            expect(lane(page, "p2")).to_have_attribute("data-leads", "true")
            expect(lane(page, "p2")).to_contain_text("in testa")
            expect(lane(page, "p2").locator("progress")).to_have_attribute(
                "aria-label", f"Bob: {104 - game_bob.cards_left}/104 carte"
            )
        assert marker_x(ada, "p2") > start
        # Ada plays two moves in her browser: she leads
        for names in WON["moves"][:2]:
            play(ada, game_ada, names)
        for page in (ada, eve, watcher):
            expect(lane(page, "p1").locator("progress")).to_have_attribute("value", str(104 - game_ada.cards_left))
            expect(lane(page, "p1")).to_have_attribute("data-leads", "true")
            expect(lane(page, "p2")).to_have_attribute("data-leads", "false")
        assert marker_x(watcher, "p1") > marker_x(watcher, "p2") > marker_x(watcher, "p3") == 0
        expect(lane(ada, "p1")).to_contain_text("Ada ★")  # her own lane
        play(eve, game_eve, WON["moves"][0])
        expect(lane(ada, "p3").locator("progress")).to_have_attribute("value", str(104 - game_eve.cards_left))
        screenshot(ada, "track-1366x768")
        screenshot(eve, "track-390x844")
        screenshot(watcher, "track-spectator-1366x768")
        watcher.set_viewport_size(PHONE)
        screenshot(watcher, "track-spectator-390x844")
        # Eve and Ada give up; Bob plays on (no faster than the rate limit lets a connection) and wins
        for page in (eve, ada):
            page.locator(".bar").get_by_role("button", name="Abbandona").click()
            page.locator("dialog.confirm").get_by_role("button", name="Abbandona").click()
            expect(page.locator('.endbox [data-outcome="gave_up"]')).to_be_visible()
        for i, names in enumerate(WON["moves"][1:], 1):
            if i > 12:
                time.sleep(0.11)
            bob.send("move", positions=names)
            bob.next("moved")
            if i == 24:  # half-way: his marker is past the others'
                expect(lane(ada, "p2").locator("progress")).to_have_attribute("value", re.compile(r"^\d{2}$"))
                assert marker_x(ada, "p2") > marker_x(ada, "p1")
        over = bob.next("race_over")
    splits = {line["name"]: line["splits"] for line in over["results"]}
    assert all(isinstance(ms, int) for ms in splits["Bob"]) and splits["Ada"] == splits["Eve"] == [None] * 4
    # every browser: the results, then the splits table with Bob's four times and — for the others
    for page in (ada, eve, watcher):
        table = page.locator("table.splits")
        expect(table.locator("caption")).to_have_text(
            "Parziali: il tempo alla 12ª, 24ª, 36ª e 48ª mossa (— non raggiunta)"
        )
        expect(table.locator("thead th")).to_have_text(["Nome", "12", "24", "36", "48"])
        rows = table.locator("tbody tr").evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.textContent))")
        assert rows == [
            ["Bob", *(m_ss(ms) for ms in splits["Bob"])],
            ["Ada", "—", "—", "—", "—"],
            ["Eve", "—", "—", "—", "—"],
        ], rows
        expect(lane(page, "p2").locator("progress")).to_have_attribute("value", "104")
        expect(lane(page, "p2")).to_have_attribute("data-leads", "true")
    # on the phone the splits table fits the screen's width
    box = eve.locator("table.splits").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    eve.locator("table.splits").scroll_into_view_if_needed()
    screenshot(eve, "splits-390x844")
    screenshot(ada, "splits-1366x768")
    # and in English
    english = pages.new(f"/watch/{room}", viewport=DESKTOP, settings={"lang": "en", "name": "Zed"})
    expect(english.locator("table.splits caption")).to_have_text(
        "Splits: the time at moves 12, 24, 36 and 48 (— not reached)"
    )
    expect(english.locator(".track")).to_have_attribute("aria-label", "Track: cards removed of 104")
