"""What spectators see of a race: only what every racer still playing has seen.

Everyone races on the same deal, and anyone can watch — a racer from another tab included. So
a card that one racer has uncovered is shown to spectators only once every racer still playing
has uncovered it too, and a racer's move only once every card it removed is (docs/protocol.md,
"Who sees what"): a move pairs its cards to 11 or takes a J, Q and K, so a move that removes a
card nobody may see yet together with a known one — a reserve card, say — would tell its rank.
The tests keep their own model of each racer's game and check the spectators' boards against it
after every step, and play the adversary: a racer who watches from another tab and works out
every card they can from all they receive.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from halfmoon import protocol as wire
from halfmoon.cards import JACK, KING, QUEEN, Card
from halfmoon.game import Game, Move
from halfmoon.positions import PILE_COUNT, POSITION_NAMES, POSITIONS
from halfmoon.record import UNDO, Step
from halfmoon_server.core import audience, race
from tests.server.conftest import StartServer
from tests.server.rooms.test_rooms import _room
from tests.server.support import ViewTracker, WsClient, check_hidden_information, won_record

HIDDEN = "??"
FACES = frozenset({JACK, QUEEN, KING})


class Model:
    """Each racer's game, their steps and the lowest height each of their piles has had: what
    spectators may see, worked out independently of the server (from scratch at each look)."""

    def __init__(self, code: str, ids: list[str]) -> None:
        self.code = code
        self.games = {pid: Game.from_code(code) for pid in ids}
        self.steps: dict[str, list[Step]] = {pid: [] for pid in ids}
        self.lowest = {pid: [8] * PILE_COUNT for pid in ids}
        self.active = set(ids)

    def play(self, pid: str, move: Move) -> None:
        game = self.games[pid]
        game.push(move)
        self.steps[pid].append(move)
        for position in move.positions:
            if position < PILE_COUNT:
                self.lowest[pid][position] = min(self.lowest[pid][position], game.count_at(position))

    def undo(self, pid: str) -> None:
        self.games[pid].undo()
        self.steps[pid].append(UNDO)

    def _bar(self) -> list[int]:
        """A pile card is public when it is at least this high: every racer still playing has seen it."""
        return [max((self.lowest[pid][pile] for pid in self.active), default=0) for pile in range(PILE_COUNT)]

    def _public_game(self, pid: str, bar: list[int]) -> Game:
        """The racer's steps replayed up to the first move that removes a card that is not public."""
        game = Game.from_code(self.code)
        for step in self.steps[pid]:
            if step == UNDO:
                game.undo()
                continue
            assert isinstance(step, Move)
            if any(p < PILE_COUNT and game.count_at(p) < bar[p] for p in step.positions):
                break
            game.push(step)
        return game

    def spectators_see(self) -> dict[str, list[str | None]]:
        return {pid: [top for top, _ in view] for pid, view in self._view().items()}

    def spectators_count(self) -> dict[str, list[int]]:
        return {pid: [count for _, count in view] for pid, view in self._view().items()}

    def _view(self) -> dict[str, list[tuple[str | None, int]]]:
        bar = self._bar()
        seen: dict[str, list[tuple[str | None, int]]] = {}
        for pid in self.games:
            game = self._public_game(pid, bar)
            tops: list[tuple[str | None, int]] = []
            for position in POSITIONS:
                card, count = game.card_at(position), game.count_at(position)
                if card is None:
                    tops.append((None, count))
                elif position < PILE_COUNT and count < bar[position]:
                    tops.append((HIDDEN, count))
                else:
                    tops.append((card.name, count))
            seen[pid] = tops
        return seen


class Adversary:
    """A racer (``me``) who also watches from a spectator tab, and works out every card they can:
    each card they are shown (their own, or by spectators' boards) at its pile and height, and
    by inference any card a move of another racer removed together with known ones (a pair
    sums to 11: a pile card paired with a reserve card has a known rank; a triple is a J, Q and
    K). ``leaks``: each card so worked out that ``me`` had not uncovered in their own game yet,
    with where the inference came from (``racer``: their own connection, ``spectator``: the tab)."""

    def __init__(self, me: str, code: str) -> None:
        self.me = me
        start = Game.from_code(code)
        # (position, height) -> card: the starting tops are everyone's to see
        self.known: dict[tuple[int, int], Card] = {}
        for position in POSITIONS:
            card = start.card_at(position)
            assert card is not None
            self.known[(position, start.count_at(position))] = card
        self.start_counts = [start.count_at(p) for p in POSITIONS]
        self.lowest = self.start_counts[:PILE_COUNT]  # my own game's
        self.heights: dict[str, list[int]] = {}  # other racers' counts, followed from positions alone
        self.leaks: list[str] = []

    def _learn(self, changes: list[dict[str, Any]]) -> None:
        for change in changes:
            if change["card"] not in (None, HIDDEN):
                self.known[(POSITION_NAMES.index(change["pos"]), change["count"])] = Card.parse(change["card"])

    def _infer(self, source: str, player: str, removed: list[tuple[int, int]]) -> None:
        known = [self.known[cell] for cell in removed if cell in self.known]
        unknown = [cell for cell in removed if cell not in self.known]
        if not unknown:
            return
        if len(removed) == 2 and len(unknown) == 1:
            ranks = {11 - known[0].rank}
        elif len(removed) == 3:
            ranks = set(FACES - {card.rank for card in known})
        else:
            return  # two cards nobody knows summing to 11: too little to name either
        for position, height in unknown:
            if position < PILE_COUNT and height < self.lowest[position]:
                self.leaks.append(
                    f"{source}: {player}'s move tells that pile {POSITION_NAMES[position]} at height {height} "
                    f"(not uncovered by {self.me} yet) has rank {sorted(ranks)}"
                )

    def feed_racer(self, message: dict[str, Any]) -> None:
        """A message of the racer's own connection."""
        if message["type"] != "moved":
            return
        player = message["player"]
        if player == self.me:
            changes = message.get("changes") or []
            self._learn(changes)
            for change in changes:
                position = POSITION_NAMES.index(change["pos"])
                if position < PILE_COUNT:
                    self.lowest[position] = min(self.lowest[position], change["count"])
            return
        positions = message.get("positions")
        if positions is None:
            return
        heights = self.heights.setdefault(player, list(self.start_counts))
        cells = [POSITION_NAMES.index(name) for name in positions]
        if message["action"] == "move":
            self._infer("racer", player, [(p, heights[p]) for p in cells])
            for p in cells:
                heights[p] -= 1
        else:
            for p in cells:
                heights[p] += 1

    def feed_spectator(self, message: dict[str, Any]) -> None:
        """A message of the racer's spectator tab."""
        room = message.get("room") if message["type"] == "welcome" else None
        boards = message.get("boards") or (room or {}).get("boards") or {}
        for board in boards.values():
            self._learn(
                [{"pos": POSITION_NAMES[p], "card": board["tops"][p], "count": board["counts"][p]} for p in POSITIONS]
            )
        if message["type"] == "moved" and message.get("positions") is not None:
            changes = message.get("changes") or []
            if message["action"] == "move" and message["player"] != self.me:
                after = {POSITION_NAMES.index(c["pos"]): c["count"] for c in changes}
                self._infer("spectator", message["player"], [(p, after[p] + 1) for p in after])
            self._learn(changes)
        self._learn(message.get("reveals") or [])


def assert_sees(tracker: ViewTracker, model: Model) -> None:
    assert tracker.boards == model.spectators_see()
    assert tracker.counts == model.spectators_count()


async def caught_up(spectator: WsClient, tracker: ViewTracker, kind: str) -> dict[str, Any]:
    """Feed the spectator's messages to its tracker up to the next ``kind``."""
    while True:
        message = await spectator.next(kind, "moved", "progress", "race_over", "spectators")
        tracker.feed(message)
        if message["type"] == kind:
            return message


async def test_spectators_see_only_what_every_racer_still_playing_has_seen(start_server: StartServer) -> None:
    record = won_record()
    line = [step for step in record.moves if step != UNDO]
    assert all(isinstance(step, Move) for step in line)
    moves: list[Move] = [step for step in line if isinstance(step, Move)]
    server = await start_server()
    room = await _room(server, str(record.code))
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    spec = await WsClient.connect(server, "spec")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await spec.send("watch", room=room)
    tracker = ViewTracker()
    tracker.feed(await spec.next("welcome"))
    await ada.send("start")
    await caught_up(spec, tracker, "started")
    model = Model(str(record.code), ["p1", "p2"])
    assert_sees(tracker, model)
    assert HIDDEN not in tracker.boards["p1"]  # the same deal: at the start everything is in sight

    # Ada digs ahead: what she uncovers and Bob has not is hidden from spectators
    for i, move in enumerate(moves[:6], 1):
        await ada.send("move", positions=move.names(), id=i)
        model.play("p1", move)
        await caught_up(spec, tracker, "moved")
        assert_sees(tracker, model)
    assert HIDDEN in tracker.boards["p1"]
    assert tracker.boards["p1"] != [c.name if c else None for c in map(model.games["p1"].card_at, POSITIONS)]

    # a spectator arriving now gets the same picture in its snapshot
    late = await WsClient.connect(server, "late")
    await late.send("watch", room=room)
    late_tracker = ViewTracker()
    late_tracker.feed(await late.next("welcome"))
    assert late_tracker.boards == model.spectators_see()

    # Bob catches up two moves: Ada's cards he has now seen come into sight, as reveals
    revealed = []
    for i, move in enumerate(moves[:2], 1):
        await bob.send("move", positions=move.names(), id=i)
        model.play("p2", move)
        moved = await caught_up(spec, tracker, "moved")
        assert_sees(tracker, model)
        revealed += [reveal for reveal in moved.get("reveals", []) if reveal["player"] == "p1"]
    assert revealed and all(reveal["card"] != HIDDEN for reveal in revealed)
    # an undo does not make Bob unsee a card
    await bob.send("undo", id=3)
    model.undo("p2")
    await caught_up(spec, tracker, "moved")
    assert_sees(tracker, model)

    # Bob gives up: only Ada is still playing, and she has seen all of her own board
    await bob.send("give_up")
    model.active.discard("p2")
    await caught_up(spec, tracker, "progress")
    assert_sees(tracker, model)
    assert HIDDEN not in tracker.boards["p1"]

    # Ada finishes: the race is over and every board is in plain sight
    for i, move in enumerate(moves[6:], 7):
        await ada.send("move", positions=move.names(), id=i)
        model.play("p1", move)
    model.active.discard("p1")
    await caught_up(spec, tracker, "race_over")
    assert_sees(tracker, model)
    assert all(HIDDEN not in tops for tops in tracker.boards.values())
    assert tracker.problems == [] and late_tracker.problems == []
    for client in (ada, bob, spec, late):
        await client.close()


EVENTS = ("moved", "progress", "race_over", "spectators", "game_over", "started")


async def heard(client: WsClient, kind: str, feed: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Feed ``client``'s messages to ``feed`` up to the next ``kind``."""
    while True:
        message = await client.next(*EVENTS)
        feed(message)
        if message["type"] == kind:
            return message


async def watch_from_another_tab(server: Any) -> tuple[Adversary, ViewTracker, list[str], list[str]]:
    """Ada digs far ahead (with an undo on the way) while Bob, who also watches from a second tab,
    has not moved; then Bob plays his whole game and Ada finishes hers. After every step, Bob's
    two connections feed his :class:`Adversary` (his own first: his game is his) and the tab's
    view is compared with the model. Returns the adversary, the tab's view, each step where the
    view differed from the model, and what ``check_hidden_information`` found in Bob's own messages."""
    record = won_record()
    moves = [step for step in record.moves if isinstance(step, Move)]
    code = str(record.code)
    room = await _room(server, code)
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    tab = await WsClient.connect(server, "bob's tab")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await tab.send("watch", room=room)
    adversary, tracker, model = Adversary("p2", code), ViewTracker(), Model(code, ["p1", "p2"])
    welcome = await tab.next("welcome")
    tracker.feed(welcome)
    adversary.feed_spectator(welcome)

    def feed_tab(message: dict[str, Any]) -> None:
        tracker.feed(message)
        adversary.feed_spectator(message)

    await ada.send("start")
    await heard(bob, "started", adversary.feed_racer)
    await heard(tab, "started", feed_tab)
    differed: list[str] = []

    async def step(who: WsClient, what: str, label: str, **fields: Any) -> None:
        await who.send(what, **fields)
        await heard(bob, "moved", adversary.feed_racer)
        await heard(tab, "moved", feed_tab)
        if tracker.boards != model.spectators_see() or tracker.counts != model.spectators_count():
            differed.append(label)

    for i, move in enumerate(moves[:40], 1):
        model.play("p1", move)
        await step(ada, "move", f"Ada's move {i}", positions=move.names(), id=i)
        if i == 10:  # an undo, and the move again: they wait in line behind what is held back
            model.undo("p1")
            await step(ada, "undo", "Ada's undo", id=100)
            model.play("p1", move)
            await step(ada, "move", "Ada's move 10 again", positions=move.names(), id=101)
    for i, move in enumerate(moves, 1):
        model.play("p2", move)
        await step(bob, "move", f"Bob's move {i}", positions=move.names(), id=i)
    model.active.discard("p2")  # Bob has won
    for i, move in enumerate(moves[40:], 41):
        model.play("p1", move)
        await ada.send("move", positions=move.names(), id=i)
    model.active.discard("p1")
    await heard(bob, "race_over", adversary.feed_racer)
    await heard(tab, "race_over", feed_tab)
    if tracker.boards != model.spectators_see() or tracker.counts != model.spectators_count():
        differed.append("race over")
    for client in (ada, bob, tab):
        await client.close()
    assert tracker.problems == [], tracker.problems
    return adversary, tracker, differed, check_hidden_information(bob.history)


async def test_no_racer_works_out_a_card_from_another_racers_moves(start_server: StartServer) -> None:
    """Bob, with a spectator tab, never learns a card he has not uncovered: Ada's moves reach him
    without positions, and reach his tab only once their cards are public (in order, behind any
    held back); when nobody plays any more, every board is in plain sight."""
    adversary, tracker, differed, racer_problems = await watch_from_another_tab(await start_server())
    assert differed == []
    assert racer_problems == []
    assert adversary.leaks == []
    assert all(HIDDEN not in tops for tops in tracker.boards.values())
    assert tracker.counts == {pid: [0] * 20 for pid in ("p1", "p2")}  # both won: every card is gone
    assert len(adversary.known) > 100  # it did learn the cards, each once it was entitled to


@pytest.mark.parametrize("door", ["racer", "spectator"])
async def test_the_adversary_catches_a_move_told_too_early(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch, door: str
) -> None:
    """The adversary is not blind: make the server tell moves as it used to — positions in the
    racers' copy, or every move to spectators at once — and it names cards Bob had not uncovered."""
    if door == "racer":
        told = audience.Audience._moved

        def with_positions(
            self: audience.Audience, event: Any, seq: int, watched: bool, msg_id: int | None
        ) -> audience.Frames:
            frames = told(self, event, seq, watched, msg_id)
            body = json.loads(frames.for_player(event.player) or b"{}")
            for key in ("changes", "can_undo", "id", "type", "seq", "v"):
                body.pop(key, None)
            frames.players = wire.encode_body("moved", body, seq)
            return frames

        monkeypatch.setattr(audience.Audience, "_moved", with_positions)
    else:
        catch_up = race.Race._catch_up
        monkeypatch.setattr(race.Race, "_catch_up", staticmethod(lambda racer, bar: catch_up(racer, [0] * len(bar))))
    adversary, _, _, racer_problems = await watch_from_another_tab(await start_server())
    assert any(leak.startswith(f"{door}:") for leak in adversary.leaks), adversary.leaks
    if door == "racer":  # and the checker every fair-play test runs on what racers got says so too
        assert any("which tells its cards" in problem for problem in racer_problems), racer_problems
