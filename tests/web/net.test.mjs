// The browser's WebSocket link (net.js): which closes it reconnects after, and which it does not
// (docs/protocol.md, "Connection closes"), against a stand-in WebSocket; and the URL each socket
// opens, with the room it is for (docs/protocol.md, "Routing by room").

import assert from "node:assert/strict";
import { test } from "node:test";

import { Connection, wsUrl } from "../../client/halfmoon_web/static/js/net.js";

class FakeSocket {
  static OPEN = 1;
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    FakeSocket.made.push(this);
  }
  send(data) { this.sent.push(JSON.parse(data)); }
  close() {}
  opened() { this.readyState = FakeSocket.OPEN; this.onopen(); }
}

function link() {
  FakeSocket.made = [];
  globalThis.WebSocket = FakeSocket;
  const states = [];
  const conn = new Connection("ws://x/ws", { onMessage: () => {}, onState: (s) => states.push(s), hello: () => ({ type: "watch", room: "K7WQ2M" }) });
  conn.open();
  FakeSocket.made[0].opened();
  return { conn, states, socket: FakeSocket.made[0] };
}

test("a dropped socket reconnects with backoff; the hello goes out on open", () => {
  const { conn, states, socket } = link();
  assert.deepEqual(socket.sent, [{ v: 1, type: "watch", room: "K7WQ2M" }]);
  socket.onclose({ code: 1006 });
  assert.deepEqual(states, ["connecting", "open", "reconnecting"]);
  assert.notEqual(conn.timer, null, "a reconnection is due");
  conn.close();
});

for (const [code, state] of [[4001, "taken"], [4002, "idle"], [4003, "idle"]]) {
  test(`a close with ${code} is final: no reconnecting, state ${state}`, () => {
    const { conn, states, socket } = link();
    socket.onclose({ code });
    assert.deepEqual(states, ["connecting", "open", state]);
    assert.equal(conn.timer, null, "no reconnection is scheduled");
    assert.equal(FakeSocket.made.length, 1);
    assert.equal(conn.isOpen, false);
  });
}

test("the /ws URL names the room it is for, with the page's scheme and host", () => {
  assert.equal(wsUrl({ protocol: "https:", host: "hm.example" }, "K7WQ2M"), "wss://hm.example/ws?room=K7WQ2M");
  assert.equal(wsUrl({ protocol: "http:", host: "127.0.0.1:8080" }, null), "ws://127.0.0.1:8080/ws");
  assert.equal(wsUrl({ protocol: "http:", host: "h" }, "A&b=c"), "ws://h/ws?room=A%26b%3Dc");
});

test("a URL given as a function is asked again for each socket: a reconnection names the room learnt meanwhile", () => {
  FakeSocket.made = [];
  globalThis.WebSocket = FakeSocket;
  let room = null;
  const conn = new Connection(() => wsUrl({ protocol: "http:", host: "h" }, room), { onMessage: () => {}, onState: () => {}, hello: () => ({ type: "solo", name: "Ada" }) });
  conn.open();
  FakeSocket.made[0].opened();
  room = "K7WQ2M"; // the welcome named the new game's room
  FakeSocket.made[0].onclose({ code: 1006 });
  clearTimeout(conn.timer);
  conn.open(); // (the reconnection, without waiting for its backoff)
  assert.deepEqual(FakeSocket.made.map((socket) => socket.url), ["ws://h/ws", "ws://h/ws?room=K7WQ2M"]);
  conn.close();
});
