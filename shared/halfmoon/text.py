"""Player-facing words in Italian (the seed's) and English, for the text interfaces.

The bar shows time, score, moves and the deal's code, as the seed says.
"""

from __future__ import annotations

from typing import Final

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
