// The Colyseus peer for bench/load.py: a Colyseus 0.16 room of the game-like shape (bench/gamelike.py,
// bench/peers/gamelike.mjs) on Colyseus's own protocol. A table's first player creates the room through
// Colyseus's matchmaker (its HTTP route, then the room's WebSocket), the others join it by id, one table
// in 10 has a spectator; "start" answers "started" to the players; a "move" is answered to the mover
// (its summary with its positions and id) and its summary broadcast to everyone else in the room (room
// mates and spectator: one encoding, Colyseus's `broadcast(..., { except })`); a player's 48th move
// answers "game_over", the last player's "race_over" to the players. No rules, no log, no state
// synchronisation (the room has no schema state, so its patch timer is off).
//
// Colyseus's `colyseus` package only re-exports @colyseus/core and its transports (its peer dependencies
// include uWebSockets.js from GitHub, not npm): this uses @colyseus/core with @colyseus/ws-transport,
// the default transport, which stands on `ws` (with bufferutil here, as the ws peer).
//
// Run by load.py (--only colyseus-1k, --peers) and driven by colyseus-load.mjs;
// by hand: node bench/peers/colyseus-server.mjs PORT

import http from "node:http";
import { Room, Server } from "@colyseus/core";
import { WebSocketTransport } from "@colyseus/ws-transport";

/** a game is over after this many moves (the load client plays 48-move winning lines) */
const MOVES_TO_WIN = 48;

export class GameRoom extends Room {
  maxClients = 5; // 4 players and a spectator

  onCreate(options) {
    this.patchRate = null; // no schema state: nothing to patch
    this.code = String(options.code ?? "");
    this.seq = 0;
    this.players = new Map(); // sessionId → {client, id, name, moves, done}
    this.onMessage("start", () => {
      for (const member of this.players.values()) member.client.send("started", { code: this.code, v: 1 });
    });
    this.onMessage("move", (client, data) => {
      const member = this.players.get(client.sessionId);
      if (member === undefined) return; // a spectator's move
      member.moves += 1;
      this.seq += 1;
      const summary = {
        player: member.id, action: "move", score: 10 * member.moves, moves: member.moves,
        cards_left: 104 - 2 * member.moves, status: "playing", elapsed_ms: 0, seq: this.seq, v: 1,
      };
      client.send("moved", { ...summary, positions: data.positions, id: data.id ?? null });
      this.broadcast("moved", summary, { except: client });
      if (member.moves >= MOVES_TO_WIN) {
        member.done = true;
        client.send("game_over", { outcome: "won", game: `${this.roomId}-${member.id}`, v: 1 });
        if ([...this.players.values()].every((m) => m.done)) {
          for (const mate of this.players.values()) mate.client.send("race_over", { v: 1 });
        }
      }
    });
  }

  onJoin(client, options) {
    if (options?.spectator) return;
    this.players.set(client.sessionId, {
      client, id: `p${this.players.size + 1}`, name: String(options?.name), moves: 0, done: false,
    });
  }

  onLeave(client) {
    this.players.delete(client.sessionId);
  }
}

const httpServer = http.createServer((request, response) => {
  // Colyseus's matchmaker answers its own routes before this handler; the rest is ours
  if (request.method === "GET" && request.url === "/healthz") {
    response.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
  } else {
    response.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  }
});

const gameServer = new Server({ transport: new WebSocketTransport({ server: httpServer }), greet: false, gracefullyShutdown: false });
gameServer.define("game", GameRoom);
await gameServer.listen(Number(process.argv[2]), "127.0.0.1");
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));
