// The browser's game-mode rules (js/modes.js): one object per mode of the protocol
// (shared/halfmoon/protocol.py's Mode), agreeing with the server's on every rule both state
// (tests/vectors/modes.json; tests/server/core/test_modes.py checks the server's side), and the
// reducer (session.js) asking them, not the mode's name.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { MODES, modeRules } from "../../client/halfmoon_web/static/js/modes.js";
import * as session from "../../client/halfmoon_web/static/js/session.js";

const read = (path) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
const VECTORS = JSON.parse(read("tests/vectors/modes.json")).modes;
const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** The wire values of the protocol's Mode enum, read from its Python source. */
function protocolModes() {
  const source = read("shared/halfmoon/protocol.py");
  const body = source.slice(source.indexOf("class Mode(enum.StrEnum):")).split("\n\n\n")[0];
  return [...body.matchAll(/^ {4}[A-Z_]+ = "([a-z_]+)"$/gm)].map((m) => m[1]);
}

test("every mode of the protocol has one rules object, and no other mode has one", () => {
  const wire = protocolModes();
  assert.deepEqual(wire.toSorted(), ["daily", "race", "solo"]);
  assert.deepEqual(Object.keys(MODES).toSorted(), wire.toSorted());
  assert.deepEqual(Object.keys(VECTORS).toSorted(), wire.toSorted());
});

for (const [mode, shared] of Object.entries(VECTORS)) {
  test(`the browser states the ${mode} mode's rules as the shared vectors do`, () => {
    const rules = modeRules(mode);
    for (const name of Object.keys(rules)) {
      const key = Object.keys(shared).find((k) => camel(k) === name);
      assert.ok(key, `${mode}.${name} is a rule the vectors do not state`);
      assert.equal(rules[name], shared[key], `${mode}.${name}`);
    }
  });
}

test("no mode yet is no rules; a name that is no mode is a clear error; the rules are frozen", () => {
  assert.equal(modeRules(null), null);
  assert.equal(modeRules(undefined), null);
  assert.throws(() => modeRules("blitz"), /unknown game mode "blitz"/);
  assert.throws(() => modeRules("toString"), /unknown game mode "toString"/);
  assert.ok(Object.isFrozen(MODES) && Object.values(MODES).every(Object.isFrozen));
});

// -- what the reducer does in each mode (the rules it asks) -------------------------------------------

const player = (moves, status = "playing") => ({ id: "p1", name: "Ada", status, score: moves * 10, moves, cards_left: 104 - 2 * moves, elapsed_ms: 4000, connected: true });

function running(mode, me = player(0)) {
  const welcome = { type: "welcome", v: 1, role: "player", you: "p1", token: "T".repeat(32), seq: 1, room: {
    room: "ROOMID", mode, phase: "running", code: "HM1-N-AAAAAAA", host: "p1", now: 1000, starts_at: 1000, started_at: 1000,
    time_limit_s: null, players: [me], spectators: 0, board: null, boards: null, can_undo: false, results: null } };
  return session.reduce(session.initialState({ kind: mode === "race" ? "race" : mode, room: "ROOMID" }), welcome, 1000);
}

test("a solo player's own clock waits for the first move; a race's and a daily's run from the start", () => {
  const shown = Object.fromEntries(Object.keys(MODES).map((mode) => [mode, session.clockMs(running(mode), 61_000)]));
  assert.deepEqual(shown, { race: 60_000, solo: 4000, daily: 60_000 });
});

test("a place among racers is given in a race, not in a solo game or a daily attempt", () => {
  const places = Object.fromEntries(Object.keys(MODES).map((mode) => [mode, session.placing(running(mode, player(48, "won")))]));
  assert.deepEqual(places, { race: [1, 1], solo: null, daily: null });
});

test("a player of the room not in this race sits it out in a race (a rematch), in no other mode", () => {
  const out = Object.fromEntries(Object.keys(MODES).map((mode) => [mode, session.sittingOut({ ...running(mode), players: {} })]));
  assert.deepEqual(out, { race: true, solo: false, daily: false });
});
