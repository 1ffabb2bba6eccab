"""Player-facing words in Italian (the seed's) and English, for the text interfaces.

The bar shows time, score, moves and the deal's code, as the seed says. :func:`refusal` says
why a typed move is refused, in one language and with card symbols (``10♥``, never ``10H``).
"""

from __future__ import annotations

from typing import Final

from halfmoon.errors import InvalidPositionError
from halfmoon.game import Game, Move
from halfmoon.positions import PILE_COUNT, parse_position, position_name
from halfmoon.taps import MOVE_ERROR_MESSAGES

LANGS: Final = ("it", "en")

WORDS: Final = {
    "it": {
        "time": "Tempo",
        "score": "Punti",
        "moves": "Mosse",
        "code": "Codice",
        "won": "Vittoria! Tutte le 104 carte sono state rimosse: {score} punti in {moves} mosse, tempo {time}.",
        "stalled": "Stallo: tra le carte giocabili non ci sono né coppie con somma 11 né terzetti Fante, Donna, Re. "
        "Puoi annullare (u) o iniziare una nuova partita (n).",
        "nothing_to_undo": "Non c'è nessuna mossa da annullare.",
        "help": "Mossa: le posizioni, es. «1 8» o «R3 5 12» · u annulla · n nuova partita · e errori di mossa · q esci",
        "move_errors_on": "Errori di mossa: attivati",
        "move_errors_off": "Errori di mossa: disattivati",
        "bad_position": "«{name}» non è una posizione: le pile vanno da 1 a 12, la riserva da R1 a R8",
        "move_size": "{move}: una mossa nomina 2 posizioni (una coppia) o 3 (un terzetto)",
        "same_position": "{move}: la posizione {position} è nominata due volte",
        "empty_pile": "{move}: la pila {position} è vuota",
        "empty_slot": "{move}: la casella di riserva {position} è vuota",
    },
    "en": {
        "time": "Time",
        "score": "Score",
        "moves": "Moves",
        "code": "Code",
        "won": "You won! All 104 cards removed: {score} points in {moves} moves, time {time}.",
        "stalled": "Stalled: no pair summing to 11 and no Jack-Queen-King among the playable cards. "
        "You can undo (u) or start a new game (n).",
        "nothing_to_undo": "There is no move to undo.",
        "help": "Move: the positions, e.g. '1 8' or 'R3 5 12' · u undo · n new game · e move errors · q quit",
        "move_errors_on": "Move errors: on",
        "move_errors_off": "Move errors: off",
        "bad_position": "'{name}' is not a position: piles are 1 to 12, the reserve R1 to R8",
        "move_size": "{move}: a move names 2 positions (a pair) or 3 (a triple)",
        "same_position": "{move}: position {position} is named twice",
        "empty_pile": "{move}: pile {position} is empty",
        "empty_slot": "{move}: reserve slot {position} is empty",
    },
}


def word(key: str, lang: str = "en", **values: object) -> str:
    text = WORDS.get(lang, WORDS["en"])[key]
    return text.format(**values) if values else text


def format_time(ms: int) -> str:
    """``m:ss`` (``h:mm:ss`` past an hour)."""
    seconds = max(0, ms) // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_bar(*, time_ms: int, score: int, moves: int, code: str | None, lang: str = "en") -> str:
    """The seed's bar: time, score, moves and the deal's code (``—`` while it is secret)."""
    w = WORDS.get(lang, WORDS["en"])
    return (
        f"{w['time']} {format_time(time_ms)}  ·  {w['score']} {score}  ·  "
        f"{w['moves']} {moves}  ·  {w['code']} {code or '—'}"
    )


def refusal(game: Game | None, typed: str, *, lang: str = "en", move_errors: bool = False) -> str | None:
    """The message line for a typed move (``"1 8"``, ``"r3, 5 12"``) that ``game`` refuses, or
    None when it would accept it; ``game`` None checks only the move's form.

    A line that is not a move on this board (a bad position, the wrong number of positions, one
    position twice, an empty pile or slot) is always said. Cards that do not match are the seed's
    «Errori di mossa»: just ``✗`` and the move while the setting is off; with it on, the cards and
    the seed's explanation — «La somma deve essere uguale a 11» when the move begins with a number
    card, «Servono un Fante, una Donna e un Re» when it begins with a face card.

    >>> game = Game.from_code("HM1-N-AAAAAAB")
    >>> refusal(game, "1 2", lang="it", move_errors=True)
    '✗ 1 2 (10♥, 3♠): La somma deve essere uguale a 11'
    >>> refusal(game, "r9 1", lang="it")
    '✗ «r9» non è una posizione: le pile vanno da 1 a 12, la riserva da R1 a R8'
    >>> refusal(game, "1 R4") is None
    True
    """
    w = WORDS.get(lang, WORDS["en"])
    names = typed.replace(",", " ").split()
    positions = []
    for name in names:
        try:
            positions.append(parse_position(name))
        except InvalidPositionError:
            return "✗ " + w["bad_position"].format(name=name)
    move = " ".join(position_name(p) for p in positions) or "—"
    if len(positions) not in (2, 3):
        return "✗ " + w["move_size"].format(move=move)
    twice = next((p for i, p in enumerate(positions) if p in positions[:i]), None)
    if twice is not None:
        return "✗ " + w["same_position"].format(move=move, position=position_name(twice))
    if game is None:
        return None
    cards = []
    for p in positions:
        card = game.card_at(p)
        if card is None:
            return "✗ " + w["empty_pile" if p < PILE_COUNT else "empty_slot"].format(
                move=move, position=position_name(p)
            )
        cards.append(card)
    if game.is_legal(Move(tuple(positions))):
        return None
    if not move_errors:
        return f"✗ {move}"
    reason = "triple" if cards[0].is_face else "sum"
    shown = ", ".join(card.symbol(lang=lang) for card in cards)
    return f"✗ {move} ({shown}): {MOVE_ERROR_MESSAGES[reason].get(lang, MOVE_ERROR_MESSAGES[reason]['en'])}"
