"""The terminal client's words, in Italian (the seed's) and English.

The engine's :mod:`halfmoon.text` holds the bar and the solo game's phrases; these are the
race's: lobby, countdown, rivals, outcomes, reconnection, results.
"""

from __future__ import annotations

from typing import Final

from halfmoon.text import format_time

WORDS: Final = {
    "it": {
        "lobby": "Sala d'attesa {room} · {count} giocatori",
        "waiting_host": "In attesa che {host} avvii la gara…",
        "quick_lobby": "Gara veloce: parte da sola quando sono entrati tutti.",
        "quick_alone": "Gara veloce · in coda da solo: aspettiamo un avversario…",
        "quick_count": "Gara veloce · in coda: {count} giocatori · si parte tra {seconds} s",
        "quick_offer": "Ancora nessun avversario. Invio: continua ad aspettare · q: esci dalla coda",
        "quick_ghost": "Oppure sfida il fantasma di {name}: halfmoon race --code {code}, "
        "poi halfmoon join SALA --ghost {game}",
        "help_queue": "q esci dalla coda",
        "quick_left": "Sei uscito dalla coda.",
        "you_host": "Sei l'ospite: premi «s» e Invio per avviare la gara.",
        "countdown": "La gara inizia tra {seconds}…",
        "rivals": "Avversari",
        "no_rivals": "(nessun avversario)",
        "ghost": "fantasma",
        "ghost_end": "finito: {outcome}, {time}",
        "ghost_other_deal": "Il fantasma ha giocato un'altra smazzata ({code}): qui niente fantasma. "
        "Per sfidarlo: halfmoon race --code {code}",
        "track_axis": "pista: carte tolte su 104, ▶ in testa",
        "splits_note": "Parziali: il tempo alla 12ª, 24ª, 36ª e 48ª mossa (— non raggiunta).",
        "watching": "Stai guardando.",
        "joined": "{name} è entrato.",
        "left": "{name} è uscito.",
        "stalled": "Stallo: tra le carte giocabili non ci sono né coppie con somma 11 né terzetti Fante, "
        "Donna, Re. Puoi annullare (u) o arrenderti (g).",
        "outcome_won": "Vittoria! Tutte le 104 carte sono state rimosse: {score} punti in {moves} mosse, tempo {time}.",
        "outcome_gave_up": "Ti sei arreso: {score} punti in {moves} mosse.",
        "outcome_timed_out": "Tempo scaduto: {score} punti in {moves} mosse.",
        "outcome_left": "Hai lasciato la gara.",
        "wait_others": "In attesa che gli altri finiscano…",
        "help_lobby": "s avvia (ospite) · q esci",
        "help_race": "«1 8» o «R3 5 12» · u annulla · g arrenditi · e errori di mossa ({errors}) · q esci",
        "on": "sì",
        "off": "no",
        "results": "Risultati — sala {room} · {code}",
        "verified": "Smazzata verificata: codice e sale corrispondono all'impegno dato alla partenza.",
        "not_verified": "ATTENZIONE: codice e sale NON corrispondono all'impegno dato alla partenza.",
        "results_head": ("#", "Giocatore", "Esito", "Punti", "Mosse", "Tempo"),
        "history_title": "Le tue partite — {name} · {server}",
        "history_counts": "In classifica: partite {games} · vittorie {wins} · "
        "vittorie pulite (senza annullare) {clean_wins}",
        "history_casual": "Fuori classifica (amichevoli su un codice noto prima della partenza, tentativi ripetuti, "
        "bot, troppo veloci): partite {games} · "
        "vittorie {wins} · vittorie pulite {clean_wins}",
        "history_best_casual": "Miglior tempo per smazzata nelle amichevoli (✓ pulita)",
        "history_streak": "Serie della sfida del giorno: {streak} giorni di fila (oggi: {today})",
        "history_today_done": "fatta",
        "history_today_open": "da giocare",
        "history_best": "Miglior tempo per smazzata (✓ pulita)",
        "history_recent": "Ultime partite",
        "history_head": ("Data", "Tipo", "Codice", "Esito", "Punti", "Tempo", "✓", "Classifica"),
        "history_none": "Nessuna partita ancora con questa chiave: "
        "quelle che giochi con «halfmoon join» compariranno qui.",
        "history_hidden": "(nascosto)",
        "mode_race": "gara",
        "mode_solo": "partita",
        "mode_daily": "sfida",
        "history_key": "La chiave è in {path}: il server ne tiene solo un'impronta.",
        "link_code": "Apri {server}/account in un browser dove hai fatto l'accesso e, in «Collega un terminale», "
        "scrivi il codice {code} (vale 10 minuti, una volta sola).",
        "link_waiting": "In attesa dell'approvazione… (Ctrl-C per smettere)",
        "link_done": "Fatto: questo terminale è collegato all'account «{account}».",
        "link_already": "Questo terminale è già collegato all'account «{account}».",
        "link_expired": "Il codice è scaduto senza approvazione: riprova con «halfmoon link».",
        "reconnecting": "Connessione persa: riprovo tra {delay:.1f} s (tentativo {attempt})…",
        "reconnected": "Riconnesso.",
        "not_started": "La gara non è ancora iniziata.",
        "not_playing": "La tua partita è finita.",
        "not_host": "Solo l'ospite può avviare la gara.",
        "refused": "✗ {text}",
        "spectators": "spettatori: {count}",
        "page": "pagina {page}/{pages}",
        "watch_line": "{score:>3} punti {moves:>2} mosse {left:>3} carte",
        "piles": " pile  ",
        "reserve": " ris.  ",
        "phase_lobby": "sala d'attesa",
        "phase_countdown": "conto alla rovescia",
        "phase_running": "in corso",
        "phase_finished": "finita",
        "help_rematch": "r rivincita · q esci",
        "no_rematch": "Nessuna rivincita da proporre o accettare ora.",
        "rematch": "{name} propone la rivincita su una nuova smazzata.",
        "round": "gara {round}",
        "seated": "Non ancora dentro: {names}",
        "may_accept": "a accetta la rivincita · q esci",
        "series_head": "Serie: gara {race} di {races}",
        "series_over": "Serie finita ({races} gare): classifica finale",
        "points": "{points} punti",
        "bot_mark": "[bot]",
        "ranked_result": "Risultato in classifica.",
        "unranked_casual": "Fuori classifica: il codice di questa smazzata era noto prima della partenza.",
        "unranked_daily_retry": "Fuori classifica: il tentativo in classifica di oggi è già stato giocato con questo "
        "nome, da questa rete o dal tuo account.",
        "unranked_bot": "Fuori classifica: un bot non entra in classifica.",
        "unranked_too_fast": "Fuori classifica: finita più in fretta di quanto una persona possa toccare le carte.",
        "rank_yes": "sì",
        "rank_casual": "amichevole",
        "rank_daily_retry": "ripetuta",
        "rank_bot": "bot",
        "rank_too_fast": "troppo veloce",
    },
    "en": {
        "lobby": "Lobby {room} · {count} players",
        "waiting_host": "Waiting for {host} to start the race…",
        "quick_lobby": "Quick race: it starts by itself once everyone is in.",
        "quick_alone": "Quick race · queued alone: waiting for a rival…",
        "quick_count": "Quick race · queued: {count} players · starts in {seconds} s",
        "quick_offer": "No rival yet. Enter: keep waiting · q: leave the queue",
        "quick_ghost": "Or race {name}'s ghost: halfmoon race --code {code}, then halfmoon join ROOM --ghost {game}",
        "help_queue": "q leaves the queue",
        "quick_left": "You left the queue.",
        "you_host": "You are the host: type 's' and Enter to start the race.",
        "countdown": "The race starts in {seconds}…",
        "rivals": "Rivals",
        "no_rivals": "(no rivals)",
        "ghost": "ghost",
        "ghost_end": "finished: {outcome}, {time}",
        "ghost_other_deal": "The ghost played another deal ({code}): no ghost here. "
        "To race it: halfmoon race --code {code}",
        "track_axis": "track: cards removed of 104, ▶ leads",
        "splits_note": "Splits: the time at moves 12, 24, 36 and 48 (— not reached).",
        "watching": "You are watching.",
        "joined": "{name} joined.",
        "left": "{name} left.",
        "stalled": "Stalled: no pair summing to 11 and no Jack-Queen-King among the playable cards. "
        "You can undo (u) or give up (g).",
        "outcome_won": "You won! All 104 cards removed: {score} points in {moves} moves, time {time}.",
        "outcome_gave_up": "You gave up: {score} points in {moves} moves.",
        "outcome_timed_out": "Time is up: {score} points in {moves} moves.",
        "outcome_left": "You left the race.",
        "wait_others": "Waiting for the others to finish…",
        "help_lobby": "s start (host) · q quit",
        "help_race": "Move: '1 8' or 'R3 5 12' · u undo · g give up · e move errors ({errors}) · q quit",
        "on": "on",
        "off": "off",
        "results": "Results — room {room} · {code}",
        "verified": "Deal verified: the code and salt match the commitment given at the start.",
        "not_verified": "WARNING: the code and salt do NOT match the commitment given at the start.",
        "results_head": ("#", "Player", "Outcome", "Score", "Moves", "Time"),
        "history_title": "Your games — {name} · {server}",
        "history_counts": "Ranked: games {games} · wins {wins} · clean wins (no undo) {clean_wins}",
        "history_casual": "Not ranked (casual games on a code known before the start, daily retries, bots, too "
        "fast): games {games} · wins {wins} · "
        "clean wins {clean_wins}",
        "history_best_casual": "Best time per deal in casual games (✓ clean)",
        "history_streak": "Daily challenge streak: {streak} days in a row (today: {today})",
        "history_today_done": "done",
        "history_today_open": "still to play",
        "history_best": "Best time per deal (✓ clean)",
        "history_recent": "Latest games",
        "history_head": ("Date", "Kind", "Code", "Outcome", "Score", "Time", "✓", "Ranked"),
        "history_none": "No games with this key yet: the ones you play with 'halfmoon join' will show here.",
        "history_hidden": "(hidden)",
        "mode_race": "race",
        "mode_solo": "game",
        "mode_daily": "daily",
        "history_key": "The key is in {path}: the server keeps only a fingerprint of it.",
        "link_code": "Open {server}/account in a browser where you are signed in and, under “Link a terminal”, "
        "type the code {code} (it works for 10 minutes, once).",
        "link_waiting": "Waiting for the approval… (Ctrl-C to stop)",
        "link_done": "Done: this terminal is linked to the account “{account}”.",
        "link_already": "This terminal is linked to the account “{account}” already.",
        "link_expired": "The code expired without an approval: try again with “halfmoon link”.",
        "reconnecting": "Connection lost: retrying in {delay:.1f} s (attempt {attempt})…",
        "reconnected": "Reconnected.",
        "not_started": "The race has not started yet.",
        "not_playing": "Your game is over.",
        "not_host": "Only the host can start the race.",
        "refused": "✗ {text}",
        "spectators": "spectators: {count}",
        "page": "page {page}/{pages}",
        "watch_line": "{score:>3} pts {moves:>2} mv {left:>3} left",
        "piles": " piles ",
        "reserve": " res.  ",
        "phase_lobby": "lobby",
        "phase_countdown": "countdown",
        "phase_running": "running",
        "phase_finished": "finished",
        "help_rematch": "r rematch · q quit",
        "no_rematch": "No rematch to propose or accept now.",
        "rematch": "{name} proposes a rematch on a new deal.",
        "round": "race {round}",
        "seated": "Not in yet: {names}",
        "may_accept": "a accepts the rematch · q quit",
        "series_head": "Series: race {race} of {races}",
        "series_over": "Series over ({races} races): final table",
        "points": "{points} pts",
        "bot_mark": "[bot]",
        "ranked_result": "This result is ranked.",
        "unranked_casual": "Not ranked: this deal's code was known before the start.",
        "unranked_daily_retry": "Not ranked: today's ranked attempt was already played under this name, from this "
        "network or by your account.",
        "unranked_bot": "Not ranked: a bot is never ranked.",
        "unranked_too_fast": "Not ranked: finished faster than a person can tap the cards.",
        "rank_yes": "yes",
        "rank_casual": "casual",
        "rank_daily_retry": "retry",
        "rank_bot": "bot",
        "rank_too_fast": "too fast",
    },
}

STATUS_WORDS: Final = {
    "it": {
        "waiting": "in attesa",
        "playing": "in gioco",
        "stalled": "in stallo",
        "won": "vinto",
        "gave_up": "arreso",
        "left": "uscito",
        "timed_out": "tempo scaduto",
    },
    "en": {
        "waiting": "waiting",
        "playing": "playing",
        "stalled": "stalled",
        "won": "won",
        "gave_up": "gave up",
        "left": "left",
        "timed_out": "timed out",
    },
}


def say(key: str, lang: str = "en", **values: object) -> str:
    """The phrase ``key`` in ``lang`` (English when unknown), filled with ``values``.

    A ``time_ms`` value is also offered formatted as ``time``. Raises :class:`KeyError` for an
    unknown key.
    """
    table = WORDS.get(lang, WORDS["en"])
    text = table[key]
    if not isinstance(text, str):
        raise KeyError(key)
    if "time_ms" in values and isinstance(values["time_ms"], int):
        values["time"] = format_time(values["time_ms"])
    return text.format(**values) if values else text


def columns(key: str, lang: str = "en") -> tuple[str, ...]:
    """A row of column titles such as ``results_head``; raises :class:`KeyError` for an unknown key."""
    value = WORDS.get(lang, WORDS["en"])[key]
    return (value,) if isinstance(value, str) else tuple(value)


def status_word(status: str, lang: str = "en") -> str:
    return STATUS_WORDS.get(lang, STATUS_WORDS["en"]).get(status, status)
