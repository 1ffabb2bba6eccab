// A live room over the WebSocket: solo games, the daily challenge, races (lobby, countdown,
// play, opponents' progress, results) and spectating. Moves are drawn at once (optimistic) and
// reconciled with the server's `moved` / `error`; the server is the only authority.

import { HIDDEN, createBoard } from "./board.js";
import { POSITION_NAMES, positionName } from "./cards.js";
import { copyText, formatTime, h } from "./dom.js";
import { errorText, t } from "./i18n.js";
import { Connection } from "./net.js";
import { REMOVED, applyOptimistic, matchingPositions, tap, tapMessage } from "./taps.js";

const SESSION_KEY = "halfmoon.session";
const FINISHED = new Set(["won", "gave_up", "left", "timed_out"]);

function loadSession(path) {
  try {
    const session = JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null");
    return session && session.path === path ? session : null;
  } catch {
    return null;
  }
}

function saveSession(session) {
  if (session) sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  else sessionStorage.removeItem(SESSION_KEY);
}

/**
 * Open a live screen. `intent` is {kind: "solo", code?} | {kind: "daily"} | {kind: "race", room}
 * | {kind: "watch", room}. `app` gives {main, settings, lang(), navigate(path), toast(text),
 * setBanner(text|null)}. Returns {close(), relabel()} for the router.
 */
export function openLive(app, intent) {
  const s = {
    role: null, you: null, token: null, room: null, phase: null, mode: null, code: null,
    players: new Map(), host: null, offset: 0, startedAt: null, startsAt: null, timeLimit: null,
    board: null, pending: [], selection: [], boards: {}, spectators: 0, results: null,
    gameOver: null, notice: null, failed: null, canUndo: false,
  };
  let path = location.pathname;
  let session = loadSession(path);
  let ui = null;
  let ticker = null;

  const words = () => t(app.lang());
  const now = () => Date.now() + s.offset;
  const me = () => (s.you ? s.players.get(s.you) : null);

  const conn = new Connection(wsUrl(), {
    hello: () => {
      // after a reload the page holds nothing: no `since`, so the server sends a full snapshot
      if (session) return conn.seq ? { type: "resume", room: session.room, token: session.token, since: conn.seq } : { type: "resume", room: session.room, token: session.token };
      if (s.role === "spectator" && s.room) return { type: "watch", room: s.room };
      const name = app.settings.name || defaultName(app.lang());
      switch (intent.kind) {
        case "solo": return intent.code ? { type: "solo", name, code: intent.code } : { type: "solo", name };
        case "daily": return { type: "daily", name };
        case "race": return { type: "join", room: intent.room, name };
        case "watch": return { type: "watch", room: intent.room };
        default: throw new Error(`unknown live intent ${intent.kind}`);
      }
    },
    onState: (state) => {
      app.setBanner(state === "reconnecting" ? words().reconnecting : null);
      if (state === "reconnecting" && s.pending.length) {
        // moves in flight are drawn again as the server knows them: a resume replays what it accepted
        s.pending = [];
        s.selection = [];
        render();
      }
    },
    onMessage: (msg) => {
      handle(msg);
      render();
    },
  });
  conn.open();
  ticker = setInterval(tick, 250);
  render();

  function wsUrl() {
    return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  }

  function remember() {
    if (s.token && s.room) {
      session = { path, room: s.room, token: s.token, seq: conn.seq };
      saveSession(session);
    }
  }

  function setSnapshot(room) {
    s.room = room.room;
    s.mode = room.mode;
    s.phase = room.phase;
    s.code = room.code;
    s.host = room.host;
    s.offset = room.now - Date.now();
    s.startedAt = room.started_at;
    s.startsAt = room.starts_at;
    s.timeLimit = room.time_limit_s;
    s.players = new Map((room.players || []).map((p) => [p.id, p]));
    s.spectators = room.spectators || 0;
    s.board = room.board;
    s.boards = room.boards || {};
    s.pending = [];
    s.selection = [];
    s.results = room.results;
    s.canUndo = Boolean(room.can_undo);
  }

  function updatePlayer(id, fields) {
    const old = s.players.get(id) || { id };
    s.players.set(id, { ...old, ...fields });
  }

  function applyChanges(board, changes) {
    if (!board) return board;
    const out = { tops: board.tops.slice(), counts: board.counts.slice() };
    for (const change of changes || []) {
      const i = POSITION_NAMES.indexOf(change.pos);
      if (i < 0) continue;
      out.tops[i] = change.card;
      out.counts[i] = change.count;
    }
    return out;
  }

  function handle(msg) {
    handleEvent(msg);
    // spectators: tops that came into sight since the last event (a racer caught up or finished)
    for (const reveal of msg.reveals || []) {
      if (s.boards && s.boards[reveal.player]) s.boards[reveal.player] = applyChanges(s.boards[reveal.player], [reveal]);
    }
  }

  function handleEvent(msg) {
    switch (msg.type) {
      case "welcome":
        s.role = msg.role;
        s.you = msg.you;
        if (msg.token) s.token = msg.token;
        else if (!session) s.token = null;
        if (msg.room) setSnapshot(msg.room); // null: a resume that catches up with the events that follow
        if (intent.kind === "race" && msg.role === "spectator" && !session) s.notice = words().becameSpectator;
        if (msg.role === "player") {
          adoptPath();
          remember();
        }
        break;
      case "player_joined":
        updatePlayer(msg.player.id, msg.player);
        if (msg.host) s.host = msg.host;
        break;
      case "player_left":
        if (msg.host) s.host = msg.host;
        if (s.phase === "lobby") s.players.delete(msg.player.id);
        else updatePlayer(msg.player.id, msg.player);
        break;
      case "countdown":
        s.phase = "countdown";
        s.offset = msg.now - Date.now();
        s.startsAt = msg.starts_at;
        s.timeLimit = msg.time_limit_s;
        break;
      case "started":
        s.phase = "running";
        s.code = msg.code;
        s.startedAt = msg.started_at;
        if (msg.board) s.board = msg.board;
        if (msg.boards) s.boards = msg.boards;
        for (const p of s.players.values()) if (p.status === "waiting") p.status = "playing";
        adoptPath();
        remember();
        break;
      case "moved": {
        const { score, moves, cards_left, status, elapsed_ms } = msg;
        updatePlayer(msg.player, { score, moves, cards_left, status, elapsed_ms });
        if (msg.player === s.you) {
          if (msg.id != null) s.pending = s.pending.filter((p) => p.id !== msg.id);
          else if (msg.action === "move") s.pending = s.pending.filter((p) => p.move.map(positionName).join() !== (msg.positions || []).join());
          s.board = applyChanges(s.board, msg.changes);
          if (typeof msg.can_undo === "boolean") s.canUndo = msg.can_undo;
          if (msg.action === "undo") s.selection = [];
        } else if (s.boards && s.boards[msg.player] && msg.changes) {
          s.boards[msg.player] = applyChanges(s.boards[msg.player], msg.changes);
        }
        break;
      }
      case "progress":
        updatePlayer(msg.player.id, msg.player);
        if (msg.host) s.host = msg.host; // a host who drops in the lobby hands over
        break;
      case "game_over":
        s.gameOver = msg;
        if (msg.code) s.code = msg.code;
        s.pending = [];
        s.selection = [];
        break;
      case "race_over":
        s.results = msg.results;
        s.phase = "finished";
        break;
      case "spectators":
        s.spectators = msg.count;
        break;
      case "error":
        onError(msg);
        break;
      case "pong":
        break;
      default:
        throw new Error(`unexpected message type ${JSON.stringify(msg.type)}`);
    }
    if (session && typeof msg.seq === "number") {
      session.seq = conn.seq;
      saveSession(session);
    }
  }

  function onError(msg) {
    if (msg.id != null && s.pending.some((p) => p.id === msg.id)) {
      s.pending = s.pending.filter((p) => p.id !== msg.id);
      app.toast(msg.message || msg.code);
      return;
    }
    if (msg.code === "bad_token" && session) {
      // the server no longer knows this game: start afresh as the path says
      session = null;
      saveSession(null);
      const hello = conn.hello();
      if (hello) conn.send(hello);
      return;
    }
    if (!s.role) {
      // refused before the game could open (a bad room, code or name, a full server, a
      // failure): say why on the page instead of waiting on «Connecting…» for ever
      s.failed = msg;
      return;
    }
    app.toast(errorText(app.lang(), msg.code, subjectOf(msg.code), `${words().errorPrefix}: ${msg.message || msg.code}`));
  }

  /** What a refusal is about: the room, the deal code or the nickname the player gave. */
  function subjectOf(code) {
    if (code === "bad_code") return intent.code;
    if (code === "bad_name" || code === "name_taken") return app.settings.name || defaultName(app.lang());
    if (code === "no_such_room") return intent.room;
    return null;
  }

  /** A solo game started without a code gets its deal's address, so a reload resumes it. */
  function adoptPath() {
    if (intent.kind === "solo" && s.code && location.pathname !== `/play/${s.code}`) {
      path = `/play/${s.code}`;
      history.replaceState(null, "", path);
    }
  }

  // -- the player's actions -------------------------------------------------------------------

  function shownBoard() {
    return s.pending.reduce((board, p) => applyOptimistic(board, p.move), s.board);
  }

  function shownStats() {
    const mine = me() || {};
    const extra = s.pending.reduce((sum, p) => sum + (p.move.length === 2 ? 10 : 15), 0);
    return { score: (mine.score || 0) + extra, moves: (mine.moves || 0) + s.pending.length, status: mine.status, elapsed: mine.elapsed_ms };
  }

  function canPlay() {
    const mine = me();
    return s.role === "player" && s.phase === "running" && mine && !FINISHED.has(mine.status) && !s.gameOver;
  }

  function onTap(position) {
    if (!canPlay()) return;
    const board = shownBoard();
    if (!board.tops[position]) return;
    const result = tap(board, s.selection, position);
    s.selection = result.selection;
    const message = tapMessage(result, app.lang(), app.settings.moveErrors);
    if (message) app.toast(message);
    if (result.event === REMOVED) {
      const id = conn.send({ type: "move", positions: result.move.map(positionName) }, true);
      if (id) s.pending.push({ id, move: result.move });
      else app.toast(words().reconnecting);
    }
    render();
  }

  function undo() {
    if (s.role !== "player" || s.pending.length) return;
    s.selection = [];
    conn.send({ type: "undo" }, true);
  }

  function giveUp() {
    conn.send({ type: "give_up" });
  }

  // the bar's button asks first: one stray tap would end a race, or today's ranked attempt
  function confirmGiveUp() {
    if (ui.confirm && canPlay()) ui.confirm.showModal();
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
      if (dialog.returnValue === "confirm" && canPlay()) giveUp();
      dialog.returnValue = "";
    });
    return dialog;
  }

  function startRace(minutes) {
    const seconds = Math.round(Number(minutes) * 60);
    conn.send(seconds >= 30 && seconds <= 7200 ? { type: "start", time_limit_s: seconds } : { type: "start" });
  }

  function newGame() {
    leaveAndGo("/play");
  }

  function leaveAndGo(target) {
    if (canPlay() || s.phase === "lobby") conn.send({ type: "leave" });
    saveSession(null);
    session = null;
    app.navigate(target);
  }

  // -- drawing ------------------------------------------------------------------------------

  function tick() {
    if (!ui) return;
    if (ui.time) {
      const mine = me();
      let ms = 0;
      if (mine && (FINISHED.has(mine.status) || s.gameOver)) ms = s.gameOver ? s.gameOver.time_ms : mine.elapsed_ms;
      else if (s.startedAt && s.phase !== "lobby" && s.phase !== "countdown") ms = now() - s.startedAt;
      ui.time.textContent = formatTime(ms);
    }
    if (ui.countdown && s.startsAt) {
      ui.countdown.textContent = `${words().startsIn} ${Math.max(0, Math.ceil((s.startsAt - now()) / 1000))}`;
    }
  }

  function viewKind() {
    if (s.failed) return "failed";
    if (!s.role) return "connecting";
    if (s.phase === "lobby" || s.phase === "countdown") return "lobby";
    if (s.role === "spectator") return "watch";
    return "game";
  }

  function render() {
    const kind = viewKind();
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
    } else if (["internal", "server_full", "rate_limited"].includes(code)) {
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
    const startButton = h("button", { type: "button", class: "primary", onclick: () => startRace(minutes.value) }, w.start);
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
      list.replaceChildren(...[...s.players.values()].map(playerRow));
      const isHost = s.role === "player" && s.you === s.host;
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
        s.selection = [];
        render();
      }
    };
    document.addEventListener("keydown", ui.keys);
    ui.update = () => {
      const stats = shownStats();
      const shown = s.board ? shownBoard() : null;
      score.textContent = String(stats.score);
      moves.textContent = String(stats.moves);
      code.textContent = s.code || "—";
      copyButton.hidden = !s.code;
      const playing = canPlay();
      undoButton.disabled = !playing || !(s.canUndo || s.pending.length) || s.pending.length > 0;
      endButton.disabled = race || s.mode === "daily" ? !playing : false;
      if (ui.confirm && ui.confirm.open && !playing) ui.confirm.close(); // the game ended meanwhile
      let dimmed = new Set();
      if (app.settings.placementHelp && s.selection.length && shown) {
        const ok = matchingPositions(shown, s.selection);
        dimmed = new Set(shown.tops.map((c, p) => p).filter((p) => shown.tops[p] && !ok.has(p) && !s.selection.includes(p)));
      }
      board.update(shown, { selection: s.selection, dimmed, lang: app.lang(), label: w.yourGame });
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
      const place = placing();
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

  /** [my place, players] in a race: from the results, else the winners so far ranked by time. */
  function placing() {
    if (s.mode !== "race" || !s.you) return null;
    if (s.results) {
      const i = s.results.findIndex((r) => (r.player || r.id) === s.you || r.name === (me() || {}).name);
      if (i >= 0) return [s.results[i].rank || i + 1, s.results.length];
    }
    const mine = me();
    if (!mine || mine.status !== "won") return null;
    const ahead = [...s.players.values()].filter((p) => p.id !== s.you && p.status === "won" && p.elapsed_ms < mine.elapsed_ms);
    return [ahead.length + 1, s.players.size];
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
    return h("ul", { class: "progress-list" }, [...s.players.values()].filter((p) => p.id !== s.you).map(progressRow));
  }

  function resultsTable() {
    if (!s.results) return null;
    const w = words();
    return h("table", { class: "results" },
      h("caption", {}, w.results),
      h("thead", {}, h("tr", {}, [w.rank, w.name, w.status, w.score, w.moves, w.time].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, s.results.map((r, i) => h("tr", { dataset: { player: r.player || r.id || "" } },
        h("td", {}, String(r.rank ?? i + 1)), h("td", {}, r.name),
        h("td", {}, w.statuses[r.status || r.outcome] || r.status || r.outcome || ""),
        h("td", {}, String(r.score ?? "")), h("td", {}, String(r.moves ?? "")),
        h("td", {}, formatTime(r.time_ms ?? r.elapsed_ms))))));
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
      const anyHidden = Object.values(s.boards || {}).some((b) => b && b.tops.includes(HIDDEN));
      head.replaceChildren(...[h("h1", {}, `${w.spectating} ${s.room}`, h("span", { class: "tag" }, w.readOnly)),
        s.notice ? h("p", { role: "status" }, s.notice) : null,
        h("p", { class: "muted" }, `${w.code}: ${s.code || "—"} · ${w.spectators}: ${s.spectators}`),
        anyHidden ? h("p", { class: "muted hidden-note" }, w.hiddenCards) : null].filter(Boolean));
      for (const p of s.players.values()) {
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
        board.update(s.boards ? s.boards[p.id] : null, { lang: app.lang(), label: p.name });
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
