// The interface's words in Italian (the seed's words) and English, and the language choice.

const STRINGS = {
  it: {
    title: "Half Moon",
    home: "Inizio", leave: "Esci", rules: "Regole", settings: "Impostazioni", language: "Lingua",
    moveErrors: "Errori di mossa", placementHelp: "Aiuto al posizionamento",
    yourName: "Il tuo nome", newSolo: "Nuova partita", playCode: "Gioca un codice",
    codePlaceholder: "HM1-N-AAAAAAB", play: "Gioca", createRace: "Crea una gara",
    joinRace: "Entra in una gara", roomPlaceholder: "codice o link della gara",
    roomHint: "Scrivi il codice della gara (6 caratteri, come K7WQ2M) o incolla il suo link.", join: "Entra",
    watch: "Guarda", daily: "Sfida del giorno", leaderboards: "Classifiche",
    time: "Tempo", score: "Punteggio", moves: "Mosse", code: "Codice", copy: "Copia", copied: "Copiato",
    undo: "Annulla", newGame: "Nuova partita", giveUp: "Abbandona", close: "Chiudi",
    keepPlaying: "Continua a giocare",
    confirmGiveUpRace: "Abbandonare la gara? La tua partita finisce qui e conta come abbandonata.",
    confirmGiveUpDaily: "Abbandonare la sfida di oggi? È il tuo tentativo in classifica: finisce qui e conta come abbandonato.",
    stalled: "Stallo: non ci sono né coppie con somma 11 né terzetti Fante, Donna, Re.",
    stalledHint: "Puoi annullare o iniziare una nuova partita.",
    stalledRaceHint: "Puoi annullare o abbandonare.",
    won: "Vittoria!", wonDetail: "Tutte le 104 carte sono state rimosse.",
    analysis: {
      winnable: (n) => `Questa smazzata si poteva vincere dall'inizio. La vittoria era ancora possibile dopo ${n} mosse.`,
      winnableFromStart: "Questa smazzata si poteva vincere dall'inizio.",
      unwinnable: "Questa smazzata non si poteva vincere, nemmeno conoscendo tutte le carte.",
      unknown: "Non è stato possibile stabilire se questa smazzata si poteva vincere.",
    },
    place: "Posizione", of: "su",
    pile: "pila", slot: "casella di riserva", cards: "carte", card: "carta", empty: "vuota",
    faceDown: "carta coperta",
    lobby: "Sala d'attesa", players: "Giocatori", host: "organizzatore", start: "Via!",
    timeLimit: "Tempo massimo (minuti)", waitingHost: "In attesa che l'organizzatore dia il via…",
    share: "Invita con questo link", startsIn: "Si parte tra", spectators: "Spettatori",
    opponents: "Avversari", results: "Risultati", rank: "#", name: "Nome", status: "Stato",
    spectating: "Stai guardando", readOnly: "sola lettura", notStarted: "La gara non è ancora iniziata.",
    hiddenCards: "Le carte coperte restano coperte finché ogni giocatore ancora in gara non le ha scoperte.",
    reconnecting: "Connessione persa: riconnessione in corso…", connecting: "Connessione…",
    becameSpectator: "La gara è già iniziata: la guardi da spettatore.",
    replay: "Replay", first: "Inizio", prev: "Indietro", next: "Avanti", last: "Fine", step: "Mossa",
    perDeal: "Classifica della smazzata", dailyBoard: "Classifica del giorno", date: "Data",
    show: "Mostra", noResults: "Nessun risultato.", loading: "Caricamento…",
    yourGame: "La tua partita", playThisDeal: "Gioca questa smazzata", seeReplay: "Rivedi la partita", errorPrefix: "Errore", retry: "Riprova",
    statuses: { waiting: "in attesa", playing: "in gioco", stalled: "in stallo", won: "vinto",
      gave_up: "ha abbandonato", left: "uscito", timed_out: "tempo scaduto" },
    outcomes: { won: "Vittoria!", gave_up: "Hai abbandonato", left: "Hai lasciato la gara", timed_out: "Tempo scaduto" },
    errors: {
      no_such_room: (x) => `La gara ${x} non esiste (forse è già finita).`,
      bad_code: (x) => `Il codice ${x} non è valido: un codice è fatto così, HM1-N-AAAAAAB.`,
      bad_name: (x) => `Il nome «${x}» non va bene: da 1 a 20 caratteri, lettere, cifre, spazi e _-.'`,
      name_taken: (x) => `In questa gara c'è già un giocatore di nome «${x}»: scegline un altro.`,
      room_full: () => "Questa gara è al completo (8 giocatori).",
      race_started: () => "La gara è già iniziata.",
      private_room: () => "Una sfida del giorno non si può guardare.",
      server_full: () => "Il server è al completo: riprova tra poco.",
      internal: () => "Il server non è riuscito a farlo; non è cambiato nulla.",
      unavailable: () => "Il server non può salvare la partita in questo momento; non è cambiato nulla: riprova.",
      shutting_down: () => "Il server si sta riavviando: riprova tra poco.",
    },
    connected: "connesso", disconnected: "disconnesso",
  },
  en: {
    title: "Half Moon",
    home: "Home", leave: "Leave", rules: "Rules", settings: "Settings", language: "Language",
    moveErrors: "Move errors", placementHelp: "Placement help",
    yourName: "Your name", newSolo: "New game", playCode: "Play a code",
    codePlaceholder: "HM1-N-AAAAAAB", play: "Play", createRace: "Create a race",
    joinRace: "Join a race", roomPlaceholder: "race id or link",
    roomHint: "Type the race's id (6 characters, like K7WQ2M) or paste its link.", join: "Join",
    watch: "Watch", daily: "Daily challenge", leaderboards: "Leaderboards",
    time: "Time", score: "Score", moves: "Moves", code: "Code", copy: "Copy", copied: "Copied",
    undo: "Undo", newGame: "New game", giveUp: "Give up", close: "Close",
    keepPlaying: "Keep playing",
    confirmGiveUpRace: "Give up the race? Your game ends here and counts as given up.",
    confirmGiveUpDaily: "Give up today's challenge? It is your ranked attempt: it ends here and counts as given up.",
    stalled: "Stalled: there is neither a pair summing to 11 nor a Jack-Queen-King triple.",
    stalledHint: "You can undo or start a new game.",
    stalledRaceHint: "You can undo or give up.",
    won: "You won!", wonDetail: "All 104 cards have been removed.",
    analysis: {
      winnable: (n) => `This deal could be won from the start. A win was still possible after ${n} moves.`,
      winnableFromStart: "This deal could be won from the start.",
      unwinnable: "This deal could not be won, even knowing every card.",
      unknown: "Whether this deal could be won was not settled.",
    },
    place: "Place", of: "of",
    pile: "pile", slot: "reserve slot", cards: "cards", card: "card", empty: "empty",
    faceDown: "face-down card",
    lobby: "Lobby", players: "Players", host: "host", start: "Start",
    timeLimit: "Time limit (minutes)", waitingHost: "Waiting for the host to start…",
    share: "Invite with this link", startsIn: "Starting in", spectators: "Spectators",
    opponents: "Opponents", results: "Results", rank: "#", name: "Name", status: "Status",
    spectating: "Watching", readOnly: "read-only", notStarted: "The race has not started yet.",
    hiddenCards: "Face-down cards stay face down until every racer still playing has uncovered them.",
    reconnecting: "Connection lost: reconnecting…", connecting: "Connecting…",
    becameSpectator: "The race has already started: you are watching it.",
    replay: "Replay", first: "Start", prev: "Back", next: "Next", last: "End", step: "Move",
    perDeal: "Deal leaderboard", dailyBoard: "Daily leaderboard", date: "Date",
    show: "Show", noResults: "No results.", loading: "Loading…",
    yourGame: "Your game", playThisDeal: "Play this deal", seeReplay: "Watch the replay", errorPrefix: "Error", retry: "Try again",
    statuses: { waiting: "waiting", playing: "playing", stalled: "stalled", won: "won",
      gave_up: "gave up", left: "left", timed_out: "timed out" },
    outcomes: { won: "You won!", gave_up: "You gave up", left: "You left the race", timed_out: "Time is up" },
    errors: {
      no_such_room: (x) => `There is no race ${x} (it may have ended).`,
      bad_code: (x) => `${x} is not a valid deal code: a code looks like HM1-N-AAAAAAB.`,
      bad_name: (x) => `The name “${x}” will not do: 1 to 20 letters, digits, spaces or _-.'`,
      name_taken: (x) => `Someone in this race is already called “${x}”: pick another name.`,
      room_full: () => "This race is full (8 players).",
      race_started: () => "The race has already started.",
      private_room: () => "A daily challenge cannot be watched.",
      server_full: () => "The server is full: try again in a moment.",
      internal: () => "The server could not do that; nothing changed.",
      unavailable: () => "The server cannot save the game right now; nothing changed: try again.",
      shutting_down: () => "The server is restarting: try again in a moment.",
    },
    connected: "connected", disconnected: "disconnected",
  },
};

export const LANGS = ["it", "en"];

/** The language from the saved setting, else the browser's (Italian for "it…", else English). */
export function pickLanguage(saved, navigatorLanguages) {
  if (LANGS.includes(saved)) return saved;
  for (const tag of navigatorLanguages || []) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (LANGS.includes(base)) return base;
  }
  return "en";
}

/** The words of a language: t("it").undo === "Annulla". */
export function t(lang) {
  return STRINGS[lang] || STRINGS.en;
}

/**
 * A refusal from the server in the player's words: the protocol's error `code` (with `subject`,
 * the room, deal code or name it is about) in this language, else the server's own message.
 */
export function errorText(lang, code, subject, message) {
  const say = t(lang).errors[code];
  if (!say || (say.length > 0 && !subject)) return message || code;
  return say(subject);
}

export const STRING_KEYS = Object.keys(STRINGS.en);
export const _STRINGS_FOR_TESTS = STRINGS;
