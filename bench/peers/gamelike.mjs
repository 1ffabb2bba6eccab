// The game-like peer for bench/load.py: bench/gamelike.py's server, line for line, on Node.js and
// the `ws` package (with `bufferutil`, the stack Colyseus and most JavaScript game servers stand
// on). It speaks what load.py's game-like closed loop speaks: POST /api/rooms {code} → {room},
// GET /healthz, and on /ws the messages join, watch, start, move and leave; a move is answered to
// the mover (its summary with its positions and id) and its summary fanned out to the room mates
// and the spectators. No rules (every move is taken), no log, no clocks; each frame written at once.
//
// Run by load.py (--only node-gamelike-1k, --peers); by hand: node bench/peers/gamelike.mjs PORT

import http from "node:http";
import { WebSocketServer } from "ws";

/** a game is over after this many moves (the load client plays 48-move winning lines) */
const MOVES_TO_WIN = 48;

const rooms = new Map(); // room id → {id, code, players: Map(player id → member), spectators: Set, seq}
let nextId = 1;

function createRoom(request, response) {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      response.writeHead(400, { "Content-Type": "text/plain" }).end("bad json");
      return;
    }
    const room = { id: `G${String(nextId++).padStart(7, "0")}`, code: String(body.code ?? ""), players: new Map(), spectators: new Set(), seq: 0 };
    rooms.set(room.id, room);
    response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ room: room.id }));
  });
}

const server = http.createServer((request, response) => {
  if (request.method === "POST" && request.url === "/api/rooms") {
    createRoom(request, response);
  } else if (request.method === "GET" && request.url === "/healthz") {
    response.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
  } else {
    response.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  }
});

const wss = new WebSocketServer({ server, path: "/ws", perMessageDeflate: false, maxPayload: 1 << 20 });

wss.on("connection", (ws) => {
  let room = null;
  let me = null;
  ws.on("message", (raw, isBinary) => {
    if (isBinary) return;
    try {
      handle(JSON.parse(raw.toString("utf8")));
    } catch (error) {
      // what aiohttp does with a handler's exception: said on stderr, that connection closed
      console.error(`gamelike.mjs: ${error.stack}`);
      ws.close(1011, "server error");
    }
  });
  function handle(data) {
    const kind = data.type;
    if (kind === "move" && room !== null && me !== null) {
      const member = room.players.get(me);
      member.moves += 1;
      room.seq += 1;
      const summary = {
        player: me, action: "move", score: 10 * member.moves, moves: member.moves,
        cards_left: 104 - 2 * member.moves, status: "playing", elapsed_ms: 0,
        type: "moved", seq: room.seq, v: 1,
      };
      const others = JSON.stringify(summary);
      ws.send(JSON.stringify({ ...summary, positions: data.positions, id: data.id ?? null }));
      for (const [pid, mate] of room.players) {
        if (pid !== me && mate.ws.readyState === mate.ws.OPEN) mate.ws.send(others);
      }
      for (const spectator of room.spectators) {
        if (spectator.readyState === spectator.OPEN) spectator.send(others);
      }
      if (member.moves >= MOVES_TO_WIN) {
        member.done = true;
        ws.send(JSON.stringify({ type: "game_over", outcome: "won", game: `${room.id}-${me}`, v: 1 }));
        if ([...room.players.values()].every((m) => m.done)) {
          const raceOver = JSON.stringify({ type: "race_over", v: 1 });
          for (const mate of room.players.values()) mate.ws.send(raceOver);
        }
      }
    } else if (kind === "join") {
      room = rooms.get(data.room);
      me = `p${room.players.size + 1}`;
      room.players.set(me, { ws, name: String(data.name), moves: 0, done: false });
      ws.send(JSON.stringify({ type: "welcome", room: room.id, player: me, v: 1 }));
    } else if (kind === "watch") {
      room = rooms.get(data.room);
      room.spectators.add(ws);
      ws.send(JSON.stringify({ type: "welcome", room: room.id, v: 1 }));
    } else if (kind === "start" && room !== null) {
      const started = JSON.stringify({ type: "started", code: room.code, v: 1 });
      for (const mate of room.players.values()) mate.ws.send(started);
    } else if (kind === "leave" && room !== null) {
      if (me !== null) room.players.delete(me);
      else room.spectators.delete(ws);
      if (room.players.size === 0) rooms.delete(room.id);
      room = null;
      me = null;
    }
  }
  ws.on("close", () => {
    if (room !== null && me !== null) room.players.delete(me);
    if (room !== null && me === null) room.spectators.delete(ws);
  });
});

// An idle keep-alive connection is kept as long as aiohttp keeps one (75 s): with Node's default
// (5 s), a table's pooled connection closed between two races longer than that, and load.py's
// next POST /api/rooms on it met a reset ("a table failed") on a machine where games are slow.
server.keepAliveTimeout = 75_000;
server.headersTimeout = 76_000; // (kept above keepAliveTimeout)
server.listen(Number(process.argv[2]), "127.0.0.1");
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));
