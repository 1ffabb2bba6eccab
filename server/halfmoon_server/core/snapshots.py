"""A room's snapshot: its whole state after entry ``n`` of its log, as JSON data, and back.

A room is rebuilt by replaying its log (:mod:`halfmoon_server.core.commands`); a log that grew
long (a client may append thousands of move/undo pairs) would cost as much to replay on every
restart, takeover and REST read. So every ``--snapshot-every`` entries the room shell stores a
snapshot beside the log (:meth:`halfmoon_server.ports.RoomLog.save_snapshot`), and a load
restores the latest one and replays only the entries after it.

The promise, tested over every golden room log at every ``n`` and over random games
(tests/server/core/test_snapshots.py): **restoring the snapshot taken after entry n and
replaying entries n+1… gives exactly the state a replay from the first entry gives** — the
race (every racer's game, steps, times, statuses, clocks, splits, results, seats, the series'
table; the spectators' copies of the boards are built again when first needed), the seats' token
hashes and holders, the watches, the results' outbox and the number of events published so far.

What a snapshot holds is what the log holds already, no more (it lives in the same store):
token *hashes* (never a token), the player keys' hashes, a sealed race's seed as the header or
its rematch entry holds it. A sealed race's code is not written (it is derived again from the
seed and the contributions, as the race derived it at its start); a code is written only where
the log itself holds it literally (an open race's or a daily attempt's header, a rematch entry
of the previous release). A game is written as its steps (moves and undos, as a game record
writes them), the moves still in effect (``board``) and how many of them ``undo`` can still take
back; its board is played again from those moves. Never pickled: other instances, of other
releases, read it.

A REST read of a sleeping room restores it ``lazy`` (:meth:`halfmoon_server.rooms.room.Room.restore`):
the same state, but each game's steps are kept as the snapshot's text and parsed only when
something asks for them (:class:`~halfmoon_server.core.step_text.UnreadSteps`) — the view a
reader gets holds no board and no step, and a 20,000-step game is then restored in well under
a millisecond instead of ~3 ms. The promise, tested the same way (tests/server/core/test_snapshots.py):
**a lazy restore replayed to entry m gives the view every viewer gets from a replay from the
first entry, and, once its steps are read, the same whole state.** A snapshot of this version
written before ``board`` existed has none: it is restored in full, lazy or not.

Pure: no I/O, no clock. A snapshot whose version (``v``) is not :data:`SNAPSHOT_VERSION` is not
restored (:class:`SnapshotError`): the room is then replayed from its first entry.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any, Final

from halfmoon.codes import DealCode, sealed_code
from halfmoon.deal import Deal
from halfmoon.game import Game, Move
from halfmoon.protocol import FINISHED, Json, Phase, PlayerStatus, Result, Unranked
from halfmoon.record import UNDO, Step
from halfmoon_server.core.commands import Entry, race_of
from halfmoon_server.core.race import Race, Racer, Standing
from halfmoon_server.core.records import FinishedGame
from halfmoon_server.core.room_state import RoomState
from halfmoon_server.core.step_text import SEPARATOR, UnreadSteps, standing_text, steps_of, steps_text

#: The snapshot format's version (``"v"``): a release that changes what replay builds, or what a
#: snapshot holds, bumps it, and a snapshot of another version is ignored (full replay). A new log
#: format need not: log format 2 replays into the same state a snapshot holds.
SNAPSHOT_VERSION: Final = 1

__all__ = ["SNAPSHOT_VERSION", "SnapshotError", "restore_snapshot", "snapshot_number", "take_snapshot"]


class SnapshotError(ValueError):
    """A stored snapshot this release cannot restore (another version, or damaged)."""


# -- writing ---------------------------------------------------------------------------------------


def take_snapshot(state: RoomState) -> Json:
    """The room's whole state after the entries it applied (``state.applied``), as JSON data."""
    race = state.race
    results = state.results
    return {
        "v": SNAPSHOT_VERSION,
        "n": state.applied,
        "last_time": state.last_time,
        "seq": state.seq,
        "player": state.player,
        "tokens": dict(state.tokens),
        "player_keys": dict(state.player_keys),
        "holders": dict(state.holders),
        "watchers": sorted(state.watchers),
        "results": {
            "ended_at": dict(results.ended_at),
            "unstored": sorted(results.unstored),
            "recorded_at": dict(results.recorded_at),
            "parked": {game_id: _finished_json(game) for game_id, game in results.parked.items()},
        },
        "race": _race_json(race),
    }


def snapshot_number(snapshot: Mapping[str, Any]) -> int:
    """How many entries of the log a snapshot covers."""
    return int(snapshot["n"])


def _race_json(race: Race) -> Json:
    return {
        # a sealed race's code is derived from its seed (and contributions): written only when
        # the log holds it literally (no seed: the header's code, or an old rematch entry's)
        "code": None if race.seed is not None or race.code is None else str(race.code),
        "salt": race.salt,
        "seed": race.seed,
        "sealed": race.sealed,
        "entropy": dict(race.entropy),
        "contributions": None if race.contributions is None else list(race.contributions),
        "phase": str(race.phase),
        "host": race.host,
        "players": [_racer_json(racer) for racer in race.players.values()],
        "seated": [_racer_json(racer) for racer in race.seated.values()],
        "starts_at": race.starts_at,
        "started_at": race.started_at,
        "finished_at": race.finished_at,
        "time_limit_s": race.time_limit_s,
        "results": None if race.results is None else [_result_json(line) for line in race.results],
        "unrecorded": sorted(race.unrecorded),
        "spectators": race.spectators,
        "watches": race.watches,
        "next_player": race._next_player,
        "deadline": race._deadline,
        "round": race.round,
        "series": race.series,
        "series_first": race.series_first,
        "table": [[pid, s.name, s.points, s.score, s.time_ms, s.races] for pid, s in race.table.items()],
    }


#: How a snapshot writes a game's steps: one string (:mod:`halfmoon_server.core.step_text`:
#: ``"u"`` an undo, else the move's position names, space-separated, joined by commas).
STEP_SEPARATOR: Final = SEPARATOR


def _steps_json(racer: Racer) -> str:
    unread = racer.unread
    if unread is None:
        return steps_text(racer.steps)
    added = steps_text(racer._steps)  # (a read copy's: its first steps written back as they came)
    return unread.text if not added else added if not unread.text else unread.text + SEPARATOR + added


def _undoable(game: Game | None) -> int | None:
    return None if game is None else len(game.history())


def _board_json(racer: Racer, steps: str) -> str | None:
    """The moves still in effect in the racer's game. A game still played keeps them all on its
    undo stack (at most 52 moves — 104 cards, 2 or 3 a move — under the stack's 100): read there;
    a finished one kept them when it forgot its stack (:attr:`Racer.ended_with`); else they are
    read from the steps' text (~1-3 ms at 20,000 steps). A full restore checks they agree with
    the steps."""
    game = racer.game
    if game is None:
        return None
    if not racer.finished:
        return steps_text(game.history())
    return standing_text(steps) if racer.ended_with is None else steps_text(racer.ended_with)


def _racer_json(racer: Racer) -> Json:
    steps = _steps_json(racer)
    return {
        "id": racer.id,
        "name": racer.name,
        "status": str(racer.status),
        "game": _undoable(racer.game),  # the game: played again from the steps; how much undo can take back
        # the moves still in effect (what the board is played again from, without the steps)
        "board": _board_json(racer, steps),
        "steps": steps,
        "times": racer.times.tolist(),
        "connected": racer.connected,
        "away_since": racer.away_since,
        "time_ms": racer.time_ms,
        "finished_at": racer.finished_at,
        "ranked": racer.ranked,
        "unranked_reason": None if racer.unranked_reason is None else str(racer.unranked_reason),
        "bot": racer.bot,
        "daily_first": racer.daily_first,
        "game_id": racer.game_id,
        "clock_ms": racer.clock_ms,
        "running_since": racer.running_since,
        "lowest": racer.lowest,
        # (the spectators' copy of the board, ``public``, is not written: it is built again from
        # the steps when a spectator first needs it, as after a replay; the bar only goes down,
        # so built late it stops where it would have stopped built move by move)
        "splits": list(racer.splits),
    }


def _result_json(line: Result) -> Json:
    return {
        "rank": line.rank,
        "player": line.player,
        "name": line.name,
        "score": line.score,
        "moves": line.moves,
        "time_ms": line.time_ms,
        "outcome": str(line.outcome),
        "game": line.game,
        "splits": None if line.splits is None else list(line.splits),
        "ranked": line.ranked,
        "unranked_reason": None if line.unranked_reason is None else str(line.unranked_reason),
    }


def _finished_json(game: FinishedGame) -> Json:
    return {
        "nickname": game.nickname,
        "code": game.code,
        "mode": game.mode,
        "room": game.room,
        "score": game.score,
        "moves": game.moves,
        "time_ms": game.time_ms,
        "outcome": game.outcome,
        "record": game.record,
        "ranked": game.ranked,
        "daily_date": None if game.daily_date is None else game.daily_date.isoformat(),
        "finished_at": game.finished_at.isoformat(),
        "salt": game.salt,
        "player": game.player,
        "seal": game.seal,
        "unranked_reason": game.unranked_reason,
    }


# -- reading ---------------------------------------------------------------------------------------


def restore_snapshot(header: Entry, snapshot: Mapping[str, Any], instance: str, *, lazy: bool = False) -> RoomState:
    """The room's state as :func:`take_snapshot` wrote it (``header``: the room's header;
    ``instance``: this instance's name). Raises :class:`SnapshotError` for a snapshot of another
    version or one that does not hold together (a damaged one)."""
    if snapshot.get("v") != SNAPSHOT_VERSION:
        raise SnapshotError(f"a room snapshot of version {snapshot.get('v')!r}: this release reads {SNAPSHOT_VERSION}")
    try:
        return _restore(header, snapshot, instance, lazy)
    except SnapshotError:
        raise
    except Exception as exc:  # a damaged snapshot: its kind only (a deal code may be in its text)
        raise SnapshotError(f"a room snapshot that cannot be restored ({type(exc).__name__})") from None


def _restore(header: Entry, data: Mapping[str, Any], instance: str, lazy: bool) -> RoomState:
    race = race_of(header)
    _restore_race(race, data["race"], lazy)
    state = RoomState(header, race, instance)
    state.applied = state.highest_seen = int(data["n"])
    state.last_time = int(data["last_time"])
    state.seq = int(data["seq"])
    state.player = data["player"]
    state.tokens = {str(k): str(v) for k, v in data["tokens"].items()}
    state.player_keys = {str(k): str(v) for k, v in data["player_keys"].items()}
    state.holders = {str(k): str(v) for k, v in data["holders"].items()}
    state.watchers = {str(w) for w in data["watchers"]}
    results = data["results"]
    outbox = state.results
    outbox.ended_at = {str(k): int(v) for k, v in results["ended_at"].items()}
    outbox.unstored = {str(p) for p in results["unstored"]}
    outbox.recorded_at = {str(k): int(v) for k, v in results["recorded_at"].items()}
    outbox.parked = {str(k): _finished_of(v) for k, v in results["parked"].items()}
    return state


def _restore_race(race: Race, data: Mapping[str, Any], lazy: bool) -> None:
    race.salt, race.seed, race.sealed = data["salt"], data["seed"], bool(data["sealed"])
    race.entropy = {str(k): str(v) for k, v in data["entropy"].items()}
    contributions = data["contributions"]
    race.contributions = None if contributions is None else tuple(str(c) for c in contributions)
    if race.seed is not None:  # a sealed race: dealt at its start from the seed and who started
        race.code = None if race.contributions is None else sealed_code(race.seed, race.contributions)
    else:
        race.code = None if data["code"] is None else DealCode.parse(data["code"])
    race.deal = None if race.code is None else Deal.from_code(race.code)
    race.commitment = race._commitment()
    race.phase = Phase(data["phase"])
    race.host = data["host"]
    deal = race.deal
    race.players = {r.id: r for r in (_racer_of(item, deal, lazy) for item in data["players"])}
    race.seated = {r.id: r for r in (_racer_of(item, deal, lazy) for item in data["seated"])}
    race.starts_at, race.started_at = data["starts_at"], data["started_at"]
    race.finished_at, race.time_limit_s = data["finished_at"], data["time_limit_s"]
    lines = data["results"]
    race.results = None if lines is None else tuple(_result_of(line) for line in lines)
    race.unrecorded = {str(p) for p in data["unrecorded"]}
    race.spectators, race.watches = int(data["spectators"]), int(data["watches"])
    race._next_player, race._deadline = int(data["next_player"]), data["deadline"]
    race.round, race.series, race.series_first = int(data["round"]), data["series"], int(data["series_first"])
    race.table = {
        str(pid): Standing(str(name), int(points), int(score), int(time_ms), int(races))
        for pid, name, points, score, time_ms, races in data["table"]
    }


def _steps_of(raw: str) -> list[Step]:
    if not isinstance(raw, str):
        raise SnapshotError("a game's steps are one string")
    return steps_of(raw)


def _standing(steps: Sequence[Step]) -> list[Step]:
    """The moves still in effect after ``steps`` (an undo takes its move off the stack)."""
    standing: list[Step] = []
    for step in steps:
        if step == UNDO:
            standing.pop()
        else:
            standing.append(step)
    return standing


def _game_of(deal: Deal | None, standing: Sequence[Step], undoable: int | None) -> Game | None:
    """A game played again from the moves still in effect, pushed on a fresh game, then its undo
    stack cut to what the snapshot says undo may still take back (a finished game keeps none)."""
    if undoable is None:
        return None
    if deal is None:
        raise SnapshotError("a game in a snapshot of a race that was never dealt")
    game = Game(deal)
    for move in standing:
        if not isinstance(move, Move):
            raise SnapshotError("an undo among a board's moves")
        game.push(move)
    if undoable == 0:
        game.forget_undos()
    elif undoable != len(game.history()):
        raise SnapshotError("a game whose undo stack does not match its steps")
    return game


def _racer_of(data: Mapping[str, Any], deal: Deal | None, lazy: bool) -> Racer:
    board = data.get("board")  # (a snapshot of an earlier release of version 1 has none)
    unread: UnreadSteps | None = None
    if lazy and (board is not None or data["game"] is None):
        # a read copy: its board played again from the moves still in effect, its steps kept
        # as their text until something asks for them (its REST view shows none)
        if not isinstance(data["steps"], str):
            raise SnapshotError("a game's steps are one string")
        steps: list[Step] = []
        unread = UnreadSteps(data["steps"]) if data["steps"] else None
        standing: Sequence[Step] = [] if board is None else _steps_of(board)
    else:
        steps = _steps_of(data["steps"])
        standing = _standing(steps)
        if board is not None and board != steps_text(standing):
            raise SnapshotError("a game whose board does not match its steps")
    reason = data["unranked_reason"]
    status = PlayerStatus(data["status"])
    game = _game_of(deal, standing, data["game"])
    return Racer(
        id=str(data["id"]),
        name=str(data["name"]),
        status=status,
        game=game,
        _steps=steps,
        unread=unread,
        ended_with=[m for m in standing if isinstance(m, Move)] if game is not None and status in FINISHED else None,
        times=array("q", data["times"]),
        connected=bool(data["connected"]),
        away_since=data["away_since"],
        time_ms=data["time_ms"],
        finished_at=data["finished_at"],
        ranked=bool(data["ranked"]),
        unranked_reason=None if reason is None else Unranked(reason),
        bot=bool(data["bot"]),
        daily_first=bool(data["daily_first"]),
        game_id=data["game_id"],
        clock_ms=int(data["clock_ms"]),
        running_since=data["running_since"],
        lowest=None if data["lowest"] is None else [int(h) for h in data["lowest"]],
        splits=list(data["splits"]),
    )


def _result_of(data: Mapping[str, Any]) -> Result:
    splits = data["splits"]
    reason = data["unranked_reason"]
    return Result(
        int(data["rank"]),
        data["player"],
        str(data["name"]),
        int(data["score"]),
        int(data["moves"]),
        int(data["time_ms"]),
        PlayerStatus(data["outcome"]),
        data["game"],
        None if splits is None else tuple(splits),
        bool(data["ranked"]),
        None if reason is None else Unranked(reason),
    )


def _finished_of(data: Mapping[str, Any]) -> FinishedGame:
    day = data["daily_date"]
    return FinishedGame(
        nickname=str(data["nickname"]),
        code=str(data["code"]),
        mode=str(data["mode"]),
        room=str(data["room"]),
        score=int(data["score"]),
        moves=int(data["moves"]),
        time_ms=int(data["time_ms"]),
        outcome=str(data["outcome"]),
        record=dict(data["record"]),
        ranked=bool(data["ranked"]),
        daily_date=None if day is None else date.fromisoformat(day),
        finished_at=datetime.fromisoformat(data["finished_at"]),
        salt=data["salt"],
        player=data["player"],
        seal=data["seal"],
        unranked_reason=data["unranked_reason"],
    )
