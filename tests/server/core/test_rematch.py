"""Rematches and series: a finished race room runs its next race on a new sealed deal,
its players accept, the host starts; a series of N races keeps a points table.

The race core first (synchronous, microseconds), then the log (a rematch replays to the same
room, the results' outbox holds across races, a restart rebuilds the second race), then the wire.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halfmoon.codes import DealCode, seal_commitment, sealed_code
from halfmoon.errors import BadMessageError
from halfmoon.protocol import Mode, Phase, PlayerStatus, commitment_of, parse_message, player_key_hash
from halfmoon_server import create_app
from halfmoon_server.adapters.journal import JournalLog
from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.clock import ManualClock
from halfmoon_server.core import events
from halfmoon_server.core.commands import apply_entry
from halfmoon_server.core.events import Rematched
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.core.room_state import game_id
from halfmoon_server.errors import Refusal, StorageError
from halfmoon_server.ports import FinishedGame
from halfmoon_server.rooms.daily import DailyService
from halfmoon_server.rooms.lobby import Lobby
from halfmoon_server.rooms.results import Recorder
from halfmoon_server.rooms.room import BackgroundTasks, RoomServices
from halfmoon_server.web import keys
from tests.conftest import ROOT
from tests.server.conftest import StartServer
from tests.server.protocol_example import START_MS, normalise
from tests.server.support import T0, WsClient, make_settings

CODE = DealCode.parse("HM1-N-AAAAAAA")
NEXT = DealCode.parse("HM1-N-AAAAAAB")
SALT = "5" * 32  # a rematch's salt in a log of the previous release
SEED = "5e" * 32  # the seed the server drew for a rematch
NEXT_SEALED = sealed_code(SEED, [])  # its deal when nobody contributes
CONFIG = RaceConfig(countdown_ms=0, default_time_limit_s=600)


def kinds(evs: list[events.Event]) -> list[str]:
    return [type(e).__name__ for e in evs]


def finished_race(*names: str, series: int | None = None) -> Race:
    """A race whose players all gave up (in order) and were recorded."""
    race = Race("K7WQ2M", Mode.RACE, CODE, CONFIG, now=T0)
    for name in names:
        race.join(name, T0)
    race.start("p1", None, T0, series)
    race.tick(T0)
    run(race, T0)
    return race


def run(race: Race, now: int, order: list[str] | None = None) -> list[events.Event]:
    """Everyone in the race gives up a second apart (``order``: who first, so who ranks first:
    no moves, every score 0, the shorter time first), each game recorded; the events."""
    out: list[events.Event] = []
    for number, pid in enumerate(order or list(race.players), 1):
        out += race.give_up(pid, now + 1000 * number)
    for pid in list(race.players):
        out += race.recorded(pid, f"g-{race.round}-{pid}", now + 9000)
    return out


def test_a_rematch_is_refused_before_the_results_and_in_rooms_that_are_not_races() -> None:
    race = Race("K7WQ2M", Mode.RACE, CODE, CONFIG, now=T0)
    race.join("Ada", T0)
    with pytest.raises(Refusal) as refused:
        race.rematch("p1", T0, seed=SEED)
    assert refused.value.code == "no_rematch"
    race.start("p1", None, T0)
    race.tick(T0)
    race.give_up("p1", T0 + 5)  # over, not recorded yet: no results
    with pytest.raises(Refusal, match="results"):
        race.rematch("p1", T0 + 6, seed=SEED)
    race.recorded("p1", "g1", T0 + 7)
    with pytest.raises(Refusal) as refused:
        race.rematch(None, T0 + 8, seed=SEED)  # a spectator
    assert refused.value.code == "not_in_room"
    solo = Race("K7WQ2M", Mode.SOLO, CODE, CONFIG, now=T0)
    solo.join("Ada", T0)
    solo.begin(T0)
    solo.give_up("p1", T0)
    solo.recorded("p1", "g1", T0)
    with pytest.raises(Refusal) as refused:
        solo.rematch("p1", T0, seed=SEED)
    assert refused.value.code == "no_rematch"
    assert solo.round == 1 and solo.phase is Phase.FINISHED


def test_a_rematch_is_a_sealed_lobby_on_the_new_deal_that_the_others_accept() -> None:
    race = finished_race("Ada", "Bob", "Cy")
    first_results = race.results
    evs = race.rematch("p2", T0 + 60_000, seed=SEED)
    assert kinds(evs) == ["Rematched"]
    rematched = evs[0]
    assert isinstance(rematched, events.Rematched)
    assert (rematched.round, rematched.host, rematched.code, rematched.sealed) == (2, "p2", None, True)
    assert rematched.commitment == seal_commitment(SEED)
    assert [p.id for p in rematched.players] == ["p2"]
    assert [(p.id, p.status) for p in rematched.seated] == [("p1", PlayerStatus.WAITING), ("p3", PlayerStatus.WAITING)]
    assert race.phase is Phase.LOBBY and race.results is None and race.round == 2
    # the new deal's code is hidden from everyone, its proposer too, until the race is over
    for viewer in (None, "p1", "p2"):
        snap = race.snapshot(viewer, T0 + 60_000, watcher=viewer is None).to_json()
        assert snap["code"] is None and "salt" not in snap
        assert race.code is None  # no deal yet: it is derived at the start
        assert snap["round"] == 2 and [p["id"] for p in snap["seated"]] == ["p1", "p3"]
    # the host starts; only who accepted races
    with pytest.raises(Refusal) as refused:
        race.accept("p2", T0 + 60_001)  # already in
    assert refused.value.code == "no_rematch"
    joined = race.accept("p1", T0 + 60_002)
    assert kinds(joined) == ["PlayerJoined"] and race.host == "p2"
    with pytest.raises(Refusal) as refused:
        race.start("p1", None, T0 + 60_003)
    assert refused.value.code == "not_host"
    race.start("p2", None, T0 + 60_004)
    started = race.tick(T0 + 60_004)
    assert isinstance(started[0], events.RaceStarted) and started[0].code is None
    assert set(started[0].boards) == {"p1", "p2"}
    with pytest.raises(Refusal) as refused:
        race.accept("p3", T0 + 60_005)  # too late: Cy sits this one out
    assert refused.value.code == "race_started"
    assert race.code_for(race.players["p1"], T0 + 60_006) is None
    over = run(race, T0 + 70_000, order=["p1", "p2"])
    assert isinstance(over[-1], events.RaceOver)
    assert (over[-1].code, over[-1].seed, over[-1].round) == (str(NEXT_SEALED), SEED, 2)
    assert [r.player for r in over[-1].results] == ["p1", "p2"]
    assert race.results != first_results and "p3" in race.seated


def test_seated_players_come_and_go_without_news_and_leaving_frees_their_name() -> None:
    race = finished_race("Ada", "Bob")
    race.rematch("p1", T0 + 60_000, seed=SEED)
    assert race.disconnect("p2", T0 + 60_001) == [] and not race.seated["p2"].connected
    assert race.connect("p2", T0 + 60_002) == [] and race.seated["p2"].connected
    with pytest.raises(Refusal) as refused:
        race.join("bob", T0 + 60_003)  # Bob's seat keeps his name
    assert refused.value.code == "name_taken"
    left = race.leave("p2", T0 + 60_004)
    assert kinds(left) == ["PlayerLeft"] and "p2" not in race.seated
    newcomer, _ = race.join("Bob", T0 + 60_005)  # the link still works: a newcomer joins the rematch
    assert newcomer.id == "p3" and list(race.players) == ["p1", "p3"]


def test_a_rematch_lobby_is_kept_while_a_seated_player_is_there_and_abandoned_once_all_are_gone() -> None:
    race = finished_race("Ada", "Bob")
    race.rematch("p1", T0 + 60_000, seed=SEED)
    race.disconnect("p1", T0 + 60_001)
    later = T0 + 60_001 + CONFIG.abandon_after_ms + 1
    assert not race.is_stale(later), "Bob, seated and connected, is still in the room"
    race.disconnect("p2", T0 + 60_002)
    assert race.is_stale(later + 1)


def test_a_series_keeps_a_points_table_and_ends_after_its_races() -> None:
    race = finished_race("Ada", "Bob", "Cy", series=3)  # race 1 placings: Ada, Bob, Cy
    table = race.series_json()
    assert table is not None and (table["races"], table["race"], table["over"]) == (3, 1, False)
    assert [(line["player"], line["points"]) for line in table["table"]] == [("p1", 2), ("p2", 1), ("p3", 0)]
    with pytest.raises(Refusal) as refused:  # a second series cannot start while this one runs
        race.rematch("p1", T0 + 20_000, seed=SEED)
        race.start("p1", None, T0 + 20_000, 2)
    assert refused.value.code == "bad_message"
    for number, order in ((2, ["p3", "p1", "p2"]), (3, ["p1", "p3", "p2"])):
        if number == 3:
            race.rematch("p1", T0 + 20_000 * number, seed=SEED)
        race.accept("p2", T0 + 20_000 * number)
        race.accept("p3", T0 + 20_000 * number)
        race.start("p1", None, T0 + 20_000 * number)
        race.tick(T0 + 20_000 * number)
        over = run(race, T0 + 20_000 * number, order=order)[-1]
        assert isinstance(over, events.RaceOver) and over.series is not None
        assert over.series["race"] == number
    final = race.series_json()
    assert final is not None and final["over"] is True
    # of 3 racers the first gets 2 points, the second 1: Ada 2+1+2, Cy 0+2+1, Bob 1+0+0
    assert [(line["name"], line["points"], line["races"]) for line in final["table"]] == [
        ("Ada", 5, 3),
        ("Cy", 3, 3),
        ("Bob", 1, 3),
    ]
    assert [line["time_ms"] for line in final["table"]] == [1000 + 2000 + 1000, 3000 + 1000 + 2000, 2000 + 3000 + 3000]
    assert race.snapshot("p1", T0, watcher=False).to_json()["series"] == final
    # after the series, a rematch is a plain race again, and a new series may start
    race.rematch("p2", T0 + 100_000, seed=SEED)
    assert race.series is None and race.series_json() is None
    race.start("p2", None, T0 + 100_001, 2)
    assert race.series == 2 and race.series_first == 4


def test_a_one_race_rooms_messages_are_unchanged() -> None:
    race = finished_race("Ada")
    snap = race.snapshot("p1", T0, watcher=False).to_json()
    assert not {"round", "series", "seated"} & set(snap)
    from halfmoon.protocol import RaceOver

    assert "round" not in RaceOver(race.results or ()).to_json()


def test_the_new_messages_parse_and_bad_series_are_refused() -> None:
    assert parse_message('{"type": "rematch", "v": 1}').to_json() == {"type": "rematch", "v": 1}
    assert parse_message('{"type": "accept", "v": 1}').to_json() == {"type": "accept", "v": 1}
    assert parse_message('{"type": "start", "v": 1, "series": 3}').to_json() == {"type": "start", "v": 1, "series": 3}
    for bad in ("1", "11", '"3"', "true"):
        with pytest.raises(BadMessageError) as refused:
            parse_message(f'{{"type": "start", "v": 1, "series": {bad}}}')
        assert refused.value.code == "bad_message" and "series" in refused.value.message
    with pytest.raises(BadMessageError) as refused:
        parse_message('{"type": "rematch", "v": 2}')
    assert refused.value.code == "bad_version"


@pytest.mark.parametrize(
    "rematch",
    [
        {"k": "rematch", "p": "p2", "seed": SEED, "e": "b2" * 16},
        {"k": "rematch", "p": "p2", "c": str(NEXT), "salt": SALT},  # a log of the previous release
    ],
    ids=["sealed-seed", "previous-release-code-and-salt"],
)
def test_a_rematch_replays_from_the_log_to_the_same_room(rematch: dict[str, Any]) -> None:
    log: list[dict[str, Any]] = []

    def do(race: Race, entry: dict[str, Any]) -> None:
        log.append(entry)
        apply_entry(race, entry)

    live = Race("K7WQ2M", Mode.RACE, CODE, CONFIG, now=T0)
    t = T0
    for entry in [
        {"k": "join", "n": "Ada", "tok": "a"},
        {"k": "join", "n": "Bob", "tok": "b"},
        {"k": "start", "p": "p1", "ser": 2},
        {"k": "tick"},
        {"k": "give_up", "p": "p1"},
        {"k": "give_up", "p": "p2"},
        {"k": "recorded", "p": "p1", "g": "x1"},
        {"k": "recorded", "p": "p2", "g": "x2"},
        rematch,
        {"k": "accept", "p": "p1", "e": "a1" * 16},
        {"k": "start", "p": "p2"},
        {"k": "tick"},
        {"k": "give_up", "p": "p2"},
    ]:
        t += 1000
        do(live, {**entry, "t": t})
    replayed = Race("K7WQ2M", Mode.RACE, CODE, CONFIG, now=T0)
    for entry in log:
        apply_entry(replayed, entry)
    for viewer in ("p1", "p2", None):
        assert replayed.snapshot(viewer, t, watcher=viewer is None) == live.snapshot(viewer, t, watcher=viewer is None)
    assert replayed.round == 2 and replayed.series_json() == live.series_json()
    assert replayed.code == live.code and replayed.commitment == live.commitment
    if "seed" in rematch:  # both contributions are in the replayed deal, as in the live one
        assert live.contributions == ("a1" * 16, "b2" * 16)
        assert replayed.code == sealed_code(SEED, ["a1" * 16, "b2" * 16])
    else:
        assert replayed.code == NEXT and replayed.commitment == commitment_of(str(NEXT), SALT)


def test_game_ids_differ_between_a_rooms_races_and_the_first_race_keeps_the_old_ids() -> None:
    ids = {game_id("n0nce", pid, number) for pid in ("p1", "p2") for number in (1, 2, 3)}
    assert len(ids) == 6
    assert game_id("n0nce", "p1") == game_id("n0nce", "p1", 1)


# -- the room shell: the log, the results' outbox, a restart ----------------------------------------------


class FlakyStorage(MemoryStorage):
    """Memory storage that refuses every write while ``down``."""

    down = False

    async def save_game(self, game: FinishedGame, game_id: str) -> None:
        if self.down:
            raise StorageError("the database is down")
        await super().save_game(game, game_id)


class Box:
    """An outbox that keeps what it is sent."""

    def __init__(self) -> None:
        self.room: str | None = None
        self.player_id: str | None = None
        self.frames: list[dict[str, Any]] = []

    closed = False

    def send(self, frame: bytes) -> None:
        self.frames.append(json.loads(frame))

    def close(self, code: int, reason: str) -> None:
        self.closed = True


def make_lobby(path: Path, clock: ManualClock, room_log: Any, storage: MemoryStorage) -> Lobby:
    settings = make_settings(path, clock, countdown_s=0)
    services = RoomServices(clock, room_log, Recorder(storage), BackgroundTasks(), settings.event_log)
    daily = DailyService(
        storage=storage, clock=clock, secret=b"s", executor=None, requires_winnable=False, node_budget=1
    )
    return Lobby(settings, room_log, services, storage, daily)


async def test_a_rematch_keeps_the_earlier_races_unstored_games_and_survives_a_restart(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    storage = FlakyStorage()
    journal = JournalLog(tmp_path / "journal.db")
    await journal.open()
    lobby = make_lobby(tmp_path / "one", clock, journal, storage)
    journal2: JournalLog | None = None
    try:
        room = await lobby.create_race(None, "10.0.0.1")
        ada, bob = Box(), Box()
        await room.submit({"k": "join", "n": "Ada", "tok": "ta"}, ada)
        await room.submit({"k": "join", "n": "Bob", "tok": "tb"}, bob)
        await room.submit({"k": "start", "p": "p1"})
        await room.tick()
        storage.down = True  # the first race's games are recorded but not stored
        await room.submit({"k": "give_up", "p": "p1"})
        await room.submit({"k": "give_up", "p": "p2"})
        for _ in range(50):
            await asyncio.sleep(0.05)
            if room.race.results is not None:
                break
        assert room.race.results is not None and room.state.results.unstored == {"p1", "p2"}
        first = {line.player: line.game for line in room.race.results}
        await room.submit({"k": "rematch", "p": "p1", "c": str(NEXT), "salt": SALT})
        assert set(room.state.results.parked) == set(first.values()) and not room.state.results.unstored and room.busy
        await room.submit({"k": "accept", "p": "p2"})
        await room.submit({"k": "start", "p": "p1"})
        await room.tick()
        assert room.race.round == 2 and room.race.phase is Phase.RUNNING
        # the process dies (what it held in memory is gone); another rebuilds the room from the
        # journal, parked games included
        parked = dict(room.state.results.parked)
        room.state.results.parked.clear()
        room.state.results.unstored.clear()
        lobby._release(room)
        # ... and its tasks die with it: the dead process's retries must not store (and log
        # `stored` into the same journal) beside the instance that rebuilt the room
        dead = list(lobby.services.tasks._tasks)
        for task in dead:
            task.cancel()
        await asyncio.gather(*dead, return_exceptions=True)
        await lobby.services.recorder.close()
        # ... and so does its journal: an entry a cancelled task had queued is committed (or not)
        # before the next process counts the file's entries, never after (it would take a number
        # the new process gives out too: UNIQUE(room, n), a flaky failure in CI)
        await journal.close()
        journal2 = JournalLog(tmp_path / "journal.db")
        await journal2.open()
        lobby2 = make_lobby(tmp_path / "two", clock, journal2, storage)
        assert await lobby2.restore() == 1
        again = lobby2.rooms[room.id]
        assert again.race.round == 2 and again.race.phase is Phase.RUNNING and set(again.race.players) == {"p1", "p2"}
        assert again.state.results.parked == parked
        assert again.race.snapshot("p1", clock.now_ms(), watcher=False) == room.race.snapshot(
            "p1", clock.now_ms(), watcher=False
        )
        storage.down = False
        await again.submit({"k": "give_up", "p": "p1"})
        await again.submit({"k": "give_up", "p": "p2"})
        clock.advance(60_000)
        for _ in range(100):
            await lobby2.tick()
            await asyncio.sleep(0.05)
            if not again.state.results.parked and not again.state.results.unstored and again.race.results is not None:
                break
        assert not again.state.results.parked and not again.state.results.unstored
        second = {line.player: line.game for line in again.race.results or ()}
        assert len({*first.values(), *second.values()}) == 4  # one game per player per race
        for gid in (*first.values(), *second.values()):
            assert gid is not None and await storage.get_game(gid) is not None
        stored = {gid: await storage.get_game(gid) for gid in second.values() if gid}
        assert {g.code for g in stored.values() if g} == {str(NEXT)}
    finally:
        await lobby.services.tasks.settle()
        for held in list(lobby.rooms.values()):
            held.close_timer()
        await journal.close()
        if journal2 is not None:
            await journal2.close()


# -- the wire --------------------------------------------------------------------------------------------


async def test_two_racers_rematch_over_the_wire_and_the_new_code_stays_sealed(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(countdown_s=0.01)
    async with aiohttp.ClientSession() as http:
        created = await (await http.post(server.make_url("/api/rooms"), json={})).json()
    room = created["room"]
    ada = await WsClient.connect(server, "Ada")
    bob = await WsClient.connect(server, "Bob")
    spec = await WsClient.connect(server, "Spec")
    try:
        await ada.send("join", room=room, name="Ada")
        await ada.next("welcome")
        await bob.send("join", room=room, name="Bob")
        await bob.next("welcome")
        await spec.send("watch", room=room)
        await spec.next("welcome")
        await bob.send("rematch")
        assert (await bob.next("error"))["code"] == "no_rematch"
        await ada.send("start")
        await ada.next("countdown")
        clock.advance(10)
        await ada.next("started")
        for client in (ada, bob):
            await client.send("give_up")
        first = await ada.next("race_over")
        assert await bob.next("race_over") == await spec.next("race_over") == first
        assert "round" not in first  # a one-race room's race_over as before
        await bob.send("rematch")
        proposed = [await c.next("rematch") for c in (ada, bob, spec)]
        assert proposed[0] == proposed[1] == proposed[2]
        assert (proposed[0]["round"], proposed[0]["host"], proposed[0]["code"]) == (2, "p2", None)
        assert [p["id"] for p in proposed[0]["seated"]] == ["p1"]
        await spec.send("accept")
        assert (await spec.next("error"))["code"] == "no_rematch"
        await ada.send("accept")
        assert (await bob.next("player_joined"))["player"]["id"] == "p1"
        await bob.send("start", series=2)
        await ada.next("countdown")
        clock.advance(10)
        started = await ada.next("started")
        assert started["code"] is None and started["commitment"] == proposed[0]["commitment"]
        for client in (ada, bob):
            await client.send("give_up")
        over = await spec.next("race_over")
        assert over["round"] == 2 and over["series"]["races"] == 2 and over["series"]["race"] == 1
        assert seal_commitment(over["seed"]) == proposed[0]["commitment"]
        assert str(sealed_code(over["seed"], over["contributions"])) == over["code"]
        assert over["code"] != first["code"]
        games = {line["game"] for line in first["results"]} | {line["game"] for line in over["results"]}
        assert len(games) == 4 and None not in games
        # the second race's code was out nowhere before its race_over (its game_over for a racer)
        for client in (ada, bob, spec):
            before = []
            for message in client.history:
                if message["type"] in ("race_over", "game_over") and message.get("code") == over["code"]:
                    break
                before.append(message)
            assert over["code"] not in json.dumps(before), client.label
        # a reload after the rematch: the snapshot has the round and the series
        token = next(m["token"] for m in ada.history if m["type"] == "welcome")
        await ada.close()
        ada = await WsClient.connect(server, "Ada")
        await ada.send("resume", room=room, token=token)
        welcome = await ada.next("welcome")
        assert welcome["room"]["round"] == 2 and welcome["room"]["series"]["table"][0]["points"] == 1
    finally:
        for client in (ada, bob, spec):
            await client.close()


# -- docs/protocol.md's worked example ---------------------------------------------------------------------

#: what differs from run to run besides room ids, tokens and game ids: the drawn deals, sealed
SEALED_VOLATILE = [
    (re.compile(r"HM1-N-[A-Z0-9]{7}"), "HM1-N-CODE"),
    (re.compile(r"HM1-S-[A-Z]{7}-[A-Z]{7}-[A-Z]{7}-[A-Z]{7}"), "HM1-S-CODE"),
    (re.compile(r'"commitment": "[0-9a-f]{64}"'), '"commitment": "COMMITMENT"'),
    (re.compile(r'"seed": "[0-9a-f]{64}"'), '"seed": "SEED"'),
    (re.compile(r'"salt": "[0-9a-f]{32}"'), '"salt": "SALT"'),
]


def normalise_sealed(text: str) -> str:
    for pattern, replacement in SEALED_VOLATILE:
        text = pattern.sub(replacement, text)
    return normalise(text)


async def rematch_example() -> list[str]:
    """Play the worked example of docs/protocol.md, "A rematch and a series, worked through"
    (``python -m tests.server.core.test_rematch`` prints it)."""
    lines: list[str] = []
    clock = ManualClock(START_MS)

    async def send(client: WsClient, **message: Any) -> None:
        message = {"type": message.pop("type"), "v": 1, **message}
        lines.append(f"{client.label} → {json.dumps(message, separators=(', ', ': '))}")
        await client.ws.send_str(json.dumps(message))

    async def recv(client: WsClient, kind: str) -> dict[str, Any]:
        message = await client.next(kind, timeout=30)
        lines.append(f"{client.label} ← {json.dumps(message, separators=(', ', ': '))}")
        return message

    with tempfile.TemporaryDirectory() as data:
        settings = make_settings(Path(data), clock, countdown_s=0.05, public_url="http://127.0.0.1:8080")
        server = TestServer(create_app(settings))
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as http:
                room = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
            ada = await WsClient.connect(server, "Ada")
            bob = await WsClient.connect(server, "Bob")
            await ada.send("join", room=room, name="Ada", entropy="a1" * 16)
            await ada.next("welcome")
            await bob.send("join", room=room, name="Bob", entropy="b2" * 16)
            await bob.next("welcome")
            lines.append("(Ada and Bob are in the lobby of a sealed race, each with a contribution; Ada is the host)")
            await send(ada, type="start", series=2)
            await recv(ada, "countdown")
            clock.advance(50)
            await ada.next("started")
            clock.advance(20_000)
            await send(bob, type="give_up")
            await ada.next("progress")  # taken before the clock moves on
            clock.advance(10_000)
            await send(ada, type="give_up")
            await recv(ada, "race_over")
            await send(bob, type="rematch", entropy="b3" * 16)
            await recv(bob, "rematch")
            await recv(ada, "rematch")
            await send(ada, type="accept", entropy="a4" * 16)
            await recv(bob, "player_joined")
            await send(bob, type="start")
            await recv(bob, "countdown")
            clock.advance(50)
            await ada.next("started")
            lines.append("(the race on the new deal: Ada gives up after 15 s, Bob after 20 s)")
            clock.advance(15_000)
            await ada.send("give_up")
            await bob.next("progress")
            clock.advance(5_000)
            await bob.send("give_up")
            await recv(bob, "race_over")
            lines.append("(the race_over opens the rematch's commitment: see \"Sealed races\")")
            for client in (ada, bob):
                await client.close()
        finally:
            await server.close()
    return lines


async def test_the_worked_rematch_example_in_protocol_md_is_what_the_server_sends() -> None:
    doc = (ROOT / "docs" / "protocol.md").read_text()
    section = doc[doc.index("## A rematch and a series, worked through") :]
    block = section[section.index("```text\n") + len("```text\n") :]
    documented = normalise_sealed(block[: block.index("```")]).strip().splitlines()
    produced = normalise_sealed("\n".join(await rematch_example())).splitlines()
    assert produced == documented


if __name__ == "__main__":
    print("\n".join(asyncio.run(rematch_example())))


def test_a_player_who_left_the_race_is_not_seated_in_the_rematch_and_may_join_it_by_name() -> None:
    race = Race("K7WQ2M", Mode.RACE, CODE, CONFIG, now=T0)
    for name in ("Ada", "Bob", "Cy"):
        race.join(name, T0)
    race.start("p1", None, T0)
    race.tick(T0)
    race.leave("p3", T0 + 500)  # Cy quits the room mid-race: her connection is no longer hers
    assert race.players["p3"].status is PlayerStatus.LEFT
    for number, pid in enumerate(("p1", "p2"), 1):
        race.give_up(pid, T0 + 1000 * number)
    for pid in list(race.players):
        race.recorded(pid, f"g-{pid}", T0 + 9000)
    assert race.results is not None and "p3" in [r.player for r in race.results]  # her game counts
    with pytest.raises(Refusal):
        race.rematch("p3", T0 + 10_000, code=NEXT, salt=SALT)  # (the server never lets her connection say it)
    [rematched] = race.rematch("p2", T0 + 10_000, code=NEXT, salt=SALT)
    # she is not listed as one who may still accept ("Not in yet: Ada, Cy" would wait for nobody)
    assert isinstance(rematched, Rematched) and [p.id for p in rematched.seated] == ["p1"]
    assert "p3" not in race.seated
    # and coming back by the room's link with her name is a join, not "name taken"
    newcomer, _ = race.join("Cy", T0 + 11_000)
    assert newcomer.name == "Cy" and newcomer.id in race.players


async def test_an_earlier_races_game_stays_readable_while_the_rooms_rematch_runs_and_the_rematchs_does_not(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Race 1's code is out with its results: its game (replay, history line) must not vanish
    again — «someone is still playing on the same deal» — while race 2 runs on another deal; race
    2's game stays hidden until race 2 is over."""
    server = await start_server(countdown_s=0.01)
    ada_key = secrets.token_urlsafe(32)
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(server.make_url("/api/rooms"), json={})).json())["room"]
        ada = await WsClient.connect(server, "Ada")
        bob = await WsClient.connect(server, "Bob")
        try:
            await ada.send("join", room=room, name="Ada", player_key=ada_key)
            await ada.next("welcome")
            await bob.send("join", room=room, name="Bob")
            await bob.next("welcome")
            await ada.send("start")
            await ada.next("countdown")
            clock.advance(10)
            await ada.next("started")
            for client in (ada, bob):
                clock.advance(1000)
                await client.send("give_up")
            first = await ada.next("race_over")
            first_game = next(line["game"] for line in first["results"] if line["name"] == "Ada")
            clock.advance(5000)
            await bob.send("rematch")
            await ada.next("rematch")
            await ada.send("accept")
            await bob.next("player_joined")
            await bob.send("start")
            await ada.next("countdown")
            clock.advance(10)
            await ada.next("started")
            clock.advance(1000)
            await ada.send("give_up")  # Bob races on: race 2's deal is still in play
            second_game = (await ada.next("game_over"))["game"]
            for _ in range(250):
                stored = await server.app[keys.STORAGE].games_of_player(player_key_hash(ada_key), 10)
                if len(stored) == 2:
                    break
                await asyncio.sleep(0.02)
            old = await http.get(server.make_url(f"/api/games/{first_game}"))
            assert old.status == 200 and (await old.json())["code"] == first["code"]
            new = await http.get(server.make_url(f"/api/games/{second_game}"))
            assert new.status == 403 and (await new.json())["error"]["code"] == "game_hidden"
            mine = await http.get(server.make_url("/api/me/history"), headers={"Authorization": f"Bearer {ada_key}"})
            codes = {line["game"]: line["code"] for line in (await mine.json())["recent"]}
            assert codes == {first_game: first["code"], second_game: None}
        finally:
            for client in (ada, bob):
                await client.close()
