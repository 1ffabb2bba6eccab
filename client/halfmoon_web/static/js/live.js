// A live room over the WebSocket: solo games, the daily challenge, races (lobby, countdown,
// play, opponents' progress, results) and spectating. The wiring and the drawing only: the
// room's state, optimistic moves and the messages to send are the reducer's (session.js).

import { createBoard } from "./board.js";
import { copyText, formatTime, h } from "./dom.js";
import { errorText, t } from "./i18n.js";
import { Connection } from "./net.js";
import * as session from "./session.js";
import { tapMessage } from "./taps.js";

const SESSION_KEY = "halfmoon.session";

/** The seat ({room, token}) this tab keeps for the page at `path`, or null. */
function loadSeat(path) {
  try {
    const saved = JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null");
    return saved && saved.path === path ? { room: saved.room, token: saved.token } : null;
  } catch {
    return null;
  }
}

function saveSeat(saved) {
  if (saved) sessionStorage.setItem(SESSION_KEY, JSON.stringify(saved));
  else sessionStorage.removeItem(SESSION_KEY);
}

/**
 * Open a live screen. `intent` is {kind: "solo", code?} | {kind: "daily"} | {kind: "race", room}
 * | {kind: "watch", room}. `app` gives {main, settings, lang(), navigate(path), toast(text),
 * setBanner(text|null)}. Returns {close(), relabel()} for the router.
 */
export function openLive(app, intent) {
  let path = location.pathname;
  let s = session.initialState(intent, loadSeat(path));
  let ui = null;
  let ticker = null;

  const words = () => t(app.lang());
  const playerName = () => app.settings.name || defaultName(app.lang());

  const conn = new Connection(wsUrl(), {
    // after a reload the page holds nothing: no `since`, so the server sends a full snapshot
    hello: () => session.hello(s, playerName()),
    onState: (status) => {
      app.setBanner(status === "reconnecting" ? words().reconnecting : null);
      if (status === "reconnecting" && commit(session.disconnected(s))) render();
    },
    onMessage: (msg) => {
      const before = s;
      commit(session.reduce(s, msg, Date.now()));
      if (msg.type === "error") refused(session.refusal(before, msg), msg);
      render();
    },
  });
  conn.open();
  ticker = setInterval(tick, 250);
  render();

  function wsUrl() {
    return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  }

  /** Take the reducer's new state: adopt the solo deal's address, keep the seat. Returns whether it changed. */
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

  /** Take an action's {state, commands}: send the commands; a move that cannot go is taken back. */
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
    else if (kind === "seat") conn.send(session.hello(s, playerName())); // the server no longer knows this game: start afresh as the path says
    else if (kind === "other") app.toast(errorText(app.lang(), msg.code, subjectOf(msg.code), `${words().errorPrefix}: ${msg.message || msg.code}`));
    // "entry": refused before the game could open (a bad room, code or name, a full server, a
    // failure): the page says why instead of waiting on «Connecting…» for ever
  }

  /** What a refusal is about: the room, the deal code or the nickname the player gave. */
  function subjectOf(code) {
    if (code === "bad_code") return intent.code;
    if (code === "bad_name" || code === "name_taken") return playerName();
    if (code === "no_such_room") return intent.room;
    return null;
  }

  // -- the player's actions -------------------------------------------------------------------

  function onTap(position) {
    const out = session.onTap(s, position);
    if (!out.tap) return;
    const message = tapMessage(out.tap, app.lang(), app.settings.moveErrors);
    if (message) app.toast(message);
    run(out);
    render();
  }

  const undo = () => run(session.undo(s));
  const giveUp = () => run(session.giveUp(s));

  // the bar's button asks first: one stray tap would end a race, or today's ranked attempt
  function confirmGiveUp() {
    if (ui.confirm && session.canPlay(s)) ui.confirm.showModal();
  }

  function confirmDialog() {
    const w = words();
    const dialog = h("dialog", { class: "confirm", "aria-label": w.giveUp },
      h("form", { method: "dialog" },
        h("p", {}, s.mode === "daily" ? w.confirmGiveUpDaily : w.confirmGiveUpRace),
        h("div", { class: "actions" },
          h("button", { value: "cancel", class: "primary", autofocus: true }, w.keepPlaying),
          h("button", { value: "confirm", class: "danger" }, w.giveUp))));
    dialog.addEventListener("close", () => {
      if (dialog.returnValue === "confirm" && session.canPlay(s)) giveUp();
      dialog.returnValue = "";
    });
    return dialog;
  }

  function newGame() {
    leaveAndGo("/play");
  }

  function leaveAndGo(target) {
    run(session.leave(s));
    saveSeat(null);
    app.navigate(target);
  }

  // -- drawing ------------------------------------------------------------------------------

  function tick() {
    if (!ui) return;
    if (ui.time) ui.time.textContent = formatTime(session.clockMs(s, Date.now()));
    const seconds = session.countdownS(s, Date.now());
    if (ui.countdown && seconds !== null) ui.countdown.textContent = `${words().startsIn} ${seconds}`;
  }

  function render() {
    const kind = session.screen(s);
    if (!ui || ui.kind !== kind) {
      if (ui && ui.keys) document.removeEventListener("keydown", ui.keys);
      app.main.replaceChildren();
      ui = { kind };
      ({ connecting: buildConnecting, failed: buildFailed, lobby: buildLobby, watch: buildWatch, game: buildGame })[kind]();
    }
    ui.update();
    tick();
  }

  function buildConnecting() {
    app.main.append(h("p", { class: "center muted" }, words().connecting));
    ui.update = () => {};
  }

  function buildFailed() {
    const w = words();
    let retry = null;
    const code = s.failed.code;
    if (code === "bad_name" || (intent.kind === "race" && code === "name_taken")) {
      // another name, then join again
      const input = h("input", { name: "name", required: true, maxlength: "20", "aria-label": w.yourName });
      retry = h("form", { class: "row", onsubmit: (e) => {
        e.preventDefault();
        app.settings.name = input.value.trim();
        app.saveSettings();
        app.navigate(location.pathname);
      } }, h("label", {}, w.yourName), input, h("button", { class: "primary" }, intent.kind === "race" ? w.join : w.play));
    } else if (session.passing(code)) {
      // a passing failure: the same address again
      retry = h("p", {}, h("button", { type: "button", class: "primary", onclick: () => app.navigate(location.pathname) }, w.retry));
    }
    app.main.append(h("section", { class: "panel" }, h("p", { role: "alert" }, errorText(app.lang(), code, subjectOf(code), s.failed.message || code)), retry,
      h("a", { href: "/", "data-link": true }, w.home)));
    ui.update = () => {};
  }

  function playerRow(p) {
    const w = words();
    return h("li", { dataset: { player: p.id } }, p.name,
      p.id === s.host ? h("span", { class: "tag" }, w.host) : null,
      p.id === s.you ? h("span", { class: "tag" }, "★") : null);
  }

  function buildLobby() {
    const w = words();
    const list = h("ul", { class: "players" });
    const link = `${location.origin}/r/${s.room}`;
    const minutes = h("input", { type: "number", min: "1", max: "120", value: String(Math.round((s.timeLimit || 1800) / 60)), id: "time-limit" });
    const startButton = h("button", { type: "button", class: "primary", onclick: () => run(session.start(s, minutes.value)) }, w.start);
    const hostBox = h("div", { class: "host-box" }, h("label", { for: "time-limit" }, w.timeLimit, " "), minutes, " ", startButton);
    const waiting = h("p", { class: "muted" }, w.waitingHost);
    ui.countdown = h("p", { class: "countdown", role: "timer" });
    app.main.append(h("section", { class: "panel lobby" },
      h("h1", {}, `${w.lobby} ${s.room}`),
      h("p", {}, w.share, ": ", h("a", { href: link, class: "share" }, link), " ",
        h("button", { type: "button", onclick: () => copyText(link).then(() => app.toast(w.copied)) }, w.copy)),
      h("h2", {}, w.players), list, hostBox, waiting, ui.countdown,
      h("p", {}, h("button", { type: "button", onclick: () => leaveAndGo("/") }, w.leave))));
    ui.update = () => {
      list.replaceChildren(...session.playerList(s).map(playerRow));
      const isHost = session.isHost(s);
      hostBox.hidden = !isHost || s.phase !== "lobby";
      waiting.hidden = isHost || s.phase !== "lobby";
      ui.countdown.hidden = s.phase !== "countdown";
    };
  }

  function statBox(name, label) {
    const value = h("span", { class: "value", dataset: { stat: name } });
    return [h("div", { class: "stat" }, h("span", { class: "name" }, label), value), value];
  }

  function buildGame() {
    const w = words();
    const [timeBox, time] = statBox("time", w.time);
    const [scoreBox, score] = statBox("score", w.score);
    const [movesBox, moves] = statBox("moves", w.moves);
    // the daily challenge says so where its (hidden) code will appear
    const [codeBox, code] = statBox("code", s.mode === "daily" ? w.daily : w.code);
    const copyButton = h("button", { type: "button", class: "copy", "aria-label": `${w.copy} ${w.code}`, onclick: () => s.code && copyText(s.code).then(() => app.toast(`${w.copied}: ${s.code}`)) }, w.copy);
    const inline = h("span", { class: "inline" });
    code.replaceWith(inline);
    inline.append(code, copyButton);
    const undoButton = h("button", { type: "button", onclick: undo, "aria-keyshortcuts": "U" }, "↶ ", w.undo);
    const race = s.mode === "race";
    const endButton = race || s.mode === "daily"
      ? h("button", { type: "button", onclick: confirmGiveUp, "aria-haspopup": "dialog" }, w.giveUp)
      : h("button", { type: "button", onclick: newGame }, w.newGame);
    const confirm = race || s.mode === "daily" ? confirmDialog() : null;
    const bar = h("div", { class: "bar" }, timeBox, scoreBox, movesBox, codeBox, h("div", { class: "actions" }, undoButton, endButton));
    const boardWrap = h("div", { class: "board-wrap" });
    const board = createBoard(boardWrap, { onTap });
    const banner = h("div", { class: "endbox", role: "status" });
    const side = h("aside", { class: "opponents", "aria-label": w.opponents });
    app.main.append(h("section", { class: race ? "game race" : "game" }, bar, boardWrap, banner, race ? side : null, confirm));
    Object.assign(ui, { time, confirm });
    ui.keys = (event) => {
      if (event.target.closest && event.target.closest("input, select, textarea, dialog")) return;
      if (event.key === "u" || event.key === "U") undo();
      else if (event.key === "Escape") {
        commit(session.clearSelection(s));
        render();
      }
    };
    document.addEventListener("keydown", ui.keys);
    ui.update = () => {
      const stats = session.shownStats(s);
      score.textContent = String(stats.score);
      moves.textContent = String(stats.moves);
      code.textContent = s.code || "—";
      copyButton.hidden = !s.code;
      const playing = session.canPlay(s);
      undoButton.disabled = !session.mayUndo(s);
      endButton.disabled = race || s.mode === "daily" ? !playing : false;
      if (ui.confirm && ui.confirm.open && !playing) ui.confirm.close(); // the game ended meanwhile
      const dimmed = app.settings.placementHelp ? session.dimmed(s) : new Set();
      board.update(session.shownBoard(s), { selection: s.selection, dimmed, lang: app.lang(), label: w.yourGame });
      banner.replaceChildren(...endContent(stats));
      banner.hidden = banner.childElementCount === 0;
      if (race) side.replaceChildren(...[h("h2", {}, w.opponents), opponentList(), resultsTable()].filter(Boolean));
    };
  }

  function endContent(stats) {
    const w = words();
    const out = [];
    if (stats.status === "stalled" && !s.gameOver) {
      const race = s.mode !== "solo";
      out.push(h("p", { class: "stall" }, h("strong", {}, w.stalled), " ", race ? w.stalledRaceHint : w.stalledHint),
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: undo, class: "primary" }, "↶ ", w.undo),
          race ? h("button", { type: "button", onclick: giveUp }, w.giveUp) : h("button", { type: "button", onclick: newGame }, w.newGame)));
    }
    if (s.gameOver) {
      const g = s.gameOver;
      const won = g.outcome === "won";
      const place = session.placing(s);
      out.push(h("div", { class: won ? "win" : "over", dataset: { outcome: g.outcome } },
        h("h2", {}, w.outcomes[g.outcome] || w.statuses[g.outcome] || g.outcome),
        won ? h("p", {}, w.wonDetail) : analysisLine(g.analysis),
        h("dl", {},
          h("dt", {}, w.time), h("dd", { dataset: { result: "time" } }, formatTime(g.time_ms)),
          h("dt", {}, w.score), h("dd", { dataset: { result: "score" } }, String(g.score)),
          h("dt", {}, w.moves), h("dd", { dataset: { result: "moves" } }, String(g.moves)),
          place ? [h("dt", {}, w.place), h("dd", { dataset: { result: "place" } }, `${place[0]} ${w.of} ${place[1]}`)] : null),
        h("div", { class: "actions" },
          g.game != null ? h("a", { href: `/replay/${g.game}`, "data-link": true }, w.seeReplay) : null,
          s.mode === "race"
            ? h("a", { href: "/", "data-link": true }, w.home)
            : h("button", { type: "button", onclick: newGame, class: "primary" }, w.newGame))));
    }
    return out;
  }

  /** After a game that did not win: could the deal be won, and after how many moves a win was
   * still possible (the server sends this only once the game is over). */
  function analysisLine(analysis) {
    if (!analysis) return null;
    const a = words().analysis;
    let text = a.unknown;
    if (analysis.winnable === "unwinnable") text = a.unwinnable;
    else if (analysis.winnable === "winnable") {
      text = analysis.last_winnable_move == null ? a.winnableFromStart : a.winnable(analysis.last_winnable_move);
    }
    return h("p", { class: "analysis", dataset: { analysis: analysis.winnable } }, text);
  }

  function progressRow(p) {
    const w = words();
    const done = 104 - (p.cards_left ?? 104);
    return h("li", { class: "progress-row", dataset: { player: p.id, status: p.status || "" } },
      h("span", { class: "who" }, p.name, p.connected === false ? ` (${w.disconnected})` : ""),
      h("progress", { max: "104", value: String(done), "aria-label": `${p.name}: ${done}/104` }),
      h("span", { class: "nums" }, `${w.score} ${p.score ?? 0} · ${w.moves} ${p.moves ?? 0} · ${w.statuses[p.status] || p.status || ""}`));
  }

  function opponentList() {
    return h("ul", { class: "progress-list" }, session.playerList(s).filter((p) => p.id !== s.you).map(progressRow));
  }

  function resultsTable() {
    if (!s.results) return null;
    const w = words();
    return h("table", { class: "results" },
      h("caption", {}, w.results),
      h("thead", {}, h("tr", {}, [w.rank, w.name, w.status, w.score, w.moves, w.time].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, s.results.map((r) => h("tr", { dataset: { player: r.player } },
        h("td", {}, String(r.rank)), h("td", {}, r.name),
        h("td", {}, w.statuses[r.outcome] || r.outcome),
        h("td", {}, String(r.score)), h("td", {}, String(r.moves)),
        h("td", {}, formatTime(r.time_ms))))));
  }

  function buildWatch() {
    const w = words();
    const head = h("div", { class: "watch-head" });
    const grid = h("div", { class: "watch-grid" });
    const tail = h("div", {});
    app.main.append(h("section", { class: "watch" }, head, grid, tail));
    const cards = new Map();
    Object.assign(ui, { time: null });
    ui.update = () => {
      head.replaceChildren(...[h("h1", {}, `${w.spectating} ${s.room}`, h("span", { class: "tag" }, w.readOnly)),
        s.notice ? h("p", { role: "status" }, w[s.notice]) : null,
        h("p", { class: "muted" }, `${w.code}: ${s.code || "—"} · ${w.spectators}: ${s.spectators}`),
        session.anyHidden(s) ? h("p", { class: "muted hidden-note" }, w.hiddenCards) : null].filter(Boolean));
      for (const p of session.playerList(s)) {
        if (!cards.has(p.id)) {
          const info = h("div", { class: "who" });
          const wrap = h("div", { class: "board-wrap" });
          const board = createBoard(wrap, { small: true });
          const box = h("article", { class: "watch-player", dataset: { player: p.id } }, info, wrap);
          grid.append(box);
          cards.set(p.id, { info, board });
        }
        const { info, board } = cards.get(p.id);
        info.replaceChildren(progressRow(p));
        board.update(s.boards[p.id] || null, { lang: app.lang(), label: p.name });
      }
      tail.replaceChildren(resultsTable() || "");
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
      render();
    },
  };
}

function defaultName(lang) {
  return `${lang === "it" ? "Giocatore" : "Player"} ${Math.floor(100 + Math.random() * 900)}`;
}
