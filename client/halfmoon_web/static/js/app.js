// The single-page app: shows the screen location.pathname names (home, /play, /r, /watch, /daily,
// rules, examples, leaderboards, /me, /account, /replay, /compare, a 404), the header, settings and banners.

import { createBoard } from "./board.js";
import { comparePage } from "./compare.js";
import { EXAMPLE } from "./examples.js";
import { POSITION_NAMES, cardSymbol, parseCard } from "./cards.js";
import { formatTime, h, localDate } from "./dom.js";
import { errorText, pickLanguage, t } from "./i18n.js";
import { openLive, utcDay } from "./live.js";
import { accountPage } from "./account.js";
import { openQueue } from "./queue.js";
import { historyPage, playerKey } from "./me.js";
import { fetchStored } from "./net.js";
import { ratingsBoard } from "./ratings.js";
import { replayBoards } from "./replay.js";
import { RULES } from "./rules.js";
import { loadSettings, saveSettings } from "./settings.js";
import { followLive } from "./watchlist.js";

const settings = loadSettings(localStorage);
const main = document.getElementById("main");
const bannerBox = document.getElementById("banner");
const toastBox = document.getElementById("toast");
const sayBox = document.getElementById("say");
let screen = null; // {close(), relabel()} of the current screen
let toastTimer = null;

const lang = () => pickLanguage(settings.lang, navigator.languages || [navigator.language]);
const words = () => t(lang());

const app = {
  main,
  settings,
  lang,
  navigate,
  saveSettings: () => store(),
  /** A message for a moment: long enough to read (4 s, more for a long one), and kept while the
   * pointer rests on it or the focus is in it (a magnifier's user reads where they point). */
  toast(text) {
    toastBox.textContent = text;
    toastBox.hidden = false;
    clearTimeout(toastTimer);
    const hideLater = () => {
      toastTimer = setTimeout(() => {
        if (toastBox.matches(":hover, :focus-within")) hideLater();
        else toastBox.hidden = true;
      }, Math.max(4000, 60 * text.length));
    };
    hideLater();
  },
  /** Say `text` politely (a screen reader, after what it is saying): the live region #say. */
  say(text) {
    sayBox.textContent = "";
    // a fresh node each time: the same words twice in a row are said twice
    requestAnimationFrame(() => { sayBox.textContent = text; });
  },
  /** The banner's words (null: none), and `action` ({label, onclick}): a button in it that does what it says. */
  setBanner(text, action = null) {
    bannerBox.replaceChildren(text || "", ...(text && action ? [" ", h("button", { type: "button", class: "primary", onclick: action.onclick }, action.label)] : []));
    bannerBox.hidden = !text;
  },
  createRace: (code) => createRace(code),
  /** A short tone for a move, a win or an end — only once the player switched «Suono» on. */
  sound(kind) {
    if (!settings.sound) return;
    try {
      const audio = (app.audio ||= new AudioContext());
      const notes = { move: [660], win: [523, 659, 784, 1047], end: [392, 330] }[kind] || [440];
      notes.forEach((freq, i) => {
        const osc = audio.createOscillator();
        const gain = audio.createGain();
        const at = audio.currentTime + i * 0.12;
        osc.frequency.value = freq;
        gain.gain.setValueAtTime(0.08, at);
        gain.gain.exponentialRampToValueAtTime(0.001, at + 0.15);
        osc.connect(gain).connect(audio.destination);
        osc.start(at);
        osc.stop(at + 0.16);
      });
    } catch {
      // no audio here: play on in silence
    }
  },
};

function store() {
  saveSettings(localStorage, settings);
}

function navigate(path) {
  history.pushState(null, "", path);
  route();
}

document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[data-link]");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
  event.preventDefault();
  navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", route);

// -- header and settings

function renderHeader() {
  const w = words();
  document.documentElement.lang = lang();
  document.querySelector('meta[name="description"]').content = w.description;
  const header = document.getElementById("top");
  const dialog = settingsDialog();
  header.replaceChildren(
    h("a", { href: "/", "data-link": true, class: "brand" }, "☾ Half Moon"),
    h("nav", {},
      h("a", { href: "/rules", "data-link": true }, w.rules),
      h("a", { href: "/leaderboard", "data-link": true }, w.leaderboards),
      h("button", { type: "button", class: "lang", "aria-label": `${lang() === "it" ? "EN" : "IT"} (${w.language}: ${lang() === "it" ? "English" : "Italiano"})`, onclick: () => setLanguage(lang() === "it" ? "en" : "it") }, lang() === "it" ? "EN" : "IT"),
      h("button", { type: "button", class: "gear", "aria-label": w.settings, "aria-haspopup": "dialog", onclick: () => dialog.showModal() }, "⚙")),
    dialog);
}

function settingsDialog() {
  const w = words();
  // each setting: its name (the seed's own in Italian) and a line on what it does
  const toggle = (key) => h("label", { class: "toggle" },
    h("input", { type: "checkbox", name: key, checked: settings[key], onchange: (e) => { settings[key] = e.target.checked; store(); screen && screen.relabel(); } }),
    h("span", {}, h("strong", {}, w[key]), h("small", {}, w.about[key])));
  const select = h("select", { name: "lang", onchange: (e) => setLanguage(e.target.value) },
    h("option", { value: "it", selected: lang() === "it" }, "Italiano"),
    h("option", { value: "en", selected: lang() === "en" }, "English"));
  const dialog = h("dialog", { class: "settings", "aria-label": w.settings },
    h("form", { method: "dialog" },
      h("h2", {}, w.settings),
      toggle("moveErrors"), toggle("placementHelp"), toggle("sound"), toggle("terse"),
      h("label", {}, `${w.language} `, select),
      h("button", { class: "primary" }, w.close)));
  return dialog;
}

function setLanguage(value) {
  settings.lang = value;
  store();
  renderHeader();
  setTitle();
  if (screen && screen.relabel) screen.relabel();
}

/** Each page its own <title> (a screen that knows more, a 404 or a failed replay, sets its own). */
function setTitle() {
  const w = words();
  const [first, second] = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const ghost = new URLSearchParams(location.search).get("ghost");
  const room = second ? second.toUpperCase() : "";
  const name = {
    play: ghost ? w.ghostTrack : w.yourGame, daily: ghost ? `${w.daily} · ${w.ghostTrack}` : w.daily,
    r: `${w.race} ${room}`, watch: `${w.spectating} ${room}`, rules: w.rules, examples: w.examples,
    replay: w.replay, compare: w.compare, leaderboard: second ? `${w.leaderboards} · ${second === "daily" ? w.dailyBoard : second === "ratings" ? w.ratings.tab : second}` : w.leaderboards,
    me: w.me.title, account: w.account.title, quick: w.quickRace,
  }[first || ""];
  document.title = first ? `${name || "404"} · Half Moon` : `Half Moon · ${w.tagline}`;
}

// -- the router

function route() {
  if (screen) screen.close();
  screen = null;
  app.setBanner(null);
  main.replaceChildren();
  setTitle();
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second, third] = parts;
  if (!first) screen = homeScreen();
  else if (first === "play" && !third) {
    // /play/CODE?ghost=GAME: a ghost race (ghost.js)
    const ghost = second ? new URLSearchParams(location.search).get("ghost") : null;
    screen = named({ kind: "solo", code: second ? second.toUpperCase() : null, ...(ghost ? { ghost } : {}) });
  }
  else if (first === "daily" && !second) { // ?ghost=GAME: an unranked attempt against it
    const ghost = new URLSearchParams(location.search).get("ghost");
    screen = named({ kind: "daily", ...(ghost ? { ghost } : {}) });
  }
  else if (first === "quick" && !second) screen = named({ kind: "quick" });
  else if (first === "r" && second && !third) screen = raceEntry(second.toUpperCase());
  else if (first === "watch" && second && !third) screen = openLive(app, { kind: "watch", room: second.toUpperCase() });
  else if (first === "rules" && !second) screen = staticScreen(rules);
  else if (first === "examples" && !second) screen = staticScreen(examples);
  else if (first === "replay" && second && !third) screen = staticScreen(() => replay(second));
  else if (first === "compare" && second && third && parts.length === 3) screen = staticScreen(() => comparePage(main, words(), lang(), second, third));
  else if (first === "leaderboard") screen = staticScreen(() => leaderboard(second, third));
  else if (first === "me" && !second) screen = staticScreen(() => historyPage(main, words(), lang()));
  else if (first === "account" && !second) screen = staticScreen(() => accountPage(app, main, words(), lang()));
  else screen = staticScreen(notFound);
}

/** Any other address: the app's own 404 page, in both languages, with a way home. */
function notFound() {
  document.title = "404 · Half Moon";
  main.append(h("section", { class: "panel not-found", dataset: { page: "404" } },
    h("h1", {}, "404"),
    h("p", { lang: "it" }, "Questa pagina non esiste."),
    h("p", { lang: "en" }, "There is no such page."),
    h("p", {}, h("a", { href: "/", "data-link": true, class: "button primary" }, "☾ ", words().home))));
}

/** A game that will be stored opens only with a name the player chose (none is invented). The
 * quick-race queue (intent kind "quick") opens its waiting screen; every other intent a live room. */
function named(intent, room = null) {
  const open = () => (intent.kind === "quick" ? openQueue(app) : openLive(app, intent));
  if (settings.name || (room && sessionStorage.getItem("halfmoon.session"))) return open();
  let inner = null;
  const draw = () => {
    const w = words();
    const input = h("input", { name: "name", required: true, maxlength: "20", autocomplete: "nickname", "aria-label": w.yourName });
    const title = room ? `${w.joinRace} ${room}` : { daily: w.daily, quick: w.quickRace }[intent.kind] || w.newSolo;
    main.replaceChildren(h("section", { class: "panel ask-name" }, h("h1", {}, title), h("p", {}, w.nameWhy),
      h("form", { class: "row", onsubmit: (e) => {
        e.preventDefault();
        settings.name = input.value.trim();
        store();
        inner = open();
      } }, h("label", {}, w.yourName), input, h("button", { class: "primary" }, room ? w.join : w.play))));
    input.focus();
  };
  draw();
  return {
    close() { if (inner) inner.close(); },
    relabel() { if (inner) inner.relabel(); else draw(); },
  };
}

/** A screen drawn once, redrawn when the language changes. */
function staticScreen(draw) {
  draw();
  return {
    close() {},
    relabel() {
      main.replaceChildren();
      draw();
    },
  };
}

/** /r/{room}: a missing room says so; else join with the saved name, or ask for one. */
function raceEntry(room) {
  let inner = null;
  let closed = false;
  main.append(h("p", { class: "center muted" }, words().connecting));
  fetch(`/api/rooms/${encodeURIComponent(room)}`).then((response) => {
    if (closed) return;
    if (response.status === 404) {
      const w = words();
      main.replaceChildren(h("section", { class: "panel" }, h("h1", {}, `${w.race} ${room}`), h("p", { role: "alert" }, errorText(lang(), "no_such_room", room, "")),
        h("a", { href: "/", "data-link": true }, w.home)));
    } else inner = named({ kind: "race", room }, room);
  }, () => { if (!closed) inner = named({ kind: "race", room }, room); });
  return {
    close() { closed = true; if (inner) inner.close(); },
    relabel() { if (inner) inner.relabel(); },
  };
}

// -- home

/** The home page, with its live races kept up to date (watchlist.js) until the page is left. */
function homeScreen() {
  let live = null;
  const draw = () => {
    home();
    live = followLive(main.querySelector("#live-races"), words);
  };
  draw();
  return {
    close() { live.close(); },
    relabel() {
      live.close();
      main.replaceChildren();
      draw();
    },
  };
}

function home() {
  const w = words();
  const name = h("input", { id: "name", name: "name", maxlength: "20", value: settings.name, autocomplete: "nickname",
    onchange: (e) => { settings.name = e.target.value.trim(); store(); } });
  const code = h("input", { id: "code", name: "code", required: true, placeholder: w.codePlaceholder, autocapitalize: "characters", spellcheck: false });
  const room = h("input", { id: "room", name: "room", placeholder: w.roomPlaceholder, spellcheck: false });
  // a new race is private to whoever has its link unless its host lists it (the live list)
  const listed = h("input", { type: "checkbox", id: "listed", name: "listed" });
  const saveName = () => { settings.name = name.value.trim(); store(); };
  const roomId = () => {
    const text = room.value.trim();
    const match = text.match(/(?:\/(?:r|watch)\/)?([A-Za-z0-9]{6})\/?$/);
    return match ? match[1].toUpperCase() : null;
  };
  const boardWrap = h("div", { class: "board-wrap home-board", "aria-hidden": "true" });
  main.append(h("section", { class: "home" },
    h("h1", {}, "☾ Half Moon"),
    h("ul", { class: "pitch" }, w.pitch.map((line) => h("li", {}, line))),
    boardWrap,
    h("p", { class: "field" }, h("label", { for: "name" }, w.yourName), name),
    h("div", { class: "menu" },
      h("button", { type: "button", class: "primary", id: "new-solo", onclick: () => { saveName(); navigate("/play"); } }, w.newSolo),
      h("button", { type: "button", class: "primary", id: "quick-race", onclick: () => { saveName(); navigate("/quick"); } }, w.quickRace),
      h("button", { type: "button", id: "daily", onclick: () => { saveName(); navigate("/daily"); } }, w.daily),
      h("button", { type: "button", id: "create-race", onclick: () => { saveName(); createRace(code.value.trim().toUpperCase(), listed.checked); } }, w.createRace),
      h("label", { class: "toggle public-race" }, listed, h("span", {}, h("strong", {}, w.live.publicRace), h("small", {}, w.live.publicAbout)))),
    h("section", { class: "live-races", "aria-labelledby": "live-title" },
      h("h2", { id: "live-title" }, w.live.title),
      h("div", { id: "live-races" })),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); saveName(); if (code.value.trim()) navigate(`/play/${code.value.trim().toUpperCase()}`); } },
      h("label", { for: "code" }, w.playCode), code, h("button", { class: "primary" }, w.play)),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); saveName(); const id = roomId(); if (id) navigate(`/r/${id}`); else app.toast(w.roomHint); } },
      h("label", { for: "room" }, w.joinRace), room, h("button", { class: "primary" }, w.join),
      h("button", { type: "button", onclick: () => { const id = roomId(); if (id) navigate(`/watch/${id}`); else app.toast(w.roomHint); } }, w.watch)),
    // (each «·» stays with the link before it, in a span that does not wrap: a line never starts with a dot)
    h("p", { class: "home-links" }, ...[["/rules", w.rules], ["/examples", w.examples], ["/leaderboard", w.leaderboards],
      ["/me", w.me.title], ["/account", w.account.title]].flatMap(([href, text], i, all) => {
      const link = h("a", { href, "data-link": true }, text);
      return i === all.length - 1 ? [link] : [h("span", { class: "nowrap" }, link, "\u00a0·"), " "];
    }))));
  createBoard(boardWrap, { small: true }).update(exampleFrames()[0].board, { lang: lang(), label: "Half Moon" });
}

/** POST /api/rooms (on the deal typed in «play a code», if any; `listed`: a public race, on the
 * live list while it is in play), then open the new race. */
async function createRace(code, listed = false) {
  try {
    const body = { ...(code ? { code } : {}), ...(listed ? { listed: true } : {}) };
    const response = await fetch("/api/rooms", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const data = await response.json();
    if (!response.ok) {
      const reason = data && data.error && data.error.code;
      app.toast(errorText(lang(), reason, code, `${words().errorPrefix}: ${apiError(data) || response.statusText}`));
      return;
    }
    navigate(`/r/${data.room}`);
  } catch (error) {
    app.toast(`${words().errorPrefix}: ${error.message}`);
  }
}

// -- rules

/** The English rendering's opening sentence speaks of the seed's files, not to a player. */
const SOURCE_NOTE = "The Italian file beside this one is the original and wins any disagreement.";

function rules() {
  const w = words();
  const text = RULES[lang()];
  const section = h("article", { class: "panel rules", lang: lang() });
  let list = null;
  for (const block of text.split("\n")) {
    let line = block.replaceAll("`", "");
    // the rendering's heading names its source file: the page's own title instead
    if (line.startsWith("# ")) {
      section.append(h("h1", {}, w.rulesTitle));
      continue;
    }
    if (line.startsWith(SOURCE_NOTE)) {
      section.append(h("p", { class: "muted original-note" }, w.rulesOriginal, " ",
        h("a", { href: "/rules", lang: "it", onclick: (e) => { e.preventDefault(); setLanguage("it"); } }, `${w.rulesOtherLanguage} →`)));
      line = line.slice(SOURCE_NOTE.length).trim();
    }
    if (line.startsWith("- ")) {
      if (!list) section.append((list = h("ul")));
      list.append(h("li", {}, line.slice(2)));
      continue;
    }
    list = null;
    if (line.startsWith("## ")) section.append(h("h2", {}, line.slice(3)));
    else if (line.trim()) section.append(h("p", {}, line));
    // «gli schemi di questo sito»: the layout drawn as the seed describes it, under its words
    if (/schemi di questo sito|site's diagrams/.test(line)) section.append(diagram());
    // «la pagina Esempi»: a link to it
    if (/pagina Esempi|Examples page/.test(line)) section.append(h("p", {}, h("a", { href: "/examples", "data-link": true }, `→ ${words().examples}`)));
  }
  main.append(section);
}

/** The Examples page's opening table: the arc, the reserve, each place's name and count. */
function diagram() {
  const wrap = h("div", { class: "board-wrap diagram" });
  const figure = h("figure", { class: "diagram-figure" }, wrap, h("figcaption", {}, words().diagramCaption));
  createBoard(wrap, {}).update(exampleFrames()[0].board, { lang: lang(), label: words().diagramCaption });
  return figure;
}

let exampleCache = null;
/** Every board of the Examples page's won game (examples.js), from the deal to the win. */
function exampleFrames() {
  exampleCache ||= replayBoards({ piles: EXAMPLE.piles.map((p) => p.split(" ")), reserve: EXAMPLE.reserve.split(" ") }, EXAMPLE.moves.map((m) => m.split(" ")));
  return exampleCache;
}

// -- examples

/** The seed's examples on a real board: the taps that cancel or replace a selection, then the rules' won game. */
function examples() {
  const w = words();
  const frames = exampleFrames();
  const at = (name) => POSITION_NAMES.indexOf(name);
  const start = frames[0].board;
  const where = (name) => `${cardSymbol(parseCard(start.tops[at(name)]), lang())} (${at(name) < 12 ? w.pile : w.slot} ${name})`;
  const ah = POSITION_NAMES[start.tops.indexOf("AH")];
  const kh = POSITION_NAMES[start.tops.lastIndexOf("KH")];
  // [board, ringed places, text]
  const steps = [
    [start, [], w.ex.table],
    [start, ["1"], w.ex.select(where("1"))],
    [start, ["1", ah], w.ex.notEleven(where("1"), where(ah))],
    [start, ["1", "3"], w.ex.faceAndNumber(where("1"), where("3"))],
    [start, [kh], w.ex.sameFace(where("3"), where(kh))],
    [start, ["1", "8"], w.ex.pair(where("1"), where("8"))],
    [frames[1].board, ["8", "5", "3"], w.ex.triple(where("5"), where("3"))],
    [frames[2].board, [], w.ex.afterTwo],
    [frames[48].board, [], w.ex.won],
  ];
  let index = 0;
  const text = h("p", { class: "step", role: "status" });
  const wrap = h("div", { class: "board-wrap" });
  const board = createBoard(wrap, {});
  const counter = h("span", { class: "muted counter", "aria-live": "polite" });
  const prev = h("button", { type: "button", dataset: { step: "prev" }, onclick: () => go(index - 1) }, "◀ ", w.prev);
  const next = h("button", { type: "button", dataset: { step: "next" }, onclick: () => go(index + 1) }, w.next, " ▶");
  const go = (i) => {
    index = Math.max(0, Math.min(steps.length - 1, i));
    const [shown, ring, say] = steps[index];
    board.update(shown, { lang: lang(), label: w.examples, selection: ring.map(at) });
    text.textContent = say;
    counter.textContent = `${index + 1} / ${steps.length}`;
    prev.disabled = index === 0;
    next.disabled = index === steps.length - 1;
  };
  main.append(h("section", { class: "replay examples" },
    h("h1", { class: "center" }, w.examples),
    text, wrap,
    h("div", { class: "actions replay-controls row" }, prev, counter, next),
    h("p", { class: "center" }, w.ex.whole, " ", h("a", { href: "/rules", "data-link": true }, w.rules))));
  go(0);
}

// -- leaderboards

/** The message of a REST error body ({"error": {"code", "message"}}), or null. */
function apiError(data) {
  return data && data.error && typeof data.error === "object" ? data.error.message || data.error.code : null;
}

/** `get`: fetch, or fetchStored for a game that may have just finished (net.js). */
async function getJson(url, init, get = fetch) {
  const response = await get(url, init);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new Error(apiError(data) || `${response.status} ${response.statusText}`);
    error.code = data && data.error && data.error.code;
    throw error;
  }
  return data;
}

/** ``replayable``: false for a daily board not replayable yet; ``ghosts``: then each can be raced;
 * ``markRanked``: a casual board (a deal code's) marks the ranked results among its casual ones. */
function entriesTable(entries, replayable = true, ghosts = false, markRanked = false) {
  const w = words();
  if (!entries || entries.length === 0) return h("p", { class: "muted" }, w.noResults);
  // each player's best game; their other games a tap away (the «+2» button)
  const row = (r, other) => h("tr", { class: other ? "other" : null, hidden: other },
    h("td", {}, other ? "" : r.rank), h("td", {}, r.name, r.unranked_reason === "bot" ? [" ", h("span", { class: "tag bot", title: w.botTitle }, w.botLabel)] : null,
      markRanked && r.ranked === true ? [" ", h("span", { class: "tag ranked", title: w.rankedTitle }, w.rankedLabel)] : null),
    h("td", {}, w.statuses[r.outcome] || r.outcome),
    h("td", {}, r.score), h("td", {}, r.moves),
    h("td", {}, formatTime(r.time_ms)),
    h("td", {}, r.game != null && replayable ? h("a", { href: `/replay/${r.game}`, "data-link": true }, w.replay)
      : r.game != null && ghosts ? h("a", { href: `/daily?ghost=${encodeURIComponent(r.game)}`, "data-link": true, dataset: { ghost: r.game } }, w.raceGhost) : ""));
  const body = h("tbody", {});
  for (const r of entries) {
    const others = (r.others || []).map((o) => row(o, true));
    const best = row(r, false);
    if (others.length) {
      best.children[1].append(" ", h("button", { type: "button", class: "more", "aria-expanded": "false", "aria-label": `+${others.length} (${w.otherGames(others.length)})`, onclick: (e) => {
        const open = e.currentTarget.getAttribute("aria-expanded") !== "true";
        e.currentTarget.setAttribute("aria-expanded", String(open));
        for (const o of others) o.hidden = !open;
      } }, `+${others.length}`));
    }
    body.append(best, ...others);
  }
  return h("table", { class: "results" },
    h("thead", {}, h("tr", {}, [w.rank, w.name, w.status, w.score, w.moves, w.time, h("span", { class: "sr-only" }, w.game)].map((x) => h("th", { scope: "col" }, x)))),
    body);
}

/** Whether any result of a board (or any player's other game on it) is ranked. */
const hasRanked = (entries) => (entries || []).some((r) => r.ranked === true || (r.others || []).some((o) => o.ranked === true));

function leaderboard(kind, arg) {
  const w = words();
  const out = h("div", {});
  const codeInput = h("input", { id: "lb-code", name: "code", placeholder: w.codePlaceholder, value: kind && kind !== "daily" && kind !== "ratings" ? kind : "" });
  const dateInput = h("input", { id: "lb-date", type: "date", name: "date", value: kind === "daily" && arg ? arg : utcDay(Date.now()) });
  main.append(h("section", { class: "panel" },
    h("h1", {}, w.leaderboards),
    h("div", { class: "row board-tabs" }, h("a", { href: "/leaderboard/ratings", "data-link": true, class: kind === "ratings" ? "button" : "button quiet", "aria-current": kind === "ratings" ? "page" : null }, "★ ", w.ratings.tab)),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); navigate(`/leaderboard/${codeInput.value.trim().toUpperCase()}`); } },
      h("label", { for: "lb-code" }, w.perDeal), codeInput, h("button", { class: "primary" }, w.show)),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); navigate(`/leaderboard/daily/${dateInput.value}`); } },
      h("label", { for: "lb-date" }, w.dailyBoard), dateInput, h("button", { class: "primary" }, w.show)),
    out));
  let url = null;
  let title = "";
  let subject = "";
  // a day's games open once all its attempts ended: none before the day (UTC) is over
  let replayable = true;
  if (kind === "ratings") return ratingsBoard(out, w); // the players' ratings (ratings.js)
  if (kind === "daily") {
    url = `/api/daily/${encodeURIComponent(arg || dateInput.value)}/leaderboard`;
    replayable = (arg || dateInput.value) < utcDay(Date.now());
    [title, subject] = [w.dailyBoard, arg || dateInput.value];
  } else if (kind) {
    url = `/api/leaderboard/${encodeURIComponent(kind)}`;
    [title, subject] = [w.perDeal, kind];
  }
  if (!url) return;
  out.append(h("p", { class: "muted" }, w.loading));
  // today's games race as ghosts once the player's own attempt has ended (/api/me/history)
  const today = kind === "daily" && (arg || dateInput.value) === utcDay(Date.now());
  const mine = today ? getJson("/api/me/history?limit=1", { headers: { Authorization: `Bearer ${playerKey(localStorage)}` } }).then((me) => me.daily_today, () => false) : false;
  Promise.all([getJson(url), mine]).then(
    ([data, ghosts]) => out.replaceChildren(...[h("h2", {}, title, " ", h("span", { class: kind === "daily" ? "nowrap" : "code" }, subject)),
      // a deal code's board is casual: its players could know the code before the start — but
      // not a sealed race's racers, nor the daily's ranked attempts: those rows are marked ranked
      data.ranked === false ? h("p", { class: "notice casual-board", role: "note" }, hasRanked(data.entries) ? w.casualBoardMixed : w.casualBoard) : null,
      h("div", { class: "scroll-x" }, entriesTable(data.entries, replayable, ghosts, data.ranked === false)),
      // (replaceChildren would write a null as the text "null")
      !replayable && data.entries && data.entries.length ? h("p", { class: "muted" }, ghosts ? w.dailyGhosts : w.dailyReplayLater) : null].filter(Boolean)),
    (error) => out.replaceChildren(h("p", { role: "alert" }, errorText(lang(), error.code, kind === "daily" ? null : kind, lang() === "en" ? `${w.errorPrefix}: ${error.message}` : w.boardUnavailable))),
  );
}

// -- replay

function replay(id) {
  const w = words();
  const heading = h("h1", { class: "sr-only" }, w.replay);
  const box = h("section", { class: "replay" }, heading, h("p", { class: "muted" }, w.loading));
  main.append(box);
  getJson(`/api/games/${encodeURIComponent(id)}`, undefined, fetchStored).then((game) => {
    const frames = replayBoards(game.deal, game.moves);
    let at = 0;
    const stepInfo = h("p", { class: "step", role: "status" });
    const [scoreBox, score] = stat("score", w.score);
    const [movesBox, moves] = stat("moves", w.moves);
    const [codeBox, code] = stat("code", w.code);
    code.textContent = game.code;
    // the counter counts moves, as the bar does; an undo is a step of its own, said apart
    const total = frames[frames.length - 1].moves;
    const undos = frames.filter((f) => f.step === "undo").length;
    heading.textContent = `${w.replay}: ${game.name || ""} · ${game.code}`;
    const range = h("input", { type: "range", min: "0", max: String(frames.length - 1), value: "0", "aria-label": w.step, oninput: (e) => go(Number(e.target.value)) });
    const boardWrap = h("div", { class: "board-wrap" });
    const board = createBoard(boardWrap, {});
    const button = (label, action, name) => h("button", { type: "button", dataset: { step: name }, onclick: action }, label);
    box.replaceChildren(heading,
      h("div", { class: "bar" }, h("div", { class: "stat" }, h("span", { class: "name" }, w.player), h("span", { class: "value" }, game.name || "")), scoreBox, movesBox, codeBox),
      boardWrap,
      h("div", { class: "actions replay-controls" },
        button("« " + w.first, () => go(0), "first"), button("◀ " + w.prev, () => go(at - 1), "prev"),
        range, button(w.next + " ▶", () => go(at + 1), "next"), button(w.last + " »", () => go(frames.length - 1), "last")),
      stepInfo,
      h("p", { class: "center" }, h("a", { href: `/play/${code.textContent}`, "data-link": true }, w.playThisDeal),
        // a game stored with its times can be raced: a new solo game on its deal, a fresh seat
        Array.isArray(game.times) && game.times.length ? [" · ", h("button", { type: "button", class: "primary", dataset: { ghost: id },
          onclick: () => { sessionStorage.removeItem("halfmoon.session"); navigate(`/play/${game.code}?ghost=${encodeURIComponent(id)}`); } }, w.raceGhost)] : null));
    let later = null;
    function go(i) {
      at = Math.max(0, Math.min(frames.length - 1, i));
      const frame = frames[at];
      const previous = frames[Math.max(0, at - 1)].board;
      const moved = frame.step && frame.step !== "undo" ? frame.step.map((n) => POSITION_NAMES.indexOf(n)) : [];
      // the cards the move removes are ringed where they lay, then they leave the board
      clearTimeout(later);
      if (moved.length) {
        board.update(previous, { lang: lang(), label: w.replay, selection: moved });
        later = setTimeout(() => board.update(frame.board, { lang: lang(), label: w.replay }), 900);
      } else board.update(frame.board, { lang: lang(), label: w.replay });
      score.textContent = frame.score;
      moves.textContent = frame.moves;
      range.value = at;
      const undone = frames.slice(1, at + 1).filter((f) => f.step === "undo").length;
      const counter = `${w.step} ${frame.moves} / ${total}${undos ? ` · ${w.undos(undone)}` : ""}`;
      range.setAttribute("aria-valuetext", counter);
      stepInfo.textContent = at === 0 ? counter
        : `${counter}: ${frame.step === "undo" ? `↶ ${w.undo} (${w.step.toLowerCase()} ${frames[at - 1].moves} ${w.undone})` : moved.map((p) => `${cardSymbol(parseCard(previous.tops[p]), lang())} (${p < 12 ? w.pile : w.slot} ${POSITION_NAMES[p]})`).join(" + ")}`;
    }
    go(0);
  }).catch((error) => {
    // the player's words for the code, never the server's English reason
    const said = errorText(lang(), error.code, null, "");
    const text = said && said !== error.code ? said : w.gameUnavailable;
    document.title = `${w.replay} · Half Moon`;
    box.replaceWith(h("section", { class: "panel replay-error", dataset: { error: error.code || "failed" } },
      h("h1", {}, w.replay),
      h("p", { role: "alert" }, text),
      h("p", {}, h("a", { href: "/", "data-link": true, class: "button primary" }, "☾ ", w.home), " · ",
        h("a", { href: "/leaderboard", "data-link": true }, w.leaderboards))));
  });
}

function stat(name, label) {
  const value = h("span", { class: "value", dataset: { stat: name } });
  return [h("div", { class: "stat" }, h("span", { class: "name" }, label), value), value];
}

renderHeader();
route();
window.halfmoon = { app };
