"""axe-core and the Nu HTML checker on every page and state of the browser client: home (and
its settings dialog), a solo game (and its won end box), the daily (its give-up question and its end
box), a race's lobby (and one with a bot), the race, its spectator and its results, a nickname
refused, a replay (on an undo), a ghost race, two games compared, the player's history, the
leaderboards, the rules, the examples and the 404 page — on a 360×640 phone and a 1366×768 desktop,
in Italian and English: no violation at any impact of any rule for WCAG 2.0-2.2 A and AA, of axe's
best practices or of its experimental rules; and the page as the script left it (its DOM,
serialized) has no error and no warning of the Nu HTML checker, nor have index.html as served and
app.css (less the checker's own gaps: audits.CSS_CHECKER_GAPS)."""

from __future__ import annotations

import json
import re
import secrets
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, ViewportSize, expect
from websockets.sync.client import connect

from halfmoon.game import Game, Move
from halfmoon.positions import POSITION_NAMES
from halfmoon_web import STATIC_DIR
from tests.web.audits import AXE_JS, VNU_JAR, NuChecker, axe_violations, require_tool
from tests.web.conftest import load_vector, stored_game, tap
from tests.web.test_history import ws_game
from tests.web.test_track import new_room

pytestmark = pytest.mark.browser

WON = load_vector("won_records.json")["records"][0]
PHONE: ViewportSize = {"width": 360, "height": 640}
DESKTOP: ViewportSize = {"width": 1366, "height": 768}
WORDS = {
    "it": {"start": "Via!", "give_up": "Abbandona", "next": "Avanti"},
    "en": {"start": "Start", "give_up": "Give up", "next": "Next"},
}


@pytest.fixture(scope="module")
def axe_source() -> str:
    return require_tool("axe-core (npm)", AXE_JS).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def nu() -> Iterator[NuChecker]:
    checker = NuChecker(require_tool("the Nu HTML checker (npm vnu-jar)", VNU_JAR, "java"))
    yield checker
    checker.close()


@pytest.fixture(scope="module")
def games(server: str) -> dict[str, str]:
    """Stored games of one player (the key the pages are given): a win with an undo (its replay
    shows the undo apart), a game given up on the same deal (compared with the win, and a second
    line on the deal's leaderboard)."""
    key = secrets.token_urlsafe(32)
    won = ws_game(server, key, WON["code"], undo_first=True, win=True)
    lost = ws_game(server, key, WON["code"], undo_first=False, win=False)
    for over in (won, lost):
        stored_game(server, str(over["game"]))
    return {"key": key, "won": str(won["game"]), "lost": str(lost["game"])}


class Audit:
    """Opens pages in one language and size (each in a context of its own, with a name, the
    language and the stored games' player key) and collects axe's violations, state by state."""

    def __init__(
        self, browser: Browser, base: str, lang: str, viewport: ViewportSize, key: str, source: str, nu: NuChecker
    ) -> None:
        self.browser, self.base, self.lang, self.viewport, self.key, self.source, self.nu = (
            browser,
            base,
            lang,
            viewport,
            key,
            source,
            nu,
        )
        self.contexts: list[BrowserContext] = []
        self.errors: list[str] = []
        self.found: dict[str, list[dict[str, Any]]] = {}
        self.invalid: dict[str, list[str]] = {}
        self.words = WORDS[lang]

    def open(self, path: str, name: str = "Ada") -> Page:
        context = self.browser.new_context(
            viewport=self.viewport, locale="it-IT" if self.lang == "it" else "en-GB", base_url=self.base
        )
        context.set_default_timeout(10_000)
        settings = json.dumps(json.dumps({"name": name, "lang": self.lang}))
        context.add_init_script(
            f"localStorage.setItem('halfmoon.settings', {settings});"
            f"localStorage.setItem('halfmoon.playerKey', {json.dumps(self.key)});"
        )
        self.contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(path)
        return page

    def check(self, page: Page, state: str) -> None:
        # animations done (a card leaving, the win's ★): axe measures colours as they end up
        page.wait_for_timeout(350)
        violations = axe_violations(page, self.source)
        if violations:
            self.found[state] = violations
        said = self.nu.messages(page.content())
        if said:
            self.invalid[state] = [f"{m['type']}: {m['message']} ({m.get('extract', '')!r})" for m in said]

    def close(self) -> None:
        for context in self.contexts:
            context.close()


def board_ready(page: Page) -> None:
    expect(page.locator(".board [data-card]").first).to_be_visible()


def statics(audit: Audit, games: dict[str, str]) -> None:
    """The pages drawn once: home, rules, examples, leaderboards, history, replay, compare, 404."""
    today = datetime.now(UTC).date().isoformat()
    page = audit.open("/")
    expect(page.locator("#new-solo")).to_be_visible()
    audit.check(page, "home")
    page.locator("button.gear").click()
    expect(page.locator("dialog.settings")).to_be_visible()
    audit.check(page, "home: settings")
    for path, ready, state in [
        ("/rules", ".rules h2", "rules"),
        ("/examples", ".examples .board [data-card]", "examples"),
        ("/leaderboard", "#lb-code", "leaderboards"),
        (f"/leaderboard/{WON['code']}", "table.results", "per-deal leaderboard"),
        (f"/leaderboard/daily/{today}", "section.panel h2", "daily leaderboard"),
        ("/leaderboard/ratings", "section.panel h2", "ratings leaderboard"),
        ("/me", ".history table", "history"),
        (f"/replay/{games['won']}", ".replay .board [data-card]", "replay"),
        (f"/compare/{games['won']}/{games['lost']}", ".compare-line .board [data-card]", "compare"),
        ("/replay/999999", ".replay-error", "replay: unknown game"),
        ("/no/such/page", ".not-found", "404"),
    ]:
        page.goto(path)
        # (an unknown game's replay says so after a few seconds: a 404 is asked again, the game
        # may have just finished)
        expect(page.locator(ready).first).to_be_visible(timeout=10_000)
        audit.check(page, state)
        if state == "per-deal leaderboard":
            page.locator("button.more").first.click()
            audit.check(page, "per-deal leaderboard: other games")
        if state == "replay":  # the undo, step 2
            for _ in range(2):
                page.locator('[data-step="next"]').click()
            audit.check(page, "replay: an undo")


def solo_won(audit: Audit) -> None:
    """A solo game on the won record's deal: the board, a move, then the win's end box."""
    page = audit.open(f"/play/{WON['code']}")
    board_ready(page)
    audit.check(page, "game")
    for i, names in enumerate(WON["moves"]):
        for name in names:
            page.wait_for_selector(f'.board [data-pos="{name}"][data-card]')
            tap(page, name)
        expect(page.locator('[data-stat="moves"]')).to_have_text(str(i + 1))
        if i == 0:
            audit.check(page, "game: after a move")
    expect(page.locator(".endbox [data-outcome='won']")).to_be_visible()
    audit.check(page, "game: won")


def daily(audit: Audit) -> None:
    """Today's daily: the board, the give-up question, the end box."""
    page = audit.open("/daily", name=f"A{secrets.token_hex(4)}")
    board_ready(page)
    audit.check(page, "daily")
    page.locator(".bar").get_by_role("button", name=audit.words["give_up"]).click()
    expect(page.locator("dialog.confirm")).to_be_visible()
    audit.check(page, "daily: give up?")
    page.locator("dialog.confirm").get_by_role("button", name=audit.words["give_up"]).click()
    expect(page.locator(".endbox [data-outcome]")).to_be_visible()
    audit.check(page, "daily: end box")


def public_room(base: str) -> str:
    """A new public race (on the home page's live list while it is in play): its id."""
    request = urllib.request.Request(
        f"{base}/api/rooms", data=json.dumps({"listed": True}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return str(json.loads(response.read())["room"])


def race(audit: Audit, games: dict[str, str]) -> None:
    """A race: its lobby, the race, a spectator, the home page's live races (this one featured,
    a public one listed), the results; then a ghost race."""
    room = new_room(audit.base, WON["code"])
    host = audit.open(f"/r/{room}")
    expect(host.locator(".players li")).to_have_count(1)
    audit.check(host, "race lobby")
    host.get_by_role("button", name=audit.words["start"]).click()
    board_ready(host)
    audit.check(host, "race")
    watcher = audit.open(f"/watch/{room}", name="Bea")
    expect(watcher.locator(".watch-player .board [data-card]").first).to_be_visible()
    audit.check(watcher, "spectator")
    public = audit.open(f"/r/{public_room(audit.base)}", name="Cy")
    public.get_by_role("button", name=audit.words["start"]).click()
    board_ready(public)
    home = audit.open("/", name="Dee")
    for _ in range(20):  # listed within the server's tick; the page reads the list again when shown
        home.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
        if home.locator(".live-featured").count():
            break
        home.wait_for_timeout(300)
    expect(home.locator(".live-featured")).to_contain_text("Cy")
    audit.check(home, "home: live races")
    public.locator(".bar").get_by_role("button", name=audit.words["give_up"]).click()
    public.locator("dialog.confirm").get_by_role("button", name=audit.words["give_up"]).click()
    expect(public.locator(".endbox [data-outcome]")).to_be_visible()
    host.locator(".bar").get_by_role("button", name=audit.words["give_up"]).click()
    host.locator("dialog.confirm").get_by_role("button", name=audit.words["give_up"]).click()
    expect(host.locator(".endbox [data-outcome]")).to_be_visible()
    expect(host.locator("table.results")).to_be_visible()
    audit.check(host, "race: results")
    expect(watcher.locator("table.results")).to_be_visible()
    audit.check(watcher, "spectator: results")
    ghost = audit.open(f"/play/{WON['code']}?ghost={games['won']}")
    board_ready(ghost)
    expect(ghost.locator('.track .lane[data-player="ghost"]')).to_be_visible()
    audit.check(ghost, "ghost race")


def bot_and_refusal(audit: Audit, games: dict[str, str]) -> None:
    """A race's lobby with a bot in it (its «bot» label), the race with it; a nickname refused
    (the form to give another)."""
    room = new_room(audit.base, WON["code"])
    host = audit.open(f"/r/{room}")
    expect(host.locator(".players li")).to_have_count(1)
    with connect(audit.base.replace("http", "ws") + "/ws", origin=audit.base) as bot:
        bot.send(json.dumps({"type": "join", "v": 1, "room": room, "name": "Robo", "bot": True}))
        expect(host.locator(".players li .tag.bot")).to_be_visible()
        audit.check(host, "race lobby: a bot")
        host.get_by_role("button", name=audit.words["start"]).click()
        board_ready(host)
        expect(host.locator(".track .tag.bot")).to_be_visible()
        audit.check(host, "race: a bot")
    refused = audit.open(f"/play/{WON['code']}", name="<>")
    expect(refused.locator("form input[name=name]")).to_be_visible()
    audit.check(refused, "a nickname refused")


SCENES: list[Callable[[Audit, dict[str, str]], None]] = [
    statics,
    bot_and_refusal,
    lambda a, g: solo_won(a),
    lambda a, g: daily(a),
    race,
]


@pytest.fixture
def audit_of(
    browser: Browser, server: str, games: dict[str, str], axe_source: str, nu: NuChecker
) -> Iterator[Callable[[str, ViewportSize], Audit]]:
    made: list[Audit] = []

    def make(lang: str, viewport: ViewportSize) -> Audit:
        made.append(Audit(browser, server, lang, viewport, games["key"], axe_source, nu))
        return made[-1]

    yield make
    for audit in made:
        audit.close()


def summary(found: dict[str, list[dict[str, Any]]]) -> str:
    return "\n".join(
        f"{state}: {v['id']} ({v['impact']}, {len(v['nodes'])} nodes) {v['help']}: "
        + "; ".join(f"{n['target']} — {n['summary']}" for n in v["nodes"][:3])
        for state, violations in found.items()
        for v in violations
    )


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["360x640", "1366x768"])
@pytest.mark.parametrize("lang", ["it", "en"])
def test_every_page_and_state_passes_axe_core_and_the_nu_html_checker(
    audit_of: Callable[[str, ViewportSize], Audit], games: dict[str, str], lang: str, viewport: ViewportSize
) -> None:
    audit = audit_of(lang, viewport)
    for scene in SCENES:
        scene(audit, games)
    assert not audit.errors, f"JavaScript errors in the page: {audit.errors}"
    assert not audit.found, "axe-core violations:\n" + summary(audit.found)
    assert not audit.invalid, f"the Nu HTML checker: {json.dumps(audit.invalid, indent=1, ensure_ascii=False)}"


def test_the_served_page_and_the_stylesheet_pass_the_nu_html_checker(nu: NuChecker, server: str) -> None:
    with urllib.request.urlopen(f"{server}/", timeout=10) as response:
        served = response.read().decode("utf-8")
    assert nu.messages(served) == []
    assert nu.messages((STATIC_DIR / "css" / "app.css").read_text(encoding="utf-8"), "text/css") == []


def test_a_move_played_with_the_keyboard_is_said_politely_and_tersely_if_asked(
    audit_of: Callable[[str, ViewportSize], Audit],
) -> None:
    """Tab to a card, the arrow keys, Enter: the move is made, and the live region (#say, polite)
    says the cards, the score, the moves and the cards left; U undoes it, said too; with «Annunci
    brevi» on, the short form."""
    audit = audit_of("it", PHONE)
    page = audit.open(f"/play/{WON['code']}")
    board_ready(page)
    expect(page.locator("#say")).to_have_attribute("aria-live", "polite")
    game = Game.from_code(WON["code"])
    names = WON["moves"][0]
    cards = [game.card_at(POSITION_NAMES.index(name)) for name in names]
    said = " e ".join(card.symbol(lang="it") for card in cards if card is not None)
    # from the first card to the next by the arrow keys, as the arc lies (the keyboard alone)
    page.locator(f'.board [data-pos="{names[0]}"]').focus()
    page.keyboard.press("Enter")
    expect(page.locator(f'.board [data-pos="{names[0]}"]')).to_have_attribute("aria-pressed", "true")
    page.locator(f'.board [data-pos="{names[1]}"]').focus()
    page.keyboard.press("Enter")
    game.push(Move.from_names(names))
    expect(page.locator("#say")).to_have_text(
        f"Tolte {said}. Punteggio {game.score}, mosse 1; restano {game.cards_left} carte da togliere."
    )
    expect(page.locator('[data-stat="moves"]')).to_have_text("1")
    # undo waits for the server's answer to the move (it knows the cards that come back)
    expect(page.locator(".bar .actions button").first).to_be_enabled()
    page.keyboard.press("u")
    expect(page.locator("#say")).to_have_text(
        f"Mossa annullata: tornano {said}. Punteggio 0, mosse 0; restano 104 carte da togliere."
    )
    page.locator("button.gear").click()
    page.get_by_label("Annunci brevi").check()
    page.keyboard.press("Escape")
    page.locator(f'.board [data-pos="{names[0]}"]').focus()
    page.keyboard.press("Space")
    page.locator(f'.board [data-pos="{names[1]}"]').focus()
    page.keyboard.press("Space")
    expect(page.locator("#say")).to_have_text(f"{said}. {game.score} punti, {game.cards_left} carte.")
    # arrow keys move the focus between cards
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("document.activeElement.dataset.pos") not in (None, names[1])
    assert not audit.errors, audit.errors


#: records what the polite live region says (window.said), from now on
LISTEN = (
    "window.said = []; new MutationObserver(() => { const t = document.getElementById('say').textContent;"
    " if (t) window.said.push(t); }).observe(document.getElementById('say'),"
    " {childList: true, characterData: true, subtree: true})"
)


def heard(page: Page, until: Callable[[list[str]], bool], timeout_s: float = 10) -> list[str]:
    """What #say has said since LISTEN, once `until` holds of it (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while True:
        said: list[str] = page.evaluate("window.said")
        if until(said) or time.monotonic() > deadline:
            return said
        page.wait_for_timeout(100)


def test_the_undo_key_works_only_with_the_focus_on_the_game(audit_of: Callable[[str, ViewportSize], Audit]) -> None:
    """«U» is a character key (WCAG 2.1.4): typed with the focus elsewhere — a header link, the
    page itself, as a speech-input user's words may be — it undoes nothing; on the board it does."""
    audit = audit_of("it", PHONE)
    page = audit.open(f"/play/{WON['code']}")
    board_ready(page)
    for name in WON["moves"][0]:
        tap(page, name)
    expect(page.locator('[data-stat="moves"]')).to_have_text("1")
    expect(page.locator(".bar .actions button").first).to_be_enabled()
    page.locator(".top a").first.focus()
    page.keyboard.press("u")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("u")
    page.wait_for_timeout(400)
    expect(page.locator('[data-stat="moves"]')).to_have_text("1")
    page.locator(".board [data-card]").first.focus()
    page.keyboard.press("u")
    expect(page.locator('[data-stat="moves"]')).to_have_text("0")
    assert not audit.errors, audit.errors


def test_a_player_waiting_in_a_race_lobby_hears_a_newcomer_the_countdown_and_the_start(
    audit_of: Callable[[str, ViewportSize], Audit],
) -> None:
    """Players in the lobby (a screen reader, the keyboard): a newcomer, the countdown and the start
    are said politely (#say), and once the race is on the focus is on the board, not lost."""
    audit = audit_of("en", PHONE)
    room = new_room(audit.base, WON["code"])
    host = audit.open(f"/r/{room}", name="Cid")
    expect(host.locator(".players li")).to_have_count(1)
    host.evaluate(LISTEN)
    guest = audit.open(f"/r/{room}", name="Bea")
    expect(guest.locator(".players li")).to_have_count(2)
    guest.evaluate(LISTEN)
    assert "Bea is in the lobby." in heard(host, lambda said: "Bea is in the lobby." in said)
    host.get_by_role("button", name="Start").click()
    for page in (host, guest):
        board_ready(page)
        said = heard(page, lambda said: any(t.startswith("Go!") for t in said))
        assert any(t.startswith("The race starts in ") for t in said), said
        assert said[-1] == "Go! The race has started.", said
        assert page.evaluate("document.activeElement.closest('.board') !== null")
    assert not audit.errors, audit.errors


def test_a_race_title_says_its_lobby_the_race_and_its_results(audit_of: Callable[[str, ViewportSize], Audit]) -> None:
    """The <title> (what a tab, a window list, a screen reader on switching says) follows the race:
    the lobby, the race, its results — and the language."""
    audit = audit_of("en", DESKTOP)
    room = new_room(audit.base, WON["code"])
    host = audit.open(f"/r/{room}")
    expect(host.locator(".players li")).to_have_count(1)
    expect(host).to_have_title(f"Lobby {room} · Half Moon")
    with connect(audit.base.replace("http", "ws") + "/ws", origin=audit.base) as bot:
        bot.send(json.dumps({"type": "join", "v": 1, "room": room, "name": "Robo", "bot": True}))
        expect(host.locator(".players li")).to_have_count(2)
        host.get_by_role("button", name="Start").click()
        board_ready(host)
        expect(host).to_have_title(f"Race {room} · Half Moon")
        host.locator(".bar").get_by_role("button", name="Give up").click()
        host.locator("dialog.confirm").get_by_role("button", name="Give up").click()
        bot.send(json.dumps({"type": "give_up", "v": 1}))
        expect(host.locator("table.results")).to_be_visible()
        expect(host).to_have_title(f"Results · Race {room} · Half Moon")
        host.locator("header").get_by_role("button", name="IT", exact=False).click()
        expect(host).to_have_title(f"Risultati · Gara {room} · Half Moon")
    assert not audit.errors, audit.errors


#: the focused element's ring against the surface it is drawn on: (text, outline colour, surface, ratio)
RING = """() => {
  const e = document.activeElement;
  const cs = getComputedStyle(e);
  if (!e.matches(':focus-visible') || cs.outlineStyle === 'none') return null;
  const lum = (c) => {
    const [r, g, b] = c.match(/[\\d.]+/g).slice(0, 3).map(Number)
      .map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  let n = e.parentElement;
  while (n && getComputedStyle(n).backgroundColor.match(/[\\d.]+/g).length === 4) n = n.parentElement;
  const surface = getComputedStyle(n).backgroundColor;
  const [a, b] = [lum(cs.outlineColor), lum(surface)];
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  return [e.textContent.trim().slice(0, 24), cs.outlineColor, surface, ratio];
}"""


def test_the_focus_ring_stands_out_from_the_light_surfaces_it_is_on(
    audit_of: Callable[[str, ViewportSize], Audit],
) -> None:
    """Tabbing through the settings dialog, the daily's give-up question and its end box (light
    surfaces on the felt): each focused control's ring has at least 3:1 against the surface
    around it (WCAG 1.4.11 and 2.4.7: a gold ring on white is 1.4:1, barely seen)."""
    audit = audit_of("en", PHONE)
    rings: list[list[Any]] = []

    def tab_through(page: Page, surface: str, stops: int) -> None:
        for _ in range(stops):
            page.keyboard.press("Tab")
            if page.evaluate(f"document.activeElement.closest({surface!r}) !== null"):
                ring = page.evaluate(RING)
                if ring is not None:
                    rings.append([surface, *ring])

    page = audit.open("/", name=f"A{secrets.token_hex(4)}")
    page.locator("button.gear").click()
    expect(page.locator("dialog.settings")).to_be_visible()
    tab_through(page, "dialog", 8)
    page.keyboard.press("Escape")
    page.goto("/daily")
    board_ready(page)
    page.locator(".bar").get_by_role("button", name="Give up").focus()
    page.keyboard.press("Enter")
    expect(page.locator("dialog.confirm")).to_be_visible()
    tab_through(page, "dialog", 3)
    page.keyboard.press("Escape")
    page.locator(".bar").get_by_role("button", name="Give up").focus()
    page.keyboard.press("Enter")
    page.locator("dialog.confirm").get_by_role("button", name="Give up").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".endbox [data-outcome]")).to_be_visible()
    tab_through(page, ".endbox", 30)
    assert {surface for surface, *_ in rings} == {"dialog", ".endbox"}, rings
    faint = [ring for ring in rings if ring[-1] < 3]
    assert not faint, f"focus rings under 3:1 against their surface: {faint}"
    assert not audit.errors, audit.errors


def test_a_rematch_offer_is_said_to_a_player_looking_at_the_results(
    audit_of: Callable[[str, ViewportSize], Audit],
) -> None:
    """After a race, the other player proposes a rematch: the player still on the results hears who
    proposed it (#say), not only sees the lobby that replaces them."""
    audit = audit_of("en", DESKTOP)
    room = new_room(audit.base, WON["code"])
    host = audit.open(f"/r/{room}", name="Cid")
    expect(host.locator(".players li")).to_have_count(1)
    guest = audit.open(f"/r/{room}", name="Bea")
    expect(host.locator(".players li")).to_have_count(2)
    host.get_by_role("button", name="Start").click()
    for page in (host, guest):
        board_ready(page)
        page.locator(".bar").get_by_role("button", name="Give up").click()
        page.locator("dialog.confirm").get_by_role("button", name="Give up").click()
    for page in (host, guest):
        expect(page.locator("table.results")).to_be_visible()
    host.evaluate(LISTEN)
    guest.get_by_role("button", name="Rematch").click()
    expect(host.get_by_role("button", name="Accept the rematch")).to_be_visible()
    said = heard(host, lambda said: bool(said))
    assert said and said[-1].startswith("Bea proposes a rematch on a new deal."), said
    assert not audit.errors, audit.errors


#: visible text drawn under 12 px (Lighthouse's legible-text line): [tag, text, px]
SMALL_TEXT = """() => [...document.querySelectorAll('main *')]
  .filter((e) => e.getClientRects().length > 0)
  .filter((e) => [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()))
  .map((e) => [e.tagName, e.textContent.trim().slice(0, 20), parseFloat(getComputedStyle(e).fontSize)])
  .filter(([, , px]) => px < 12)"""


def test_a_deal_leaderboard_with_its_other_games_open_is_legible_on_a_phone(
    audit_of: Callable[[str, ViewportSize], Audit], games: dict[str, str]
) -> None:
    """A player's other games on a deal's leaderboard, opened on a 360 px phone: the «+1» that opens
    them named as it reads, and no text under 12 px (the rows of other games were drawn smaller
    still than the phone's 12 px table)."""
    audit = audit_of("it", PHONE)
    page = audit.open(f"/leaderboard/{WON['code']}")
    expect(page.locator("table.results")).to_be_visible()
    # the «+N» button: named as it reads first (voice control), then in words that agree with it
    # (the browser tests share a server: other tests may have played this deal too)
    more = page.locator("button.more").first
    expect(more).to_have_text(re.compile(r"^\+\d+$"))
    shown = more.inner_text().strip()
    n = int(shown[1:])
    expect(more).to_have_accessible_name(f"{shown} (un'altra partita)" if n == 1 else f"{shown} (altre {n} partite)")
    page.locator("button.more").first.click()
    expect(page.locator("tr.other").first).to_be_visible()
    assert page.evaluate(SMALL_TEXT) == []
    assert not audit.errors, audit.errors


def test_a_board_is_one_tab_stop_and_the_arrow_keys_move_within_it(
    audit_of: Callable[[str, ViewportSize], Audit], games: dict[str, str]
) -> None:
    """Tab reaches a board once (its 20 places are not 20 Tab stops to cross to the controls after
    it); the arrow keys move between its cards, and Tab comes back to the card left focused. Two
    games compared: two boards, two stops."""
    audit = audit_of("en", DESKTOP)
    page = audit.open(f"/play/{WON['code']}")
    board_ready(page)
    page.locator(".bar").get_by_role("button", name="New game").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.pos") == "1"
    page.keyboard.press("ArrowUp")
    moved_to = page.evaluate("document.activeElement.dataset.pos")
    assert moved_to not in (None, "1")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('.board') === null")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.dataset.pos") == moved_to
    page.goto(f"/compare/{games['won']}/{games['lost']}")
    expect(page.locator(".compare-line .board [data-card]").first).to_be_visible()
    stops = page.evaluate("[...document.querySelectorAll('.board .slot')].filter((b) => b.tabIndex >= 0).length")
    assert stops == page.locator(".board").count() == 2
    assert not audit.errors, audit.errors


def test_the_players_own_star_is_said_in_words(audit_of: Callable[[str, ViewportSize], Audit]) -> None:
    """The ★ that marks the player in a lobby's list and on the race's track is a picture to a
    screen reader ("black star"): it is hidden from it and «(you)» said instead."""
    audit = audit_of("en", DESKTOP)
    room = new_room(audit.base, WON["code"])
    host = audit.open(f"/r/{room}", name="Cid")
    mine = host.locator(".players li", has_text="Cid")
    expect(mine).to_contain_text("(you)")
    assert mine.get_by_text("★").get_attribute("aria-hidden") == "true"
    host.get_by_role("button", name="Start").click()
    board_ready(host)
    lane = host.locator(".track .lane .who", has_text="Cid")
    expect(lane).to_contain_text("(you)")
    assert lane.get_by_text("★").get_attribute("aria-hidden") == "true"
    assert not audit.errors, audit.errors


def test_an_end_box_is_not_drawn_again_on_an_opponents_move(audit_of: Callable[[str, ViewportSize], Audit]) -> None:
    """A racer who gave up while the other plays on: each of the other's moves left the end box (a
    status region) drawn anew — said again to a screen reader — and the control focused in it lost
    to the page. It stays as it is, the focus where it was."""
    audit = audit_of("en", DESKTOP)
    room = new_room(audit.base, WON["code"])
    host = audit.open(f"/r/{room}")
    expect(host.locator(".players li")).to_have_count(1)
    with connect(audit.base.replace("http", "ws") + "/ws", origin=audit.base) as bot:
        bot.send(json.dumps({"type": "join", "v": 1, "room": room, "name": "Robo", "bot": True}))
        expect(host.locator(".players li")).to_have_count(2)
        host.get_by_role("button", name="Start").click()
        board_ready(host)
        host.locator(".bar").get_by_role("button", name="Give up").click()
        host.locator("dialog.confirm").get_by_role("button", name="Give up").click()
        expect(host.locator(".endbox [data-outcome]")).to_be_visible()
        host.evaluate(
            "window.redrawn = 0; new MutationObserver((changes) => { window.redrawn += changes.length; })"
            ".observe(document.querySelector('.endbox'), {childList: true, subtree: true, characterData: true})"
        )
        share = host.locator(".endbox").get_by_role("button", name="Share")
        share.focus()
        robo = host.locator(".track .lane .who", has_text="Robo")
        for i, names in enumerate(WON["moves"][:3]):
            bot.send(json.dumps({"type": "move", "v": 1, "positions": names}))
            expect(robo.locator("xpath=..")).to_contain_text(f"Moves {i + 1}")
        expect(share).to_be_focused()
        assert host.evaluate("window.redrawn") == 0
    assert not audit.errors, audit.errors


def test_the_end_of_a_game_leaves_the_keyboard_focus_in_the_end_box(
    audit_of: Callable[[str, ViewportSize], Audit],
) -> None:
    """The last move disables the board's cards: the focus, on one of them, was lost to the page (a
    screen reader back at the top); it goes to the end box's first control. So it does when the
    daily is given up from the keyboard (the give-up button, focused, is disabled)."""
    audit = audit_of("en", PHONE)
    page = audit.open(f"/play/{WON['code']}")
    board_ready(page)
    for i, names in enumerate(WON["moves"]):
        for name in names:
            page.wait_for_selector(f'.board [data-pos="{name}"][data-card]')
            page.locator(f'.board [data-pos="{name}"]').focus()
            page.keyboard.press("Enter")
        expect(page.locator('[data-stat="moves"]')).to_have_text(str(i + 1))
    expect(page.locator(".endbox [data-outcome='won']")).to_be_visible()
    expect(page.locator(".endbox button, .endbox a[href]").first).to_be_focused()
    # the daily given up from the keyboard: the same
    page.goto("/daily")
    board_ready(page)
    page.locator(".bar").get_by_role("button", name="Give up").focus()
    page.keyboard.press("Enter")
    page.locator("dialog.confirm").get_by_role("button", name="Give up").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".endbox [data-outcome]")).to_be_visible()
    expect(page.locator(".endbox button, .endbox a[href]").first).to_be_focused()
    assert not audit.errors, audit.errors


def test_a_refused_nickname_s_field_says_why_and_has_the_focus(audit_of: Callable[[str, ViewportSize], Audit]) -> None:
    """A nickname the server refuses: the field to give another is labelled, marked invalid,
    described by the refusal (a screen reader reads why on it), asks for a nickname (autocomplete,
    WCAG 1.3.5) and has the focus — not the page."""
    audit = audit_of("en", PHONE)
    page = audit.open(f"/play/{WON['code']}", name="<>")
    field = page.get_by_label("Your name")
    expect(field).to_be_focused()
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_have_attribute("autocomplete", "nickname")
    expect(field).to_have_accessible_description(page.get_by_role("alert").first.text_content() or "")
    assert "<>" in (field.evaluate("(e) => document.getElementById(e.getAttribute('aria-describedby')).textContent"))
    assert not audit.errors, audit.errors
