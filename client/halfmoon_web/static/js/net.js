// The WebSocket connection to /ws (docs/protocol.md, version 1): sending, the room's event
// version, and reconnecting by itself with backoff, resuming with the player's token.

export const PROTOCOL_VERSION = 1;

export class Connection {
  /**
   * onMessage(msg) gets every server message; onState(state) gets "connecting" | "open" |
   * "reconnecting"; hello() returns the message to send when a socket opens (null: none).
   */
  constructor(url, { onMessage, onState, hello }) {
    this.url = url;
    this.onMessage = onMessage;
    this.onState = onState;
    this.hello = hello;
    this.seq = 0;
    this.ws = null;
    this.closed = false;
    this.attempt = 0;
    this.nextId = 1;
    this.timer = null;
  }

  open() {
    this.onState(this.attempt === 0 ? "connecting" : "reconnecting");
    const ws = new WebSocket(this.url);
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
      if (typeof msg.seq === "number") {
        if (msg.type === "welcome") this.seq = msg.seq;
        else if (msg.seq <= this.seq) return; // already seen (a resume may repeat events)
        else this.seq = msg.seq;
      }
      this.onMessage(msg);
    };
    ws.onclose = () => {
      if (this.ws !== ws || this.closed) return;
      this.ws = null;
      this.attempt += 1;
      this.onState("reconnecting");
      const delay = Math.min(5000, 300 * 2 ** Math.min(this.attempt - 1, 5));
      this.timer = setTimeout(() => this.open(), delay);
    };
  }

  /** Send a message (adds "v"); returns the id given to it, or null when not connected. */
  send(msg, withId = false) {
    const out = { v: PROTOCOL_VERSION, ...msg };
    if (withId) out.id = this.nextId++;
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return null;
    this.ws.send(JSON.stringify(out));
    return withId ? out.id : 0;
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
