// Ratings (docs/server.md, "Ratings"): the change a race's end shows, the ratings leaderboard
// (/leaderboard/ratings) and the rating history on the player's page (/me). The server rates a
// race off the path that stores it, about a second after its last game is stored: the end screen
// asks GET /api/games/{game}/rating every 1.5 s while it says "due".

import { h } from "./dom.js";

const POLL_MS = 1500;
const POLL_FOR_MS = 10 * 60 * 1000; // a seat may play on for a while after ours ended
const known = new Map(); // game id → its last answer
const polling = new Set();

const signed = (n) => (n > 0 ? `+${n}` : n < 0 ? `−${-n}` : "±0");

function changeText(r, w) {
  if (!r || r.status === "due") return w.ratings.due;
  if (r.status !== "rated") return w.ratings.notRated;
  return `${w.ratings.rating}: ${r.before} → ${r.after} (${signed(r.change)})${r.provisional ? ` · ${w.ratings.provisional}` : ""}`;
}

/** The end screen's line for a rated-race game: what the rating did, filled in once the server says. */
export function ratingLine(game, w) {
  const answer = known.get(game);
  if (!polling.has(game) && (!answer || answer.status === "due")) poll(game, w, Date.now());
  return draw(game, w);
}

function draw(game, w) {
  const answer = known.get(game);
  const moved = answer && answer.status === "rated" ? (answer.change >= 0 ? "up" : "down") : null;
  return h("p", { class: moved ? `rating ${moved}` : "rating", dataset: { ratingFor: game, status: answer?.status || "due" }, "aria-live": "polite" },
    changeText(answer, w));
}

function poll(game, w, since) {
  polling.add(game);
  fetch(`/api/games/${encodeURIComponent(game)}/rating`)
    .then((response) => (response.ok ? response.json() : null), () => null)
    .then((answer) => {
      if (answer) known.set(game, answer);
      for (const line of document.querySelectorAll(`[data-rating-for="${CSS.escape(game)}"]`)) line.replaceWith(draw(game, w));
      if ((!answer || answer.status === "due") && Date.now() - since < POLL_FOR_MS) setTimeout(() => poll(game, w, since), POLL_MS);
      else polling.delete(game);
    });
}

/** The ratings leaderboard into `out`: every rating, best first, the provisional ones flagged. */
export function ratingsBoard(out, w) {
  const r = w.ratings;
  out.replaceChildren(h("p", { class: "muted" }, w.loading));
  fetch("/api/ratings?provisional=true&limit=100")
    .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
    .then((data) => out.replaceChildren(
      h("h2", {}, r.title),
      h("p", { class: "muted note" }, r.note(data.provisional_games)),
      data.entries.length === 0 ? h("p", { class: "muted" }, w.noResults) : h("div", { class: "scroll-x" }, h("table", { class: "results ratings" },
        h("thead", {}, h("tr", {}, [w.rank, w.name, r.rating, r.games].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, data.entries.map((e) => h("tr", { dataset: { player: e.player, provisional: e.provisional } },
          h("td", {}, e.rank), h("td", {}, e.name, e.provisional ? [" ", h("span", { class: "tag provisional", title: r.provisionalTitle }, r.provisional)] : null),
          h("td", { class: "num" }, e.rating), h("td", { class: "num" }, e.games))))))),
    () => out.replaceChildren(h("p", { role: "alert" }, r.unavailable)));
}

/** The player's page's rating section: the rating now and its history (newest first). */
export function ratingSection(player, w, lang) {
  const r = w.ratings;
  const box = h("section", { class: "rating-history", dataset: { player } }, h("h2", {}, r.history), h("p", { class: "muted" }, w.loading));
  fetch(`/api/players/${encodeURIComponent(player)}/rating?limit=50`)
    .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
    .then((data) => {
      if (data.rating == null) return box.replaceChildren(h("h2", {}, r.history), h("p", { class: "muted" }, r.none));
      const day = (ms) => new Date(ms).toLocaleDateString(lang === "it" ? "it-IT" : "en-GB", { day: "numeric", month: "short", timeZone: "UTC" });
      return box.replaceChildren(h("h2", {}, r.history),
        h("div", { class: "bar history-stats" },
          h("div", { class: "stat", dataset: { stat: "rating" } }, h("span", { class: "name" }, r.rating), h("span", { class: "value" }, data.rating)),
          h("div", { class: "stat", dataset: { stat: "rated-games" } }, h("span", { class: "name" }, r.games), h("span", { class: "value" }, data.games))),
        h("p", { class: "muted note", hidden: !data.provisional }, r.provisionalNote(data.provisional_games - data.games)),
        h("div", { class: "scroll-x" }, h("table", { class: "results ratings" },
          h("thead", {}, h("tr", {}, [w.me.date, w.place, r.change, r.rating, h("span", { class: "sr-only" }, w.game)].map((x) => h("th", { scope: "col" }, x)))),
          h("tbody", {}, data.history.map((c) => h("tr", { dataset: { game: c.game } },
            h("td", { class: "nowrap" }, day(c.rated_at)), h("td", { class: "num" }, c.place),
            h("td", { class: `num ${c.change >= 0 ? "up" : "down"}` }, signed(c.change)),
            h("td", { class: "num" }, `${c.before} → ${c.after}`),
            h("td", {}, h("a", { href: `/replay/${c.game}`, "data-link": true }, w.replay))))))));
    })
    .catch(() => box.replaceChildren(h("h2", {}, r.history), h("p", { role: "alert" }, r.unavailable)));
  return box;
}
