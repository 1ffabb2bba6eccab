"""Game records: the JSON shape, reading errors, and replaying to an outcome."""

from __future__ import annotations

import json
from typing import Any

import pytest

from halfmoon import (
    DealCode,
    GameRecord,
    InvalidCodeError,
    InvalidRecordError,
    Move,
    NotAMatchError,
    UndoError,
    replay,
)
from halfmoon.record import UNDO
from tests.conftest import VECTORS

WON: list[dict[str, Any]] = json.loads((VECTORS / "won_records.json").read_text(encoding="utf-8"))["records"]


def test_record_json_round_trips() -> None:
    data = {"code": "HM1-N-AAAAAAB", "moves": [["1", "R4"], "undo", ["1", "R6"], ["R3", "R5", "8"]]}
    record = GameRecord.from_json(data)
    assert record.code == DealCode("N", 1)
    assert record.moves == [Move.parse("1 R4"), UNDO, Move.parse("1 R6"), Move.parse("R3 R5 8")]
    assert record.to_json() == data
    assert json.loads(record.dumps()) == data
    assert GameRecord.loads(record.dumps()) == record
    assert GameRecord.loads(record.dumps().encode()) == record


@pytest.mark.parametrize("record", WON, ids=lambda r: r["code"])
def test_a_won_record_replays_to_a_win(record: dict[str, Any]) -> None:
    result = replay(GameRecord.from_json(record))
    assert result.ok and result.error is None and result.error_index is None
    assert result.to_json() == {
        "code": record["code"],
        "score": 520,
        "moves": 48,
        "status": "won",
        "cards_left": 0,
        "error": None,
    }


def test_undo_steps_are_replayed() -> None:
    moves = WON[1]["moves"]
    record = GameRecord.from_json({"code": WON[1]["code"], "moves": [moves[0], moves[1], "undo", "undo", *moves]})
    assert replay(record).to_json()["status"] == "won"
    partial = GameRecord.from_json({"code": WON[1]["code"], "moves": [moves[0], moves[1], "undo"]})
    assert replay(partial).to_json() == {
        "code": WON[1]["code"],
        "score": 10,
        "moves": 1,
        "status": "playing",
        "cards_left": 102,
        "error": None,
    }


def test_replay_stops_at_the_first_illegal_move() -> None:
    record = GameRecord.from_json({"code": "HM1-N-AAAAAAB", "moves": [["1", "R4"], ["1", "2"], ["4", "6"]]})
    result = replay(record)
    assert not result.ok and result.error_index == 1 and isinstance(result.error, NotAMatchError)
    assert result.to_json() == {
        "code": "HM1-N-AAAAAAB",
        "score": 10,
        "moves": 1,
        "status": "playing",
        "cards_left": 102,
        "error": {"index": 1, "reason": "move 1 2: 4S and 3S are not a pair: 4 + 3 = 7, not 11"},
    }


def test_replay_stops_at_an_undo_with_nothing_to_undo() -> None:
    result = replay(GameRecord.from_json({"code": "HM1-N-AAAAAAB", "moves": ["undo", ["1", "R4"]]}))
    assert result.error_index == 0 and isinstance(result.error, UndoError)
    assert result.game.move_count == 0
    assert result.to_json()["error"] == {"index": 0, "reason": "nothing to undo: no move has been made"}


def test_a_move_after_the_win_is_an_error() -> None:
    record = GameRecord.from_json({"code": WON[0]["code"], "moves": [*WON[0]["moves"], ["1", "2"]]})
    result = replay(record)
    assert result.error_index == 48 and result.to_json()["status"] == "won"
    assert "pile 1 is empty" in result.to_json()["error"]["reason"]


def test_an_empty_record_is_the_deal() -> None:
    assert replay(GameRecord.from_json({"code": "HM1-N-AAAAAAB", "moves": []})).to_json()["cards_left"] == 104


@pytest.mark.parametrize(
    ("document", "error", "says"),
    [
        ([], InvalidRecordError, "a game record is a JSON object, not list"),
        ("HM1-N-AAAAAAB", InvalidRecordError, "not str"),
        ({"moves": []}, InvalidRecordError, "needs a 'code'"),
        ({"code": "HM1-N-AAAAAAB"}, InvalidRecordError, "needs 'moves'"),
        ({"code": "HM1-N-AAAAAAB", "moves": {}}, InvalidRecordError, "'moves' must be a list, not dict"),
        ({"code": "HM1-N-AAAAAAB", "moves": "undo"}, InvalidRecordError, "'moves' must be a list, not str"),
        ({"code": "HM1-N-AAAAAAB", "moves": [["1", 8]]}, InvalidRecordError, "move 0: ['1', 8] is neither"),
        ({"code": "HM1-N-AAAAAAB", "moves": [["1", "R4"], "redo"]}, InvalidRecordError, "move 1: 'redo' is neither"),
        ({"code": "HM1-N-AAAAAAB", "moves": [["1", "R9"]]}, InvalidRecordError, "move 0: no such position: 'R9'"),
        ({"code": "HM1-N-AAAAAAB", "moves": [["1"]]}, InvalidRecordError, "move 0: a move names 2 positions"),
        ({"code": "HM1-N-AAAAAAB", "moves": [None]}, InvalidRecordError, "move 0: None is neither"),
        ({"code": "HM1-N-AAAAAA", "moves": []}, InvalidCodeError, "'HM1-N-AAAAAA' ends in 6 letters"),
        ({"code": 7, "moves": []}, InvalidCodeError, "must be a string, not 7"),
    ],
)
def test_malformed_records_are_refused(document: object, error: type[Exception], says: str) -> None:
    with pytest.raises(error) as info:
        GameRecord.from_json(document)
    assert says in str(info.value)


@pytest.mark.parametrize("text", ["", "{", "not json", "[" * 100_000, b"\xff\xfe"])
def test_text_that_is_not_json_is_refused(text: str | bytes) -> None:
    with pytest.raises(InvalidRecordError, match="a game record must be JSON"):
        GameRecord.loads(text)
