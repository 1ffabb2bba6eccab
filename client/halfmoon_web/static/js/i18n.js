// The interface's words in Italian (the seed's words) and English, and the language choice.

const STRINGS = {
  it: {
    title: "Half Moon",
    home: "Inizio", leave: "Esci", rules: "Regole", settings: "Impostazioni", language: "Lingua",
    moveErrors: "Errori di mossa", placementHelp: "Aiuto al posizionamento",
    yourName: "Il tuo nome", newSolo: "Nuova partita", playCode: "Gioca un codice",
    codePlaceholder: "HM1-N-AAAAAAB", play: "Gioca", createRace: "Crea una gara",
    joinRace: "Entra in una gara", roomPlaceholder: "codice o link",
    roomHint: "Scrivi il codice della gara (6 caratteri, come K7WQ2M) o incolla il suo link.", join: "Entra",
    watch: "Guarda", daily: "Sfida del giorno", leaderboards: "Classifiche",
    time: "Tempo", score: "Punteggio", moves: "Mosse", code: "Codice", copy: "Copia", copied: "Copiato",
    sealed: "sigillato", dealVerified: "Smazzata verificata: è quella promessa alla partenza ✓",
    dealNotVerified: "Attenzione: la smazzata NON è quella promessa alla partenza",
    undo: "Annulla", newGame: "Nuova partita", giveUp: "Abbandona", close: "Chiudi",
    keepPlaying: "Continua a giocare",
    confirmGiveUpRace: "Abbandonare la gara? La tua partita finisce qui e conta come abbandonata.",
    confirmGiveUpDaily: "Abbandonare la sfida di oggi? È il tuo tentativo in classifica: finisce qui e conta come abbandonato.",
    stalled: "Stallo: non ci sono né coppie con somma 11 né terzetti Fante, Donna, Re.",
    stalledHint: "Puoi annullare o iniziare una nuova partita.",
    stalledRaceHint: "Puoi annullare o abbandonare.",
    won: "Vittoria!", wonDetail: "Tutte le 104 carte sono state rimosse.",
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
    replay: "Rivedi", player: "Giocatore", first: "Inizio", prev: "Indietro", next: "Avanti", last: "Fine", step: "Mossa",
    pitch: ["Un solitario a due mazzi: 104 carte in 12 pile ad arco e una riserva di 8.",
      "Togli due carte che fanno 11, oppure Fante, Donna e Re insieme, finché il tavolo è vuoto.",
      "Gioca da solo, sfida gli amici sulla stessa smazzata o prova la sfida del giorno."],
    examples: "Esempi", diagramCaption: "La disposizione: 12 pile ad arco e la riserva R1–R8; sotto ogni carta la sua pila o casella e il numero di carte.",
    ex: {
      table: "La smazzata della partita vinta: 12 pile da 8 carte ad arco, la riserva al centro. Sotto ogni carta, la pila (1–12) o la casella (R1–R8) e il numero di carte.",
      select: (a) => `Si tocca ${a}: viene selezionata.`,
      notEleven: (a, b) => `${a} e ${b}: la somma non è 11, non viene rimosso nulla e la selezione si annulla.`,
      faceAndNumber: (a, b) => `${a} e ${b}: una carta numerica e una figura annullano la selezione.`,
      sameFace: (a, b) => `${a}, poi ${b}: due figure dello stesso valore non si sommano; la seconda diventa la carta selezionata.`,
      pair: (a, b) => `Prima mossa: ${a} e ${b} vengono rimosse insieme (5 + 6 = 11).`,
      triple: (a, b) => `La pila 8 scopre V♣, rimossa alla mossa successiva con ${a} e ${b}: un terzetto, al terzo tocco.`,
      afterTwo: "Dopo due mosse: 25 punti (10 + 15), 99 carte.",
      won: "Alla fine: tutte le 104 carte rimosse in 48 mosse, 40 coppie e 8 terzetti, 520 punti.",
      whole: "Le regole complete:",
    },
    nameWhy: "Il nome compare nelle classifiche: scegline uno prima di giocare.",
    otherGames: (n) => `altre ${n} partite`,
    takenElsewhere: "Questa partita è aperta in un'altra scheda: ricarica la pagina per giocarla qui.",
    confirmNewGame: "Iniziare una nuova partita? Questa finisce qui e non conta.",
    confirmGiveUpUnranked: "Abbandonare questo tentativo? Non è in classifica: finisce qui.",
    ranked: "È il tuo tentativo in classifica", unranked: "Tentativo fuori classifica: hai già giocato oggi con questo nome",
    nextDaily: "Prossima sfida tra", shareResult: "Condividi", raceThisDeal: "Sfida qualcuno su questa smazzata", points: "punti",
    sound: "Suono",
    about: {
      moveErrors: "Spiega perché una coppia o un terzetto non va: «La somma deve essere uguale a 11».",
      placementHelp: "Appena selezioni una carta, oscura quelle che non si possono abbinare.",
      sound: "Un breve suono a ogni mossa e alla fine della partita.",
    },
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
    sealed: "sealed", dealVerified: "Deal verified: it is the one promised at the start ✓",
    dealNotVerified: "Warning: the deal is NOT the one promised at the start",
    undo: "Undo", newGame: "New game", giveUp: "Give up", close: "Close",
    keepPlaying: "Keep playing",
    confirmGiveUpRace: "Give up the race? Your game ends here and counts as given up.",
    confirmGiveUpDaily: "Give up today's challenge? It is your ranked attempt: it ends here and counts as given up.",
    stalled: "Stalled: there is neither a pair summing to 11 nor a Jack-Queen-King triple.",
    stalledHint: "You can undo or start a new game.",
    stalledRaceHint: "You can undo or give up.",
    won: "You won!", wonDetail: "All 104 cards have been removed.",
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
    replay: "Replay", player: "Player", first: "Start", prev: "Back", next: "Next", last: "End", step: "Move",
    pitch: ["A two-deck solitaire: 104 cards in 12 piles laid in an arc, and a reserve of 8.",
      "Remove two cards that make 11, or a Jack, a Queen and a King together, until the table is clear.",
      "Play alone, race friends on the same deal, or try the daily challenge."],
    examples: "Examples", diagramCaption: "The layout: 12 piles in an arc and the reserve R1–R8; under each card its pile or slot and its number of cards.",
    ex: {
      table: "The won game's deal: 12 piles of 8 in an arc, the reserve in the middle. Under each card, its pile (1–12) or slot (R1–R8) and its number of cards.",
      select: (a) => `Tap ${a}: it is selected.`,
      notEleven: (a, b) => `${a} and ${b}: the sum is not 11, nothing is removed and the selection is cancelled.`,
      faceAndNumber: (a, b) => `${a} and ${b}: a number card and a face card cancel the selection.`,
      sameFace: (a, b) => `${a}, then ${b}: two face cards of the same rank do not add up; the second becomes the selected card.`,
      pair: (a, b) => `First move: ${a} and ${b} are removed together (5 + 6 = 11).`,
      triple: (a, b) => `Pile 8 uncovers J♣, removed on the next move with ${a} and ${b}: a triple, on the third tap.`,
      afterTwo: "After two moves: 25 points (10 + 15), 99 cards.",
      won: "At the end: all 104 cards removed in 48 moves, 40 pairs and 8 triples, 520 points.",
      whole: "The whole rules:",
    },
    nameWhy: "Your name appears on the leaderboards: choose one before you play.",
    otherGames: (n) => `${n} other games`,
    takenElsewhere: "This game is open in another tab: reload the page to play it here.",
    confirmNewGame: "Start a new game? This one ends here and does not count.",
    confirmGiveUpUnranked: "Give up this attempt? It is not ranked: it ends here.",
    ranked: "This is your ranked attempt", unranked: "Not ranked: you already played today under this name",
    nextDaily: "Next challenge in", shareResult: "Share", raceThisDeal: "Race someone on this deal", points: "points",
    sound: "Sound",
    about: {
      moveErrors: "Says why a pair or triple does not fit: “The sum must equal 11”.",
      placementHelp: "Once you select a card, dims the cards that cannot go with it.",
      sound: "A short sound on each move and at the end of the game.",
    },
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
