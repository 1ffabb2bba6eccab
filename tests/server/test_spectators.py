"""What spectators see of a race: only what every racer still playing has seen.

Everyone races on the same deal, and anyone can watch — a racer from another tab included. So
a card that one racer has uncovered is shown to spectators only once every racer still playing
has uncovered it too (docs/protocol.md, "Who sees what"). The test keeps its own model of each
racer's game and checks the spectators' boards against it after every step.
"""

from __future__ import annotations

from typing import Any

from halfmoon.game import Game, Move
from halfmoon.positions import PILE_COUNT, POSITIONS
from halfmoon.record import UNDO
from tests.server.conftest import StartServer
from tests.server.support import ViewTracker, WsClient, won_record
from tests.server.test_rooms import _room

HIDDEN = "??"


class Model:
    """Each racer's game and the lowest height each of their piles has had."""

    def __init__(self, code: str, ids: list[str]) -> None:
        self.games = {pid: Game.from_code(code) for pid in ids}
        self.lowest = {pid: [8] * PILE_COUNT for pid in ids}
        self.active = set(ids)

    def play(self, pid: str, move: Move) -> None:
        game = self.games[pid]
        game.push(move)
        for position in move.positions:
            if position < PILE_COUNT:
                self.lowest[pid][position] = min(self.lowest[pid][position], game.count_at(position))

    def spectators_see(self) -> dict[str, list[str | None]]:
        bar = [max((self.lowest[pid][pile] for pid in self.active), default=0) for pile in range(PILE_COUNT)]
        seen: dict[str, list[str | None]] = {}
        for pid, game in self.games.items():
            tops: list[str | None] = []
            for position in POSITIONS:
                card = game.card_at(position)
                if card is None:
                    tops.append(None)
                elif position < PILE_COUNT and game.count_at(position) < bar[position]:
                    tops.append(HIDDEN)
                else:
                    tops.append(card.name)
            seen[pid] = tops
        return seen


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
    assert tracker.boards == model.spectators_see()
    assert HIDDEN not in tracker.boards["p1"]  # the same deal: at the start everything is in sight

    # Ada digs ahead: what she uncovers and Bob has not is hidden from spectators
    for i, move in enumerate(moves[:6], 1):
        await ada.send("move", positions=move.names(), id=i)
        model.play("p1", move)
        await caught_up(spec, tracker, "moved")
        assert tracker.boards == model.spectators_see()
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
        assert tracker.boards == model.spectators_see()
        revealed += [reveal for reveal in moved.get("reveals", []) if reveal["player"] == "p1"]
    assert revealed and all(reveal["card"] != HIDDEN for reveal in revealed)
    # an undo does not make Bob unsee a card
    await bob.send("undo", id=3)
    model.games["p2"].undo()
    await caught_up(spec, tracker, "moved")
    assert tracker.boards == model.spectators_see()

    # Bob gives up: only Ada is still playing, and she has seen all of her own board
    await bob.send("give_up")
    model.active.discard("p2")
    await caught_up(spec, tracker, "progress")
    assert tracker.boards == model.spectators_see()
    assert HIDDEN not in tracker.boards["p1"]

    # Ada finishes: the race is over and every board is in plain sight
    for i, move in enumerate(moves[6:], 7):
        await ada.send("move", positions=move.names(), id=i)
        model.play("p1", move)
    model.active.discard("p1")
    await caught_up(spec, tracker, "race_over")
    assert tracker.boards == model.spectators_see()
    assert all(HIDDEN not in tops for tops in tracker.boards.values())
    assert tracker.problems == [] and late_tracker.problems == []
    for client in (ada, bob, spec, late):
        await client.close()
