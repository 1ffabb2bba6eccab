"""Test support for the server: settings for tests, a WebSocket client that records every
message it receives, won and stalling lines, the hidden-information checker, a sealed room and a
daily attempt."""

from __future__ import annotations

import asyncio
import json
import random
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer
from multidict import CIMultiDict

from halfmoon.game import Game, Move
from halfmoon.positions import POSITION_NAMES
from halfmoon.record import GameRecord
from halfmoon_server.clock import ManualClock
from halfmoon_server.settings import Settings
from halfmoon_server.web import keys
from tests.conftest import VECTORS

T0 = 1_795_900_000_000  # 2026-11-28 18:26:40 UTC
CARD_RE = re.compile(r"^(A|[2-9]|10|J|Q|K)[SHDC]$")


def make_settings(data_dir: Path, clock: ManualClock, **changes: Any) -> Settings:
    """Settings for a test server: no countdown, a fast ticker, no solver processes, a fixed secret."""
    base = Settings(
        data_dir=data_dir,
        secret=b"test-secret",
        countdown_s=0.0,
        tick_s=0.02,
        solver_workers=0,
        daily_requires_winnable=False,
        rate_burst=10_000,
        rate_per_s=10_000,
        metrics_on_app_port=True,
        clock=clock,
    )
    return base.with_changes(**changes)


def won_record() -> GameRecord:
    """A won game from the engine's golden vectors."""
    data = json.loads((VECTORS / "won_records.json").read_text())
    return GameRecord.from_json(data["records"][0])


def stalling_line(code: str, seed_limit: int = 2000) -> list[Move]:
    """Random legal moves from the start of ``code`` that end in a stall (a fixed search)."""
    for seed in range(seed_limit):
        rng = random.Random(seed)
        game = Game.from_code(code)
        line: list[Move] = []
        while True:
            moves = list(game.legal_moves())
            if not moves:
                break
            move = rng.choice(moves)
            game.push(move)
            line.append(move)
        if game.is_stalled:
            return line
    raise AssertionError(f"no stalling line found for {code}")


async def solo_to_the_end(
    client: WsClient, code: str, name: str, moves: int, *, timeout: float = 5.0, end: str = "give_up"
) -> dict[str, Any]:
    """A solo game on ``code`` over ``client``: its first legal move ``moves`` times, then
    ``end`` (``give_up``, or ``leave``); its ``game_over``, which must come within ``timeout`` s.
    The client is closed after."""
    try:
        await client.send("solo", name=name, code=code)
        await client.next("welcome")
        game = Game.from_code(code)
        for _ in range(moves):
            move = next(iter(game.legal_moves()))
            game.push(move)
            await client.send("move", positions=move.names())
            await client.next("moved")
        await client.send(end)
        return await client.next("game_over", timeout=timeout)
    finally:
        await client.close()


async def leaderboard_holding(base: str, code: str, entries: int, *, within_s: float = 5.0) -> dict[str, Any]:
    """The leaderboard of ``code`` at ``base`` (a real server's address) once it has at least
    ``entries`` rows: ``game_over`` does not wait for the database, the writes follow it."""
    async with aiohttp.ClientSession() as http, asyncio.timeout(within_s):
        while True:
            board: dict[str, Any] = await (await http.get(f"{base}/api/leaderboard/{code}")).json()
            if len(board["entries"]) >= entries:
                return board
            await asyncio.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def illegal_move(game: Game) -> Move:
    """Two playable cards that do not match (the engine must refuse them)."""
    playable = sorted(game.playable())
    for a in playable:
        for b in playable:
            if a < b and not game.is_legal(Move((a, b))):
                return Move((a, b))
    raise AssertionError("no illegal pair on this board")


class WsClient:
    """A real WebSocket client that reads in the background and keeps every message."""

    def __init__(self, session: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse, label: str) -> None:
        self.session = session
        self.ws = ws
        self.label = label
        self.history: list[dict[str, Any]] = []
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader = asyncio.get_running_loop().create_task(self._read())
        self.seq = 0

    @classmethod
    async def connect(cls, server: TestServer, label: str, **kwargs: Any) -> WsClient:
        return await cls.connect_url(str(server.make_url("/ws")), label, **kwargs)

    @classmethod
    async def connect_url(cls, url: str, label: str, **kwargs: Any) -> WsClient:
        session = aiohttp.ClientSession()
        ws = await session.ws_connect(url, **kwargs)
        return cls(session, ws, label)

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type is aiohttp.WSMsgType.TEXT:
                data = json.loads(msg.data)
                self.history.append(data)
                if isinstance(data.get("seq"), int) and data["type"] != "welcome":
                    self.seq = max(self.seq, data["seq"])
                elif data["type"] == "welcome":
                    self.seq = data["seq"]
                await self._queue.put(data)

    async def send(self, type: str, **fields: Any) -> None:
        await self.ws.send_str(json.dumps({"type": type, "v": 1, **fields}))

    async def next(self, *types: str, timeout: float = 10.0) -> dict[str, Any]:
        """The next message of one of ``types`` (earlier messages of other types are skipped)."""
        async with asyncio.timeout(timeout):
            while True:
                message = await self._queue.get()
                if message["type"] in types:
                    return message

    async def drain(self, pause: float = 0.05) -> list[dict[str, Any]]:
        """Whatever has arrived (waiting a moment for stragglers)."""
        await asyncio.sleep(pause)
        out = []
        while not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out

    async def close(self) -> None:
        await self.ws.close()
        await self._reader
        await self.session.close()

    @property
    def closed(self) -> bool:
        return self.ws.closed


@dataclass
class ViewTracker:
    """What one recipient's app shows, rebuilt from the messages it received, and the checks that
    no message carries a card the recipient's app does not show, and that a racer gets of another
    racer's move the summary only: its positions tell the cards it removed (a pile card paired
    with a reserve card, which everyone knows, has a known rank), which lie in the same piles of
    the racer's own deal."""

    me: str | None = None  # player id, None for a spectator
    spectator: bool = False
    boards: dict[str, list[str | None]] = field(default_factory=dict)  # player id → tops
    counts: dict[str, list[int]] = field(default_factory=dict)  # player id → card counts
    problems: list[str] = field(default_factory=list)

    def _apply(self, player: str, changes: list[dict[str, Any]]) -> None:
        tops = self.boards.setdefault(player, [None] * 20)
        counts = self.counts.setdefault(player, [0] * 20)
        for change in changes:
            position = POSITION_NAMES.index(change["pos"])
            tops[position], counts[position] = change["card"], change["count"]

    def _visible(self) -> set[str]:
        return {card for tops in self.boards.values() for card in tops if card is not None}

    def feed(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "welcome":
            self.me = message["you"]
            self.spectator = message["role"] == "spectator"
            room = message["room"]
            if room is not None:
                self.boards, self.counts = {}, {}
                if room["board"] is not None and self.me is not None:
                    self.boards[self.me] = list(room["board"]["tops"])
                    self.counts[self.me] = list(room["board"]["counts"])
                for pid, board in (room["boards"] or {}).items():
                    self.boards[pid] = list(board["tops"])
                    self.counts[pid] = list(board["counts"])
                if not self.spectator and room["boards"] is not None:
                    self.problems.append(f"player {self.me} got every board: {room['boards']}")
        elif kind == "started":
            if self.spectator:
                boards = (message.get("boards") or {}).items()
                self.boards = {pid: list(b["tops"]) for pid, b in boards}
                self.counts = {pid: list(b["counts"]) for pid, b in boards}
            else:
                if message.get("boards"):
                    self.problems.append(f"player {self.me} got every board in started")
                if message.get("board") is not None and self.me is not None:
                    self.boards = {self.me: list(message["board"]["tops"])}
                    self.counts = {self.me: list(message["board"]["counts"])}
        elif kind == "moved":
            changes = message.get("changes")
            if not self.spectator and message["player"] != self.me:
                if changes is not None:
                    self.problems.append(f"player {self.me} got {message['player']}'s revealed cards: {changes}")
                if "positions" in message:
                    self.problems.append(
                        f"player {self.me} got {message['player']}'s move {message['positions']}, which tells its cards"
                    )
            elif changes is not None:
                self._apply(message["player"], changes)
        reveals = message.get("reveals")
        if reveals is not None:
            if not self.spectator:
                self.problems.append(f"player {self.me} got reveals meant for spectators: {reveals}")
            else:
                for reveal in reveals:
                    self._apply(reveal["player"], [reveal])
        visible = self._visible()
        for card in _card_names(message):
            if card not in visible:
                self.problems.append(f"{kind} carries {card}, which {self.me or 'the spectator'} does not see")


def _card_names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if CARD_RE.match(value) else []
    if isinstance(value, dict):
        return [c for v in value.values() for c in _card_names(v)]
    if isinstance(value, list):
        return [c for v in value for c in _card_names(v)]
    return []


def check_hidden_information(history: list[dict[str, Any]]) -> list[str]:
    tracker = ViewTracker()
    for message in history:
        tracker.feed(message)
    return tracker.problems


async def make_sealed_room(server: Any) -> tuple[str, str]:
    """A new sealed race room: its id and its commitment."""
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    assert created["sealed"] is True
    room_id = created["room"]
    return room_id, str(server.app[keys.LOBBY].rooms[room_id].race.commitment)


async def daily_ranked(server: Any, name: str, headers: dict[str, str] | CIMultiDict[str] | None = None) -> bool:
    """Play today's daily as ``name`` (giving up at once): was the attempt ranked?"""
    client = await WsClient.connect(server, name, headers=headers or {})
    await client.send("daily", name=name)
    await client.next("welcome")
    await client.send("give_up")
    ranked = bool((await client.next("game_over"))["ranked"])
    await client.close()
    return ranked


def journal_entries(server: Any, room_id: str) -> list[dict[str, Any]]:
    """The entries of a room in an embedded server's journal, in order."""
    path = server.app[keys.SETTINGS].data_dir / "journal.db"
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT entry FROM entries WHERE room = ? ORDER BY n", (room_id,)).fetchall()
    return [json.loads(e) for (e,) in rows]
