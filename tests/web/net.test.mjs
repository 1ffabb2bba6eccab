// The browser's WebSocket link (net.js): which closes it reconnects after, and which it does not
// (docs/protocol.md, "Connection closes"), against a stand-in WebSocket; and the URL each socket
// opens, with the room it is for (docs/protocol.md, "Routing by room"). And fetchStored, against a
// stand-in fetch: a game told over may be stored a moment later, a 404 is asked again a while.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Connection, fetchStored, wsUrl } from "../../client/halfmoon_web/static/js/net.js";

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

/** A stand-in fetch answering `statuses` in turn (the last one again once they run out); its calls. */
function answering(...statuses) {
  const calls = [];
  globalThis.fetch = async (url, init) => {
    calls.push([url, init]);
    return { status: statuses[Math.min(calls.length, statuses.length) - 1] };
  };
  return calls;
}

test("a game not stored yet (404) is asked for again until it is", async () => {
  const calls = answering(404, 404, 200);
  const init = { headers: { Authorization: "Bearer k" } };
  const response = await fetchStored("/api/games/g1", init, { every: 1, within: 50 });
  assert.equal(response.status, 200);
  assert.deepEqual(calls, [["/api/games/g1", init], ["/api/games/g1", init], ["/api/games/g1", init]]);
});

test("a game still not stored after the while is a 404: every 0.5 s for 5 s, then no more", async () => {
  const calls = answering(404);
  const waits = [];
  const realSetTimeout = globalThis.setTimeout;
  globalThis.setTimeout = (run, ms) => { waits.push(ms); return realSetTimeout(run, 0); };
  try {
    assert.equal((await fetchStored("/api/games/g2")).status, 404);
  } finally {
    globalThis.setTimeout = realSetTimeout;
  }
  assert.equal(calls.length, 11);
  assert.deepEqual(waits, Array(10).fill(500));
});

test("any other answer, or a failure, is the caller's at once", async () => {
  for (const status of [200, 403, 500, 503]) {
    const calls = answering(status);
    assert.equal((await fetchStored("/api/games/g3", undefined, { every: 1, within: 50 })).status, status);
    assert.equal(calls.length, 1, `${status}`);
  }
  let tries = 0;
  globalThis.fetch = async () => { tries += 1; throw new TypeError("Failed to fetch"); };
  await assert.rejects(fetchStored("/api/games/g4", undefined, { every: 1, within: 50 }), TypeError);
  assert.equal(tries, 1);
});
