// The single-page app: reads location.pathname and shows the screen it names — home, a solo
// game (/play/{code}), a race (/r/{room}), spectating (/watch/{room}), the daily challenge
// (/daily), the rules, leaderboards and a finished game's replay — plus the header, settings,
// messages and the connection banner.

import { createBoard } from "./board.js";
import { POSITION_NAMES, cardSymbol, parseCard } from "./cards.js";
import { formatTime, h } from "./dom.js";
import { errorText, pickLanguage, t } from "./i18n.js";
import { openLive } from "./live.js";
import { replayBoards } from "./replay.js";
import { RULES } from "./rules.js";
import { loadSettings, saveSettings } from "./settings.js";

const settings = loadSettings(localStorage);
const main = document.getElementById("main");
const bannerBox = document.getElementById("banner");
const toastBox = document.getElementById("toast");
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
  toast(text) {
    toastBox.textContent = text;
    toastBox.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => {
      toastBox.hidden = true;
    }, 2600);
  },
  setBanner(text) {
    bannerBox.textContent = text || "";
    bannerBox.hidden = !text;
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

// -- header and settings -------------------------------------------------------------------

function renderHeader() {
  const w = words();
  document.documentElement.lang = lang();
  const header = document.getElementById("top");
  const dialog = settingsDialog();
  header.replaceChildren(
    h("a", { href: "/", "data-link": true, class: "brand" }, "☾ Half Moon"),
    h("nav", {},
      h("a", { href: "/rules", "data-link": true }, w.rules),
      h("a", { href: "/leaderboard", "data-link": true }, w.leaderboards),
      h("button", { type: "button", class: "lang", "aria-label": `${w.language}: ${lang() === "it" ? "English" : "Italiano"}`, onclick: () => setLanguage(lang() === "it" ? "en" : "it") }, lang() === "it" ? "EN" : "IT"),
      h("button", { type: "button", class: "gear", "aria-label": w.settings, "aria-haspopup": "dialog", onclick: () => dialog.showModal() }, "⚙")),
    dialog);
}

function settingsDialog() {
  const w = words();
  const toggle = (key, label) => h("label", { class: "toggle" },
    h("input", { type: "checkbox", name: key, checked: settings[key], onchange: (e) => { settings[key] = e.target.checked; store(); screen && screen.relabel(); } }),
    " ", label);
  const select = h("select", { name: "lang", onchange: (e) => setLanguage(e.target.value) },
    h("option", { value: "it", selected: lang() === "it" }, "Italiano"),
    h("option", { value: "en", selected: lang() === "en" }, "English"));
  const dialog = h("dialog", { class: "settings", "aria-label": w.settings },
    h("form", { method: "dialog" },
      h("h2", {}, w.settings),
      toggle("moveErrors", `«${t("it").moveErrors}»${lang() === "en" ? ` (${w.moveErrors})` : ""}`),
      toggle("placementHelp", `«${t("it").placementHelp}»${lang() === "en" ? ` (${w.placementHelp})` : ""}`),
      h("label", {}, `${w.language} `, select),
      h("button", { class: "primary" }, w.close)));
  return dialog;
}

function setLanguage(value) {
  settings.lang = value;
  store();
  renderHeader();
  if (screen && screen.relabel) screen.relabel();
}

// -- the router ----------------------------------------------------------------------------

function route() {
  if (screen) screen.close();
  screen = null;
  app.setBanner(null);
  main.replaceChildren();
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second, third] = parts;
  if (!first) screen = staticScreen(home);
  else if (first === "play") screen = openLive(app, { kind: "solo", code: second ? second.toUpperCase() : null });
  else if (first === "daily") screen = openLive(app, { kind: "daily" });
  else if (first === "r" && second) screen = raceEntry(second.toUpperCase());
  else if (first === "watch" && second) screen = openLive(app, { kind: "watch", room: second.toUpperCase() });
  else if (first === "rules") screen = staticScreen(rules);
  else if (first === "replay" && second) screen = staticScreen(() => replay(second));
  else if (first === "leaderboard") screen = staticScreen(() => leaderboard(second, third));
  else screen = staticScreen(home);
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

/** /r/{room}: join with the saved name, or ask for one first. */
function raceEntry(room) {
  if (settings.name || sessionStorage.getItem("halfmoon.session")) return openLive(app, { kind: "race", room });
  let inner = null;
  const draw = () => {
    const w = words();
    const input = h("input", { name: "name", required: true, maxlength: "20", autocomplete: "nickname", "aria-label": w.yourName });
    main.replaceChildren(h("section", { class: "panel" }, h("h1", {}, `${w.joinRace} ${room}`),
      h("form", { onsubmit: (e) => {
        e.preventDefault();
        settings.name = input.value.trim();
        store();
        inner = openLive(app, { kind: "race", room });
      } }, h("label", {}, `${w.yourName} `, input), " ", h("button", { class: "primary" }, w.join))));
  };
  draw();
  return {
    close() { if (inner) inner.close(); },
    relabel() { if (inner) inner.relabel(); else draw(); },
  };
}

// -- home ----------------------------------------------------------------------------------

function home() {
  const w = words();
  const name = h("input", { id: "name", name: "name", maxlength: "20", value: settings.name, autocomplete: "nickname",
    onchange: (e) => { settings.name = e.target.value.trim(); store(); } });
  const code = h("input", { id: "code", name: "code", required: true, placeholder: w.codePlaceholder, autocapitalize: "characters", spellcheck: false });
  const room = h("input", { id: "room", name: "room", placeholder: w.roomPlaceholder, spellcheck: false });
  const saveName = () => { settings.name = name.value.trim(); store(); };
  const roomId = () => {
    const text = room.value.trim();
    const match = text.match(/(?:\/(?:r|watch)\/)?([A-Za-z0-9]{6})\/?$/);
    return match ? match[1].toUpperCase() : null;
  };
  main.append(h("section", { class: "home" },
    h("h1", {}, "☾ Half Moon"),
    h("p", { class: "field" }, h("label", { for: "name" }, w.yourName), name),
    h("div", { class: "menu" },
      h("button", { type: "button", class: "primary", id: "new-solo", onclick: () => { saveName(); navigate("/play"); } }, w.newSolo),
      h("button", { type: "button", id: "daily", onclick: () => { saveName(); navigate("/daily"); } }, w.daily),
      h("button", { type: "button", id: "create-race", onclick: () => { saveName(); createRace(code.value.trim().toUpperCase()); } }, w.createRace)),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); saveName(); if (code.value.trim()) navigate(`/play/${code.value.trim().toUpperCase()}`); } },
      h("label", { for: "code" }, w.playCode), code, h("button", { class: "primary" }, w.play)),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); saveName(); const id = roomId(); if (id) navigate(`/r/${id}`); else app.toast(w.roomHint); } },
      h("label", { for: "room" }, w.joinRace), room, h("button", { class: "primary" }, w.join),
      h("button", { type: "button", onclick: () => { const id = roomId(); if (id) navigate(`/watch/${id}`); else app.toast(w.roomHint); } }, w.watch)),
    h("p", {}, h("a", { href: "/rules", "data-link": true }, w.rules), " · ", h("a", { href: "/leaderboard", "data-link": true }, w.leaderboards))));
}

/** POST /api/rooms (on the deal typed in «play a code», if any), then open the new race. */
async function createRace(code) {
  try {
    const response = await fetch("/api/rooms", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(code ? { code } : {}) });
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

// -- rules ---------------------------------------------------------------------------------

function rules() {
  const text = RULES[lang()];
  const section = h("article", { class: "panel rules", lang: lang() });
  let list = null;
  for (const block of text.split("\n")) {
    const line = block.replaceAll("`", "");
    if (line.startsWith("- ")) {
      if (!list) section.append((list = h("ul")));
      list.append(h("li", {}, line.slice(2)));
      continue;
    }
    list = null;
    if (line.startsWith("## ")) section.append(h("h2", {}, line.slice(3)));
    else if (line.startsWith("# ")) section.append(h("h1", {}, line.slice(2)));
    else if (line.trim()) section.append(h("p", {}, line));
  }
  main.append(section);
}

// -- leaderboards --------------------------------------------------------------------------

/** The message of a REST error body ({"error": {"code", "message"}}), or null. */
function apiError(data) {
  return data && data.error && typeof data.error === "object" ? data.error.message || data.error.code : null;
}

async function getJson(url) {
  const response = await fetch(url);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new Error(apiError(data) || `${response.status} ${response.statusText}`);
    error.code = data && data.error && data.error.code;
    throw error;
  }
  return data;
}

function entriesTable(entries) {
  const w = words();
  if (!entries || entries.length === 0) return h("p", { class: "muted" }, w.noResults);
  return h("table", { class: "results" },
    h("thead", {}, h("tr", {}, [w.rank, w.name, w.status, w.score, w.moves, w.time, ""].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, entries.map((r) => h("tr", {},
      h("td", {}, String(r.rank)), h("td", {}, r.name),
      h("td", {}, w.statuses[r.outcome] || r.outcome),
      h("td", {}, String(r.score)), h("td", {}, String(r.moves)),
      h("td", {}, formatTime(r.time_ms)),
      h("td", {}, r.game != null ? h("a", { href: `/replay/${r.game}`, "data-link": true }, words().replay) : "")))));
}

function leaderboard(kind, arg) {
  const w = words();
  const out = h("div", {});
  const codeInput = h("input", { id: "lb-code", name: "code", placeholder: w.codePlaceholder, value: kind && kind !== "daily" ? kind : "" });
  const dateInput = h("input", { id: "lb-date", type: "date", name: "date", value: kind === "daily" && arg ? arg : new Date().toISOString().slice(0, 10) });
  main.append(h("section", { class: "panel" },
    h("h1", {}, w.leaderboards),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); navigate(`/leaderboard/${codeInput.value.trim().toUpperCase()}`); } },
      h("label", { for: "lb-code" }, w.perDeal), codeInput, h("button", { class: "primary" }, w.show)),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); navigate(`/leaderboard/daily/${dateInput.value}`); } },
      h("label", { for: "lb-date" }, w.dailyBoard), dateInput, h("button", { class: "primary" }, w.show)),
    out));
  let url = null;
  let title = "";
  let subject = "";
  if (kind === "daily") {
    url = `/api/daily/${encodeURIComponent(arg || dateInput.value)}/leaderboard`;
    [title, subject] = [w.dailyBoard, arg || dateInput.value];
  } else if (kind) {
    url = `/api/leaderboard/${encodeURIComponent(kind)}`;
    [title, subject] = [w.perDeal, kind];
  }
  if (!url) return;
  out.append(h("p", { class: "muted" }, w.loading));
  getJson(url).then(
    (data) => out.replaceChildren(h("h2", {}, title, " ", h("span", { class: "nowrap" }, subject)),
      h("div", { class: "scroll-x" }, entriesTable(data.entries))),
    (error) => out.replaceChildren(h("p", { role: "alert" }, errorText(lang(), error.code, kind === "daily" ? null : kind, `${w.errorPrefix}: ${error.message}`))),
  );
}

// -- replay --------------------------------------------------------------------------------

function replay(id) {
  const w = words();
  const box = h("section", { class: "replay" }, h("p", { class: "muted" }, w.loading));
  main.append(box);
  getJson(`/api/games/${encodeURIComponent(id)}`).then((game) => {
    const frames = replayBoards(game.deal, game.moves);
    let at = 0;
    const stepInfo = h("p", { class: "step", role: "status" });
    const [scoreBox, score] = stat("score", w.score);
    const [movesBox, moves] = stat("moves", w.moves);
    const [codeBox, code] = stat("code", w.code);
    code.textContent = game.code;
    const range = h("input", { type: "range", min: "0", max: String(frames.length - 1), value: "0", "aria-label": w.step, oninput: (e) => go(Number(e.target.value)) });
    const boardWrap = h("div", { class: "board-wrap" });
    const board = createBoard(boardWrap, {});
    const button = (label, action, name) => h("button", { type: "button", dataset: { step: name }, onclick: action }, label);
    box.replaceChildren(
      h("div", { class: "bar" }, h("div", { class: "stat" }, h("span", { class: "name" }, w.replay), h("span", { class: "value" }, game.name || "")), scoreBox, movesBox, codeBox),
      boardWrap,
      h("div", { class: "actions replay-controls" },
        button("« " + w.first, () => go(0), "first"), button("◀ " + w.prev, () => go(at - 1), "prev"),
        range, button(w.next + " ▶", () => go(at + 1), "next"), button(w.last + " »", () => go(frames.length - 1), "last")),
      stepInfo,
      h("p", { class: "center" }, h("a", { href: `/play/${code.textContent}`, "data-link": true }, w.playThisDeal)));
    function go(i) {
      at = Math.max(0, Math.min(frames.length - 1, i));
      const frame = frames[at];
      const previous = frames[Math.max(0, at - 1)].board;
      const moved = frame.step && frame.step !== "undo" ? frame.step.map((n) => POSITION_NAMES.indexOf(n)) : [];
      // the places the move just emptied or uncovered are ringed, as the seed's examples name them
      board.update(frame.board, { lang: lang(), label: w.replay, selection: moved });
      score.textContent = String(frame.score);
      moves.textContent = String(frame.moves);
      range.value = String(at);
      stepInfo.textContent = at === 0 ? `${w.step} 0 / ${frames.length - 1}`
        : `${w.step} ${at} / ${frames.length - 1}: ${frame.step === "undo" ? w.undo : moved.map((p) => `${cardSymbol(parseCard(previous.tops[p]), lang())} (${p < 12 ? w.pile : w.slot} ${POSITION_NAMES[p]})`).join(" + ")}`;
    }
    go(0);
  }).catch((error) => box.replaceChildren(h("p", { role: "alert" }, `${w.errorPrefix}: ${error.message}`)));
}

function stat(name, label) {
  const value = h("span", { class: "value", dataset: { stat: name } });
  return [h("div", { class: "stat" }, h("span", { class: "name" }, label), value), value];
}

renderHeader();
route();
window.halfmoon = { app };
