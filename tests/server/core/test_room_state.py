"""The room's state machine (:mod:`halfmoon_server.core.room_state`), with no event loop: log
entries and the time in, decisions out."""

from __future__ import annotations

from typing import Any

import pytest

from halfmoon.codes import DealCode
from halfmoon.protocol import Mode
from halfmoon_server.core import room_state
from halfmoon_server.core.commands import RECORDED_AT_END
from halfmoon_server.core.events import GameEnded, RaceStarted
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.core.room_state import (
    APPLY,
    DUPLICATE,
    GAP,
    RECORD,
    STORE,
    STORE_PARKED,
    UNRECORDED_GRACE_MS,
    ResultJob,
    ResultOutbox,
    RoomState,
    game_id,
    token_hash,
)
from halfmoon_server.errors import Refusal

CODE = "HM1-N-AAAAAAA"
HERE = "inst1"


def _state(mode: Mode = Mode.RACE, countdown_ms: int = 3000, *, version: int | None = None) -> RoomState:
    """A room's state; ``version``: its header's log format (None: a header without one, 0)."""
    header: dict[str, Any] = {"room": "K7WQ2M", "mode": str(mode), "code": CODE, "created_at": 0, "nonce": "n0nce"}
    header["day"] = None
    if version is not None:
        header["v"] = version
    race = Race("K7WQ2M", mode, DealCode.parse(CODE), RaceConfig(countdown_ms=countdown_ms), now=0)
    return RoomState(header, race, HERE)


def _apply(state: RoomState, entry: dict[str, Any]) -> list[Any] | None:
    """One entry as the shell applies it: numbered next, its due deadline settled, then applied."""
    assert state.place(state.applied + 1) == APPLY
    due = state.settle_due(entry)
    events = state.apply(entry)
    return None if events is None else [*due, *events]


def _join(state: RoomState, name: str, t: int, origin: str) -> str:
    _apply(state, {"k": "join", "n": name, "th": token_hash(name), "t": t, "o": origin})
    assert state.player is not None
    return state.player


# -- sequencing ---------------------------------------------------------------------------------------


def test_entries_apply_in_number_order_a_duplicate_is_ignored_and_a_gap_asks_to_catch_up() -> None:
    state = _state()
    assert state.place(1) == APPLY and state.applied == 1
    assert state.place(1) == DUPLICATE and state.applied == 1
    assert state.place(4) == GAP and state.applied == 1 and state.behind
    assert state.place(3) == GAP and state.highest_seen == 4  # (the highest announced stays)
    assert state.place(2) == APPLY and state.place(3) == APPLY and state.behind
    assert state.place(4) == APPLY and not state.behind


def test_the_logs_time_never_goes_back() -> None:
    state = _state()
    entry = {"k": "join", "n": "Ada", "th": "h", "t": 5_000, "o": "other:1"}
    state.settle_due(entry)
    earlier = {"k": "join", "n": "Bob", "th": "h2", "t": 3_000, "o": "other:2"}
    state.settle_due(earlier)
    assert earlier["t"] == 5_000 and state.last_time == 5_000


# -- entry application ---------------------------------------------------------------------------------


def test_a_join_keeps_the_tokens_hash_and_its_origin_holds_the_seat() -> None:
    state = _state()
    ada = _join(state, "Ada", 0, f"{HERE}:1")
    assert state.tokens == {ada: token_hash("Ada")} and state.holders == {ada: f"{HERE}:1"}
    # a log written before tokens were hashed holds them in clear
    old = _state()
    _apply(old, {"k": "join", "n": "Bob", "tok": "secret", "t": 0, "o": "x:1"})
    assert old.tokens == {old.player: token_hash("secret")}


def test_a_disconnect_from_a_connection_that_no_longer_holds_the_seat_means_nothing() -> None:
    state = _state()
    ada = _join(state, "Ada", 0, "a:1")
    _apply(state, {"k": "connect", "p": ada, "t": 10, "o": "b:7"})  # resumed elsewhere
    assert state.holders[ada] == "b:7"
    assert _apply(state, {"k": "disconnect", "p": ada, "h": "a:1", "t": 20, "o": "a:2"}) is None
    assert state.race.players[ada].connected
    assert _apply(state, {"k": "disconnect", "p": ada, "h": "b:7", "t": 30, "o": "b:8"}) is not None
    assert not state.race.players[ada].connected


def test_a_spectator_is_counted_out_once() -> None:
    state = _state()
    _apply(state, {"k": "watch", "t": 0, "o": "a:1"})
    assert state.watchers == {"a:1"}
    assert _apply(state, {"k": "unwatch", "h": "a:1", "t": 1, "o": "a:2"}) is not None
    assert _apply(state, {"k": "unwatch", "h": "a:1", "t": 2, "o": "a:3"}) is None
    assert state.watchers == set()


def test_a_deadline_passed_before_a_command_is_settled_first() -> None:
    state = _state(countdown_ms=3000)
    ada = _join(state, "Ada", 0, "a:1")
    _apply(state, {"k": "start", "p": ada, "t": 1_000, "o": "a:2"})
    assert state.next_deadline() == 4_000  # the shell arms its one timer for this
    events = _apply(state, {"k": "give_up", "p": ada, "t": 5_000, "o": "a:3"})
    assert events is not None
    assert isinstance(events[0], RaceStarted)  # the countdown ended before the give-up
    assert isinstance(events[-1], GameEnded)


def test_a_refused_command_raises_and_leaves_the_bookkeeping_as_it_was() -> None:
    state = _state()
    ada = _join(state, "Ada", 0, "a:1")
    before = (dict(state.tokens), dict(state.holders), set(state.watchers))
    with pytest.raises(Refusal):
        _apply(state, {"k": "move", "p": ada, "m": ["1", "2"], "t": 10, "o": "a:2"})  # the race has not begun
    assert (state.tokens, state.holders, state.watchers) == before


# -- the results outbox -----------------------------------------------------------------------------------


def _ended_solo(origin: str, t: int = 1_000, *, version: int | None = None) -> RoomState:
    state = _state(Mode.SOLO, version=version)
    _apply(state, {"k": "single", "n": "Ada", "th": "h", "r": True, "t": 0, "o": origin})
    events = _apply(state, {"k": "give_up", "p": state.player, "t": t, "o": origin})
    assert events is not None and any(isinstance(e, GameEnded) for e in events)
    return state


def test_the_entry_that_ends_a_game_records_it_and_its_write_is_due_at_once_on_its_instance() -> None:
    state = _ended_solo(f"{HERE}:1", version=RECORDED_AT_END)
    assert state.records_at_end and not state.race.unrecorded
    over = state.race.players["p1"]
    assert over.game_id == state.game_id("p1")
    assert state.results.unstored == {"p1"} and state.results.busy
    assert state.results_due(1_000) == [ResultJob(STORE, "p1")]  # no RECORD job: nothing more to log
    theirs = _ended_solo("other:1", version=RECORDED_AT_END)
    assert theirs.results_due(1_000) == [] and theirs.results_next_due() == 1_000 + UNRECORDED_GRACE_MS
    assert theirs.results_due(1_000 + UNRECORDED_GRACE_MS) == [ResultJob(STORE, "p1")]


def test_the_entry_that_ends_a_game_carries_its_game_over_and_the_last_one_the_race_over() -> None:
    state = _state(version=RECORDED_AT_END)
    ada = _join(state, "Ada", 0, "a:1")
    bob = _join(state, "Bob", 0, "a:2")
    _apply(state, {"k": "start", "p": ada, "lim": 60, "t": 0, "o": "a:3"})
    _apply(state, {"k": "tick", "t": 3_000, "o": "a:4"})  # the countdown's end
    events = _apply(state, {"k": "give_up", "p": bob, "t": 5_000, "o": "a:5"})
    assert events is not None
    assert [type(e).__name__ for e in events][-2:] == ["GameEnded", "GameOver"]
    assert events[-1].game == state.game_id(bob)
    # the time limit ends Ada's game, and with it the race: one entry, both events
    events = _apply(state, {"k": "tick", "t": 63_000, "o": "a:6"})
    assert events is not None
    assert [type(e).__name__ for e in events][-3:] == ["GameEnded", "GameOver", "RaceOver"]
    assert {line.player: line.game for line in events[-1].results} == {p: state.game_id(p) for p in (ada, bob)}
    assert state.results.unstored == {ada, bob} and not state.race.unrecorded


def test_a_stray_recorded_entry_in_a_log_that_records_at_the_end_changes_nothing() -> None:
    state = _ended_solo(f"{HERE}:1", version=RECORDED_AT_END)
    _apply(state, {"k": "stored", "p": "p1", "g": state.game_id("p1"), "t": 1_100, "o": f"{HERE}:2"})
    assert not state.results.busy
    events = _apply(state, {"k": "recorded", "p": "p1", "g": state.game_id("p1"), "t": 1_200, "o": "other:3"})
    assert events == [] and not state.results.busy and state.results_next_due() is None


# -- a log of format 1 or older: each game recorded by a ``recorded`` entry of its own -----------------


def test_a_game_this_instance_ended_is_recorded_at_once() -> None:
    state = _ended_solo(f"{HERE}:1")
    assert state.results.changed
    assert state.results_due(1_000) == [ResultJob(RECORD, "p1")]
    assert state.results_due(1_000) == []  # under way: not started twice
    assert state.results.busy


def test_a_game_another_instance_ended_is_taken_up_after_the_grace() -> None:
    state = _ended_solo("other:1", t=1_000)
    assert state.results_due(1_000 + UNRECORDED_GRACE_MS - 1) == []
    assert state.results_next_due() == 1_000 + UNRECORDED_GRACE_MS
    assert state.results_due(1_000 + UNRECORDED_GRACE_MS) == [ResultJob(RECORD, "p1")]


def test_a_replayed_game_of_this_instance_waits_the_grace_too() -> None:
    state = _state(Mode.SOLO)
    state.replaying = True
    _apply(state, {"k": "single", "n": "Ada", "th": "h", "r": True, "t": 0, "o": f"{HERE}:1"})
    _apply(state, {"k": "give_up", "p": "p1", "t": 1_000, "o": f"{HERE}:2"})
    state.replaying = False
    assert state.results_due(1_000) == []


def test_a_failed_write_is_tried_again_after_a_backoff_that_doubles_to_its_maximum() -> None:
    state = _ended_solo(f"{HERE}:1")
    [job] = state.results_due(1_000)
    # the first write failed: ``recorded`` is logged without ``s``; the game is unstored
    _apply(state, {"k": "recorded", "p": "p1", "g": state.game_id("p1"), "t": 1_100, "o": f"{HERE}:2"})
    state.settle(job, 1_100, failed=True)
    assert state.results.unstored == {"p1"}
    now, waits = 1_100, []
    for _ in range(9):
        due = state.results_next_due()
        assert due is not None
        assert state.results_due(due - 1) == []
        waits.append(due - now)
        now = due
        [job] = state.results_due(now)
        assert job == ResultJob(STORE, "p1")
        state.settle(job, now, failed=True)
    assert waits == [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]
    # the database is back: nothing waits out its backoff
    state.results.hurry(now + 1)
    assert state.results_due(now + 1) == [ResultJob(STORE, "p1")]
    _apply(state, {"k": "stored", "p": "p1", "g": state.game_id("p1"), "t": now + 2, "o": f"{HERE}:3"})
    state.settle(ResultJob(STORE, "p1"), now + 2)
    assert not state.results.busy and state.results_next_due() is None


def test_a_job_whose_entry_was_not_logged_is_tried_again() -> None:
    state = _ended_solo(f"{HERE}:1")
    [job] = state.results_due(1_000)
    state.settle(job, 1_000)  # the ``recorded`` did not reach the log
    assert state.pending(job) and state.results_next_due() == 1_500


def test_a_game_this_instance_recorded_is_written_at_once_and_another_instances_after_the_grace() -> None:
    state = _ended_solo(f"{HERE}:1")
    [job] = state.results_due(1_000)
    _apply(state, {"k": "recorded", "p": "p1", "g": state.game_id("p1"), "t": 1_000, "o": f"{HERE}:2"})
    state.settle(job, 1_000)
    assert not state.pending(job)
    [write] = state.results_due(1_000)
    assert write == ResultJob(STORE, "p1")  # (not after the grace's 11_000)
    state.settle(write, 1_000)  # the write went through, the ``stored`` did not reach the log
    assert state.pending(write) and state.results_next_due() == 1_500
    theirs = _ended_solo("other:1")
    _apply(theirs, {"k": "recorded", "p": "p1", "g": theirs.game_id("p1"), "t": 1_000, "o": "other:2"})
    assert theirs.results_due(1_000) == [] and theirs.results_next_due() == 1_000 + UNRECORDED_GRACE_MS


def test_the_backoff_constants_are_read_when_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(room_state, "STORE_RETRY_FIRST_S", 0.05)
    outbox = ResultOutbox()
    outbox.failed("p1", 0)
    outbox.failed("p1", 50)
    assert outbox.next_due(set()) is None  # (nothing pending: a key's time alone is no job)
    outbox.unstored.add("p1")
    assert outbox.next_due(set()) == 150


@pytest.mark.parametrize("version", [None, RECORDED_AT_END])
def test_a_rematch_parks_the_unstored_games_and_their_stored_clears_them(version: int | None) -> None:
    state = _state(countdown_ms=0, version=version)
    ada = _join(state, "Ada", 0, "a:1")
    bob = _join(state, "Bob", 0, "b:1")
    _apply(state, {"k": "start", "p": ada, "t": 10, "o": "a:2"})
    _apply(state, {"k": "tick", "t": 20, "o": "a:3"})
    for player in (ada, bob):
        _apply(state, {"k": "give_up", "p": player, "t": 30, "o": "a:4"})
        if version is None:  # (an older log: each game's ``recorded`` an entry of its own)
            _apply(state, {"k": "recorded", "p": player, "g": state.game_id(player), "t": 40, "o": "a:5"})
    assert state.results.unstored == {ada, bob}
    first = {p: game_id("n0nce", p, 1) for p in (ada, bob)}
    _apply(state, {"k": "rematch", "p": ada, "seed": "5e" * 32, "t": 50, "o": "a:6"})
    assert set(state.results.parked) == set(first.values()) and not state.results.unstored
    assert state.results.parked[first[ada]].nickname == "Ada"
    assert sorted(state.results_due(50), key=lambda j: j.key) == sorted(
        (ResultJob(STORE_PARKED, g) for g in first.values()), key=lambda j: j.key
    )
    _apply(state, {"k": "stored", "g": first[ada], "t": 60, "o": "a:7"})
    assert set(state.results.parked) == {first[bob]}


@pytest.mark.parametrize("left_first", [True, False])
def test_a_recorded_entry_about_a_player_whose_game_has_not_ended_means_nothing(left_first: bool) -> None:
    """Only a game of this race that ended can be unstored: an entry about a player in the lobby,
    or who left it (a stray or forged entry), would make the rematch's parking look for a game
    nobody has."""
    state = _state(countdown_ms=0)
    gone = _join(state, "Ada", 0, "a:1")
    leave = {"k": "leave", "p": gone, "t": 5, "o": "a:2"}
    if left_first:
        _apply(state, leave)
    _apply(state, {"k": "recorded", "p": gone, "g": state.game_id(gone), "s": False, "t": 6, "o": "a:3"})
    if not left_first:
        _apply(state, leave)
    assert not state.results.unstored and not state.results.recorded_at
    bob = _join(state, "Bob", 7, "b:1")
    _apply(state, {"k": "start", "p": bob, "t": 10, "o": "b:2"})
    _apply(state, {"k": "give_up", "p": bob, "t": 30, "o": "b:3"})
    _apply(state, {"k": "recorded", "p": bob, "g": state.game_id(bob), "t": 40, "o": "b:4"})
    _apply(state, {"k": "rematch", "p": bob, "seed": "5e" * 32, "t": 50, "o": "b:5"})
    assert [game.nickname for game in state.results.parked.values()] == ["Bob"]
