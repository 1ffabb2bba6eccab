"""The sans-I/O session: decoded server messages in, the view model out — no socket."""

from __future__ import annotations

import pytest

from halfmoon.codes import seal_commitment, sealed_code
from halfmoon.game import Game, Move
from halfmoon_client.errors import ProtocolError
from halfmoon_client.session import Session
from tests.client.support import CODE, T0, moved, started, summary, welcome


def lobby_session() -> Session:
    session = Session()
    session.receive(welcome(1), T0 - 500)
    return session


def test_welcome_fills_the_view_model_and_the_clock_offset() -> None:
    session = lobby_session()
    assert (session.room, session.phase, session.role, session.you, session.host) == (
        "K7WQ2M",
        "lobby",
        "player",
        "p1",
        "p1",
    )
    assert session.token == "t" * 32 and session.seq == 1 and session.is_host
    assert session.offset_ms == 500
    assert list(session.players) == ["p1"] and session.players["p1"].name == "Ada"


def test_lobby_joins_and_leaves_and_the_host_moves_on() -> None:
    session = lobby_session()
    session.receive({"type": "player_joined", "v": 1, "seq": 2, "player": summary("p2", "Bob"), "host": "p1"}, T0)
    assert session.notice == ("joined", {"name": "Bob"})
    assert list(session.players) == ["p1", "p2"]
    left = summary("p1", "Ada", status="left", connected=False)
    session.receive({"type": "player_left", "v": 1, "seq": 3, "player": left, "host": "p2"}, T0)
    assert list(session.players) == ["p2"] and session.host == "p2" and not session.is_host


def test_a_host_who_drops_in_the_lobby_hands_over_through_progress() -> None:
    session = lobby_session()
    session.receive({"type": "player_joined", "v": 1, "seq": 2, "player": summary("p2", "Bob"), "host": "p1"}, T0)
    session.you = "p2"
    assert not session.is_host
    gone = summary("p1", "Ada", status="waiting", connected=False)
    session.receive({"type": "progress", "v": 1, "seq": 3, "player": gone, "host": "p2"}, T0)
    assert session.host == "p2" and session.is_host, "Bob may now start the race"


def test_countdown_then_started_gives_the_players_board() -> None:
    session = lobby_session()
    countdown = {"type": "countdown", "v": 1, "seq": 2, "starts_at": T0 + 3000, "now": T0, "time_limit_s": 600}
    session.receive(countdown, T0 - 1000)  # the local clock is 1 s behind the server's
    assert session.phase == "countdown" and session.countdown_ms(T0) == 2000
    game = Game.from_code(CODE)
    session.receive(started(3, game), T0 + 3000)
    assert session.phase == "running" and session.playing
    assert session.board is not None and session.board.view().tops == tuple(game.card_at(p) for p in range(20))
    assert session.players["p1"].status == "playing"
    # the running time: from started_at (T0) on the server's clock (local + 1 s)
    assert session.elapsed_ms(session.players["p1"], T0 + 4000) == 5000


def test_my_moved_applies_changes_and_a_rivals_moved_only_the_summary() -> None:
    session = lobby_session()
    session.receive({"type": "player_joined", "v": 1, "seq": 2, "player": summary("p2", "Bob")}, T0)
    game = Game.from_code(CODE)
    session.receive(started(3, game), T0)
    move = next(game.legal_moves())
    game.push(move)
    session.receive(moved(4, "p1", game, move.names(), changes=True, id=1), T0)
    assert session.board is not None and session.board.view().tops == tuple(game.card_at(p) for p in range(20))
    assert session.board.view().counts == tuple(game.count_at(p) for p in range(20))
    assert session.players["p1"].score == game.score
    rival = Game.from_code(CODE)
    rival.push(move)
    before = session.board.view()
    session.receive(moved(5, "p2", rival, move.names(), changes=False), T0)
    assert session.board.view() == before
    assert (session.players["p2"].score, session.players["p2"].moves, session.players["p2"].cards_left) == (
        rival.score,
        1,
        rival.cards_left,
    )


def test_an_event_already_seen_is_ignored() -> None:
    session = lobby_session()
    joined = {"type": "player_joined", "v": 1, "seq": 2, "player": summary("p2", "Bob")}
    session.receive(joined, T0)
    session.players["p2"].score = 99  # would be overwritten if the replay were applied
    session.receive(joined, T0)
    assert session.players["p2"].score == 99 and session.seq == 2


def test_resume_message_carries_token_and_since_and_a_catch_up_welcome_keeps_the_state() -> None:
    session = lobby_session()
    session.receive({"type": "player_joined", "v": 1, "seq": 2, "player": summary("p2", "Bob")}, T0)
    assert session.resume_message() == {"type": "resume", "v": 1, "room": "K7WQ2M", "token": "t" * 32, "since": 2}
    session.receive(
        {"type": "welcome", "v": 1, "role": "player", "you": "p1", "token": "t" * 32, "room": None, "seq": 2}, T0
    )
    assert list(session.players) == ["p1", "p2"]
    session.receive({"type": "player_joined", "v": 1, "seq": 3, "player": summary("p3", "Cy")}, T0)
    assert "p3" in session.players and session.seq == 3


def test_a_token_kept_from_an_earlier_run_resumes_without_since_to_get_a_snapshot() -> None:
    session = Session(room="K7WQ2M", token="t" * 32)  # no room state yet: only the seat
    assert session.resume_message() == {"type": "resume", "v": 1, "room": "K7WQ2M", "token": "t" * 32}


def test_resume_without_a_token_is_refused() -> None:
    with pytest.raises(ProtocolError, match="cannot resume"):
        Session().resume_message()


def test_stall_game_over_and_race_over() -> None:
    session = lobby_session()
    game = Game.from_code(CODE)
    session.receive(started(2, game), T0)
    move = next(game.legal_moves())
    game.push(move)
    session.receive(moved(3, "p1", game, move.names(), changes=True, status="stalled"), T0)
    assert session.notice == ("stalled", {})
    session.receive(
        {"type": "game_over", "v": 1, "seq": 4, "outcome": "gave_up", "score": 10, "moves": 1, "time_ms": 4000,
         "code": CODE, "game": "g1", "ranked": False},
        T0,
    )  # fmt: skip
    assert session.outcome is not None and session.outcome.outcome == "gave_up"
    assert session.players["p1"].status == "gave_up" and not session.playing
    results = [
        {"rank": 1, "player": "p1", "name": "Ada", "score": 10, "moves": 1, "time_ms": 4000, "outcome": "gave_up"}
    ]
    session.receive({"type": "race_over", "v": 1, "seq": 5, "results": results}, T0)
    assert session.race_over and session.phase == "finished" and session.results == results


def test_a_spectator_gets_every_board_and_their_changes() -> None:
    session = Session()
    session.receive(welcome(1, you=None, token=None, players=[summary("p1", "Ada"), summary("p2", "Bob")]), T0)
    assert session.role == "spectator" and session.notice == ("watching", {})
    games = {"p1": Game.from_code(CODE), "p2": Game.from_code(CODE)}
    session.receive(started(2, None, games), T0)
    move = next(games["p2"].legal_moves())
    games["p2"].push(move)
    session.receive(moved(3, "p2", games["p2"], move.names(), changes=True), T0)
    assert session.boards["p2"].cards_left == 102 and session.boards["p1"].cards_left == 104


def test_a_spectator_keeps_hidden_tops_hidden_until_they_are_revealed() -> None:
    session = Session()
    session.receive(welcome(1, you=None, token=None, players=[summary("p1", "Ada"), summary("p2", "Bob")]), T0)
    games = {"p1": Game.from_code(CODE), "p2": Game.from_code(CODE)}
    session.receive(started(2, None, games), T0)
    move = next(games["p1"].legal_moves())
    games["p1"].push(move)
    pile = min(p for p in move.positions if p < 12)
    name = move.names()[move.positions.index(pile)]
    message = moved(3, "p1", games["p1"], move.names(), changes=True)
    for change in message["changes"]:
        if change["pos"] == name:
            change["card"] = "??"  # Bob has not uncovered it: the server hides it from spectators
    session.receive(message, T0)
    board = session.boards["p1"]
    assert pile in board.hidden and board.tops[pile] is None and board.counts[pile] == 7
    card = games["p1"].card_at(pile)
    assert card is not None
    reveal = {"player": "p1", "pos": name, "card": card.name, "count": 7}
    session.receive({"type": "progress", "v": 1, "seq": 4, "player": summary("p2", "Bob"), "reveals": [reveal]}, T0)
    assert pile not in board.hidden and board.tops[pile] == card
    with pytest.raises(ProtocolError):
        session.receive({"type": "progress", "v": 1, "seq": 5, "player": summary("p2", "Bob"), "reveals": [{}]}, T0)


def test_outgoing_messages_are_versioned_and_moves_numbered() -> None:
    session = Session()
    assert session.join_message("K7WQ2M", "Ada") == {"type": "join", "v": 1, "room": "K7WQ2M", "name": "Ada"}
    assert session.move_message(["1", "8"])["id"] == 1
    assert session.undo_message() == {"type": "undo", "v": 1, "id": 2}
    assert Session.start_message(600) == {"type": "start", "v": 1, "time_limit_s": 600}


@pytest.mark.parametrize(
    "message",
    [
        "hello",
        {"type": "teleport", "v": 1},
        {"v": 1},
        {"type": "countdown", "v": 1, "seq": 9},
        {"type": "moved", "v": 1, "seq": 9, "player": "p1", "changes": [{"pos": "13", "card": "5S", "count": 1}]},
    ],
)
def test_a_message_off_the_protocol_is_a_protocol_error(message: object) -> None:
    session = lobby_session()
    session.receive(started(2, Game.from_code(CODE)), T0)
    before = session.board.view() if session.board else None
    with pytest.raises(ProtocolError):
        session.receive(message, T0)
    assert (session.board.view() if session.board else None) == before


def test_an_error_is_kept_for_the_screen() -> None:
    session = lobby_session()
    session.receive({"type": "error", "v": 1, "code": "not_host", "message": "only the host may start"}, T0)
    assert session.error == ("not_host", "only the host may start")


def test_my_move_message_is_a_legal_wire_move() -> None:
    session = Session()
    message = session.move_message(Move.parse("R3 5 12").names())
    assert message["positions"] == ["R3", "5", "12"]


SEED = "5e" * 32
THEIRS = "b2" * 16


def sealed_session(*, board_of: str | None = None) -> tuple[Session, str, list[str]]:
    """A racer's session through a sealed race's start: it sent its contribution with its join
    (``started`` lists it with a rival's) and was shown the opening board of ``board_of`` (the
    sealed code itself when None)."""
    session = Session()
    session.receive(welcome(1, code=None, sealed=True, commitment=seal_commitment(SEED)), T0)
    mine = session.contribute()
    contributions = sorted([mine, THEIRS])
    code = str(sealed_code(SEED, contributions))
    message = started(2, Game.from_code(board_of or code))
    session.receive({**message, "code": None, "commitment": seal_commitment(SEED), "contributions": contributions}, T0)
    return session, code, contributions


def race_over(code: str, seed: str, contributions: list[str]) -> dict[str, object]:
    return {"type": "race_over", "v": 1, "seq": 3, "results": [], "code": code, "sealed": True, "seed": seed,
            "contributions": contributions}  # fmt: skip


def test_the_terminal_checks_a_sealed_races_reveal_against_its_commitment_contribution_and_opening_board() -> None:
    session, code, contributions = sealed_session()
    assert session.verified is None
    session.receive(race_over(code, SEED, contributions), T0)
    assert session.verified is True
    for tampered in (
        race_over(code, "5f" + SEED[2:], contributions),  # another seed
        race_over(code, SEED, [THEIRS]),  # my contribution left out
        race_over(str(sealed_code(SEED, [])), SEED, []),  # a deal the server alone picked
    ):
        session, code, contributions = sealed_session()
        session.receive(tampered, T0)
        assert session.verified is False, tampered
    shown_another, code, contributions = sealed_session(board_of="HM1-N-AAAAAAA")  # dealt a board not of the code
    shown_another.receive(race_over(code, SEED, contributions), T0)
    assert shown_another.verified is False


def test_the_join_carries_the_sessions_fresh_contribution() -> None:
    session = Session()
    entropy = session.contribute()
    assert len(entropy) == 32 and entropy != Session().contribute()
    assert Session.join_message("K7WQ2M", "Ada", None, entropy)["entropy"] == entropy
