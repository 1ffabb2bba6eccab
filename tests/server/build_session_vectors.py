"""The source of ``tests/vectors/sessions.json``: live sessions recorded from a real server, for
the two clients' session cores — the browser's reducer (``static/js/session.js``, run by
``tests/web/session.test.mjs``) and the terminal client's :class:`halfmoon_client.session.Session`
(``tests/client/test_session_vectors.py``) — so both are checked against one set of recordings.

The server runs in process on 127.0.0.1 with its clock held still and moved by hand; each page
(one browser tab, or one terminal client) is a real WebSocket client that reads its messages
strictly in order, so every run records the same thing. The facts each ``check`` expects are
worked out here from the engine (each racer's :class:`~halfmoon.game.Game`) and the rule the
protocol gives for spectators, not read from the messages.
``tests/server/system/test_session_vectors.py`` checks that this script still records the committed file.

Regenerate with ``python -m tests.server.build_session_vectors`` (from the repository root).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halfmoon.codes import daily_code, new_seal_seed, seal_commitment, sealed_code
from halfmoon.game import Game, Move
from halfmoon.positions import PILE_COUNT, POSITION_NAMES
from halfmoon.protocol import commitment_of
from halfmoon_server import create_app
from halfmoon_server.clock import ManualClock, day_start_ms, utc_day
from halfmoon_server.rooms.lobby import Lobby
from tests.conftest import VECTORS
from tests.server.support import illegal_move, make_settings, won_record

PATH: Final = VECTORS / "sessions.json"
START_MS: Final = 1_796_000_000_000
#: The pages' own clocks run 1.5 s behind the server's: every client's offset is 1500 ms.
LOCAL_SKEW_MS: Final = -1500
SOLO_CODE: Final = "HM1-N-AAAAAAB"  # tap vectors' deal: 1:10H R4:AS make 11; R3:JH R5:QD 8:KS a triple
HIDDEN: Final = "??"
DAY_MS: Final = 86_400_000

FORMAT: Final = """\
Live sessions recorded from a real server (tests/server/build_session_vectors.py), fed to both
clients' session cores: the browser's reducer (static/js/session.js) and the terminal client's
Session. Top level: {"format": this text, "scenarios": {name: scenario}}.
A scenario: {"about": what it shows, "code": the deal code, "pages": {label: page}}, in the order
the pages opened. A page is one browser tab or terminal client: {"name": the nickname it gives,
"intent": what the page was opened for, as the browser's initialState takes it ({"kind": "solo",
"code"} | {"kind": "race", "room"} | {"kind": "watch", "room"} | {"kind": "daily"}), "seat": the {"room", "token"} a
reloaded page starts with or null, "timeline": [entry, ...]}.
Entries, in the order they happened on that page: {"send": a message the page sent} (its first,
and the first after a drop, is its hello), {"recv": a message it received, "at": the page's own
clock then, in ms}, {"drop": true} (its socket closed; a page that sends again opens a new one),
{"check": facts}. Facts (each optional) are the state after everything before: "role", "you",
"phase", "mode", "code", "host", "seq", "spectators", "offset_ms" (server clock minus the page's),
"token", "failed" (the error code that refused the page before it entered, else null),
"players" ({id: {"name", "status", "score", "moves", "cards_left", "connected"}}, every player),
"board" (the page's own {"tops", "counts"}, null before the start), "boards" ({id: board}, a
spectator's, with "??" for a card not shown yet), "outcome" ({"outcome", "score", "moves"} from
game_over, or null), "results" (null, or race_over's [{"rank", "player", "name", "outcome",
"score", "moves"}, ...]).
Room ids, tokens and game ids are random: each is replaced by ROOM-n, TOKEN-n or GAME-n. A sealed
race's seed is drawn from fixed bytes, so its deal is the same on every run.
"""


def board_facts(game: Game) -> dict[str, list[Any]]:
    return {
        "tops": [None if (card := game.card_at(p)) is None else card.name for p in range(len(POSITION_NAMES))],
        "counts": [game.count_at(p) for p in range(len(POSITION_NAMES))],
    }


@dataclass
class Racer:
    """The truth about one player, kept beside the server: their game, and what they have seen."""

    id: str
    name: str
    game: Game
    status: str = "waiting"
    connected: bool = True
    #: each pile's lowest height so far: the racer has seen every card from there up
    lowest: list[int] = field(default_factory=lambda: [8] * PILE_COUNT)

    def push(self, names: list[str]) -> None:
        self.game.push(Move.from_names(names))
        self.lowest = [min(low, self.game.count_at(p)) for p, low in enumerate(self.lowest)]
        self.status = str(self.game.status)

    def facts(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "score": self.game.score,
            "moves": self.game.move_count,
            "cards_left": self.game.cards_left,
            "connected": self.connected,
        }


def spectator_board(racer: Racer, racers: list[Racer]) -> dict[str, list[Any]]:
    """A racer's board as spectators see it: a pile's top only once every racer still playing has
    seen it (the pile is at least as tall as the lowest it has been in each one's game)."""
    board = board_facts(racer.game)
    playing = [r for r in racers if r.status in ("playing", "stalled")]
    for p in range(PILE_COUNT):
        if board["tops"][p] is not None and any(board["counts"][p] < r.lowest[p] for r in playing):
            board["tops"][p] = HIDDEN
    return board


@dataclass
class Page:
    """One browser tab or terminal client: sends, reads strictly in order, and keeps its timeline."""

    label: str
    name: str
    intent: dict[str, Any]
    recording: Recording
    seat: dict[str, str] | None = None
    timeline: list[dict[str, Any]] = field(default_factory=list)
    ws: aiohttp.ClientWebSocketResponse | None = None
    last_id: int = 0

    async def send(self, type: str, **fields: Any) -> None:
        if self.ws is None:
            self.ws = await self.recording.http.ws_connect(self.recording.server.make_url("/ws"))
        message = {"type": type, "v": 1, **fields}
        self.timeline.append({"send": message})
        await self.ws.send_str(json.dumps(message))

    async def sent_with_id(self, type: str, **fields: Any) -> None:
        """A move or an undo, numbered as both clients number them (one counter per page)."""
        self.last_id += 1
        await self.send(type, **fields, id=self.last_id)

    async def expect(self, *types: str) -> list[dict[str, Any]]:
        """The next messages, which must be of these types in this order."""
        assert self.ws is not None, self.label
        out = []
        for kind in types:
            frame = await self.ws.receive(timeout=5)
            assert frame.type is aiohttp.WSMsgType.TEXT, f"{self.label} expected {kind}, got {frame}"
            message = json.loads(frame.data)
            assert message["type"] == kind, f"{self.label} expected {kind}, got {message}"
            self.recording.note_volatile(message)
            self.timeline.append({"recv": message, "at": self.recording.clock.ms + LOCAL_SKEW_MS})
            out.append(message)
        return out

    async def drop(self) -> None:
        assert self.ws is not None
        await self.ws.close()
        self.ws = None
        self.timeline.append({"drop": True})

    def check(self, **facts: Any) -> None:
        """Facts the page's state must show now; ``seq`` is the highest event version it has seen."""
        self.timeline.append({"check": {"seq": self.last_seq(), **facts}})

    def received(self) -> list[dict[str, Any]]:
        return [entry["recv"] for entry in self.timeline if "recv" in entry]

    def last_seq(self) -> int:
        seq = 0
        for message in self.received():
            if isinstance(message.get("seq"), int):
                seq = message["seq"] if message["type"] == "welcome" else max(seq, message["seq"])
        return seq

    def token(self) -> str:
        return next(m["token"] for m in reversed(self.received()) if m.get("token"))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "intent": self.intent, "seat": self.seat, "timeline": self.timeline}


@dataclass
class Recording:
    server: TestServer
    http: aiohttp.ClientSession
    clock: ManualClock
    volatile: dict[str, str] = field(default_factory=dict)  # room id / token / game id → its kind
    pages: dict[str, Page] = field(default_factory=dict)

    def page(self, label: str, intent: dict[str, Any], *, name: str | None = None, seat: Any = None) -> Page:
        page = Page(label, name or label, intent, self, seat)
        self.pages[label] = page
        return page

    def note_volatile(self, message: dict[str, Any]) -> None:
        if message.get("token"):
            self.volatile[message["token"]] = "TOKEN"
        if message.get("game"):
            self.volatile[message["game"]] = "GAME"
        for result in message.get("results") or []:
            if result.get("game"):
                self.volatile[result["game"]] = "GAME"

    async def quiet(self) -> None:
        """Every page has read everything sent to it."""
        await asyncio.sleep(0.1)
        for page in self.pages.values():
            if page.ws is not None:
                try:
                    frame = await page.ws.receive(timeout=0.05)
                except TimeoutError:
                    continue
                if frame.type is aiohttp.WSMsgType.TEXT:
                    raise AssertionError(f"{page.label} got an unexpected {frame.data}")

    async def close(self) -> None:
        for page in self.pages.values():
            if page.ws is not None:
                await page.ws.close()

    def to_json(self, about: str, code: str) -> dict[str, Any]:
        return {"about": about, "code": code, "pages": {label: page.to_json() for label, page in self.pages.items()}}


async def solo(recording: Recording) -> None:
    """A solo game: a pair, a refused move, a triple, an undo, then giving up."""
    clock = recording.clock
    ada = recording.page("Ada", {"kind": "solo", "code": SOLO_CODE})
    racer = Racer("p1", "Ada", Game.from_code(SOLO_CODE), status="playing")
    await ada.send("solo", name="Ada", code=SOLO_CODE)
    [welcome] = await ada.expect("welcome")
    recording.volatile[welcome["room"]["room"]] = "ROOM"
    ada.check(
        role="player",
        you="p1",
        mode="solo",
        phase="running",
        code=SOLO_CODE,
        host="p1",
        offset_ms=-LOCAL_SKEW_MS,
        players={"p1": racer.facts()},
        board=board_facts(racer.game),
        boards={},
        outcome=None,
        results=None,
        failed=None,
    )
    await ada.send("ping")
    await ada.expect("pong")
    clock.advance(3000)
    await ada.sent_with_id("move", positions=["1", "R4"])  # 10H + AS
    racer.push(["1", "R4"])
    await ada.expect("moved")
    ada.check(players={"p1": racer.facts()}, board=board_facts(racer.game))
    clock.advance(1000)
    await ada.sent_with_id("move", positions=illegal_move(racer.game).names())
    await ada.expect("error")
    ada.check(players={"p1": racer.facts()}, board=board_facts(racer.game))
    clock.advance(1000)
    await ada.sent_with_id("move", positions=["R3", "R5", "8"])  # JH QD KS
    racer.push(["R3", "R5", "8"])
    await ada.expect("moved")
    ada.check(players={"p1": racer.facts()}, board=board_facts(racer.game))
    clock.advance(1000)
    await ada.sent_with_id("undo")
    racer.game.undo()
    await ada.expect("moved")
    ada.check(players={"p1": racer.facts()}, board=board_facts(racer.game))
    clock.advance(2000)
    await ada.send("give_up")
    racer.status = "gave_up"
    await ada.expect("progress", "game_over", "race_over")
    facts = racer.facts()
    ada.check(
        phase="finished",
        players={"p1": facts},
        board=board_facts(racer.game),
        outcome={"outcome": "gave_up", "score": facts["score"], "moves": facts["moves"]},
        results=[
            {
                "rank": 1,
                "player": "p1",
                "name": "Ada",
                "outcome": "gave_up",
                "score": facts["score"],
                "moves": facts["moves"],
            }
        ],
    )
    await recording.quiet()


async def race(recording: Recording) -> None:
    """A race with a lobby, a spectator, a late joiner; Bob drops and resumes with ``since``,
    reloads (a resume with no ``since``: a snapshot) and gives up; Ada wins."""
    clock, http, server = recording.clock, recording.http, recording.server
    record = won_record()
    code = str(record.code)
    line = [step.names() for step in record.moves]  # type: ignore[union-attr]
    response = await http.post(server.make_url("/api/rooms"), json={"code": code})
    room = (await response.json())["room"]
    recording.volatile[room] = "ROOM"
    race_intent = {"kind": "race", "room": room}
    ada_racer = Racer("p1", "Ada", Game.from_code(code))
    bob_racer = Racer("p2", "Bob", Game.from_code(code))
    racers = [ada_racer, bob_racer]

    def players() -> dict[str, Any]:
        return {r.id: r.facts() for r in racers}

    def boards() -> dict[str, Any]:
        return {r.id: spectator_board(r, racers) for r in racers}

    # the lobby: Ada (the host), Bob, a spectator; Cy comes and goes; a second "ada" is refused
    ada = recording.page("Ada", race_intent)
    bob = recording.page("Bob", race_intent)
    spec = recording.page("Spectator", {"kind": "watch", "room": room})
    await ada.send("join", room=room, name="Ada")
    await ada.expect("welcome")
    ada.check(
        role="player",
        you="p1",
        mode="race",
        phase="lobby",
        host="p1",
        code=code,
        offset_ms=-LOCAL_SKEW_MS,
        players={"p1": ada_racer.facts()},
        board=None,
        boards={},
        failed=None,
    )
    await bob.send("join", room=room, name="Bob")
    await bob.expect("welcome")
    await ada.expect("player_joined")
    await spec.send("watch", room=room)
    await spec.expect("welcome")
    await ada.expect("spectators")
    await bob.expect("spectators")
    spec.check(
        role="spectator",
        you=None,
        phase="lobby",
        host="p1",
        spectators=1,
        players=players(),
        board=None,
        boards={},
        token=None,
    )
    cy = recording.page("Cy", race_intent)
    await cy.send("join", room=room, name="Cy")
    await cy.expect("welcome")
    for page in (ada, bob, spec):
        await page.expect("player_joined")
    with_cy = {**players(), "p3": Racer("p3", "Cy", Game.from_code(code)).facts()}
    cy.check(role="player", you="p3", host="p1", phase="lobby", players=with_cy)
    ada.check(players=with_cy)
    await cy.send("leave")
    for page in (ada, bob, spec):
        await page.expect("player_left")
    await cy.drop()
    for page in (ada, bob, spec):
        page.check(phase="lobby", host="p1", players=players())
    again = recording.page("Ada again", race_intent, name="ada")
    await again.send("join", room=room, name="ada")
    await again.expect("error")
    again.check(role=None, failed="name_taken", players={}, board=None)
    await again.drop()

    # the start
    await ada.send("start", time_limit_s=600)
    for page in (ada, bob, spec):
        await page.expect("countdown")
    ada.check(phase="countdown", offset_ms=-LOCAL_SKEW_MS)
    clock.advance(50)
    for racer in racers:
        racer.status = "playing"
    for page in (ada, bob, spec):
        await page.expect("started")
    for page in (ada, bob):
        page.check(phase="running", players=players(), board=board_facts(ada_racer.game), boards={})
    spec.check(phase="running", players=players(), board=None, boards=boards())
    dan = recording.page("Dan", race_intent)
    await dan.send("join", room=room, name="Dan")
    await dan.expect("welcome")
    for page in (ada, bob, spec):
        await page.expect("spectators")
    dan.check(
        role="spectator",
        you=None,
        phase="running",
        spectators=2,
        players=players(),
        boards=boards(),
        board=None,
        token=None,
    )
    await dan.drop()
    for page in (ada, bob, spec):
        await page.expect("spectators")

    # Ada's first move: the spectator gets its cards face down until Bob has seen them too
    clock.advance(4000)
    await ada.sent_with_id("move", positions=line[0])
    ada_racer.push(line[0])
    for page in (ada, bob, spec):
        await page.expect("moved")
    ada.check(players=players(), board=board_facts(ada_racer.game))
    bob.check(players=players(), board=board_facts(bob_racer.game))
    spec.check(players=players(), boards=boards())
    clock.advance(1500)
    await bob.sent_with_id("move", positions=illegal_move(bob_racer.game).names())
    await bob.expect("error")
    clock.advance(1500)
    await bob.sent_with_id("move", positions=line[0])
    bob_racer.push(line[0])
    for page in (bob, ada, spec):
        await page.expect("moved")
    bob.check(players=players(), board=board_facts(bob_racer.game))
    spec.check(players=players(), boards=boards())

    # Bob's socket drops; he comes back with `since` and catches up
    await bob.drop()
    bob_racer.connected = False
    for page in (ada, spec):
        await page.expect("progress")
    clock.advance(2000)
    await ada.sent_with_id("move", positions=line[1])
    ada_racer.push(line[1])
    for page in (ada, spec):
        await page.expect("moved")
    await bob.send("resume", room=room, token=bob.token(), since=bob.last_seq())
    bob_racer.connected = True
    await bob.expect("welcome", "progress", "moved", "progress")
    for page in (ada, spec):
        await page.expect("progress")
    bob.check(phase="running", players=players(), board=board_facts(bob_racer.game))
    spec.check(players=players(), boards=boards())
    clock.advance(1000)
    await bob.sent_with_id("undo")
    bob_racer.game.undo()
    for page in (bob, ada, spec):
        await page.expect("moved")
    bob.check(players=players(), board=board_facts(bob_racer.game))
    spec.check(players=players(), boards=boards())

    # Ada uncovers cards Bob has not seen: the spectator gets them face down (until Bob gives up)
    for step in line[2:4]:
        clock.advance(1000)
        await ada.sent_with_id("move", positions=step)
        ada_racer.push(step)
        for page in (ada, bob, spec):
            await page.expect("moved")
    ada.check(players=players(), board=board_facts(ada_racer.game))
    spec.check(players=players(), boards=boards())

    # Bob reloads his tab: the new page holds only the seat, so it resumes with no `since`
    seat = {"room": room, "token": bob.token()}
    await bob.drop()
    bob_racer.connected = False
    for page in (ada, spec):
        await page.expect("progress")
    reloaded = recording.page("Bob after a reload", race_intent, name="Bob", seat=seat)
    await reloaded.send("resume", room=room, token=seat["token"])
    bob_racer.connected = True
    await reloaded.expect("welcome")
    for page in (ada, spec):
        await page.expect("progress")
    reloaded.check(
        role="player",
        you="p2",
        phase="running",
        mode="race",
        code=code,
        host="p1",
        offset_ms=-LOCAL_SKEW_MS,
        players=players(),
        board=board_facts(bob_racer.game),
        boards={},
        outcome=None,
        results=None,
    )
    clock.advance(1000)
    await reloaded.send("give_up")
    bob_racer.status = "gave_up"
    await reloaded.expect("progress", "game_over")
    for page in (ada, spec):
        await page.expect("progress")
    bob_facts = bob_racer.facts()
    reloaded.check(
        players=players(), outcome={"outcome": "gave_up", "score": bob_facts["score"], "moves": bob_facts["moves"]}
    )
    spec.check(players=players(), boards=boards())

    # Ada plays on to the win
    for i, step in enumerate(line[4:], 5):
        clock.advance(1000)
        await ada.sent_with_id("move", positions=step)
        ada_racer.push(step)
        await ada.expect("moved")
        if i == len(line):
            await ada.expect("game_over")
        for page in (reloaded, spec):
            await page.expect("moved")
        if i == 10:
            ada.check(players=players(), board=board_facts(ada_racer.game))
            spec.check(players=players(), boards=boards())
    for page in (ada, reloaded, spec):
        await page.expect("race_over")
    ada_facts = ada_racer.facts()
    results = [
        {"rank": 1, "player": "p1", "name": "Ada", "outcome": "won", "score": 520, "moves": 48},
        {
            "rank": 2,
            "player": "p2",
            "name": "Bob",
            "outcome": "gave_up",
            "score": bob_facts["score"],
            "moves": bob_facts["moves"],
        },
    ]
    assert (ada_facts["score"], ada_facts["moves"], ada_facts["cards_left"]) == (520, 48, 0)
    ada.check(
        phase="finished",
        players=players(),
        board=board_facts(ada_racer.game),
        outcome={"outcome": "won", "score": 520, "moves": 48},
        results=results,
    )
    reloaded.check(phase="finished", players=players(), board=board_facts(bob_racer.game), results=results)
    spec.check(phase="finished", players=players(), boards=boards(), results=results, spectators=1)
    await recording.quiet()


#: A sealed race's seed comes from the server's secret and fresh random bytes; the recording draws
#: it from fixed bytes instead (like its clock, held still), so every run deals the same cards.
SEALED_SEED: Final = new_seal_seed(b"session vectors", bytes(16), "sealed:1")
ADA_ENTROPY: Final = "a1" * 16
BOB_ENTROPY: Final = "b2" * 16


def first_moves(game: Game, count: int) -> list[list[str]]:
    """The first legal move ``count`` times (fewer when the deal stalls), pushed on a copy."""
    copy = Game(game.deal)
    line: list[list[str]] = []
    for _ in range(count):
        move = next(iter(copy.legal_moves()), None)
        if move is None:
            break
        copy.push(move)
        line.append(move.names())
    return line


async def sealed(recording: Recording) -> None:
    """A sealed race: the commitment before anyone joins; Ada and Bob each send a contribution
    with their join; started lists both; a move each, both give up; race_over reveals the code and
    the seed, which open the commitment (checked here, and by both clients)."""
    clock, http, server = recording.clock, recording.http, recording.server
    created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    room, commitment = created["room"], created["commitment"]
    recording.volatile[room] = "ROOM"
    assert commitment == seal_commitment(SEALED_SEED)
    contributions = sorted([ADA_ENTROPY, BOB_ENTROPY])
    code = str(sealed_code(SEALED_SEED, contributions))
    intent = {"kind": "race", "room": room}
    ada_racer, bob_racer = Racer("p1", "Ada", Game.from_code(code)), Racer("p2", "Bob", Game.from_code(code))
    racers = [ada_racer, bob_racer]

    def players() -> dict[str, Any]:
        return {r.id: r.facts() for r in racers}

    ada, bob = recording.page("Ada", intent), recording.page("Bob", intent)
    await ada.send("join", room=room, name="Ada", entropy=ADA_ENTROPY)
    [welcome] = await ada.expect("welcome")
    assert welcome["room"]["commitment"] == commitment and welcome["room"]["code"] is None
    ada.check(role="player", you="p1", mode="race", phase="lobby", host="p1", code=None, offset_ms=-LOCAL_SKEW_MS,
              players={"p1": ada_racer.facts()}, board=None, boards={}, failed=None)  # fmt: skip
    await bob.send("join", room=room, name="Bob", entropy=BOB_ENTROPY)
    await bob.expect("welcome")
    await ada.expect("player_joined")
    await ada.send("start", time_limit_s=600)
    for page in (ada, bob):
        await page.expect("countdown")
    clock.advance(50)
    for racer in racers:
        racer.status = "playing"
    for page in (ada, bob):
        [started] = await page.expect("started")
        assert started["code"] is None and started["contributions"] == contributions
        page.check(phase="running", code=None, players=players(), board=board_facts(ada_racer.game))
    line = first_moves(ada_racer.game, 2)
    for page, racer, other in ((ada, ada_racer, bob), (bob, bob_racer, ada)):
        clock.advance(2000)
        await page.sent_with_id("move", positions=line[0])
        racer.push(line[0])
        await page.expect("moved")
        await other.expect("moved")
        page.check(players=players(), board=board_facts(racer.game))
    clock.advance(1000)
    await bob.send("give_up")
    bob_racer.status = "gave_up"
    await bob.expect("progress", "game_over")
    await ada.expect("progress")
    bob.check(code=None, outcome={"outcome": "gave_up", "score": 10, "moves": 1})  # Ada still plays: no code yet
    clock.advance(1000)
    await ada.send("give_up")
    ada_racer.status = "gave_up"
    await ada.expect("progress", "game_over", "race_over")
    await bob.expect("progress", "race_over")
    [over] = [m for m in ada.received() if m["type"] == "race_over"]
    assert over["code"] == code and over["seed"] == SEALED_SEED and over["contributions"] == contributions
    assert seal_commitment(over["seed"]) == commitment  # the reveal opens the commitment given at creation
    results = [
        {"rank": 1, "player": "p2", "name": "Bob", "outcome": "gave_up", "score": 10, "moves": 1},
        {"rank": 2, "player": "p1", "name": "Ada", "outcome": "gave_up", "score": 10, "moves": 1},
    ]
    for page in (ada, bob):
        page.check(phase="finished", code=code, players=players(), results=results)
    await recording.quiet()


async def daily(recording: Recording) -> None:
    """A daily attempt: its commitment in the snapshot, its code hidden from its own player; a move,
    then giving up; once every attempt of the day has ended, a reloaded page shows the code and salt,
    which open the commitment the attempt started with (as GET /api/daily published it a day ahead)."""
    clock, http, server = recording.clock, recording.http, recording.server
    day = utc_day(clock.ms)
    code = str(daily_code(day, b"test-secret", long=True))
    ahead = await (await http.get(server.make_url("/api/daily"))).json()
    racer = Racer("p1", "Ada", Game.from_code(code), status="playing")
    ada = recording.page("Ada", {"kind": "daily"})
    await ada.send("daily", name="Ada")
    [welcome] = await ada.expect("welcome")
    recording.volatile[welcome["room"]["room"]] = "ROOM"
    assert welcome["room"]["commitment"] == ahead["commitment"] and welcome["room"]["code"] is None
    ada.check(role="player", you="p1", mode="daily", phase="running", code=None, offset_ms=-LOCAL_SKEW_MS,
              players={"p1": racer.facts()}, board=board_facts(racer.game), outcome=None, results=None)  # fmt: skip
    clock.advance(3000)
    step = first_moves(racer.game, 1)[0]
    await ada.sent_with_id("move", positions=step)
    racer.push(step)
    await ada.expect("moved")
    clock.advance(2000)
    await ada.send("give_up")
    racer.status = "gave_up"
    await ada.expect("progress", "game_over", "race_over")
    ada.check(code=None, outcome={"outcome": "gave_up", "score": 10, "moves": 1})  # not even its own player
    seat = {"room": welcome["room"]["room"], "token": ada.token()}
    await ada.drop()
    clock.set(day_start_ms(day) + DAY_MS + 1_800_000)  # every attempt of the day has ended
    reloaded = recording.page("Ada after a reload", {"kind": "daily"}, name="Ada", seat=seat)
    await reloaded.send("resume", room=seat["room"], token=seat["token"])
    [back] = await reloaded.expect("welcome")
    snapshot = back["room"]
    assert snapshot["code"] == code and commitment_of(code, snapshot["salt"]) == ahead["commitment"]
    reloaded.check(phase="finished", code=code, outcome={"outcome": "gave_up", "score": 10, "moves": 1})
    await recording.quiet()


SCENARIOS: Final = {
    "solo": (solo, SOLO_CODE, "a solo game: a pair, a refused move, a triple (J Q K), an undo, then giving up"),
    "race": (
        race,
        won_record().code,
        "a race: the lobby (a player comes and goes, a taken name is refused), the start, a late joiner "
        "made a spectator, moves by both (the spectator sees Ada's new cards face down until Bob uncovers "
        "them too or gives up), a refused move; Bob drops and resumes with since, undoes, then reloads (a "
        "snapshot) and gives up; Ada wins",
    ),
    "sealed": (
        sealed,
        sealed_code(SEALED_SEED, sorted([ADA_ENTROPY, BOB_ENTROPY])),
        "a sealed race: each racer's contribution with their join, started listing them, a move each, both "
        "give up; race_over reveals the code and the seed, which open the commitment given before anyone "
        "joined, and the code deals the opening board",
    ),
    "daily": (
        daily,
        daily_code(utc_day(START_MS), b"test-secret", long=True),
        "a daily attempt: the commitment published a day ahead in the snapshot, the code hidden from its own "
        "player; a move, giving up; once every attempt of the day has ended a reloaded page shows the code and "
        "salt, which open that commitment",
    ),
}


def fixed_seal_seed(lobby: Lobby, room_id: str, round_: int) -> str:
    return new_seal_seed(b"session vectors", bytes(16), f"sealed:{round_}")


async def record_scenario(name: str) -> dict[str, Any]:
    play, code, about = SCENARIOS[name]
    clock = ManualClock(START_MS)
    with tempfile.TemporaryDirectory() as data, pytest.MonkeyPatch.context() as patch:
        patch.setattr(Lobby, "seal_seed", fixed_seal_seed)
        # a finished room is kept 2 days: the daily's page resumes after its day is revealed, 23.6 h
        # after its attempt (3 hours let the ticker forget the room first, whenever it looked in time)
        settings = make_settings(Path(data), clock, countdown_s=0.05, finished_ttl_s=172_800)
        server = TestServer(create_app(settings))
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as http:
                recording = Recording(server, http, clock)
                try:
                    await play(recording)
                finally:
                    await recording.close()
        finally:
            await server.close()
    return normalise(recording.to_json(about, str(code)), recording.volatile)


def normalise(data: Any, volatile: dict[str, str]) -> Any:
    """Room ids, tokens and game ids replaced by ROOM-n, TOKEN-n, GAME-n in order of appearance
    (a room id quoted in a message too)."""
    names: dict[str, str] = {}

    def name(value: str) -> str:
        if value not in names:
            kind = volatile[value]
            names[value] = f"{kind}-{sum(1 for n in names.values() if n.startswith(kind + '-')) + 1}"
        return names[value]

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            if value in volatile:
                return name(value)
            for room in (v for v, kind in volatile.items() if kind == "ROOM" and v in value):
                value = value.replace(room, name(room))  # a room id quoted in an error message
            return value
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(data)


async def build() -> dict[str, Any]:
    return {"format": FORMAT, "scenarios": {name: await record_scenario(name) for name in SCENARIOS}}


def dumps(data: dict[str, Any]) -> str:
    """One timeline entry a line, so a change reads as a small diff."""
    lines = ["{", f'"format": {json.dumps(data["format"])},', '"scenarios": {']
    scenarios = list(data["scenarios"].items())
    for i, (name, scenario) in enumerate(scenarios):
        lines.append(
            f'{json.dumps(name)}: {{"about": {json.dumps(scenario["about"])}, '
            f'"code": {json.dumps(scenario["code"])}, "pages": {{'
        )
        pages = list(scenario["pages"].items())
        for j, (label, page) in enumerate(pages):
            head = {key: page[key] for key in ("name", "intent", "seat")}
            lines.append(f'{json.dumps(label)}: {json.dumps(head)[:-1]}, "timeline": [')
            entries = [json.dumps(entry, ensure_ascii=False) for entry in page["timeline"]]
            lines.extend(entry + ("," if k < len(entries) - 1 else "") for k, entry in enumerate(entries))
            lines.append("]}" + ("," if j < len(pages) - 1 else ""))
        lines.append("}}" + ("," if i < len(scenarios) - 1 else ""))
    lines.extend(["}", "}"])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(dumps(asyncio.run(build())), encoding="utf-8")
    print(f"wrote {PATH}")
