// A live room over the WebSocket: solo, daily, races and spectating. Wiring and drawing only:
// state, optimistic moves and messages to send are the reducer's (session.js).

import { moveSaid } from "./announce.js";
import { createBoard } from "./board.js";
import { checkSeal, dealFromCode } from "./codes.js";
import { copyText, formatTime, h, localDate, replaceIfChanged } from "./dom.js";
import { ghostLane, ghostOf } from "./ghost.js";
import { errorText, t } from "./i18n.js";
import { playerKey } from "./me.js";
import { ratingLine } from "./ratings.js";
import { modeRules } from "./modes.js";
import { Connection, fetchStored, wsUrl } from "./net.js";
import { matchedName } from "./queue.js";
import * as session from "./session.js";
import { CANCELLED, REMOVED, tapMessage } from "./taps.js";
import { POSITION_NAMES } from "./cards.js";

const SESSION_KEY = "halfmoon.session";
// today's daily attempt is kept for the whole browser: a second tab resumes it, not a new one
const DAILY_KEY = "halfmoon.daily";
// the daily's commitments as this browser first saw them (GET /api/daily: today's, and tomorrow's a day ahead)
const DAILY_COMMITMENTS_KEY = "halfmoon.dailyCommitments";

/** `sentFor` of a contribution sent with a join: for the race joined, whichever round of its room that is. */
const JOINED = -1;

/** A contribution to a sealed race's deal: 16 random bytes in hex (32 characters). */
export const newEntropy = () => [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** The UTC day (2026-11-30) at epoch `ms`: the daily challenge's day. */
export const utcDay = (ms) => new Date(ms).toISOString().slice(0, 10);

/** Milliseconds from `ms` to the next UTC midnight: the next daily deal. */
export const msToNextDay = (ms) => 86400000 - (ms % 86400000);

function read(storage, key) {
  try {
    return JSON.parse(storage.getItem(key) || "null");
  } catch {
    return null;
  }
}

/** The seat ({room, token}) this tab keeps for the page at `path` (today's daily attempt: this browser's), or null. */
function loadSeat(path) {
  const saved = read(sessionStorage, SESSION_KEY);
  if (saved && saved.path === path) return { room: saved.room, token: saved.token };
  const daily = path === "/daily" ? read(localStorage, DAILY_KEY) : null;
  return daily && daily.day === utcDay(Date.now()) ? { room: daily.room, token: daily.token } : null;
}

function saveSeat(saved) {
  if (saved) sessionStorage.setItem(SESSION_KEY, JSON.stringify(saved));
  else sessionStorage.removeItem(SESSION_KEY);
  if (saved && saved.path === "/daily") localStorage.setItem(DAILY_KEY, JSON.stringify({ day: utcDay(Date.now()), room: saved.room, token: saved.token }));
}

/** Open a live screen. `intent`: {kind: "solo"|"daily"|"race"|"watch", code?, room?, ghost?}; `app`: {main,
 * settings, lang(), navigate(path), toast(text), setBanner(text|null)}. Returns {close(), relabel()}. */
export function openLive(app, intent) {
  let path = location.pathname + (intent.kind === "daily" && intent.ghost ? location.search : ""); // a seat of its own
  let s = session.initialState(intent, loadSeat(path));
  let ui = null;
  let ticker = null;
  // the seat was resumed on another connection (another tab or device: Connection's "taken");
  // `backHere`: the player pressed «Gioca qui», the focus goes back to the board once it plays
  let taken = false;
  let connection = "connecting";
  let backHere = false;
  // this page's contributions to the sealed deal of the race `sentFor` (a round of the room): docs/protocol.md, "Sealed races"
  let sent = [];
  let sentFor = 0; // JOINED: the race the page joined (its round is not known when the join goes)
  // a ghost race (`intent.ghost`: a stored game, or one about to be: fetchStored; a daily's, its progress only)
  let ghost = null;
  let ghostFailed = false;
  if (intent.ghost) {
    const id = encodeURIComponent(intent.ghost);
    fetchStored(intent.kind === "daily" ? `/api/daily/${utcDay(Date.now())}/ghosts/${id}` : `/api/games/${id}`,
      { headers: { Authorization: `Bearer ${playerKey(localStorage)}` } })
      .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
      .then((game) => { ghost = ghostOf(game); })
      .catch(() => { ghostFailed = true; }); // the ticker draws it
  }

  if (intent.kind === "daily") { // keep today's and tomorrow's commitments: tomorrow's attempt is held to the one seen today
    fetch("/api/daily").then((response) => (response.ok ? response.json() : null)).then((daily) => {
      if (daily) localStorage.setItem(DAILY_COMMITMENTS_KEY, JSON.stringify(session.keepDailyCommitments(read(localStorage, DAILY_COMMITMENTS_KEY), daily)));
    }).catch(() => {}); // (a page that cannot read it checks against the attempt's own commitment only)
  }

  const words = () => t(app.lang());
  const homeLink = () => h("a", { href: "/", "data-link": true }, words().home);
  // the router asks for a name before a game opens: no invented name reaches a leaderboard
  // (a quick race's: the name the queue matched this tab under — numbered when another racer has it)
  const playerName = () => (intent.kind === "race" && matchedName(intent.room)) || app.settings.name;

  // every socket names the room it is for (`/ws?room=ID`, what a balancer routes on): a new game's
  // socket stays where it was made, and its reconnections (and reloads) name the room it learnt
  const conn = new Connection(() => wsUrl(location, session.roomFor(s)), {
    // after a reload the page holds nothing: no `since`, so the server sends a full snapshot
    hello: () => {
      const entropy = newEntropy();
      const message = session.hello(s, playerName(), playerKey(localStorage), entropy);
      if (message.entropy === entropy) { // a join; or a resume, whose contribution replaces ours only in the lobby
        [sent, sentFor] = message.type === "resume" && sent.length ? [[...sent, entropy], sentFor] : [[entropy], JOINED];
      }
      return message;
    },
    onState: (status) => {
      // taken up on another tab or device: this page's board is stale and sends nothing (the
      // socket is closed) — it is played no more here until the player takes it back, one button
      const wasTaken = taken;
      taken = status === "taken";
      connection = status;
      const focusWasOnGame = taken && Boolean(ui && ui.main && ui.main.contains(document.activeElement));
      connectionBanner();
      if (taken) commit(session.clearSelection(s));
      if (status === "reconnecting" && commit(session.disconnected(s))) render();
      else if (taken !== wasTaken) render();
      if (focusWasOnGame) document.querySelector("#banner button")?.focus(); // (its cards and buttons are disabled now)
    },
    onMessage: (msg) => {
      const before = s;
      commit(session.reduce(s, msg, Date.now()));
      if (msg.type === "error") refused(session.refusal(before, msg), msg);
      // the player's own undo, said once the server has put the cards back
      if (msg.type === "moved" && msg.action === "undo" && msg.player === s.you && msg.positions) {
        const board = session.shownBoard(s);
        sayMove(msg.positions.map((name) => board && board.tops[POSITION_NAMES.indexOf(name)]).filter(Boolean), true);
      }
      verify();
      render();
    },
  });
  conn.open();
  ticker = setInterval(tick, 250);
  render();

  /** A reducer's command that may carry a fresh contribution (`rematch`, `accept`): the one sent is kept, to check at the end that it was in. */
  function contributing(make) {
    const entropy = newEntropy();
    const result = make(entropy);
    const sending = result.commands.find((command) => command.entropy === entropy);
    if (sending) {
      const round = sending.type === "rematch" ? (s.round || 1) + 1 : s.round || 1; // an accept: the rematch's round already
      [sent, sentFor] = [sentFor === round ? [...sent, entropy] : [entropy], round]; // sent twice: the server takes the first
    }
    return result;
  }

  /** Check a revealed deal against the commitment it started with: a sealed race's seed must open it,
   * give the code with the contributions (this page's among them), and the code deal the opening board shown. */
  function verify() {
    const check = session.toVerify(s);
    if (!check) return;
    if (!(globalThis.crypto && crypto.subtle)) { // not a secure context: the terminal's `halfmoon verify` can
      commit(session.verified(s, null));
      return;
    }
    commit(session.verified(s, null)); // once
    const own = sentFor === JOINED || sentFor === (s.round || 1) ? [...sent] : []; // (a rematch makes new ones)
    holds(check, own).catch(() => false).then((ok) => {
      commit(session.verified(s, ok));
      app.toast(ok ? words().dealVerified : words().dealNotVerified);
      render();
    });
  }

  async function holds(check, sent) {
    if (!check.seed) {
      const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(check.text));
      const opens = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("") === check.commitment;
      // a daily attempt: its commitment must be the one this browser kept for the day (seen a day ahead, if it was)
      const day = modeRules(s.mode).daily && s.startedAt ? utcDay(s.startedAt) : null;
      return opens && (!day || session.dailyAsPublished(read(localStorage, DAILY_COMMITMENTS_KEY), day, check.commitment));
    }
    if (!(await checkSeal(check)) || !session.fromRacers(check)) return false;
    if (check.opening && !session.holdsOwn(sent, check.contributions)) return false; // none of the page's own is in
    return !check.opening || session.sameBoard(session.openingOf(await dealFromCode(check.code)), check.opening);
  }

  /** Take the reducer's new state (the solo deal's address, the seat); whether it changed. */
  function commit(next) {
    const before = s;
    s = next;
    if (s === before) return false;
    // a solo game started without a code gets its deal's address, so a reload resumes it
    if (intent.kind === "solo" && s.code && location.pathname !== `/play/${s.code}`) {
      path = `/play/${s.code}`;
      history.replaceState(null, "", path);
    }
    if (s.seat && (s.seat !== before.seat || s.seq !== before.seq)) saveSeat({ path, ...s.seat, seq: s.seq });
    else if (!s.seat && before.seat) saveSeat(null);
    return true;
  }

  /** Take an action's {state, commands}: send them; a move that cannot go is taken back. */
  function run({ state, commands }) {
    commit(state);
    for (const command of commands) {
      if (conn.send(command) || command.type !== "move") continue;
      commit(session.unsent(s, command));
      app.toast(words().reconnecting);
    }
  }

  function refused(kind, msg) {
    if (kind === "move") app.toast(errorText(app.lang(), msg.code, null, msg.message || msg.code));
    else if (kind === "seat") conn.send(session.hello(s, playerName(), playerKey(localStorage))); // a game the server forgot: afresh
    else if (kind === "other") app.toast(errorText(app.lang(), msg.code, subjectOf(msg.code), `${words().errorPrefix}: ${msg.message || msg.code}`));
    // "entry": refused before the game opened: the page says why, not «Connecting…» for ever
  }

  /** What a refusal is about: the room, the deal code or the nickname the player gave. */
  function subjectOf(code) {
    if (code === "bad_code") return intent.code;
    if (code === "bad_name" || code === "name_taken" || code === "name_reserved") return playerName();
    if (code === "no_such_room") return intent.room;
    return null;
  }

  // -- the player's actions

  function onTap(position) {
    const before = session.shownBoard(s);
    const out = session.onTap(s, position);
    if (!out.tap) return;
    const message = tapMessage(out.tap, app.lang(), app.settings.moveErrors);
    if (message) app.toast(message);
    run(out);
    render();
    // feedback: a wrong pair or triple shakes (with «Errori di mossa» off too; a screen reader
    // hears that the selection went, and why only with it on: the toast); a removal clicks and is said
    if (out.tap.event === CANCELLED && ui.board) ui.board.shake(position);
    if (out.tap.event === CANCELLED && !message) app.say(words().said.cancelled);
    if (out.tap.event === REMOVED) {
      app.sound("move");
      sayMove(out.tap.move.map((p) => before.tops[p]), false);
    }
  }

  /** A move of the player's own (or its undo) said politely: cards, score, moves, cards left. */
  function sayMove(cards, undo) {
    const board = session.shownBoard(s);
    if (!board || !cards.length) return;
    const stats = session.shownStats(s);
    const left = board.counts.reduce((sum, n) => sum + n, 0);
    app.say(moveSaid(app.lang(), { cards, score: stats.score, moves: stats.moves, left, undo, terse: app.settings.terse }));
  }

  /** The page's banner for the connection's state, in the language of the moment. */
  function connectionBanner() {
    app.setBanner(connection === "reconnecting" ? words().reconnecting : taken ? words().takenElsewhere : null,
      taken ? { label: words().playHere, onclick: playHere } : null);
  }

  function playHere() {
    backHere = true;
    conn.open();
  }

  const undo = () => run(session.undo(s));
  const giveUp = () => run(session.giveUp(s));
  const rematchButton = () => h("button", { type: "button", class: "primary rematch", onclick: () => run(contributing((e) => session.rematch(s, e))) }, words().rematch);

  // the bar's button asks first: one stray tap would end a race, or today's ranked attempt
  function confirmGiveUp() {
    if (ui.confirm && session.canPlay(s)) ui.confirm.showModal();
  }

  function confirmDialog() {
    const w = words();
    const rules = modeRules(s.mode);
    const solo = rules.newGame; // (a new game in place of a give-up)
    const question = solo ? w.confirmNewGame : rules.daily ? (s.ranked === false ? w.confirmGiveUpUnranked : w.confirmGiveUpDaily) : w.confirmGiveUpRace;
    const dialog = h("dialog", { class: "confirm", "aria-label": solo ? w.newGame : w.giveUp },
      h("form", { method: "dialog" },
        h("p", {}, question),
        h("div", { class: "actions" },
          h("button", { value: "cancel", class: "primary", autofocus: true }, w.keepPlaying),
          h("button", { value: "confirm", class: "danger" }, solo ? w.newGame : w.giveUp))));
    dialog.addEventListener("close", () => {
      if (dialog.returnValue === "confirm") {
        if (solo) leaveAndGo("/play");
        else if (session.canPlay(s)) giveUp();
      }
      dialog.returnValue = "";
    });
    return dialog;
  }

  /** «Nuova partita»: a game under way is thrown away only once the player says so. */
  function newGame() {
    if (session.canPlay(s) && session.shownStats(s).moves > 0 && ui.confirm) ui.confirm.showModal();
    else leaveAndGo("/play");
  }

  function leaveAndGo(target) {
    run(session.leave(s));
    saveSeat(null);
    app.navigate(target);
  }

  // -- drawing

  function tick() {
    if (!ui) return;
    if (ui.time) ui.time.textContent = formatTime(session.clockMs(s, Date.now()));
    if (ui.ghost) ui.ghost();
    if (ui.nextDaily) ui.nextDaily.forEach((node) => { node.textContent = formatTime(msToNextDay(Date.now() + s.offset)); });
    const seconds = session.countdownS(s, Date.now());
    if (ui.countdown && seconds !== null) ui.countdown.textContent = `${words().startsIn} ${seconds}`;
  }

  function render() {
    const kind = session.screen(s);
    if (!ui || ui.kind !== kind) {
      if (ui && ui.keys) document.removeEventListener("keydown", ui.keys);
      const previous = ui ? ui.kind : null;
      const fromLobby = previous === "lobby";
      app.main.replaceChildren();
      ui = { kind };
      ({ connecting: buildConnecting, failed: buildFailed, lobby: buildLobby, watch: buildWatch, game: buildGame })[kind]();
      // a race that starts while the player waits in the lobby: said (the lobby's page is gone), and
      // the keyboard's focus, lost with it, put on the board's first card
      // a rematch proposed while the player looks at the results: the lobby that comes says who (its
      // status line, drawn with the lobby, is not read out by itself)
      ui.sayOffer = Boolean(previous === "game" || previous === "watch") && kind === "lobby";
      if (fromLobby && (kind === "game" || kind === "watch")) {
        app.say(words().said.raceStarted);
        ui.focusBoard = kind === "game" && (!document.activeElement || document.activeElement === document.body);
      }
    }
    ui.update();
    retitle(kind);
    if (ui.sayOffer) {
      ui.sayOffer = false;
      if (ui.offer) app.say(ui.offer);
    }
    if (ui.focusBoard) {
      ui.focusBoard = false;
      const first = app.main.querySelector(".board [data-card]");
      if (first) first.focus();
    }
    tick();
  }

  /** A race's <title> says its state (a tab switched to, a screen reader's window list): the
   * lobby, the race, its results. */
  function retitle(kind) {
    if (intent.kind !== "race" && intent.kind !== "watch") return;
    const w = words();
    const room = s.room || intent.room;
    const where = intent.kind === "watch" ? `${w.spectating} ${room}` : kind === "lobby" ? `${w.lobby} ${room}` : `${w.race} ${room}`;
    document.title = `${s.results && kind !== "lobby" ? `${w.results} · ` : ""}${where} · Half Moon`;
  }

  /** The page's one h1 where the game's own is not drawn (a failure, a name to give). */
  function failedHeading() {
    const w = words();
    const title = intent.kind === "race" || intent.kind === "watch" ? `${w.race} ${intent.room}` : intent.kind === "daily" ? w.daily : w.yourGame;
    return h("h1", {}, title);
  }

  function buildConnecting() {
    app.main.append(h("p", { class: "center muted" }, words().connecting));
    ui.update = () => {};
  }

  function buildFailed() {
    const w = words();
    let retry = null;
    const code = s.failed.code;
    if (code === "bad_name" || code === "name_reserved" || (intent.kind === "race" && code === "name_taken")) {
      // another name, then join again
      // the field says what was wrong with it (described by the alert, marked invalid) and has the focus
      const input = h("input", { id: "retry-name", name: "name", required: true, maxlength: "20", autocomplete: "nickname",
        "aria-invalid": "true", "aria-describedby": "refusal" });
      retry = h("form", { class: "row", onsubmit: (e) => {
        e.preventDefault();
        app.settings.name = input.value.trim();
        app.saveSettings();
        app.navigate(location.pathname);
      } }, h("label", { for: "retry-name" }, w.yourName), input, h("button", { class: "primary" }, intent.kind === "race" ? w.join : w.play));
    } else if (session.passing(code)) {
      // a passing failure: the same address again
      retry = h("p", {}, h("button", { type: "button", class: "primary", onclick: () => app.navigate(location.pathname) }, w.retry));
    }
    app.main.append(h("section", { class: "panel" }, failedHeading(), h("p", { role: "alert", id: "refusal" }, errorText(app.lang(), code, subjectOf(code), s.failed.message || code)), retry,
      homeLink()));
    const field = app.main.querySelector("#retry-name");
    if (field) field.focus();
    ui.update = () => {};
  }

  function playerRow(p) {
    const w = words();
    return h("li", { dataset: { player: p.id } }, p.name,
      p.bot ? botTag(w) : null,
      p.id === s.host ? h("span", { class: "tag" }, w.host) : null,
      p.id === s.you ? h("span", { class: "tag" }, youMark(w)) : null);
  }

  function buildLobby() {
    const w = words();
    const list = h("ul", { class: "players" });
    const link = `${location.origin}/r/${s.room}`;
    const minutes = h("input", { type: "number", min: "1", max: "120", value: String(Math.round((s.timeLimit || 1800) / 60)), id: "time-limit" });
    const races = h("input", { type: "number", min: "1", max: "10", value: "1", id: "series" });
    const seriesBox = h("span", { class: "nowrap" }, " ", h("label", { for: "series" }, w.seriesRaces, " "), races);
    const startButton = h("button", { type: "button", class: "primary", onclick: () => run(session.start(s, minutes.value, races.value)) }, w.start);
    const hostBox = h("div", { class: "host-box" }, h("label", { for: "time-limit" }, w.timeLimit, " "), minutes, seriesBox, " ", startButton);
    const waiting = h("p", { class: "muted" }, w.waitingHost);
    const quickNote = h("p", { class: "muted" }, w.quick.lobby);
    // a rematch: who proposed it, who is not in yet, and (seated) the button to take one's place
    const rematchLine = h("p", { role: "status" });
    const acceptButton = h("button", { type: "button", class: "primary", onclick: () => run(contributing((e) => session.accept(s, e))) }, w.accept);
    const standing = h("div", {});
    ui.countdown = h("p", { class: "countdown", role: "timer" });
    const watching = s.role === "spectator";
    app.main.append(h("section", { class: "panel lobby" },
      h("h1", {}, `${w.lobby} ${s.room}`, s.round > 1 ? ` · ${w.roundLabel} ${s.round}` : "", watching ? h("span", { class: "tag" }, `${w.spectating} · ${w.readOnly}`) : null),
      h("p", {}, w.share, ": ", h("a", { href: link, class: "share" }, link), " ",
        h("button", { type: "button", onclick: () => copyText(link).then(() => app.toast(w.copied)) }, w.copy)),
      h("h2", {}, w.players), list, rematchLine, acceptButton, hostBox, waiting, quickNote, ui.countdown, standing,
      h("p", {}, watching ? homeLink()
        : h("button", { type: "button", onclick: () => leaveAndGo("/") }, w.leave))));
    let seen = null; // the players already listed (a newcomer is said), and whether the countdown was said
    let countdownSaid = false;
    ui.update = () => {
      const players = session.playerList(s);
      if (seen) players.filter((p) => !seen.has(p.id) && p.id !== s.you).forEach((p) => app.say(w.said.joined(p.name)));
      seen = new Set(players.map((p) => p.id));
      if (s.phase === "countdown" && !countdownSaid) {
        countdownSaid = true;
        const seconds = session.countdownS(s, Date.now());
        if (seconds !== null) app.say(w.said.countdown(seconds));
      }
      list.replaceChildren(...players.map(playerRow));
      const quick = s.quick && s.round === 1; // a quick race starts by itself: nobody hosts it
      const isHost = session.isHost(s) && !quick;
      quickNote.hidden = !quick || s.phase !== "lobby";
      hostBox.hidden = !isHost || s.phase !== "lobby";
      seriesBox.hidden = !session.mayStartSeries(s);
      acceptButton.hidden = !session.mayAccept(s);
      waiting.hidden = isHost || quick || s.phase !== "lobby" || !acceptButton.hidden;
      const seated = Object.values(s.seated || {});
      const proposer = s.players[s.host];
      rematchLine.hidden = s.round < 2;
      rematchLine.textContent = `${proposer ? `${proposer.name} ${w.rematchBy}. ` : ""}${seated.length ? `${w.notIn}: ${seated.map((p) => p.name).join(", ")}` : ""}`;
      ui.offer = rematchLine.hidden ? "" : rematchLine.textContent;
      standing.replaceChildren(...seriesTable());
      waiting.textContent = watching ? w.notStarted : w.waitingHost;
      ui.countdown.hidden = s.phase !== "countdown";
    };
  }

  /** The bar's code: the code (✓/✗ once a sealed race's is checked), «sigillato», or a daily's «a fine giornata». */
  function codeText(st, w) {
    if (st.code) return `${st.code}${st.verified ? " ✓" : st.verified === false ? " ✗" : ""}`;
    if (modeRules(st.mode).daily) return w.dailyCodeHidden; // (committed to a day ahead: its reveal is checked too)
    return st.commitment ? w.sealed : "—";
  }

  function statBox(name, label) {
    const value = h("span", { class: "value", dataset: { stat: name } });
    return [h("div", { class: "stat" }, h("span", { class: "name" }, label), value), value];
  }

  function buildGame() {
    const w = words();
    const rules = modeRules(s.mode);
    const [timeBox, time] = statBox("time", w.time);
    const [scoreBox, score] = statBox("score", w.score);
    const [movesBox, moves] = statBox("moves", w.moves);
    // the daily challenge says so where its (hidden) code will appear
    const [codeBox, code] = statBox("code", rules.daily ? w.daily : w.code);
    const copyButton = h("button", { type: "button", class: "copy", "aria-label": `${w.copy} ${w.code}`, onclick: () => s.code && copyText(s.code).then(() => app.toast(`${w.copied}: ${s.code}`)) }, w.copy);
    const inline = h("span", { class: "inline" });
    code.replaceWith(inline);
    inline.append(code, copyButton);
    const undoButton = h("button", { type: "button", onclick: undo, "aria-keyshortcuts": "U" }, "↶ ", w.undo);
    const race = rules.lobby;
    const endButton = !rules.newGame
      ? h("button", { type: "button", onclick: confirmGiveUp, "aria-haspopup": "dialog" }, w.giveUp)
      : h("button", { type: "button", onclick: newGame }, w.newGame);
    const confirm = confirmDialog();
    const bar = h("div", { class: "bar" }, timeBox, scoreBox, movesBox, codeBox, h("div", { class: "actions" }, undoButton, endButton));
    // the daily: its date, the next deal's countdown, whether this attempt is ranked (welcome says)
    const dailyLine = rules.daily ? h("p", { class: "daily-line", dataset: { ranked: s.ranked !== false } }) : null;
    const boardWrap = h("div", { class: "board-wrap" });
    const board = createBoard(boardWrap, { onTap });
    const banner = h("div", { class: "endbox", role: "status" });
    const sitOut = h("p", { class: "sitting-out", role: "status", hidden: true });
    // (it scrolls on a phone: a Tab stop, for the keyboard to scroll it)
    const side = h("aside", { class: "opponents", "aria-label": w.track, tabindex: "0" });
    const sided = race || Boolean(intent.ghost);
    // the page's heading, for a screen reader: the bar and the board say the rest
    const heading = h("h1", { class: "sr-only" }, race ? `${w.race} ${s.room}` : rules.daily ? w.daily : intent.ghost ? w.ghostTrack : w.yourGame);
    app.main.append(h("section", { class: sided ? "game race" : "game" }, heading, bar, dailyLine, boardWrap, sitOut, banner, sided ? side : null, confirm));
    Object.assign(ui, { time, confirm, board, nextDaily: [] });
    ui.keys = (event) => {
      if (event.target.closest && event.target.closest("input, select, textarea, dialog")) return;
      // «U» (a character key: WCAG 2.1.4) only while the focus is on the board or its bar: a
      // speech-input user's words, or a key typed elsewhere, undo nothing
      const onGame = event.target.closest && event.target.closest(".game .board, .game .bar");
      if ((event.key === "u" || event.key === "U") && onGame) undo();
      else if (event.key === "Escape") {
        commit(session.clearSelection(s));
        render();
      }
    };
    document.addEventListener("keydown", ui.keys);
    ui.update = () => {
      const stats = session.shownStats(s);
      score.textContent = stats.score;
      moves.textContent = stats.moves;
      code.textContent = codeText(s, w);
      code.dataset.verified = s.verified;
      copyButton.hidden = !s.code;
      const playing = session.canPlay(s) && !taken;
      // a racer who sits this race out: no board, no figures or buttons of theirs; the track instead
      const sitting = session.sittingOut(s);
      for (const node of [scoreBox, movesBox, undoButton, endButton, boardWrap]) node.hidden = sitting;
      sitOut.hidden = !sitting;
      timeBox.hidden = sitting && Boolean(s.results); // (the race's clock: stopped with its results)
      sitOut.textContent = sitting ? (s.results ? w.satOut : w.sittingOut) : "";
      banner.closest("section").classList.toggle("sitting", sitting);
      undoButton.disabled = taken || !session.mayUndo(s);
      endButton.disabled = !rules.newGame ? !playing : false;
      if (ui.confirm && ui.confirm.open && !playing) ui.confirm.close(); // the game ended meanwhile
      const dimmed = app.settings.placementHelp ? session.dimmed(s) : new Set();
      // the move (or the give-up) that ends the game disables the cards (the button): the focus on
      // one of them, or lost to the page, goes to the end box
      const lost = !document.activeElement || document.activeElement === document.body || document.activeElement.disabled;
      const focusToEnd = Boolean(s.gameOver) && !ui.endFocused && (lost || board.element.contains(document.activeElement));
      board.update(session.shownBoard(s), { selection: s.selection, dimmed, lang: app.lang(), label: w.yourGame, over: Boolean(s.gameOver) || taken });
      banner.closest("section").classList.toggle("elsewhere", taken);
      if (backHere && playing) {
        backHere = false;
        const card = board.element.querySelector('button[tabindex="0"]');
        if (card && (!document.activeElement || document.activeElement === document.body)) card.focus();
      }
      ui.nextDaily = [];
      if (dailyLine) {
        const next = h("span", { class: "nowrap" });
        ui.nextDaily = [next];
        dailyLine.dataset.ranked = s.ranked !== false;
        dailyLine.replaceChildren(h("strong", {}, `${w.daily} ${localDate(utcDay(Date.now() + s.offset), app.lang())}`), " · ",
          s.gameOver ? w.attemptOver : s.ranked === false ? w.unranked : w.ranked, " · ",
          ...(s.notice === "dailyContinued" && !taken ? [h("span", { class: "daily-continued" }, w.dailyContinued), " · "] : []), w.nextDaily, " ", next);
      }
      const ended = endContent(stats);
      if (ended.length && !banner.childElementCount && s.gameOver) app.sound(s.gameOver.outcome === "won" ? "win" : "end");
      // (drawn again only when it changes: an opponent's move neither says it again nor takes the focus)
      replaceIfChanged(banner, ended);
      banner.hidden = banner.childElementCount === 0;
      if (s.gameOver) ui.endFocused = true;
      const endControl = focusToEnd ? banner.querySelector("button, a[href]") : null;
      if (endControl) endControl.focus();
      ui.main = banner.closest("section");
      ui.main.classList.toggle("ended", Boolean(s.gameOver));
      if (race) replaceIfChanged(side, [...track(), ...resultsTables()]);
      else if (intent.ghost) side.replaceChildren(...ghostTrack());
    };
    if (intent.ghost) ui.ghost = () => side.replaceChildren(...ghostTrack());
  }

  function endContent(stats) {
    const w = words();
    const rules = modeRules(s.mode);
    const out = [];
    if (stats.status === "stalled" && !s.gameOver) {
      const race = !rules.newGame; // (stalled: give up, or a new game)
      out.push(h("p", { class: "stall" }, h("strong", {}, w.stalled), " ", race ? w.stalledRaceHint : w.stalledHint),
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: undo, class: "primary" }, "↶ ", w.undo),
          race ? h("button", { type: "button", onclick: giveUp }, w.giveUp) : h("button", { type: "button", onclick: newGame }, w.newGame)));
    }
    if (s.gameOver) {
      const g = s.gameOver;
      const won = g.outcome === "won";
      const place = session.placing(s);
      const daily = rules.daily;
      const day = utcDay(Date.now() + s.offset);
      const next = h("span", { class: "nowrap" });
      if (daily) ui.nextDaily.push(next);
      out.push(h("div", { class: won ? "win" : "over", dataset: { outcome: g.outcome } },
        h("h2", {}, w.outcomes[g.outcome] || w.statuses[g.outcome] || g.outcome),
        won ? h("p", {}, w.wonDetail) : null,
        h("dl", {},
          h("dt", {}, w.time), h("dd", { dataset: { result: "time" } }, formatTime(g.time_ms)),
          h("dt", {}, w.score), h("dd", { dataset: { result: "score" } }, g.score),
          h("dt", {}, w.moves), h("dd", { dataset: { result: "moves" } }, g.moves),
          place ? [h("dt", {}, w.place), h("dd", { dataset: { result: "place" } }, `${place[0]} ${w.of} ${place[1]}`)] : null),
        daily ? h("p", {}, g.ranked ? w.rankedDone : w.unrankedReasons[g.unranked_reason] || w.unranked, " · ", w.nextDaily, " ", next) : null,
        // whether the result is ranked, and why not (docs/security.md, "Ranked and casual results")
        !daily && g.ranked != null ? h("p", { class: "ranking", dataset: { ranked: g.ranked, reason: g.unranked_reason || "" } },
          g.ranked ? w.rankedResult : w.unrankedReasons[g.unranked_reason] || w.unrankedReasons.casual) : null,
        // a ranked race's game may move the rating: the server rates it a moment after it is stored
        !daily && g.ranked && g.game != null ? ratingLine(g.game, w) : null,
        daily && !g.code ? h("p", { class: "muted" }, w.dailyCodeLater) : null,
        h("div", { class: "actions" },
          h("button", { type: "button", class: "share", onclick: () => share(g) }, w.shareResult),
          g.code ? h("button", { type: "button", class: "race-this", onclick: () => app.createRace(g.code) }, w.raceThisDeal) : null,
          daily ? h("a", { href: `/leaderboard/daily/${day}`, "data-link": true }, w.dailyBoard) : null,
          g.game != null && !(daily && !g.code) ? h("a", { href: `/replay/${g.game}`, "data-link": true }, w.seeReplay) : null,
          rules.rematch && s.results && s.role === "player" ? rematchButton() : null,
          rules.lobby
            ? homeLink()
            : !rules.newGame ? null : h("button", { type: "button", onclick: newGame, class: "primary" }, w.newGame))));
    }
    return out;
  }

  /** Share a finished game: a summary and a link to its deal (Web Share API, else the clipboard). */
  function share(g) {
    const w = words();
    const place = session.placing(s);
    const daily = modeRules(s.mode).daily;
    const what = daily ? `${w.daily} ${utcDay(Date.now() + s.offset)}` : `Half Moon ${g.code || ""}`;
    const text = `☾ ${what}: ${w.outcomes[g.outcome] || g.outcome} ${g.score} ${w.points}, ${g.moves} ${w.moves.toLowerCase()}, ${formatTime(g.time_ms)}${place ? `, ${place[0]} ${w.of} ${place[1]}` : ""}`;
    const url = `${location.origin}${daily ? "/daily" : `/play/${g.code}`}`;
    if (navigator.share) navigator.share({ title: "Half Moon", text, url }).catch(() => {});
    else copyText(`${text} ${url}`).then(() => app.toast(w.copied));
  }

  /** A racer's lane: figures and a marker at the cards removed (<progress> says it aloud). */
  function lane(p, tag = "li") {
    const w = words();
    const rail = h("span", { class: "rail" }, h("progress", { max: 104, value: p.removed, "aria-label": `${p.name}: ${p.removed}/104 ${w.cards}` }),
      h("span", { class: "marker", "aria-hidden": "true" }));
    rail.style.setProperty("--at", p.removed / 104); // CSSOM: the CSP allows no style attribute
    return h(tag, { class: "lane", dataset: { player: p.id, leads: p.leads } },
      h("span", { class: "who" }, p.name, p.bot && botTag(w), p.id === s.you && [" ", ...youMark(w)], p.connected === false && ` (${w.disconnected})`, p.leads && h("span", { class: "tag" }, w.leads)),
      h("span", { class: "nums" }, `${w.score} ${p.score ?? 0} · ${w.moves} ${p.moves ?? 0} · ${w.statuses[p.status] || p.status || ""}`),
      rail);
  }

  /** The player's own ★, said in words to a screen reader («(tu)», not "black star"). */
  function youMark(w) {
    return [h("span", { "aria-hidden": "true" }, "★"), h("span", { class: "sr-only" }, w.youSaid)];
  }

  /** The visible «bot» label of a player that declared itself a program (never ranked). */
  function botTag(w) {
    return h("span", { class: "tag bot", title: w.botTitle }, w.botLabel);
  }

  function track() {
    const w = words();
    return [h("h2", {}, w.track, h("small", { class: "muted" }, ` · ${w.trackAxis}`)),
      h("ol", { class: "track", "aria-label": `${w.track}: ${w.trackAxis}` }, session.track(s).map((p) => lane(p)))];
  }

  /** A ghost race's track: your lane and the ghost's on your clock; its result once over. */
  function ghostTrack() {
    const w = words();
    const head = h("h2", {}, w.ghostTrack, h("small", { class: "muted" }, ` · ${w.trackAxis}`));
    if (!ghost) return [head, h("p", { class: "muted", role: ghostFailed ? "alert" : null }, ghostFailed ? w.ghostUnavailable : w.loading)];
    const clock = session.clockMs(s, Date.now());
    const g = ghostLane(ghost, clock, Boolean(s.gameOver), clock > 0 || session.shownStats(s).moves > 0);
    // who leads: the better score (you lead together on a tie), as on a race's track
    const lanes = [...session.track(s).filter((p) => p.id === s.you), { ...g, name: `${g.name} (${w.ghost})` }];
    const best = Math.max(...lanes.map((p) => p.score || 0));
    const out = [head, h("ol", { class: "track", "aria-label": `${w.ghostTrack}: ${w.trackAxis}` }, lanes.map((p) => lane({ ...p, leads: best > 0 && (p.score || 0) === best })))];
    if (g.timeMs !== null) out.push(h("p", { class: "ghost-end", dataset: { ghost: g.status } }, `${w.ghostEnd}: ${w.statuses[g.status] || g.status} · ${formatTime(g.timeMs)} · ${w.score} ${g.score}`));
    return out;
  }

  /** A table of `lines` (each names its `player`): a caption, column heads, a row per line. */
  function table(cls, caption, heads, rows, lines = s.results) {
    return h("table", { class: cls }, h("caption", {}, caption),
      h("thead", {}, h("tr", {}, heads.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, lines.map((r) => h("tr", { dataset: { player: r.player } }, rows(r).map((x) => h("td", {}, x))))));
  }

  /** A series' points table, best first (docs/protocol.md, "Rematches and series"). */
  function seriesTable() {
    const w = words();
    const x = s.series;
    if (!x || !x.table.length) return [];
    const caption = `${x.over ? w.seriesOver : w.series}: ${w.roundLabel} ${x.race}/${x.races}`;
    return [table("series", caption, [w.rank, w.name, w.seriesPoints, w.score, w.time],
      (r) => [x.table.indexOf(r) + 1, r.name, r.points, r.score, formatTime(r.time_ms)], x.table)];
  }

  /** The results, a series' table, the rematch, then a race's splits. */
  function resultsTables() {
    const w = words();
    if (!s.results) return [];
    return [...seriesTable(), !s.gameOver && s.role === "player" && rematchButton(),
      table("results", w.results, [w.rank, w.name, w.status, w.score, w.moves, w.time],
      (r) => [r.rank, s.players[r.player] && s.players[r.player].bot ? [r.name, botTag(w)] : r.name, w.statuses[r.outcome] || r.outcome, r.score, r.moves, formatTime(r.time_ms)]),
    compareLinks(),
    s.results.some((r) => r.splits) && table("splits", w.splits, [w.name, ...session.SPLITS],
      (r) => [r.name, ...session.SPLITS.map((_, i) => (r.splits && r.splits[i] != null ? formatTime(r.splits[i]) : "—"))])].filter(Boolean);
  }

  /** Once the race is over, links comparing the reader's game (a spectator: the first racer's) with each other stored one. */
  function compareLinks() {
    const w = words();
    const stored = s.results.filter((r) => r.game != null);
    const base = stored.find((r) => r.player === s.you) || stored[0];
    const others = stored.filter((r) => r !== base);
    return others.length > 0 && h("p", { class: "compare-links" }, w.compareWith, others.flatMap((r) =>
      [" ", h("a", { href: `/compare/${base.game}/${r.game}`, "data-link": true, dataset: { player: r.player } }, `${base.name} ⇄ ${r.name}`)]));
  }

  function buildWatch() {
    const w = words();
    const head = h("div", { class: "watch-head" });
    const grid = h("div", { class: "watch-grid" });
    // a phone shows one board large (chosen by tapping a player's row) and the others as rows
    let focus = null;
    const choose = (id) => {
      focus = id;
      for (const [pid, { box }] of cards) {
        box.classList.toggle("focus", pid === id);
        box.querySelector(".who").setAttribute("aria-expanded", String(pid === id));
      }
    };
    const tail = h("div", {});
    const lanes = h("div", { class: "watch-track" });
    app.main.append(h("section", { class: "watch" }, head, lanes, grid, tail));
    const cards = new Map();
    Object.assign(ui, { time: null });
    ui.update = () => {
      replaceIfChanged(head, [h("h1", {}, `${w.spectating} ${s.room}`, h("span", { class: "tag" }, w.readOnly)),
        s.notice ? h("p", { role: "status" }, w[s.notice]) : null,
        h("p", { class: "muted" }, `${w.code}: ${codeText(s, w)} · ${w.spectators}: ${s.spectators}`),
        session.anyHidden(s) ? h("p", { class: "muted hidden-note" }, w.hiddenCards) : null].filter(Boolean));
      replaceIfChanged(lanes, track());
      for (const p of session.track(s)) {
        if (!cards.has(p.id)) {
          const info = h("div", { class: "who", role: "button", tabindex: "0", onclick: () => choose(p.id), onkeydown: (e) => (e.key === "Enter" || e.key === " ") && choose(p.id) });
          const wrap = h("div", { class: "board-wrap" });
          const board = createBoard(wrap, { small: true });
          const box = h("div", { class: "watch-player", role: "group", "aria-label": p.name, dataset: { player: p.id } }, info, wrap);
          grid.append(box);
          cards.set(p.id, { info, board, box });
          if (!focus) choose(p.id);
        }
        const { info, board } = cards.get(p.id);
        info.replaceChildren(lane(p, "div"));
        board.update(s.boards[p.id] || null, { lang: app.lang(), label: p.name });
      }
      replaceIfChanged(tail, resultsTables());
    };
  }

  return {
    close() {
      clearInterval(ticker);
      if (ui && ui.keys) document.removeEventListener("keydown", ui.keys);
      conn.close();
    },
    relabel() {
      if (ui && ui.keys) document.removeEventListener("keydown", ui.keys);
      ui = null;
      connectionBanner(); // («Gioca qui» said again in the new language)
      render();
    },
  };
}

