"""A room's snapshot (:mod:`halfmoon_server.core.snapshots`): restoring the snapshot taken after
entry n and replaying entries n+1… gives exactly the state a replay from the first entry gives —
over every golden room log (tests/vectors/room_logs/, this release's and version 0's) at every n,
and over random rooms (hypothesis: joins, starts, moves, undos, leaves, give-ups, drops and
resumes, spectators, ticks, recordings, rematches). "Exactly": the snapshots of both are equal,
every game's whole board (and the spectators' copies) is equal, and every viewer's view — each
player's, each seated player's, a spectator's, a REST reader's — is equal, now and once every
code is out."""

from __future__ import annotations

import contextlib
import copy
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from halfmoon.protocol import Mode, Phase
from halfmoon_server.core.commands import Entry, race_of, room_header
from halfmoon_server.core.race import RaceConfig
from halfmoon_server.core.room_state import APPLY, RoomState
from halfmoon_server.core.snapshots import SNAPSHOT_VERSION, SnapshotError, restore_snapshot, take_snapshot
from halfmoon_server.errors import Refusal

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "room_logs"
INSTANCE = "here"
T0 = 1_796_000_000_000
DAY_MS = 86_400_000


def golden_rooms() -> dict[str, tuple[Entry, list[Entry]]]:
    """Every golden room log: its header and entries, as a load reads them."""
    rooms: dict[str, tuple[Entry, list[Entry]]] = {}
    for path in sorted(VECTORS.glob("*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        for name, room in golden["rooms"].items():
            stored = room["stored"]
            if "header" in stored:  # the journal's rows
                header, entries = stored["header"], [entry for _, entry in stored["entries"]]
            else:  # Redis's keys: "<ms> <json>", the entry's time the stored one
                header = next(value for key, value in stored.items() if key.endswith(":h"))
                lines = next(value for key, value in stored.items() if key.endswith(":log"))
                entries = [{**entry, "t": ms} for ms, entry in lines]
            rooms[f"{path.stem}:{name}"] = (header, entries)
    return rooms


GOLDEN = golden_rooms()


def replay(state: RoomState, entries: list[Entry]) -> RoomState:
    """Apply ``entries`` after the ones ``state`` applied, as a room's rebuild does."""
    state.replaying = True
    for number, entry in enumerate(entries, state.applied + 1):
        assert state.place(number) == APPLY
        logged = copy.deepcopy(entry)
        with contextlib.suppress(Refusal):  # a refused entry is applied as refused: nothing changes
            state.settle_due(logged)
            state.apply(logged)
    return state


def fresh(header: Entry) -> RoomState:
    return RoomState(header, race_of(header), INSTANCE)


def stored(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot as a store gives it back (through its JSON bytes)."""
    loaded: dict[str, Any] = orjson.loads(orjson.dumps(snapshot))
    return loaded


def picture(state: RoomState) -> dict[str, Any]:
    """Everything a replay built, to compare: the snapshot, every board (the games' whole piles
    and reserve, not only what the snapshot writes), the deal, and every viewer's view now, a day
    later and a year later (when every code is out)."""
    race = state.race
    racers = [*race.players.values(), *race.seated.values()]
    boards = {
        r.id: (
            None if r.game is None else (r.game.snapshot(), r.game.history()),
            None if r.public is None else (r.public.snapshot(), r.public.history()),
        )
        for r in racers
    }
    views: dict[str, Any] = {}
    for now in (state.last_time, state.last_time + DAY_MS, state.last_time + 365 * DAY_MS):
        for racer in racers:
            views[f"{racer.id}@{now}"] = race.snapshot(racer.id, now, watcher=False).to_json()
            over = race.game_over(racer, now)
            views[f"{racer.id}:over@{now}"] = None if over is None else over.to_json()
        views[f"reader@{now}"] = race.snapshot(None, now, watcher=False).to_json()
        views[f"stale@{now}"] = race.is_stale(now)
    # (a spectator's view moves the spectators' copies on: taken last, on both alike)
    views["spectator"] = race.snapshot(None, state.last_time, watcher=True).to_json()
    return {
        "snapshot": take_snapshot(state),
        "boards": boards,
        "deal": (None if race.code is None else str(race.code), race.commitment, race.sealed),
        "deadline": (race.next_deadline(), state.results_next_due()),
        "views": views,
    }


def read_views(state: RoomState) -> dict[str, Any]:
    """What REST reads of the room use (GET /api/rooms/{id}: the view of a reader, neither player
    nor spectator; GET /api/games: whether someone still plays there), now, a day later and a
    year later."""
    race = state.race
    views: dict[str, Any] = {}
    for now in (state.last_time, state.last_time + DAY_MS, state.last_time + 365 * DAY_MS):
        views[f"reader@{now}"] = race.snapshot(None, now, watcher=False).to_json()
        views[f"running_since@{now}"] = race.running_since()
    return views


def counts(state: RoomState) -> dict[str, tuple[int, int]]:
    """Each game's steps and taps (what judging its pace at its end counts), as the racer says."""
    return {r.id: (r.step_count, r.taps) for r in [*state.race.players.values(), *state.race.seated.values()]}


def unread_steps(state: RoomState) -> int:
    """How many steps of the room's games are still kept unparsed (a lazy restore's)."""
    racers = [*state.race.players.values(), *state.race.seated.values()]
    return sum(len(r.unread) for r in racers if r.unread is not None)


def assert_restores_at_every_entry(header: Entry, entries: list[Entry], at: list[int] | None = None) -> None:
    """Restored after each entry n of ``at`` (default: every one, 0 included), the rest replayed;
    and restored lazily (a read copy's restore), the rest replayed: the same read views before
    any step is parsed, and the same whole room once they are."""
    whole_state = replay(fresh(header), entries)
    whole, reads = picture(whole_state), read_views(whole_state)
    for n in range(len(entries) + 1) if at is None else at:
        taken = take_snapshot(replay(fresh(header), entries[:n]))
        assert taken["n"] == n
        restored = restore_snapshot(header, stored(taken), INSTANCE)
        assert picture(replay(restored, entries[n:])) == whole, f"restored after entry {n} of {len(entries)}"
        lazily = restore_snapshot(header, stored(taken), INSTANCE, lazy=True)
        unread = unread_steps(lazily)
        lazy = replay(lazily, entries[n:])
        if all(entry["k"] in QUIET_KINDS for entry in entries[n:]):
            assert unread_steps(lazy) == unread, f"a replay of {sorted({e['k'] for e in entries[n:]})} parsed steps"
        replayed = unread_steps(lazy)
        assert read_views(lazy) == reads, f"read lazily after entry {n} of {len(entries)}"
        assert unread_steps(lazy) == replayed, "the read views parsed no step"
        assert counts(lazy) == counts(whole_state), "steps and taps counted in the unread text"
        # (a read copy far behind its snapshot writes one: the unread text and the steps after)
        assert take_snapshot(lazy) == whole["snapshot"], "the same snapshot, written from the unread text"
        assert unread_steps(lazy) == replayed
        assert picture(lazy) == whole, f"restored lazily after entry {n} of {len(entries)}, its steps then read"
        assert unread_steps(lazy) == 0


#: the entries a read copy's replay applies without parsing a game's steps (the tail of a long
#: game's log: moves and undos, its end and its recording)
QUIET_KINDS = frozenset(("move", "undo", "give_up", "leave", "tick", "recorded", "stored", "connect", "disconnect"))


@pytest.mark.parametrize("name", list(GOLDEN))
def test_a_golden_room_restored_from_its_snapshot_after_any_entry_replays_to_the_same_room(name: str) -> None:
    header, entries = GOLDEN[name]
    assert entries, name
    assert_restores_at_every_entry(header, entries)


def test_the_golden_logs_cover_every_kind_of_room_and_a_rematch() -> None:
    kinds = {entry["k"] for _, entries in GOLDEN.values() for entry in entries}
    assert {"single", "join", "start", "move", "undo", "rematch", "accept", "watch", "recorded", "tick"} <= kinds
    assert {header["mode"] for header, _ in GOLDEN.values()} == {"solo", "race", "daily"}


# -- what a snapshot holds -----------------------------------------------------------------------------


def test_a_snapshot_holds_token_hashes_and_no_sealed_code() -> None:
    """It lives beside the log and holds no more: the seats' token *hashes*, a sealed race's seed
    as the log holds it — never its code, derived again from the seed and contributions."""
    header, entries = GOLDEN["journal:sealed_rematch"]
    state = replay(fresh(header), entries)
    text = orjson.dumps(take_snapshot(state)).decode()
    for token_hash in state.tokens.values():
        assert token_hash in text
    first = replay(fresh(header), [e for e in entries if e["k"] != "rematch"][:8])
    assert first.race.code is not None and first.race.seed is not None, "dealt: a sealed race under way"
    assert str(first.race.code) not in orjson.dumps(take_snapshot(first)).decode()
    assert take_snapshot(first)["race"]["code"] is None
    daily = replay(fresh(GOLDEN["journal:daily"][0]), GOLDEN["journal:daily"][1])
    assert take_snapshot(daily)["race"]["code"] == GOLDEN["journal:daily"][0]["code"], "as the header holds it"


def test_a_snapshot_of_another_version_or_damaged_is_not_restored() -> None:
    header, entries = GOLDEN["journal:race"]
    taken = take_snapshot(replay(fresh(header), entries))
    assert taken["v"] == SNAPSHOT_VERSION
    with pytest.raises(SnapshotError, match="version"):
        restore_snapshot(header, {**taken, "v": SNAPSHOT_VERSION + 1}, INSTANCE)
    broken = stored(taken)
    broken["race"]["players"][0]["steps"] += ",1 1"  # a step no game takes: not the board's
    with pytest.raises(SnapshotError, match="board does not match its steps"):
        restore_snapshot(header, broken, INSTANCE)
    broken["race"]["players"][0]["board"] += ",1 1"  # nor the board's
    with pytest.raises(SnapshotError, match="cannot be restored"):
        restore_snapshot(header, broken, INSTANCE)
    with pytest.raises(SnapshotError, match="cannot be restored"):
        restore_snapshot(header, broken, INSTANCE, lazy=True)  # a read copy plays its board again too
    with pytest.raises(SnapshotError):
        restore_snapshot(header, {"v": SNAPSHOT_VERSION}, INSTANCE)


# -- random rooms ----------------------------------------------------------------------------------------

NAMES = ("Ada", "Bob", "Cy", "Di")
SEED = "71ec6b63968bbc079dcb38de1729c8a377ba6d7ecb48c8d31e971620b7261ec4"


def random_header(data: st.DataObject) -> Entry:
    mode = data.draw(st.sampled_from([Mode.RACE, Mode.SOLO]), label="mode")
    sealed = mode is Mode.RACE and data.draw(st.booleans(), label="sealed")
    header = room_header(
        "R4ND0M",
        mode,
        None if sealed else "HM1-N-AAAAAAB",
        created_at=T0,
        nonce="0123456789abcdef",
        daily_day=None,
    )
    config = RaceConfig(countdown_ms=data.draw(st.sampled_from([0, 500]), label="countdown"), default_time_limit_s=30)
    header["config"] = asdict(config)
    if sealed:
        header["seed"] = SEED
    return header


def next_entry(data: st.DataObject, state: RoomState, step: int) -> Entry:
    """A command that makes sense now (mostly) — and now and then one the race refuses."""
    race = state.race
    players = sorted(race.players)
    seated = sorted(race.seated)
    anyone = st.sampled_from([*players, *seated, "p9"])
    kinds = ["join", "start", "move", "move", "move", "undo", "leave", "give_up", "disconnect", "connect"]
    kinds += ["watch", "unwatch", "tick", "recorded", "stored", "rematch", "accept"]
    if race.mode is Mode.SOLO and not players:
        kinds = ["single"]
    if race.unrecorded:  # to the end of a race, and on to its rematch, more often
        kinds += ["recorded"] * 4
    elif race.phase is Phase.FINISHED:
        kinds += ["rematch"] * 6 + ["accept"] * 3
    elif race.phase is Phase.LOBBY and players:
        kinds += ["start"] * 2
    kind = data.draw(st.sampled_from(kinds), label="kind")
    origin = f"there:{step}"
    if kind == "single":
        return {"k": "single", "n": "Ada", "th": "a" * 64, "r": True, "o": origin}
    if kind == "join":
        name = data.draw(st.sampled_from(NAMES), label="name")
        return {"k": "join", "n": name, "th": f"{step:064x}", "e": f"{step:032x}", "o": origin}
    if kind in ("watch",):
        return {"k": "watch", "o": origin}
    if kind == "unwatch":
        held = sorted(state.watchers) or ["nobody"]
        return {"k": "unwatch", "h": data.draw(st.sampled_from(held), label="watch")}
    if kind == "tick":
        return {"k": "tick"}
    if kind == "recorded":
        pending = sorted(race.unrecorded) or players or ["p1"]
        player = data.draw(st.sampled_from(pending), label="recorded")
        return {"k": "recorded", "p": player, "g": state.game_id(player), "s": data.draw(st.booleans(), label="s")}
    if kind == "stored":
        parked = sorted(state.results.parked)
        use_parked: bool = data.draw(st.booleans(), label="parked")
        if parked and use_parked:
            return {"k": "stored", "g": data.draw(st.sampled_from(parked), label="gid")}
        player = data.draw(st.sampled_from(sorted(state.results.unstored) or players or ["p1"]), label="stored")
        return {"k": "stored", "p": player, "g": state.game_id(player)}
    if not players and not seated:
        return {"k": "tick"}
    player = data.draw(anyone, label="player")
    if kind == "move":
        racer = race.players.get(player)
        legal = [] if racer is None or racer.game is None else list(racer.game.legal_moves())
        if legal and data.draw(st.integers(0, 9), label="legal") > 0:
            move = data.draw(st.sampled_from(legal), label="move")
            return {"k": "move", "p": player, "m": move.names(), "o": origin}
        return {
            "k": "move",
            "p": player,
            "m": data.draw(st.sampled_from([["1", "2"], ["R1", "R2"], ["5"]])),
            "o": origin,
        }
    if kind == "start":
        if race.host is not None and data.draw(st.integers(0, 3), label="host starts") > 0:
            player = race.host  # (mostly the one who may start it)
        series = data.draw(st.sampled_from([None, None, 2]), label="series")
        return {"k": "start", "p": player, "lim": None, "ser": series, "o": origin}
    if kind == "disconnect":
        return {"k": "disconnect", "p": player, "h": state.holders.get(player)}
    if kind == "connect":
        return {"k": "connect", "p": player, "o": origin}
    if kind == "rematch":
        if race.host is not None and data.draw(st.integers(0, 3), label="by the host") > 0:
            player = race.host  # (mostly someone who may propose it)
        return {"k": "rematch", "p": player, "seed": SEED[::-1], "e": f"{step:032x}", "o": origin}
    if kind == "accept":
        if seated and data.draw(st.integers(0, 3), label="seated") > 0:
            player = data.draw(st.sampled_from(seated), label="accepting")
        return {"k": "accept", "p": player, "e": f"{step + 1:032x}", "o": origin}

    return {"k": kind, "p": player, "o": origin}  # undo, leave, give_up


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_random_room_restored_from_its_snapshot_after_any_entry_replays_to_the_same_room(data: st.DataObject) -> None:
    header = random_header(data)
    state = fresh(header)
    entries: list[Entry] = []
    now = T0
    for step in range(data.draw(st.integers(1, 70), label="length")):
        now += data.draw(st.sampled_from([0, 1, 700, 5_000, 40_000]), label="later")
        entry = next_entry(data, state, step)
        entry["t"] = now
        entries.append(copy.deepcopy(entry))
        replay(state, [entry])
    # after any entry hypothesis picks (and the first and last): every n of every room would be
    # quadratic; the golden logs above are checked at every n
    picked = data.draw(st.lists(st.integers(0, len(entries)), max_size=6), label="restored after")
    assert_restores_at_every_entry(header, entries, sorted({0, len(entries), *picked}))


def test_random_rooms_reach_the_states_worth_restoring() -> None:
    """The generator is not idle: rooms it makes finish, rematch, record and undo (a guard on
    the property test above)."""
    seen: set[str] = set()

    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(st.data())
    def explore(data: st.DataObject) -> None:
        header = random_header(data)
        state = fresh(header)
        now = T0
        for step in range(60):
            now += data.draw(st.sampled_from([0, 700, 40_000]))
            entry = next_entry(data, state, step)
            entry["t"] = now
            replay(state, [entry])
            race = state.race
            if race.phase is Phase.FINISHED:
                seen.add("finished")
            if race.round > 1:
                seen.add("rematch")
            if state.results.parked:
                seen.add("parked")
            if any(r.game is not None and r.game.can_undo for r in race.players.values()):
                seen.add("undoable")

    explore()
    assert {"finished", "rematch", "undoable", "parked"} <= seen, seen
