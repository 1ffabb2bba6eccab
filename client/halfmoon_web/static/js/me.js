// «Le tue partite» (/me): the player key this browser keeps — a random secret made once — and
// the player's history (on a device signed in to an account, the account's), read with it from GET /api/me/history (the key goes in the
// Authorization header, never in a URL). Codes the player may not see yet come as null.

import { formatTime, h } from "./dom.js";
import { ratingSection } from "./ratings.js";

const KEY = "halfmoon.playerKey";
const WELL_FORMED = /^[A-Za-z0-9_-]{22,64}$/;

/** This browser's player key (32 random bytes, URL-safe base64: 43 characters), made once and kept; null without storage. */
export function playerKey(storage) {
  try {
    let key = storage.getItem(KEY);
    if (!WELL_FORMED.test(key || "")) {
      const bytes = crypto.getRandomValues(new Uint8Array(32));
      key = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      storage.setItem(KEY, key);
    }
    return key;
  } catch {
    return null; // storage refused (a private window's quota): play on, without a history
  }
}

/** The /me page into `main`: counts, the daily streak, the best time per deal, the newest games. */
export function historyPage(main, w, lang) {
  const box = h("section", { class: "panel history", dataset: { page: "me" } }, h("h1", {}, w.me.title), h("p", { class: "muted" }, w.loading));
  main.append(box);
  document.title = `${w.me.title} · Half Moon`;
  const key = playerKey(localStorage);
  // signed in to an account (the session cookie: GET /api/account answers), the page is the
  // account's and says so; signed out (401), this browser's key's, with the way to an account;
  // accounts off (404), this browser's key's alone
  const account = fetch("/api/account", { credentials: "same-origin" })
    .then((response) => (response.ok ? response.json() : response.status === 401 ? { signedOut: true } : null)).catch(() => null);
  fetch("/api/me/history?limit=50", { headers: { Authorization: `Bearer ${key}` } })
    .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
    .then(async (data) => box.replaceChildren(...render(data, w, lang, await account).filter((x) => x != null))) // (a null would show as "null")
    .catch(() => box.replaceChildren(h("h1", {}, w.me.title), h("p", { role: "alert" }, w.me.unavailable)));
}

function render(data, w, lang, account) {
  const m = w.me;
  const title = h("h1", {}, m.title, data.name ? h("span", { class: "muted" }, ` · ${data.name}`) : null);
  const note = account && account.name
    ? h("p", { class: "muted note", dataset: { account: "signed-in" } }, m.accountNote(account.name), " ", h("a", { href: "/account", "data-link": true }, m.accountLink), ".")
    : h("p", { class: "muted note", dataset: { account: "none" } }, m.note,
      account && account.signedOut ? [" ", m.accountOffer, " ", h("a", { href: "/account", "data-link": true }, w.account.title), "."] : null);
  if (!data.games) return [title, h("p", {}, m.none), note];
  // the rating, and what each rated race did to it (GET /api/players/{player}/rating)
  const rating = data.player ? ratingSection(data.player, w, lang) : null;
  const stat = (label, value, name) => h("div", { class: "stat", dataset: { stat: name } }, h("span", { class: "name" }, label), h("span", { class: "value" }, value));
  const replay = (g) => (g.code ? h("a", { href: `/replay/${g.game}`, "data-link": true }, w.replay) : "");
  const clean = (g) => (g.clean ? h("span", { class: "clean", title: m.clean, role: "img", "aria-label": m.clean }, "✓") : "");
  // the «✓» column is named for a screen reader (and a pointer's tooltip) by what it means
  const head = (x) => (x === "✓" ? h("th", { scope: "col", title: m.clean, "aria-label": m.clean }, x)
    // the replay links' column: named for screen readers, no width taken on a phone
    : x === w.game ? h("th", { scope: "col" }, h("span", { class: "sr-only" }, x)) : h("th", { scope: "col" }, x));
  // a code wraps at its dashes: a sealed race's long one (HM1-S- and four groups) would push the
  // «Classifica» column off a phone's screen
  const code = (g) => g.code || h("span", { class: "muted" }, m.hidden);
  const day = (g) => new Date(g.finished_at).toLocaleDateString(lang === "it" ? "it-IT" : "en-GB", { day: "numeric", month: "short", timeZone: "UTC" });
  const table = (heads, rows) => h("div", { class: "scroll-x" }, h("table", { class: "results" },
    h("thead", {}, h("tr", {}, heads.map(head))), h("tbody", {}, rows)));
  const bests = (games, name) => (games.length ? table([w.code, w.time, "✓", w.game], games.map((g) =>
    h("tr", { dataset: { best: name } }, h("td", { class: "code" }, g.code), h("td", {}, formatTime(g.time_ms)), h("td", {}, clean(g)), h("td", {}, replay(g)))))
    : h("p", { class: "muted" }, m.noBest));
  // whether a game is ranked; a casual one says why (its code was known, a bot, too fast, a retry)
  const ranked = (g) => (g.ranked === false ? h("span", { class: "muted", dataset: { unranked: g.unranked_reason } }, m.unranked[g.unranked_reason] || g.unranked_reason) : m.rankedYes);
  const casual = data.casual || { games: 0, wins: 0, clean_wins: 0, best: [] };
  return [
    title,
    // streaks and bests count ranked games only; casual ones are counted apart below
    h("div", { class: "bar history-stats", dataset: { kind: "ranked" } },
      stat(m.games, data.ranked_games ?? data.games, "games"), stat(m.wins, data.wins, "wins"),
      stat(m.cleanWins, data.clean_wins, "clean"), stat(m.streak, data.streak, "streak")),
    h("p", { class: "muted note" }, m.rankedNote),
    h("p", { class: "muted note" }, data.daily_today ? m.dailyDone : m.dailyToDo),
    h("h2", {}, m.best),
    bests(data.best, "ranked"),
    h("h2", {}, m.casual),
    h("p", { class: "muted note" }, m.casualNote),
    h("div", { class: "bar history-stats", dataset: { kind: "casual" } },
      stat(m.games, casual.games, "games"), stat(m.wins, casual.wins, "wins"), stat(m.cleanWins, casual.clean_wins, "clean")),
    h("h3", {}, m.casualBest),
    bests(casual.best, "casual"),
    h("h2", {}, m.recent),
    table([m.date, m.mode, w.status, w.time, "✓", m.ranked, w.game], data.recent.map((g) =>
      h("tr", { dataset: { game: g.game, ranked: g.ranked !== false } }, h("td", { class: "nowrap" }, day(g)),
        h("td", {}, m.modes[g.mode] || g.mode, h("br"), h("small", { class: "code" }, code(g))),
        h("td", {}, w.statuses[g.outcome] || g.outcome, h("br"), h("small", { class: "nowrap", dataset: { score: g.score } }, `${g.score} ${m.points}`)),
        h("td", {}, formatTime(g.time_ms)), h("td", {}, clean(g)), h("td", {}, ranked(g)), h("td", {}, replay(g))))),
    rating,
    note,
  ];
}
