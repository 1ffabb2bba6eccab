// The home page's «Gare in diretta» / "Live races": the public races in play (GET /api/live),
// the most watched featured first, each with a Watch link to the spectator view (/watch/{room}).
// Refreshed every REFRESH_MS while the page is shown, and at once when it is shown again.

import { formatTime, h } from "./dom.js";

export const REFRESH_MS = 15000;

/** One race's line: its players, how many race and have finished, its spectators, its time. */
export function raceFacts(race, w) {
  const parts = race.phase === "countdown"
    ? [w.live.starting]
    : [w.live.racing(race.racing), race.finished ? w.live.finished(race.finished) : null, w.live.running(formatTime(race.elapsed_ms))];
  return [...parts, w.live.spectators(race.spectators)].filter(Boolean).join(" · ");
}

function watchLink(race, w, primary) {
  const names = race.players.join(", ");
  return h("a", { href: `/watch/${race.room}`, "data-link": true, class: primary ? "button" : "button quiet",
    "aria-label": w.live.watchRace(names), dataset: { watch: race.room } }, w.watch);
}

/** Draw the list in `box` from an answer of GET /api/live (null: it could not be read). */
export function drawLive(box, answer, w) {
  // a redraw (every REFRESH_MS) replaces the links: the one the keyboard was on gets the focus back
  const active = document.activeElement;
  const focusedRoom = active && box.contains(active) && active.dataset ? active.dataset.watch || null : null;
  draw(box, answer, w);
  if (focusedRoom) {
    const again = box.querySelector(`[data-watch="${CSS.escape(focusedRoom)}"]`) || box.querySelector("[data-watch]");
    if (again) again.focus();
  }
}

function draw(box, answer, w) {
  if (!answer) {
    box.replaceChildren(h("p", { class: "muted" }, w.live.unavailable));
    return;
  }
  const races = answer.races || [];
  if (!races.length) {
    box.replaceChildren(h("p", { class: "muted live-none" }, w.live.none));
    return;
  }
  const [first, ...rest] = races;
  const featured = h("article", { class: "live-featured", dataset: { room: first.room }, "aria-labelledby": `live-${first.room}` },
    h("p", { class: "live-tag" }, w.live.featured),
    h("h3", { id: `live-${first.room}` }, first.players.join(" · ")),
    h("p", { class: "live-facts" }, raceFacts(first, w)),
    watchLink(first, w, true));
  const others = rest.length ? h("ul", { class: "live-list" }, rest.map((race) =>
    h("li", { dataset: { room: race.room } },
      h("span", { class: "live-names" }, race.players.join(" · ")),
      h("span", { class: "live-facts" }, raceFacts(race, w)),
      watchLink(race, w, false)))) : null;
  box.replaceChildren(...[featured, others].filter(Boolean));
}

/** Keep `box` showing the live races: now, every REFRESH_MS while the page is visible, and when
 * it becomes visible again. `words()`: the current language's words. Returns {close}. */
export function followLive(box, words, every = REFRESH_MS) {
  let timer = null;
  let closed = false;
  let loading = false;
  const load = async () => {
    if (loading) return;
    loading = true;
    clearTimeout(timer);
    let answer = null; // (null: the list could not be read)
    try {
      const response = await fetch("/api/live");
      if (response.ok) answer = await response.json();
    } catch {
      // no answer: said in the list's place, and tried again at the next turn
    }
    loading = false;
    if (closed) return;
    drawLive(box, answer, words());
    if (!document.hidden) timer = setTimeout(load, every); // hidden: the next load is when it is shown
  };
  const onVisible = () => { if (!document.hidden && !closed) load(); };
  document.addEventListener("visibilitychange", onVisible);
  load();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    },
  };
}
