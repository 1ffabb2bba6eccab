"""The race core without sockets or an event loop: commands in with the time, events out —
whole races, the host hand-over, deadlines, resumes, results, and what spectators may see.
(Like websockets' tests of its sans-I/O protocol: plain synchronous calls, microseconds each.)"""

from __future__ import annotations

import doctest
import json
from datetime import date
from typing import Any

import pytest

from halfmoon.codes import DealCode, daily_code
from halfmoon.game import Game, Move
from halfmoon.protocol import Mode, Phase, PlayerStatus, commitment_of
from halfmoon.view import HIDDEN_TOP
from halfmoon_server.core import events, race
from halfmoon_server.core.audience import Audience
from halfmoon_server.core.race import DAY_MS, Race, RaceConfig
from halfmoon_server.errors import Refusal
from tests.server.support import illegal_move, stalling_line, won_record

CODE = DealCode.parse("HM1-N-AAAAAAA")
T0 = 1_795_900_000_000
CONFIG = RaceConfig(countdown_ms=3000, default_time_limit_s=600)


def kinds(evs: list[events.Event]) -> list[str]:
    return [type(e).__name__ for e in evs]


def lobby(*names: str, config: RaceConfig = CONFIG) -> Race:
    r = Race("K7WQ2M", Mode.RACE, CODE, config, now=T0)
    for name in names:
        r.join(name, T0)
    return r


def running(*names: str, config: RaceConfig = CONFIG) -> Race:
    r = lobby(*names, config=config)
    r.start("p1", None, T0)
    assert kinds(r.tick(T0 + config.countdown_ms)) == ["RaceStarted"]
    return r


def winning_line() -> list[Move]:
    record = won_record()
    assert str(record.code) == str(CODE)
    return [step for step in record.moves if isinstance(step, Move)]


def test_the_module_examples_run() -> None:
    assert doctest.testmod(race).failed == 0


def test_a_lobby_gets_a_host_and_refuses_a_taken_name_or_a_full_room() -> None:
    r = Race("K7WQ2M", Mode.RACE, CODE, RaceConfig(max_players=2), now=T0)
    ada, joined = r.join("Ada", T0)
    assert (ada.id, r.host) == ("p1", "p1")
    assert kinds(joined) == ["PlayerJoined"]
    with pytest.raises(Refusal) as taken:
        r.join("ADA", T0)
    assert taken.value.code == "name_taken"
    r.join("Bob", T0)
    with pytest.raises(Refusal) as full:
        r.join("Cy", T0)
    assert full.value.code == "room_full" and list(r.players) == ["p1", "p2"]


def test_the_countdown_waits_for_its_deadline_and_starts_everyone_on_the_same_deal() -> None:
    r = lobby("Ada", "Bob")
    with pytest.raises(Refusal) as not_host:
        r.start("p2", None, T0)
    assert not_host.value.code == "not_host" and r.phase is Phase.LOBBY
    (countdown,) = r.start("p1", 120, T0)
    assert countdown == events.CountdownStarted(T0 + 3000, T0, 120)
    assert r.next_deadline() == T0 + 3000
    assert r.tick(T0 + 2999) == [] and r.phase is Phase.COUNTDOWN
    with pytest.raises(Refusal) as early:
        r.move("p1", winning_line()[0], T0 + 2999)
    assert early.value.code == "not_started"
    (started,) = r.tick(T0 + 3000)
    assert isinstance(started, events.RaceStarted) and started.code == str(CODE)
    assert started.boards["p1"] == started.boards["p2"]
    assert r.next_deadline() == T0 + 3000 + 120_000


def test_a_move_is_checked_by_the_engine_and_a_refusal_changes_nothing() -> None:
    r = running("Ada", "Bob")
    ada = r.players["p1"]
    assert ada.game is not None
    before = ada.game.move_count
    with pytest.raises(Refusal) as refused:
        r.move("p1", illegal_move(ada.game), T0 + 4000)
    assert refused.value.code == "illegal_move" and refused.value.reason == "not_a_match"
    assert ada.game.move_count == before and ada.steps == []
    move = winning_line()[0]
    (moved,) = r.move("p1", move, T0 + 5000)
    assert isinstance(moved, events.Moved)
    assert (moved.player, moved.action, moved.moves, moved.score, moved.elapsed_ms) == ("p1", "move", 1, 10, 2000)
    assert [c[0] for c in moved.changes] == list(move.positions)
    assert r.players["p2"].game is not None and r.players["p2"].game.move_count == 0, "Bob's game is his own"
    (undone,) = r.undo("p1", T0 + 6000)
    assert isinstance(undone, events.Moved) and undone.action == "undo" and undone.moves == 0
    with pytest.raises(Refusal) as nothing:
        r.undo("p1", T0 + 6000)
    assert nothing.value.code == "nothing_to_undo"
    with pytest.raises(Refusal) as spectator:
        r.move(None, move, T0)
    assert spectator.value.code == "not_playing"


def test_a_solo_clock_starts_at_the_first_move_and_stands_still_while_stalled() -> None:
    from halfmoon_server.core.commands import apply_entry

    line = stalling_line(str(CODE))
    r = Race("K7WQ2M", Mode.SOLO, CODE, CONFIG, now=T0)
    apply_entry(r, {"k": "single", "n": "Ada", "tok": "t", "r": True, "t": T0})
    ada = r.players["p1"]
    assert r.elapsed(ada, T0 + 60_000) == 0, "nothing counts before the first move"
    moved = r.move("p1", line[0], T0 + 60_000)[0]
    assert isinstance(moved, events.Moved) and moved.elapsed_ms == 0
    t = T0 + 60_000
    for move in line[1:]:
        t += 1000
        r.move("p1", move, t)
    assert ada.status is PlayerStatus.STALLED
    played = (len(line) - 1) * 1000
    assert r.elapsed(ada, t + 30_000) == played, "the clock stands still while stalled"
    r.undo("p1", t + 30_000)
    assert r.elapsed(ada, t + 32_000) == played + 2000, "and goes on after an undo"
    over = r.give_up("p1", t + 33_000)
    assert ada.time_ms == played + 3000 and any(isinstance(e, events.GameEnded) for e in over)


def test_a_whole_race_a_win_a_give_up_and_the_results_once_every_game_is_recorded() -> None:
    r = running("Ada", "Bob")
    bob_gave_up = r.give_up("p2", T0 + 10_000)
    assert kinds(bob_gave_up) == ["PlayerChanged", "GameEnded"]
    with pytest.raises(Refusal):
        r.give_up("p2", T0 + 10_001)
    line = winning_line()
    out: list[events.Event] = []
    for k, move in enumerate(line):
        out = r.move("p1", move, T0 + 20_000 + k)
    assert kinds(out) == ["Moved", "GameEnded"]
    assert r.phase is Phase.FINISHED and r.results is None, "the race waits for the games to be recorded"
    (bob_over,) = r.recorded("p2", "g-bob")
    assert isinstance(bob_over, events.GameOver) and bob_over.outcome is PlayerStatus.GAVE_UP
    ada_over, race_over = r.recorded("p1", "g-ada")
    assert isinstance(ada_over, events.GameOver) and (ada_over.score, ada_over.moves) == (520, 48)
    assert ada_over.time_ms == 20_000 + 47 - 3000
    assert isinstance(race_over, events.RaceOver)
    assert [(x.rank, x.player, x.outcome, x.game) for x in race_over.results] == [
        (1, "p1", PlayerStatus.WON, "g-ada"),
        (2, "p2", PlayerStatus.GAVE_UP, "g-bob"),
    ]


def test_ties_rank_by_time_then_by_who_finished_first() -> None:
    r = running("Ada", "Bob", "Cy")
    r.give_up("p1", T0 + 9000)  # 0 points, 6 s
    r.give_up("p2", T0 + 5000)  # 0 points, 2 s
    r.give_up("p3", T0 + 5000)  # 0 points, 2 s, finished with Bob: the order they finished in
    for pid in ("p3", "p1", "p2"):
        out = r.recorded(pid, pid)
    over = out[-1]
    assert isinstance(over, events.RaceOver)
    assert [x.player for x in over.results] == ["p2", "p3", "p1"]


def test_the_time_limit_times_out_everyone_still_playing_at_the_limit() -> None:
    r = running("Ada", "Bob")
    r.give_up("p2", T0 + 4000)
    deadline = r.next_deadline()
    assert deadline == T0 + 3000 + 600_000
    assert r.tick(deadline - 1) == []
    out = r.tick(deadline + 250)
    assert kinds(out) == ["PlayerChanged", "GameEnded"]
    ada = r.players["p1"]
    assert ada.status is PlayerStatus.TIMED_OUT and ada.time_ms == 600_000
    assert r.phase is Phase.FINISHED and r.next_deadline() is None


def test_a_stall_is_not_the_end_and_an_undo_plays_on() -> None:
    r = running("Ada")
    line = stalling_line(str(CODE))
    for move in line:
        out = r.move("p1", move, T0 + 5000)
    assert r.players["p1"].status is PlayerStatus.STALLED and kinds(out) == ["Moved"]
    (undone,) = r.undo("p1", T0 + 6000)
    assert isinstance(undone, events.Moved) and undone.status is PlayerStatus.PLAYING


def test_the_host_hands_over_when_the_host_drops_or_leaves_the_lobby() -> None:
    r = lobby("Ada", "Bob", "Cy")
    (dropped,) = r.disconnect("p1", T0 + 1)
    assert isinstance(dropped, events.PlayerChanged) and dropped.with_host and dropped.host == "p2"
    assert not dropped.player.connected
    (back,) = r.connect("p1", T0 + 2)
    assert isinstance(back, events.PlayerChanged) and back.host == "p2", "Bob stays host"
    assert r.connect("p1", T0 + 3) == [], "already connected: nothing to tell"
    (left,) = r.leave("p2", T0 + 4)
    assert isinstance(left, events.PlayerLeft) and left.removed and left.host == "p1"
    assert left.player.status is PlayerStatus.LEFT and "p2" not in r.players
    _, joined = r.join("Bob", T0 + 5)  # the name is free again
    assert kinds(joined) == ["PlayerJoined"]


def test_a_player_who_leaves_a_running_race_is_left_and_the_race_ends_without_them() -> None:
    r = running("Ada", "Bob")
    out = r.leave("p2", T0 + 8000)
    assert kinds(out) == ["GameEnded", "PlayerLeft"]
    assert r.players["p2"].status is PlayerStatus.LEFT and r.phase is Phase.RUNNING
    out = r.give_up("p1", T0 + 9000)
    assert r.phase is Phase.FINISHED


def test_abandoned_rooms_are_stale_after_the_wait_and_close_as_left() -> None:
    config = RaceConfig(countdown_ms=0, abandon_after_ms=60_000, finished_ttl_ms=30_000)
    r = running("Ada", config=config)
    r.disconnect("p1", T0 + 1000)
    assert not r.is_stale(T0 + 61_000)
    r.watch()
    assert not r.is_stale(T0 + 61_001), "someone watches"
    r.unwatch()
    assert r.is_stale(T0 + 61_001)
    assert kinds(r.abandon(T0 + 61_001)) == ["GameEnded"]
    assert r.players["p1"].status is PlayerStatus.LEFT and r.phase is Phase.FINISHED
    assert not r.is_stale(T0 + 200_000), "its game is not recorded yet"
    r.recorded("p1", None)
    assert r.is_stale(T0 + 61_001 + 30_001)


def test_a_daily_code_is_hidden_until_every_attempt_of_the_day_has_ended() -> None:
    day = date(2026, 11, 28)
    code = daily_code(day, b"secret", long=True)
    r = Race("K7WQ2M", Mode.DAILY, code, CONFIG, now=T0, daily_day=day)
    r.join("Ada", T0)
    r.time_limit_s = 1800  # a daily attempt's limit
    (started,) = r.begin(T0)
    assert isinstance(started, events.RaceStarted) and started.code is None
    assert r.snapshot("p1", T0, watcher=False).code is None
    r.give_up("p1", T0 + 1000)
    assert r.snapshot("p1", T0 + 1000, watcher=False).code is None, "not to its own player either"
    (over, _) = r.recorded("p1", "g", T0 + 1000)
    assert isinstance(over, events.GameOver) and over.code is None
    midnight = int(T0 // DAY_MS + 1) * DAY_MS
    assert r.snapshot(None, midnight, watcher=False).code is None, "an attempt begun at 23:59 still runs"
    assert r.snapshot(None, midnight + 1_800_000, watcher=False).code == str(code)


def test_a_sealed_race_shows_its_code_to_everyone_once_the_race_is_over() -> None:
    r = Race("K7WQ2M", Mode.RACE, CODE, CONFIG, now=T0, salt="5" * 32)
    for name in ("Ada", "Bob"):
        r.join(name, T0)
    assert r.snapshot("p1", T0, watcher=False).code is None and r.commitment == commitment_of(str(CODE), "5" * 32)
    r.start("p1", None, T0)
    (started,) = r.tick(T0 + 3000)
    assert isinstance(started, events.RaceStarted) and started.code is None and started.commitment == r.commitment
    r.give_up("p1", T0 + 5000)
    # Ada's game is over, but Bob still plays: a second seat of hers giving up would hand her the
    # deal, so nobody sees the code before the race is over
    assert r.snapshot("p1", T0 + 5000, watcher=False).code is None
    assert r.snapshot("p2", T0 + 5000, watcher=False).code is None, "Bob still plays"
    assert r.snapshot(None, T0 + 5000, watcher=True).code is None, "spectators wait for the race's end"
    (over,) = r.recorded("p1", "g1", T0 + 5000)
    assert isinstance(over, events.GameOver) and (over.code, over.salt) == (None, None)
    r.give_up("p2", T0 + 6000)
    bob_over, race_over = r.recorded("p2", "g2", T0 + 6000)
    assert isinstance(bob_over, events.GameOver) and (bob_over.code, bob_over.salt) == (str(CODE), "5" * 32)
    assert isinstance(race_over, events.RaceOver) and (race_over.code, race_over.salt, race_over.sealed) == (
        str(CODE),
        "5" * 32,
        True,
    )
    assert r.snapshot(None, T0 + 6000, watcher=True).code == str(CODE)


def test_look_alike_names_are_the_same_name_in_a_room() -> None:
    r = lobby("Ada")
    for look_alike in ("ADA", "\u0410da", "\uff21\uff44\uff41", "\U0001d400\U0001d41d\U0001d41a"):
        with pytest.raises(Refusal) as taken:
            r.join(look_alike, T0)
        assert taken.value.code == "name_taken", look_alike


def test_a_snapshot_shows_a_player_their_own_board_and_a_watcher_every_board() -> None:
    r = running("Ada", "Bob")
    r.move("p1", winning_line()[0], T0 + 4000)
    mine = r.snapshot("p1", T0 + 4000, watcher=False)
    ada = r.players["p1"].game
    assert ada is not None and mine.board is not None and mine.boards is None and mine.can_undo
    assert mine.board["counts"] == [ada.count_at(p) for p in range(20)]
    watching = r.snapshot(None, T0 + 4000, watcher=True)
    assert watching.board is None and watching.boards is not None and set(watching.boards) == {"p1", "p2"}


# -- what spectators see (the audience of the core's events) --------------------------------------------


def frames_of(audience: Audience, evs: list[events.Event], *, seq: int = 1, msg_id: int | None = None) -> list[Any]:
    out = []
    for event in evs:
        frames = audience.frames(event, seq, watched=True, msg_id=msg_id)
        if frames is not None:
            out.append(frames)
    return out


def test_a_spectator_sees_a_card_only_once_every_racer_still_playing_has_seen_it() -> None:
    r = running("Ada", "Bob")
    audience = Audience(r)
    audience.start_watching()
    move = winning_line()[0]
    (ada_frames,) = frames_of(audience, r.move("p1", move, T0 + 4000), msg_id=7)
    assert ada_frames.spectators is not None
    spectator = json.loads(ada_frames.spectators)
    assert [c["card"] for c in spectator["changes"]] == [HIDDEN_TOP, HIDDEN_TOP], "Bob has not uncovered them"
    assert "reveals" not in spectator
    mine = json.loads(ada_frames.for_player("p1"))
    assert mine["id"] == 7 and mine["can_undo"] is True and HIDDEN_TOP not in json.dumps(mine)
    assert "changes" not in json.loads(ada_frames.for_player("p2")), "Bob never sees Ada's cards"
    (bob_frames,) = frames_of(audience, r.move("p2", move, T0 + 5000), seq=2)
    spectator = json.loads(bob_frames.spectators)
    assert HIDDEN_TOP not in [c["card"] for c in spectator["changes"]]
    game = Game.from_code(str(CODE))
    game.push(move)
    assert spectator["reveals"] == [
        {"player": "p1", "pos": str(p + 1), "card": game.card_at(p).name, "count": game.count_at(p)}  # type: ignore[union-attr]
        for p in move.positions
    ]


def test_when_a_racer_gives_up_the_spectators_are_shown_what_only_they_held_back() -> None:
    r = running("Ada", "Bob")
    audience = Audience(r)
    audience.start_watching()
    frames_of(audience, r.move("p1", winning_line()[0], T0 + 4000))
    progress, *_ = frames_of(audience, r.give_up("p2", T0 + 5000), seq=2)
    body = json.loads(progress.spectators)
    assert body["type"] == "progress" and {x["player"] for x in body["reveals"]} == {"p1"}
    assert "reveals" not in json.loads(progress.players), "players never get reveals"


def test_game_over_goes_to_its_player_alone() -> None:
    r = running("Ada", "Bob")
    r.give_up("p1", T0 + 5000)
    (over,) = r.recorded("p1", "g1")
    frames = Audience(r).frames(over, 9, watched=True)
    assert frames is not None and frames.players is None and frames.spectators is None
    assert frames.for_player("p2") is None
    body = json.loads(frames.for_player("p1") or b"{}")
    assert (body["type"], body["seq"], body["game"], body["outcome"]) == ("game_over", 9, "g1", "gave_up")


def _random_race(seed: int, *, watch_every_step: bool, checkpoints: set[int]) -> dict[int, Any]:
    """Three racers on one deal, random legal moves and undos (one gives up midway); the
    spectators' view at each of ``checkpoints`` (command numbers). ``watch_every_step``: the
    view is also taken after every command (a spectator there from the start)."""
    import random

    rng = random.Random(seed)
    r = running("Ada", "Bob", "Cy")
    views: dict[int, Any] = {}
    now = T0 + 4000
    for number in range(1, 121):
        now += 100
        player = rng.choice([p for p, racer in r.players.items() if racer.playing] or ["p1"])
        racer = r.players[player]
        if not racer.playing:
            break
        game = racer.game
        assert game is not None
        legal = list(game.legal_moves())
        if number == 60 and player != "p1":
            r.give_up(player, now)
        elif legal and (rng.random() < 0.85 or not game.can_undo):
            r.move(player, rng.choice(legal), now)
        elif game.can_undo:
            r.undo(player, now)
        if watch_every_step or number in checkpoints:
            view = r.spectator_view()
            if number in checkpoints:
                views[number] = view
    return views


@pytest.mark.parametrize("seed", range(12))
def test_a_spectator_who_comes_late_sees_what_one_there_from_the_start_sees(seed: int) -> None:
    """The spectators' copy of each board is built when first needed (nobody watches most
    races); caught up at once, it must stop at the same held-back move as one kept up to date
    move by move (the cards public only ever grow)."""
    for first_look in (5, 40, 90):
        checkpoints = {first_look, first_look + 10, 120}
        late = _random_race(seed, watch_every_step=False, checkpoints=checkpoints)
        always = _random_race(seed, watch_every_step=True, checkpoints=checkpoints)
        assert late == always, f"seed {seed}, first look at command {first_look}"


def test_nobody_watching_no_spectators_copy_is_made() -> None:
    r = running("Ada", "Bob")
    audience = Audience(r)
    started = audience.frames(events.RaceStarted(T0, None, {}, None), 1, watched=False)
    assert started is not None and started.spectators is None and audience.shown == {}
    r.move("p1", winning_line()[0], T0 + 4000)
    assert all(racer.public is None for racer in r.players.values())
    audience.start_watching()  # the first spectator: each copy built and caught up
    assert all(racer.public is not None for racer in r.players.values())
    assert audience.shown["p1"] != audience.shown["p2"], "Ada's move is on her board only"


# -- ranked and casual results (halfmoon_server.core.ranking) ---------------------------------------------


def _sealed(*names: str, config: RaceConfig = CONFIG) -> Race:
    r = Race("K7WQ2M", Mode.RACE, CODE, config, now=T0, salt="ab" * 16)
    for name in names:
        r.join(name, T0)
    return r


def _play_out(r: Race, player: str, start: int, step_ms: int) -> int:
    """Play the winning line at ``step_ms`` a move from ``start``; returns the time at the end."""
    now = start
    for move in winning_line():
        now += step_ms
        r.move(player, move, now)
    return now


def test_an_open_race_is_casual_from_the_start_and_in_its_results() -> None:
    r = running("Ada")
    ada = r.players["p1"]
    assert (ada.ranked, ada.unranked_reason) == (False, "casual")  # welcome says so before the first move
    _play_out(r, "p1", T0 + 3000, 10_000)
    r.recorded("p1", "g1", T0 + 600_000)
    (line,) = r.results or ()
    assert (line.ranked, line.unranked_reason) == (False, "casual")
    assert line.to_json()["ranked"] is False and line.to_json()["unranked_reason"] == "casual"


def test_a_sealed_race_at_a_persons_pace_is_ranked_and_its_rematch_too() -> None:
    r = _sealed("Ada")
    r.start("p1", None, T0)
    r.tick(T0 + 3000)
    end = _play_out(r, "p1", T0 + 3000, 2000)  # 48 moves, 104 taps, 96 s: a person's pace
    [over] = [e for e in r.recorded("p1", "g1", end) if isinstance(e, events.GameOver)]
    assert (over.ranked, over.unranked_reason) == (True, None)
    assert r.results is not None and r.results[0].ranked is True
    r.rematch("p1", end + 1, code=DealCode.parse("HM1-N-AAAAAAB"), salt="cd" * 16)
    assert r.players["p1"].ranked is True  # a rematch is sealed: ranked


def test_a_solo_game_is_casual_and_a_dailys_retry_is_not_ranked() -> None:
    from halfmoon_server.core.commands import apply_entry

    solo = Race("K7WQ2M", Mode.SOLO, CODE, CONFIG, now=T0)
    apply_entry(solo, {"k": "single", "n": "Ada", "tok": "t", "r": True, "t": T0})
    assert solo.players["p1"].unranked_reason == "casual"
    for first, expected in ((True, (True, None)), (False, (False, "daily_retry"))):
        daily = Race("K7WQ2M", Mode.DAILY, CODE, CONFIG, now=T0, daily_day=date(2026, 11, 28))
        apply_entry(daily, {"k": "single", "n": "Ada", "tok": "t", "r": first, "lim": 600, "t": T0})
        racer = daily.players["p1"]
        assert (racer.ranked, racer.unranked_reason) == expected


def test_a_bot_is_shown_as_a_bot_to_everyone_and_never_ranked_even_in_a_sealed_race() -> None:
    from halfmoon_server.core.commands import apply_entry

    r = _sealed("Ada")
    [joined] = apply_entry(r, {"k": "join", "n": "bot-1", "tok": "t", "bot": True, "t": T0})
    assert isinstance(joined, events.PlayerJoined) and joined.player.to_json()["bot"] is True
    assert "bot" not in r.summary(r.players["p1"], T0).to_json()  # a person's summary is unchanged
    r.start("p1", None, T0)
    r.tick(T0 + 3000)
    _play_out(r, "p2", T0 + 3000, 2000)
    r.give_up("p1", T0 + 200_000)
    r.recorded("p2", "g2", T0 + 200_000)
    r.recorded("p1", "g1", T0 + 200_000)
    lines = {line.name: (line.ranked, line.unranked_reason) for line in r.results or ()}
    assert lines == {"Ada": (True, None), "bot-1": (False, "bot")}
    r.rematch("p1", T0 + 300_000, code=DealCode.parse("HM1-N-AAAAAAB"), salt="cd" * 16)
    assert r.seated["p2"].bot is True  # still a bot in the rematch


def test_a_finish_faster_than_a_person_can_tap_is_not_ranked_and_says_why() -> None:
    r = _sealed("Ada")
    r.start("p1", None, T0)
    r.tick(T0 + 3000)
    end = _play_out(r, "p1", T0 + 3000, 50)  # 48 moves in 2.4 s: 104 taps at 23 ms each
    [over] = [e for e in r.recorded("p1", "g1", end) if isinstance(e, events.GameOver)]
    assert (over.ranked, over.unranked_reason) == (False, "too_fast")
    snapshot = r.snapshot("p1", end, watcher=False).to_json()
    assert snapshot["game_over"]["unranked_reason"] == "too_fast"  # the end box says why after a reload
    # the same line with the floor turned off is ranked
    off = _sealed("Ada", config=RaceConfig(countdown_ms=3000, default_time_limit_s=600, tap_floor_ms=0))
    off.start("p1", None, T0)
    off.tick(T0 + 3000)
    _play_out(off, "p1", T0 + 3000, 50)
    assert off.players["p1"].ranked is True
