// The quick-race queue («Gara veloce», docs/protocol.md "Quick races"): the waiting screen over its
// own WebSocket — how many are in and the countdown, a one-tap Leave, and, for a player alone long
// enough, the offer to keep waiting, race a ghost of a recent quick race or play solo. Once matched,
// the page goes to the race's room (/r/ROOM) and joins it as a race link does.

import { h } from "./dom.js";
import { errorText, t } from "./i18n.js";
import { playerKey } from "./me.js";
import { Connection } from "./net.js";

/** sessionStorage: the name the queue matched this tab under, for the room it matched ({room, name}). */
export const MATCHED_KEY = "halfmoon.matched";

/** The queue's state: {phase: "connecting"|"queued"|"matched"|"refused", count, startsAt (local ms|null), offer, ghost, room, name, error}. */
export const initialQueue = () => ({ phase: "connecting", count: 1, startsAt: null, offer: false, ghost: null, room: null, name: null, error: null });

/** The queue's state after a server message, at local time `now` (ms). */
export function queueReduce(state, msg, now) {
  switch (msg.type) {
    case "queued":
      return { ...state, phase: "queued", count: msg.count, startsAt: msg.starts_in_ms == null ? null : now + msg.starts_in_ms,
        offer: Boolean(msg.offer), ghost: msg.offer ? msg.ghost || null : null, error: null };
    case "matched":
      return { ...state, phase: "matched", room: msg.room, name: msg.name, count: msg.players, offer: false };
    case "unqueued":
      return { ...state, phase: "left" };
    case "error":
      return { ...state, phase: state.phase === "queued" ? "queued" : "refused", error: { code: msg.code, message: msg.message } };
    case "pong":
      return state;
    default:
      throw new Error(`unexpected message type ${JSON.stringify(msg.type)}`);
  }
}

/** Whole seconds until the group starts (null: not before a second player comes). */
export const secondsLeft = (state, now) => (state.startsAt == null ? null : Math.max(0, Math.ceil((state.startsAt - now) / 1000)));

/** The line under the count: the countdown, or that the player waits alone. */
export function queueLine(state, now, w) {
  if (state.phase === "matched") return w.quick.matched;
  if (state.phase === "connecting") return w.connecting;
  if (state.phase === "refused") return w.quick.notQueued; // (never "waiting": this tab waits for nothing)
  const seconds = secondsLeft(state, now);
  return seconds == null ? w.quick.alone : w.quick.countdown(seconds);
}

/** The screen at /quick (the name is known: the router asked for it). Returns {close(), relabel()}. */
export function openQueue(app) {
  let state = initialQueue();
  let ui = null;
  const words = () => t(app.lang());
  const name = app.settings.name;
  const queueMessage = () => ({ type: "queue", name, player_key: playerKey(localStorage) });
  const conn = new Connection(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`, {
    hello: queueMessage, // (a reconnection queues again: the place of a closed socket is gone)
    onState: (status) => app.setBanner(status === "reconnecting" ? words().reconnecting : null),
    onMessage: (msg) => {
      state = queueReduce(state, msg, Date.now());
      if (msg.type === "error") app.toast(errorText(app.lang(), msg.code, name, msg.message));
      if (state.phase === "matched") {
        sessionStorage.setItem(MATCHED_KEY, JSON.stringify({ room: state.room, name: state.name }));
        sessionStorage.removeItem("halfmoon.session");
        conn.close();
        app.navigate(`/r/${state.room}`);
        return;
      }
      update();
    },
  });
  conn.open();
  const ticker = setInterval(() => update(), 250);

  /** Out of the queue (one tap), then to `path`. */
  function leave(path) {
    if (state.phase === "queued") conn.send({ type: "unqueue" });
    conn.close();
    app.navigate(path);
  }

  function build() {
    const w = words();
    // the count is said when it changes (a live region); the countdown is a timer, not read out every second
    const count = h("div", { class: "queue-count", role: "status" }); // (a figure, not a paragraph: no heading look-alike)
    const status = h("p", { class: "queue-status", role: "timer" });
    const offer = h("div", { class: "queue-offer", role: "group", "aria-labelledby": "offer-title" });
    const leaveButton = h("button", { type: "button", id: "leave-queue", onclick: () => leave("/") }, w.quick.leave);
    app.main.replaceChildren(h("section", { class: "panel queue", dataset: { page: "quick" } },
      h("h1", {}, w.quickRace),
      h("p", { class: "muted" }, w.quick.why),
      count, status, offer,
      h("p", {}, leaveButton)));
    let said = null;
    let offered = null;
    ui = {
      update() {
        const now = Date.now();
        const counted = state.phase === "queued" ? w.quick.players(state.count) : "";
        if (counted !== said) count.textContent = said = counted; // (a live region: set when it changes only)
        const line = queueLine(state, now, w);
        // refused (already queued in another tab…): the reason stays on screen, not only in a passing toast
        status.textContent = state.phase === "refused" && state.error ? `${line} ${errorText(app.lang(), state.error.code, name, state.error.message)}` : line;
        leaveButton.textContent = state.phase === "refused" ? w.home : w.quick.leave; // (not queued: nothing to leave)
        offer.hidden = !state.offer;
        const shown = state.offer ? JSON.stringify(state.ghost) : null;
        if (shown === offered) return;
        offered = shown;
        const focusWasInOffer = offer.contains(document.activeElement);
        offer.replaceChildren(...(state.offer ? [
          h("h2", { id: "offer-title" }, w.quick.offerTitle),
          h("p", {}, w.quick.offerText(Boolean(state.ghost))),
          h("div", { class: "menu" },
            h("button", { type: "button", class: "primary", id: "keep-waiting", onclick: () => { conn.send(queueMessage()); } }, w.quick.keepWaiting),
            state.ghost ? h("button", { type: "button", id: "race-ghost",
              onclick: () => leave(`/play/${encodeURIComponent(state.ghost.code)}?ghost=${encodeURIComponent(state.ghost.game)}`) }, w.quick.ghost(state.ghost.name)) : null,
            h("button", { type: "button", id: "play-solo", onclick: () => leave("/play") }, w.quick.solo)),
        ] : []));
        // «Keep waiting» takes the offer (and the focused button) away: the focus goes to Leave, not to the page's top
        if (focusWasInOffer && !state.offer) leaveButton.focus();
      },
    };
    ui.update();
  }

  function update() {
    if (ui) ui.update();
  }

  build();
  return {
    close() {
      clearInterval(ticker);
      if (state.phase === "queued") conn.send({ type: "unqueue" });
      conn.close();
    },
    relabel() { build(); },
  };
}

/** The name the queue matched this tab under for `room` (null: none, a race joined by its link). */
export function matchedName(room) {
  try {
    const saved = JSON.parse(sessionStorage.getItem(MATCHED_KEY) || "null");
    return saved && saved.room === room ? saved.name : null;
  } catch {
    return null;
  }
}
