// The load client for the Colyseus peer (colyseus-server.mjs), on Colyseus's own client (colyseus.js):
// bench/load.py's tables and loops, in Node.
//
// Players sit at tables of 4; each race is a new Colyseus room: the table's first player creates it
// through the matchmaker ({code}), the 3 others and (one table in 10) a spectator join it by id, the
// first sends "start", each plays the deal's 48-move line to its "game_over", and once "race_over"
// came all leave and the table creates its next room (in Colyseus a connection belongs to one room:
// each race connects anew, where load.py's players keep their WebSocket from race to race).
// Closed loop (no --rate): each player sends its next move once the last was answered (its own
// "moved"); open loop (--rate R): moves are due on a schedule, R a second in all, and a move's latency
// runs from when it was due, as in load.py.
//
// It prints one JSON line in the shape load.py's Client.run records (moves/s as the median of 1-second
// windows, the server's CPU per move from /proc/PID/stat, the answer's p50/p99/max, game_over's, RSS).
//
//   node bench/peers/colyseus-load.mjs --url http://127.0.0.1:PORT --pid SERVER_PID --deals DEALS.json
//        [--players 1000] [--warmup 3] [--seconds 10] [--rate MOVES_PER_S]
// DEALS.json: {"deal code": [[position, ...], ...]} (load.py writes the solver's winning lines there).

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { parseArgs } from "node:util";
import { Client } from "colyseus.js";

const TABLE = 4;
const SPECTATOR_EVERY = 10;

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    pid: { type: "string" },
    deals: { type: "string" },
    players: { type: "string", default: "1000" },
    warmup: { type: "string", default: "3" },
    seconds: { type: "string", default: "10" },
    rate: { type: "string" },
  },
});
for (const required of ["url", "pid", "deals"]) {
  if (args[required] === undefined) {
    console.error(`colyseus-load.mjs: --${required} is required (see the comment at the top)`);
    process.exit(2);
  }
}
const pid = Number(args.pid);
const players = Number(args.players);
const warmup = Number(args.warmup);
const seconds = Number(args.seconds);
const rate = args.rate === undefined ? null : Number(args.rate);
const deals = Object.entries(JSON.parse(fs.readFileSync(args.deals, "utf8")));

let clockTicks = 100;
try {
  clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
} catch {
  // no getconf: Linux's usual 100
}

/** user + system CPU seconds the process has used (all its threads), as benchlib.cpu_seconds */
function cpuSeconds(processId) {
  const fields = fs.readFileSync(`/proc/${processId}/stat`, "utf8").split(")").pop().trim().split(/\s+/);
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

function rssKib(processId) {
  const line = fs.readFileSync(`/proc/${processId}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return Number(line.split(/\s+/)[1]);
}

const now = () => performance.now() / 1000;
const sleep = (s) => new Promise((resolve) => setTimeout(resolve, Math.max(0, s * 1000)));

/** a seeded generator (mulberry32): each table's phases the same from run to run */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function percentiles(values) {
  if (values.length === 0) return { p50: null, p99: null, max: null, n: 0 };
  const ordered = Float64Array.from(values).sort();
  const ms = (v) => Math.round(v * 1000 * 100) / 100;
  return {
    p50: ms(ordered[Math.floor(ordered.length / 2)]),
    p99: ms(ordered[Math.min(ordered.length - 1, Math.floor(ordered.length * 0.99))]),
    max: ms(ordered[ordered.length - 1]),
    n: ordered.length,
  };
}

function median(values) {
  const ordered = [...values].sort((a, b) => a - b);
  const middle = Math.floor(ordered.length / 2);
  return ordered.length % 2 ? ordered[middle] : (ordered[middle - 1] + ordered[middle]) / 2;
}

const tally = { acks: 0, latencies: [], gameOver: [], games: 0, failedStores: 0, races: 0, errors: {}, measuring: false };

function countError(code) {
  tally.errors[code] = (tally.errors[code] ?? 0) + 1;
}

/** one player's seat in one room: routes the frames it waits for */
class Player {
  constructor(room) {
    this.room = room;
    this.waiting = new Map(); // message type → resolve
    this.due = new Map(); // move id → when it was due (open loop) or sent
    this.acked = null; // closed loop: resolves on the awaited move's answer
    room.onMessage("moved", (data) => {
      if (data.id === undefined || data.id === null) return; // a room mate's move
      const sent = this.due.get(data.id);
      if (sent === undefined) return;
      this.due.delete(data.id);
      if (tally.measuring) {
        tally.acks += 1;
        tally.latencies.push(now() - sent);
      }
      if (this.acked !== null) this.acked();
    });
    for (const kind of ["started", "game_over", "race_over"]) {
      room.onMessage(kind, (data) => {
        const resolve = this.waiting.get(kind);
        this.waiting.delete(kind);
        if (resolve !== undefined) resolve(data);
      });
    }
    room.onError((code, message) => countError(`room_error_${code}: ${message}`));
  }

  expect(kind) {
    return new Promise((resolve) => this.waiting.set(kind, resolve));
  }

  async play(line, interval, firstAt) {
    const gameOver = this.expect("game_over");
    let due = firstAt;
    let timedFrom = firstAt;
    for (let number = 0; number < line.length; number++) {
      if (interval !== null) {
        due = Math.max(due, now() - 5 * interval); // a stall does not turn into a burst
        const delay = due - now();
        if (delay > 0) await sleep(delay);
      } else {
        due = now();
      }
      const answered = interval === null ? new Promise((resolve) => (this.acked = resolve)) : null;
      // a timer may fire up to a millisecond before its time (libuv rounds): a move sent before it
      // was due is timed from when it was sent, not from a due time still to come
      timedFrom = Math.min(due, now());
      this.due.set(number + 1, timedFrom);
      this.room.send("move", { type: "move", v: 1, positions: line[number], id: number + 1 });
      if (number === line.length - 1) break;
      if (answered !== null) await answered;
      else due += interval;
    }
    this.acked = null;
    const over = await gameOver;
    if (tally.measuring) {
      tally.gameOver.push(now() - timedFrom);
      tally.games += 1;
      if (over.game === undefined || over.game === null) tally.failedStores += 1;
    }
  }
}

const client = new Client(args.url.replace(/^http/, "ws"));

/** at most 200 tables taking their seats at once (each seat the matchmaker's request, then the
 * WebSocket, one after the other), as load.py connects at most 200 at once: thousands of simultaneous
 * requests overflow the server's accept queue, and a table seated whole can start playing */
let settingUp = 0;
const queued = [];
async function seatTable(join) {
  if (settingUp >= 200) await new Promise((resolve) => queued.push(resolve));
  settingUp += 1;
  try {
    return await join();
  } finally {
    settingUp -= 1;
    queued.shift()?.();
  }
}
const tables = Math.max(1, Math.floor(players / TABLE));
const interval = rate ? (tables * TABLE) / rate : null;
let stopping = false;
let seatedTables = 0; // tables seated for their first race

async function table(number) {
  const random = seeded(number);
  let race = 0;
  while (!stopping) {
    const [code, line] = deals[(number + race) % deals.length];
    race += 1;
    const rooms = await seatTable(async () => {
      const first = await client.create("game", { code, name: `p${number}x0` });
      const seats = [first];
      for (let k = 1; k < TABLE; k++) seats.push(await client.joinById(first.roomId, { name: `p${number}x${k}` }));
      if (number % SPECTATOR_EVERY === 0) {
        const spectator = await client.joinById(first.roomId, { spectator: true });
        for (const kind of ["moved", "started", "game_over", "race_over"]) spectator.onMessage(kind, () => {});
        seats.push(spectator);
      }
      return seats;
    });
    const first = rooms[0];
    const members = rooms.slice(0, TABLE).map((room) => new Player(room));
    const started = members.map((p) => p.expect("started"));
    const overs = members.map((p) => p.expect("race_over"));
    first.send("start", { type: "start", v: 1 });
    await Promise.all(started);
    if (race === 1) seatedTables += 1;
    const at = now();
    await Promise.all(members.map((p) => p.play(line, interval, at + (interval ? random() * interval : 0))));
    await Promise.all(overs);
    if (tally.measuring) tally.races += 1;
    await Promise.all(rooms.map((room) => room.leave(true)));
  }
}

const rssBefore = rssKib(pid);
let failure = null;
const running = Array.from({ length: tables }, (_, t) =>
  table(t).catch((error) => {
    countError(String(error?.code ?? error?.name ?? "error"));
    failure ??= error;
  }),
);
void running;
// as load.py connects every player before its warm-up: the first seats taken, then the warm-up
while (seatedTables < tables && failure === null) await sleep(0.05);
const rssConnected = rssKib(pid);
await sleep(warmup);
tally.measuring = true;
const cpuBefore = cpuSeconds(pid);
const ownBefore = process.cpuUsage();
const windows = [];
let last = 0;
const began = now();
while (now() - began < seconds - 0.01 && failure === null) {
  await sleep(Math.min(1.0, Math.max(0, seconds - (now() - began))));
  windows.push(tally.acks - last);
  last = tally.acks;
}
const elapsed = now() - began;
const cpuUsed = cpuSeconds(pid) - cpuBefore;
const own = process.cpuUsage(ownBefore);
tally.measuring = false;
stopping = true;
const rssEnd = rssKib(pid);
if (failure !== null) {
  console.error(`colyseus-load.mjs: a table failed: ${failure?.stack ?? failure}`);
  process.exit(1);
}
const moves = Math.max(1, tally.acks);
const seated = tables * TABLE;
const round = (v, digits) => Math.round(v * 10 ** digits) / 10 ** digits;
console.log(
  JSON.stringify({
    players: seated,
    spectators: Math.ceil(tables / SPECTATOR_EVERY),
    seconds: round(elapsed, 2),
    moves_per_s_median: median(windows.length > 1 ? windows.slice(1) : windows),
    moves_per_s_mean: round(tally.acks / elapsed, 1),
    server_cpu_us_per_move: round((1e6 * cpuUsed) / moves, 1),
    server_cpu_share: round(cpuUsed / elapsed, 3),
    client_cpu_share: round((own.user + own.system) / 1e6 / elapsed, 3),
    ack_ms: percentiles(tally.latencies),
    game_over_ms: percentiles(tally.gameOver),
    games: tally.games,
    games_per_s: round(tally.games / elapsed, 1),
    failed_stores: tally.failedStores,
    races: tally.races,
    errors: tally.errors,
    rss_mib_start: round(rssBefore / 1024, 1),
    rss_mib_connected: round(rssConnected / 1024, 1),
    rss_mib_end: round(rssEnd / 1024, 1),
    rss_kib_per_player: round((rssEnd - rssBefore) / seated, 1),
    pauses: {},
  }),
);
process.exit(0);
