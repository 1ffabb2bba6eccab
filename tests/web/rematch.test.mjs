// Rematches and series in the browser's reducer (session.js): the messages of docs/protocol.md's
// worked example "A rematch and a series" fed to it — Ada's side — and the actions it allows.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import * as session from "../../client/halfmoon_web/static/js/session.js";

/** What Ada and Bob receive in the worked example, by who: [{who, msg}] in order. */
function example() {
  const doc = readFileSync(new URL("../../docs/protocol.md", import.meta.url), "utf8");
  const section = doc.slice(doc.indexOf("## A rematch and a series, worked through"));
  const block = section.slice(section.indexOf("```text\n") + 8, section.indexOf("```", section.indexOf("```text\n") + 8));
  return block.split("\n").filter((line) => line.includes(" ← ")).map((line) => {
    const [who, text] = line.split(" ← ");
    return { who, msg: JSON.parse(text) };
  });
}

const summary = (id, name) => ({ id, name, status: "waiting", score: 0, moves: 0, cards_left: 104, elapsed_ms: 0, connected: true });

function adaInTheLobby() {
  const welcome = { type: "welcome", v: 1, role: "player", you: "p1", token: "T".repeat(32), seq: 2, room: {
    room: "ROOMID", mode: "race", phase: "lobby", code: null, sealed: true, commitment: "c".repeat(64), host: "p1", now: 0,
    starts_at: null, started_at: null, time_limit_s: null, players: [summary("p1", "Ada"), summary("p2", "Bob")], spectators: 0,
    board: null, boards: null, can_undo: false, results: null } };
  return session.reduce(session.initialState({ kind: "race", room: "ROOMID" }), welcome, 0);
}

test("the host asks for a series with the start, only when none is under way", () => {
  const lobby = adaInTheLobby();
  assert.deepEqual(session.start(lobby, "10", "3").commands, [{ type: "start", time_limit_s: 600, series: 3 }]);
  assert.deepEqual(session.start(lobby, "10", "1").commands, [{ type: "start", time_limit_s: 600 }], "one race: no series");
  const during = { ...lobby, series: { races: 3, race: 2, over: false, table: [] } };
  assert.deepEqual(session.start(during, "10", "3").commands, [{ type: "start", time_limit_s: 600 }]);
  assert.ok(session.mayStartSeries({ ...during, series: { ...during.series, over: true } }));
});

test("Ada's side of the worked example: results with the table, the rematch, her accept", () => {
  const received = example();
  let s = adaInTheLobby();
  assert.deepEqual(session.rematch(s).commands, [], "no rematch before the results");
  const ada = received.filter((r) => r.who === "Ada").map((r) => r.msg);
  assert.deepEqual(ada.map((m) => m.type), ["countdown", "race_over", "rematch"]);
  s = session.reduce(s, ada[0], 0);
  s = session.reduce(s, ada[1], 0);
  assert.equal(s.phase, "finished");
  assert.equal(s.series.races, 2);
  assert.deepEqual(s.series.table.map((line) => [line.name, line.points]), [["Bob", 1], ["Ada", 0]]);
  assert.deepEqual(session.rematch(s).commands, [{ type: "rematch" }]);
  assert.deepEqual(session.rematch({ ...s, role: "spectator" }).commands, [], "spectators do not rematch");
  const finished = { ...s, code: "HM1-N-AAAAAAA", salt: "5".repeat(32), verified: true, gameOver: { outcome: "gave_up" } };
  s = session.reduce(finished, ada[2], 0);
  assert.equal(session.screen(s), "lobby");
  assert.deepEqual([s.round, s.host, s.code, s.results, s.gameOver, s.board, s.salt], [2, "p2", null, null, null, null, null]);
  assert.deepEqual(Object.keys(s.players), ["p2"]);
  assert.ok(session.mayAccept(s) && !session.isHost(s));
  assert.equal(session.toVerify(s), null, "the new deal is sealed: nothing to check yet");
  assert.deepEqual(session.accept(s).commands, [{ type: "accept" }]);
  const joined = received.find((r) => r.msg.type === "player_joined").msg;
  s = session.reduce(s, joined, 0);
  assert.ok(!session.mayAccept(s));
  assert.deepEqual(session.accept(s).commands, []);
  assert.deepEqual(Object.keys(s.players), ["p2", "p1"]);
  const last = received[received.length - 1].msg;
  assert.equal(last.type, "race_over");
  s = session.reduce({ ...s, phase: "running" }, last, 0);
  assert.equal(s.series.over, true);
  assert.equal(session.toVerify({ ...s, commitment: ada[2].commitment }).commitment, ada[2].commitment);
});

test("a reload between races gets the round, the series and who is seated from the snapshot", () => {
  const lobby = adaInTheLobby();
  const welcome = { type: "welcome", v: 1, role: "player", you: "p1", token: "T".repeat(32), seq: 12, room: {
    room: "ROOMID", mode: "race", phase: "lobby", code: null, sealed: true, commitment: "d".repeat(64), host: "p2", now: 0,
    starts_at: null, started_at: null, time_limit_s: null, players: [summary("p2", "Bob")], spectators: 0, board: null, boards: null,
    can_undo: false, results: null, round: 2, series: { races: 2, race: 2, over: false, table: [] }, seated: [summary("p1", "Ada")] } };
  const s = session.reduce(lobby, welcome, 0);
  assert.equal(s.round, 2);
  assert.ok(session.mayAccept(s));
  assert.equal(s.series.race, 2);
});
