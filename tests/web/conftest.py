"""Browser-test set-up: a real Half Moon server on 127.0.0.1 (free port, temporary SQLite
database) in a subprocess, Debian's chromium driven by Playwright (never a download), and the
helpers that play on the board by clicks and compare it with the engine's game, and wait for a
finished game to be stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CHROMIUM_ARGS, ROOT, VECTORS
from tests.ports import free_port

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from halfmoon.game import Game, Move
from halfmoon.positions import POSITION_NAMES

#: Runs the server the way ``halfmoon serve`` does, with test settings (short countdown, one
#: solver worker choosing the daily deal, a fixed daily secret).
_RUNNER = """
import sys
from pathlib import Path
from aiohttp import web
from halfmoon_server import Settings, create_app
port, db, data, per_address = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
settings = Settings.from_env(port=port, db_url=f"sqlite+aiosqlite:///{db}", data_dir=data,
                             secret=b"browser-tests-daily-secret-32-bytes", countdown_s=1.0, solver_workers=1,
                             room_burst=1000.0,  # every browser comes from 127.0.0.1
                             # the tests click faster than any player (48 moves in 2.5 s on a fast
                             # machine): the per-connection message rate (20, then 10 a second) is lifted
                             rate_burst=1000.0, rate_per_s=1000.0,
                             # every browser comes from 127.0.0.1: the shared server ranks every
                             # name's first daily attempt (a test of the address's cap starts its own)
                             daily_ranked_per_address=per_address)
web.run_app(create_app(settings), host="127.0.0.1", port=port, print=None)
"""

PHONE: ViewportSize = {"width": 360, "height": 640}
DESKTOP: ViewportSize = {"width": 1920, "height": 1080}
#: Where the browser tests save their screenshots: a temporary folder, unless
#: HALFMOON_SCREENSHOTS names one (``HALFMOON_SCREENSHOTS=docs/screenshots`` refreshes the docs' images).
SCREENSHOTS = Path(os.environ.get("HALFMOON_SCREENSHOTS") or Path(tempfile.gettempdir()) / "halfmoon-screenshots")


def wait_answering(url: str, proc: subprocess.Popen[Any], within_s: float) -> bool:
    """Poll ``url`` until it answers 2xx: True; False once ``proc`` has exited or ``within_s`` passed."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if 200 <= response.status < 300:
                    return True
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextmanager
def running_server(
    tmp: Path, *, daily_ranked_per_address: int = 1000, env: dict[str, str] | None = None
) -> Iterator[str]:
    """A server of the browser tests' settings in ``tmp``: its base URL; its log is shown if it
    fails to start. ``env``: ``HALFMOON_*`` variables of settings of its own (the quick-race
    queue's short times)."""
    port = free_port()
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, str(port), str(tmp / "halfmoon.db"), str(tmp / "data"),
         str(daily_ranked_per_address)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    if not wait_answering(f"{base}/healthz", proc, 20):
        proc.kill()
        log.close()
        pytest.fail("the server did not start:\n" + (tmp / "server.log").read_text()[-3000:])
    try:
        yield base
    finally:
        stop_process(proc)
        log.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of the running server the browser tests share."""
    with running_server(tmp_path_factory.mktemp("server")) as base:
        yield base


@pytest.fixture(scope="package")
def browser(chromium_path: str) -> Iterator[Browser]:
    # package scope: Playwright's sync API holds an event loop running in this thread until it
    # stops, which would break pytest-asyncio's tests collected after these (tests/client)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


class Pages:
    """Opens pages in fresh contexts (each its own localStorage) and fails the test on a page error."""

    def __init__(self, browser: Browser, base: str) -> None:
        self.browser = browser
        self.base = base
        self.contexts: list[Any] = []
        self.errors: list[str] = []

    def new(
        self,
        path: str = "/",
        *,
        viewport: ViewportSize = DESKTOP,
        locale: str = "it-IT",
        settings: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> Page:
        """``name``: a nickname already chosen (when no ``settings`` are given); without one a
        game asks for a name first."""
        if settings is None and name is not None:
            settings = {"name": name}
        context = self.browser.new_context(viewport=viewport, locale=locale, base_url=self.base)
        context.set_default_timeout(8000)
        if settings is not None:
            saved = json.dumps(json.dumps(settings))
            context.add_init_script(
                f"if (!localStorage.getItem('halfmoon.settings')) localStorage.setItem('halfmoon.settings', {saved});"
            )
        self.contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(path)
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def pages(browser: Browser, server: str) -> Iterator[Pages]:
    opened = Pages(browser, server)
    yield opened
    opened.close()
    assert not opened.errors, f"JavaScript errors in the page: {opened.errors}"


def load_vector(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


# -- playing on the board ---------------------------------------------------------------------

TOPS_JS = (
    "() => Object.fromEntries([...document.querySelectorAll('.board [data-pos]')]"
    ".map(b => [b.dataset.pos, b.dataset.card || null]))"
)


def tops_of(game: Game) -> dict[str, str | None]:
    return {name: (None if (card := game.card_at(p)) is None else card.name) for p, name in enumerate(POSITION_NAMES)}


def wait_board(page: Page, game: Game) -> None:
    """Wait until every pile and slot shows the engine's top card (data-card), then check counts."""
    expected = tops_of(game)
    page.wait_for_function(
        f"expected => {{ const now = ({TOPS_JS})(); return Object.keys(expected).every(k => now[k] === expected[k]) }}",
        arg=expected,
    )
    labels = page.eval_on_selector_all(".board [data-pos] .label", "els => els.map(e => e.textContent)")
    assert labels == [f"{name}·{game.count_at(p)}" for p, name in enumerate(POSITION_NAMES)]


def tap(page: Page, name: str) -> None:
    """Click a pile or slot with the mouse at its centre, even an empty one (marked
    aria-disabled, but a finger can still hit it)."""
    found = page.locator(f'.board [data-pos="{name}"]').bounding_box()
    assert found is not None
    page.mouse.click(found["x"] + found["width"] / 2, found["y"] + found["height"] / 2)


def play(page: Page, game: Game, names: list[str]) -> None:
    """Play one move by clicking its cards, then wait for the server's answer on the board."""
    for name in names:
        page.wait_for_selector(f'.board [data-pos="{name}"][data-card]')
        tap(page, name)
    game.push(Move.from_names(names))
    expect(page.locator('[data-stat="moves"]')).to_have_text(str(game.move_count))
    expect(page.locator('[data-stat="score"]')).to_have_text(str(game.score))
    wait_board(page, game)


# -- a finished game, once stored --------------------------------------------------------------


def wait_stored(base: str, game_id: str, *, within_s: float = 10.0) -> tuple[int, dict[str, Any]]:
    """``GET /api/games/{game_id}`` once the game is stored: the status and body of its first
    answer that is not a 404 (200 and the record; or a 403 while its deal is still played, or
    its day's attempts have not all ended). game_over and race_over go out before the game is
    written (within milliseconds, longer under load): a page that reads it once — a leaderboard,
    the history — may miss it unless a test waits for this first."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/games/{game_id}", timeout=5) as response:
                return response.status, dict(json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                return exc.code, dict(json.loads(exc.read()))
        if time.monotonic() > deadline:
            raise AssertionError(f"game {game_id} was not stored within {within_s} s")
        time.sleep(0.1)


def stored_game(base: str, game_id: str) -> dict[str, Any]:
    """The game's record once it is stored (and open to all)."""
    status, body = wait_stored(base, game_id)
    assert status == 200, body
    return body


def ended_game(page: Page) -> str:
    """The id of the game the page's end box tells of (its replay link's)."""
    href = page.locator('.endbox a[href^="/replay/"]').get_attribute("href")
    assert href is not None
    return href.removeprefix("/replay/")
