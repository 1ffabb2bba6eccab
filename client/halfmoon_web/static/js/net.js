// The WebSocket connection to /ws (docs/protocol.md, version 1): sending, decoding, and
// reconnecting by itself with backoff; what to say on each new socket (hello) and the room's
// event version are the session's (session.js). And the REST read of a game just finished
// (fetchStored), which may not be stored yet.

export const PROTOCOL_VERSION = 1;
/** Close codes after which the socket stays closed (docs/protocol.md, "Connection closes"). */
const CLOSE_RESUMED_ELSEWHERE = 4001;
const CLOSE_NO_ROOM = 4002;
const CLOSE_BAD_ROOM = 4003;

/** The `/ws` URL of the page's own server (`loc`: `location`), for `room` (a room id, or null:
 * none) as `/ws?room=ID`, which a balancer routes on (docs/protocol.md, "Routing by room"). */
export function wsUrl(loc, room = null) {
  const base = `${loc.protocol === "https:" ? "wss" : "ws"}://${loc.host}/ws`;
  return room ? `${base}?room=${encodeURIComponent(room)}` : base;
}

/**
 * fetch(url, init) for a stored game, asked again while it answers 404: a game is told finished
 * (game_over, race_over) before it is stored, which follows within milliseconds — longer under
 * load, or while the database is down (docs/openapi.yaml, GET /api/games/{game}). Every `every`
 * ms for up to `within` ms; resolves to the last response (a 404 still: no such game). Any other
 * answer, or a failure, at once.
 */
export async function fetchStored(url, init, { every = 500, within = 5000 } = {}) {
  for (let waited = 0; ; waited += every) {
    const response = await fetch(url, init);
    if (response.status !== 404 || waited + every > within) return response;
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

export class Connection {
  /**
   * onMessage(msg) gets every server message; onState(state) gets "connecting" | "open" |
   * "reconnecting" | "taken" (the seat was resumed on another connection — another tab: no
   * reconnecting, or the two tabs would take it from each other for ever; open() again to take
   * it back) | "idle" (closed 4002: this socket was in no room for a while — a page whose entry
   * was refused, or whose room ended and was dropped; or 4003: the room in its URL was refused;
   * reconnecting would only be closed again, so it stays closed: open() again when there is
   * something to send); hello() returns the message to send when a socket opens (null: none).
   * `url`: the URL, or a function giving it for each socket (a reconnection names the room the
   * page learnt meanwhile).
   */
  constructor(url, { onMessage, onState, hello }) {
    this.url = url;
    this.onMessage = onMessage;
    this.onState = onState;
    this.hello = hello;
    this.ws = null;
    this.closed = false;
    this.attempt = 0;
    this.timer = null;
  }

  open() {
    this.onState(this.attempt === 0 ? "connecting" : "reconnecting");
    const ws = new WebSocket(typeof this.url === "function" ? this.url() : this.url);
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.onState("open");
      const first = this.hello();
      if (first) this.send(first);
    };
    ws.onmessage = (event) => {
      let msg;
      try {
        msg = JSON.parse(event.data);
      } catch {
        return;
      }
      this.onMessage(msg);
    };
    ws.onclose = (event) => {
      if (this.ws !== ws || this.closed) return;
      this.ws = null;
      if (event.code === CLOSE_RESUMED_ELSEWHERE) {
        this.onState("taken");
        return;
      }
      if (event.code === CLOSE_NO_ROOM || event.code === CLOSE_BAD_ROOM) {
        this.onState("idle");
        return;
      }
      this.attempt += 1;
      this.onState("reconnecting");
      const delay = Math.min(5000, 300 * 2 ** Math.min(this.attempt - 1, 5));
      this.timer = setTimeout(() => this.open(), delay);
    };
  }

  /** Send a message (adds "v"); false when not connected. */
  send(msg) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify({ v: PROTOCOL_VERSION, ...msg }));
    return true;
  }

  get isOpen() {
    return Boolean(this.ws && this.ws.readyState === WebSocket.OPEN);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close();
  }
}
