"""In a real browser, every WebSocket names the room it is for (``/ws?room=ID``, what a balancer
routes on: docs/protocol.md, "Routing by room"): a race page's first socket; a new solo game's
first socket names none (its room is not made yet) and the next one, after a reload, the room its
welcome gave."""

from __future__ import annotations

import json
import urllib.request

import pytest
from playwright.sync_api import Browser, Page, expect

pytestmark = pytest.mark.browser


def _page(browser: Browser, server: str, sockets: list[str]) -> Page:
    context = browser.new_context(base_url=server, locale="en-GB")
    context.set_default_timeout(8000)
    context.add_init_script(
        "if (!localStorage.getItem('halfmoon.settings'))"
        f" localStorage.setItem('halfmoon.settings', {json.dumps(json.dumps({'name': 'Ada'}))});"
    )
    page = context.new_page()
    page.on("websocket", lambda ws: sockets.append(ws.url))
    return page


def test_a_race_page_names_its_room_in_the_websocket_url(browser: Browser, server: str) -> None:
    request = urllib.request.Request(f"{server}/api/rooms", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        room = json.load(answer)["room"]
    sockets: list[str] = []
    page = _page(browser, server, sockets)
    page.goto(f"/r/{room.lower()}")
    expect(page.locator(".players li")).to_have_count(1)
    ws_base = server.replace("http", "ws", 1)
    assert sockets == [f"{ws_base}/ws?room={room}"]
    page.context.close()


def test_a_new_solo_game_names_its_room_from_its_next_socket_on(browser: Browser, server: str) -> None:
    sockets: list[str] = []
    page = _page(browser, server, sockets)
    page.goto("/play")
    expect(page.locator(".board").first).to_be_visible()
    room = json.loads(page.evaluate("sessionStorage.getItem('halfmoon.session')"))["room"]
    page.reload()  # the page resumes its seat on a new socket
    expect(page.locator(".board").first).to_be_visible()
    ws_base = server.replace("http", "ws", 1)
    assert sockets == [f"{ws_base}/ws", f"{ws_base}/ws?room={room}"]
    page.context.close()
