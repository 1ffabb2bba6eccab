"""The racer without a socket: typed lines in, protocol messages and a message line out."""

from __future__ import annotations

import re

from halfmoon.game import Game
from halfmoon.positions import parse_position, position_name
from halfmoon_client.racer import Racer
from tests.client.support import CODE, T0, moved, started, summary, welcome


def racing(lang: str = "en", *, move_errors: bool = False) -> tuple[Racer, Game]:
    racer = Racer(lang=lang, move_errors=move_errors)
    racer.receive(welcome(1, players=[summary("p1", "Ada"), summary("p2", "Bob")]), T0)
    game = Game.from_code(CODE)
    racer.receive(started(2, game), T0)
    return racer, game


def a_bad_pair(game: Game) -> list[str]:
    """Two number cards on the table that do not sum to 11."""
    numbers = [(p, c) for p, c in game.playable().items() if not c.is_face]
    for p, c in numbers:
        for q, d in numbers:
            if p < q and c.rank + d.rank != 11:
                return [position_name(p), position_name(q)]
    raise AssertionError("no bad pair")


def test_a_legal_move_is_sent_with_an_id_and_its_answer_clears_the_message() -> None:
    racer, game = racing()
    move = next(game.legal_moves())
    sent = racer.command(str(move))
    assert sent == [{"type": "move", "v": 1, "positions": move.names(), "id": 1}]
    game.push(move)
    racer.receive(moved(3, "p1", game, move.names(), changes=True, id=1), T0)
    assert racer.message == "" and racer.session.players["p1"].score == 10


def test_an_illegal_move_is_not_sent_and_explained_only_with_move_errors_on() -> None:
    racer, game = racing()
    bad = a_bad_pair(game)
    assert racer.command(" ".join(bad)) == []
    assert racer.message == f"✗ {' '.join(bad)}"
    racer.command("e")
    assert racer.message == "Move errors: on"
    racer.command(" ".join(bad))
    cards = ", ".join(game.card_at(parse_position(p)).symbol() for p in bad)  # type: ignore[union-attr]
    assert racer.message == f"✗ {' '.join(bad)} ({cards}): The sum must equal 11"


def test_every_refusal_is_in_the_racers_language_with_card_symbols() -> None:
    """``--lang it``: no English from the engine, no machine card names ("KH", "4D")."""
    racer, game = racing("it", move_errors=True)
    faces = [position_name(p) for p, c in game.playable().items() if c.is_face]
    numbers = [position_name(p) for p, c in game.playable().items() if not c.is_face]
    said = []
    for line in ("1", "zz 1", "1 1", " ".join(a_bad_pair(game)), f"{faces[0]} {numbers[0]}", "1 2 3 4"):
        assert racer.command(line) == []
        said.append(racer.message)
    assert said[0] == "✗ 1: una mossa nomina 2 posizioni (una coppia) o 3 (un terzetto)"
    assert said[1] == "✗ «zz» non è una posizione: le pile vanno da 1 a 12, la riserva da R1 a R8"
    assert said[2] == "✗ 1 1: la posizione 1 è nominata due volte"
    assert said[3].endswith("): La somma deve essere uguale a 11")
    assert said[4].endswith("): Servono un Fante, una Donna e un Re")
    english = re.compile(r"\b(move|not|pair|triple|position|reserve|slot|named|twice|is|and|the|no such)\b")
    raw_card = re.compile(r"(?<![\w-])(?:10|[2-9AJQK])[SHDC](?!\w)")
    for line in said:
        assert not english.search(line) and not raw_card.search(line), line
    refused = {"type": "error", "v": 1, "code": "illegal_move", "reason": "not_playable", "message": "pile 1 is empty"}
    racer.receive({**refused, "id": 9}, T0)
    assert "empty" not in racer.message


def test_move_errors_speak_the_seeds_italian() -> None:
    racer, game = racing("it", move_errors=True)
    racer.command(" ".join(a_bad_pair(game)))
    assert racer.message.endswith("La somma deve essere uguale a 11")
    faces = [position_name(p) for p, c in game.playable().items() if c.is_face]
    numbers = [position_name(p) for p, c in game.playable().items() if not c.is_face]
    racer.command(f"{faces[0]} {numbers[0]}")
    assert racer.message.endswith("Servono un Fante, una Donna e un Re")


def test_server_refusals_become_words() -> None:
    racer, game = racing(move_errors=True)
    move = next(game.legal_moves())
    racer.command(str(move))
    racer.receive(
        {"type": "error", "v": 1, "code": "illegal_move", "reason": "not_a_match", "message": "not a pair", "id": 1}, T0
    )
    assert racer.message.endswith("The sum must equal 11") or racer.message.endswith(
        "Jack, a Queen and a King are needed"
    )
    racer.command("u")
    racer.receive({"type": "error", "v": 1, "code": "nothing_to_undo", "message": "nothing to undo", "id": 2}, T0)
    assert racer.message == "There is no move to undo."


def test_undo_give_up_and_quit_send_their_messages() -> None:
    racer, _ = racing()
    assert racer.command("u") == [{"type": "undo", "v": 1, "id": 1}]
    assert racer.command("g") == [{"type": "give_up", "v": 1}]
    assert racer.command("q") == [{"type": "leave", "v": 1}] and racer.done


def test_lobby_only_the_host_starts_and_no_move_before_the_start() -> None:
    host = Racer()
    host.receive(welcome(1), T0)
    assert host.command("s") == [{"type": "start", "v": 1}]
    guest = Racer()
    guest.receive(welcome(1, you="p2", players=[summary("p1", "Ada"), summary("p2", "Bob")]), T0)
    assert guest.command("s") == [] and guest.message == "Only the host can start the race."
    assert guest.command("1 8") == [] and guest.message == "The race has not started yet."


def test_after_my_game_is_over_moves_are_refused_locally() -> None:
    racer, _ = racing()
    racer.receive(
        {"type": "game_over", "v": 1, "seq": 3, "outcome": "gave_up", "score": 0, "moves": 0, "time_ms": 10}, T0
    )
    assert racer.command("1 8") == [] and racer.message == "Your game is over."


def test_the_host_asks_for_the_time_limit_it_was_given() -> None:
    host = Racer(time_limit_s=90)
    host.receive(welcome(1), T0)
    assert host.command("s") == [{"type": "start", "v": 1, "time_limit_s": 90}]
