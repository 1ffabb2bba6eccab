// The browser's live session (session.js) driven by sessions recorded from a real server
// (tests/vectors/sessions.json, made by tests/server/build_session_vectors.py): every page's
// messages fed to the reducer, its hello and its commands compared with what was really sent,
// and its state compared with the facts the recording expects — the same facts the terminal
// client's Session is checked against (tests/client/test_session_vectors.py).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { parsePosition } from "../../client/halfmoon_web/static/js/cards.js";
import { checkSeal, dealFromCode, sealCommitment, sealedCode } from "../../client/halfmoon_web/static/js/codes.js";
import * as session from "../../client/halfmoon_web/static/js/session.js";
import { legalMoves } from "../../client/halfmoon_web/static/js/taps.js";

const VECTORS = JSON.parse(readFileSync(new URL("../vectors/sessions.json", import.meta.url), "utf8"));
const SCENARIOS = VECTORS.scenarios;

const pick = (object, keys) => Object.fromEntries(keys.map((key) => [key, object[key]]));
const withoutV = ({ v, ...message }) => message;

/** The facts a recording's "check" names, read from a reducer state. */
function facts(state) {
  return {
    role: state.role, you: state.you, phase: state.phase, mode: state.mode, code: state.code, host: state.host,
    seq: state.seq, spectators: state.spectators, offset_ms: state.offset, token: state.token,
    failed: state.failed ? state.failed.code : null,
    players: Object.fromEntries(session.playerList(state).map((p) => [p.id, pick(p, ["name", "status", "score", "moves", "cards_left", "connected"])])),
    board: state.board, boards: state.boards,
    outcome: state.gameOver ? pick(state.gameOver, ["outcome", "score", "moves"]) : null,
    results: state.results ? state.results.map((r) => pick(r, ["rank", "player", "name", "outcome", "score", "moves"])) : null,
  };
}

/** A move as the player makes it: tapping its cards on the board shown (a refused move, which taps never make, is sent as is). */
function sendMove(state, positions) {
  const move = positions.map(parsePosition);
  const sorted = [...move].sort((a, b) => a - b).join();
  if (!legalMoves(session.shownBoard(state)).some((m) => m.join() === sorted)) return session.playMove(state, move);
  let out = { state, commands: [] };
  for (const position of move) {
    const step = session.onTap(out.state, position);
    assert.ok(step.tap, `the tap on ${position} did something`);
    out = { state: step.state, commands: [...out.commands, ...step.commands] };
  }
  return out;
}

/** What the page does to send `command`: the reducer's action must return exactly it. */
function act(state, command) {
  switch (command.type) {
    case "move": {
      const out = sendMove(state, command.positions);
      // drawn at once: the cards go, a face-down card where a pile still holds some, score and moves up
      const before = session.shownStats(state);
      const after = session.shownStats(out.state);
      assert.equal(after.moves, before.moves + 1);
      assert.equal(after.score, before.score + (command.positions.length === 2 ? 10 : 15));
      const shown = session.shownBoard(out.state);
      for (const p of command.positions.map(parsePosition)) assert.equal(shown.tops[p], null);
      assert.ok(out.state.pending.some((p) => p.id === command.id));
      return out;
    }
    case "undo": return session.undo(state);
    case "give_up": return session.giveUp(state);
    case "start": return session.start(state, command.time_limit_s / 60);
    case "leave": return session.leave(state);
    case "ping": return { state, commands: [command] }; // the browser never pings; the recording does
    default: throw new Error(`no action sends ${command.type}`);
  }
}

/** Play one recorded page through the reducer; returns the states after each entry. */
function playPage(page, label) {
  let state = session.initialState(page.intent, page.seat);
  let helloDue = true;
  const states = [];
  page.timeline.forEach((entry, i) => {
    const where = `${label}, entry ${i}`;
    if (entry.send) {
      const command = withoutV(entry.send);
      // a join carries the page's fresh contribution: the recording's stands for the one it draws
      if (helloDue) assert.deepEqual(session.hello(state, page.name, null, command.entropy ?? null), command, `${where}: the hello`);
      else {
        const out = act(state, command);
        assert.deepEqual(out.commands, [command], `${where}: the command`);
        state = out.state;
      }
      helloDue = false;
    } else if (entry.recv) {
      const before = state;
      state = session.reduce(state, entry.recv, entry.at);
      const { id } = entry.recv;
      if (id != null && before.pending.some((p) => p.id === id)) {
        assert.ok(!state.pending.some((p) => p.id === id), `${where}: move ${id} answered`);
      }
    } else if (entry.drop) {
      state = session.disconnected(state);
      helloDue = true;
    } else {
      const got = facts(state);
      for (const [key, value] of Object.entries(entry.check)) assert.deepEqual(got[key], value, `${where}: ${key}`);
      assert.deepEqual(state.pending, [], `${where}: every move answered`);
    }
    states.push(state);
  });
  return states;
}

for (const [name, scenario] of Object.entries(SCENARIOS)) {
  for (const [label, page] of Object.entries(scenario.pages)) {
    test(`recorded ${name}, ${label}: the reducer's hello, commands and state match the recording`, () => {
      assert.ok(page.timeline.some((entry) => entry.check), "the page checks something");
      playPage(page, `${name}, ${label}`);
    });
  }
}

for (const name of ["sealed", "daily"]) {
  for (const [label, page] of Object.entries(SCENARIOS[name].pages)) {
    test(`recorded ${name}, ${label}: once the deal is out, the reveal opens the commitment the page was given`, async () => {
      const states = playPage(page, `${name}, ${label}`);
      const last = states[states.length - 1];
      const check = session.toVerify(last);
      if (!last.code) {
        assert.equal(check, null, "nothing to check before the deal is out");
        return;
      }
      assert.ok(check, "a revealed deal to check");
      if (check.seed) {
        assert.equal(await checkSeal(check), true);
        assert.ok(check.opening, "the opening board the page was shown");
        assert.ok(session.sameBoard(session.openingOf(await dealFromCode(check.code)), check.opening));
        const mine = page.timeline.find((entry) => entry.send && entry.send.entropy).send.entropy;
        assert.ok(check.contributions.includes(mine), "the page's own contribution is in");
      } else {
        const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(check.text));
        assert.equal(Buffer.from(digest).toString("hex"), check.commitment);
      }
    });
  }
}

/** The state just after the first entry that `when` accepts, and that entry's index. */
function stateAt(page, when) {
  const states = playPage(page, "");
  const i = page.timeline.findIndex(when);
  return [states[i], i];
}

test("a refused move is taken back and the board is drawn as the server knows it", () => {
  const page = SCENARIOS.solo.pages.Ada;
  const i = page.timeline.findIndex((e) => e.recv && e.recv.type === "error");
  const states = playPage(page, "");
  const [sent, refused] = [states[i - 1], states[i]];
  assert.equal(sent.pending.length, 1);
  assert.deepEqual(session.refusal(sent, page.timeline[i].recv), "move");
  assert.deepEqual(refused.pending, []);
  assert.deepEqual(session.shownBoard(refused), sent.board);
  assert.deepEqual(session.shownStats(refused), session.shownStats(states[i - 2]));
});

test("a move in flight when the socket drops is drawn again as the server knows it", () => {
  const page = SCENARIOS.solo.pages.Ada;
  const i = page.timeline.findIndex((e) => e.send && e.send.type === "move");
  const states = playPage(page, "");
  const flying = states[i];
  assert.equal(flying.pending.length, 1);
  const dropped = session.disconnected(flying);
  assert.deepEqual([dropped.pending, dropped.selection], [[], []]);
  assert.deepEqual(session.shownBoard(dropped), flying.board);
  assert.equal(session.disconnected(dropped), dropped, "nothing in flight: the same state");
  assert.deepEqual(session.hello(dropped, "Ada"), { type: "resume", room: "ROOM-1", token: "TOKEN-1", since: 2 });
  const answered = session.reduce(dropped, page.timeline[i + 1].recv, page.timeline[i + 1].at); // the resume's catch-up
  assert.deepEqual(answered.board, states[i + 1].board);
  assert.deepEqual(session.shownStats(answered), session.shownStats(states[i + 1]));
  assert.equal(session.unsent(flying, { type: "move", id: 1 }).pending.length, 0, "a move that could not be sent is taken back");
});

test("an event already applied changes nothing; an unknown message type throws", () => {
  const page = SCENARIOS.race.pages.Spectator;
  const states = playPage(page, "");
  const i = page.timeline.findIndex((e) => e.recv && e.recv.reveals);
  const last = states[states.length - 1];
  assert.equal(session.reduce(last, page.timeline[i].recv, 0), last);
  assert.throws(() => session.reduce(last, { type: "surprise", v: 1 }, 0), /unexpected message type "surprise"/);
});

test("the screen follows the room: connecting, lobby, game, watch, failed", () => {
  const race = SCENARIOS.race.pages;
  assert.equal(session.screen(session.initialState(race.Ada.intent)), "connecting");
  assert.equal(session.screen(stateAt(race.Ada, (e) => e.recv && e.recv.type === "welcome")[0]), "lobby");
  assert.equal(session.screen(stateAt(race.Ada, (e) => e.recv && e.recv.type === "started")[0]), "game");
  assert.equal(session.screen(stateAt(race.Spectator, (e) => e.recv && e.recv.type === "started")[0]), "watch");
  assert.equal(session.screen(stateAt(race["Ada again"], (e) => e.recv)[0]), "failed");
  assert.equal(session.refusal(session.initialState(race.Ada.intent), { type: "error", code: "name_taken" }), "entry");
});

test("the lobby: the host starts, a late joiner is made a spectator and told so", () => {
  const race = SCENARIOS.race.pages;
  const [lobby] = stateAt(race.Ada, (e) => e.recv && e.recv.type === "spectators");
  assert.ok(session.isHost(lobby));
  assert.ok(!session.isHost(stateAt(race.Bob, (e) => e.recv && e.recv.type === "welcome")[0]));
  assert.deepEqual(session.start(lobby, "10").commands, [{ type: "start", time_limit_s: 600 }]);
  assert.deepEqual(session.start(lobby, "0.1").commands, [{ type: "start" }], "under 30 s: the server's default");
  assert.deepEqual(session.leave(lobby).commands, [{ type: "leave" }]);
  assert.equal(session.leave(lobby).state.seat, null);
  const [dan] = stateAt(race.Dan, (e) => e.recv);
  assert.equal(dan.notice, "becameSpectator");
  assert.equal(dan.seat, null);
  assert.equal(stateAt(race.Spectator, (e) => e.recv)[0].notice, null, "watching on purpose: nothing to say");
});

test("the clock: the countdown and the running time on the server's clock", () => {
  const page = SCENARIOS.race.pages.Ada;
  const [countdown, i] = stateAt(page, (e) => e.recv && e.recv.type === "countdown");
  const at = page.timeline[i].at;
  assert.equal(countdown.offset, 1500);
  assert.equal(session.countdownS(countdown, at), 1);
  assert.equal(session.countdownS(countdown, at + 50), 0);
  assert.equal(session.clockMs(countdown, at), 0);
  const [started, j] = stateAt(page, (e) => e.recv && e.recv.type === "started");
  assert.equal(session.clockMs(started, page.timeline[j].at + 4000), 4000);
  const states = playPage(page, "");
  const end = states[states.length - 1];
  assert.equal(session.clockMs(end, 0), end.gameOver.time_ms, "over: the server's time");
});

test("the race's end: placing from the results, and nothing more to play", () => {
  const race = SCENARIOS.race.pages;
  const last = (page) => playPage(page, "").at(-1);
  const ada = last(race.Ada);
  const bob = last(race["Bob after a reload"]);
  assert.deepEqual(session.placing(ada), [1, 2]);
  assert.deepEqual(session.placing(bob), [2, 2]);
  assert.ok(!session.canPlay(ada) && !session.mayUndo(ada));
  assert.deepEqual(session.onTap(bob, 0).commands, []);
  assert.deepEqual(session.leave(ada).commands, [], "a finished game is not left on the server");
  assert.ok(!session.anyHidden(last(race.Spectator)), "once nobody plays every card is shown");
});

test("the spectator sees cards face down until every racer still playing has seen them", () => {
  const page = SCENARIOS.race.pages.Spectator;
  const [hidden] = stateAt(page, (e) => e.recv && e.recv.type === "moved");
  assert.ok(session.anyHidden(hidden));
  assert.ok(!session.anyHidden(stateAt(page, (e) => e.recv && e.recv.reveals)[0]), "Bob's same move reveals them");
});

test("a race page's resume carries a fresh contribution: in a sealed race's lobby it replaces the one a reloaded page forgot", () => {
  const seat = { room: "ROOM-1", token: "TOKEN-2" };
  const race = session.initialState({ kind: "race", room: "ROOM-1" }, seat);
  assert.deepEqual(session.hello(race, "Bob", null, "a1".repeat(16)), { type: "resume", room: "ROOM-1", token: "TOKEN-2", entropy: "a1".repeat(16) });
  const daily = session.initialState({ kind: "daily" }, seat);
  assert.deepEqual(session.hello(daily, "Bob", null, "a1".repeat(16)), { type: "resume", room: "ROOM-1", token: "TOKEN-2" }, "no sealed deal to contribute to");
});

test("a reloaded page resumes its seat without since; a seat the server forgot joins afresh", () => {
  const page = SCENARIOS.race.pages["Bob after a reload"];
  const fresh = session.initialState(page.intent, page.seat);
  assert.deepEqual(session.hello(fresh, "Bob"), { type: "resume", room: "ROOM-1", token: "TOKEN-2" });
  const forgot = { type: "error", v: 1, code: "bad_token", message: "unknown token" };
  assert.equal(session.refusal(fresh, forgot), "seat");
  const afresh = session.reduce(fresh, forgot, 0);
  assert.equal(afresh.seat, null);
  assert.equal(afresh.failed, null);
  assert.deepEqual(session.hello(afresh, "Bob"), { type: "join", room: "ROOM-1", name: "Bob" });
});

test("taps: a cancelled pair sends nothing; undo waits for moves in flight; Escape clears", () => {
  const page = SCENARIOS.solo.pages.Ada;
  const [ready] = stateAt(page, (e) => e.check);
  const first = session.onTap(ready, parsePosition("1")); // 10H
  assert.deepEqual([first.tap.event, first.commands, first.state.selection], ["selected", [], [0]]);
  assert.deepEqual(session.clearSelection(first.state).selection, []);
  const cancelled = session.onTap(first.state, parsePosition("2")); // 3S: not 11
  assert.deepEqual([cancelled.tap.event, cancelled.tap.reason, cancelled.commands], ["cancelled", "sum", []]);
  assert.equal(session.onTap(ready, parsePosition("R4")).tap.event, "selected");
  const sent = session.onTap(first.state, parsePosition("R4"));
  assert.deepEqual(sent.commands, [{ type: "move", positions: ["1", "R4"], id: 1 }]);
  assert.deepEqual(session.undo(sent.state).commands, [], "undo waits for the answer");
  assert.equal(session.onTap(sent.state, parsePosition("1")).tap, null, "a face-down card does nothing");
  assert.ok(session.dimmed(first.state).has(parsePosition("2")));
  assert.ok(!session.dimmed(first.state).has(parsePosition("R4")));
});

/** A recorded page's state just after its `countdown` (Ada, the host of the race, with Bob). */
function atCountdown() {
  const page = SCENARIOS.race.pages.Ada;
  const [state, i] = stateAt(page, (e) => e.recv && e.recv.type === "countdown");
  return [state, page.timeline[i].at];
}

test("a player who leaves during the countdown is off the list, as in the lobby (the server removes them)", () => {
  const [countdown] = atCountdown();
  assert.equal(countdown.phase, "countdown");
  const bob = { ...countdown.players.p2, status: "left", connected: false };
  const left = session.reduce(countdown, { type: "player_left", v: 1, seq: countdown.seq + 1, player: bob, host: "p1" }, 0);
  assert.deepEqual(Object.keys(left.players), ["p1"]);
  assert.deepEqual(session.playerList(left).map((p) => p.id), ["p1"]);
});

test("leaving during the countdown tells the server, which takes the player off the list (else they race disconnected)", () => {
  const [countdown] = atCountdown();
  const out = session.leave(countdown);
  assert.deepEqual(out.commands, [{ type: "leave" }]);
  assert.equal(out.state.seat, null);
});

test("a host field present and null leaves the room without a host; an absent one keeps it", () => {
  const [lobby] = stateAt(SCENARIOS.race.pages.Bob, (e) => e.recv && e.recv.type === "welcome");
  assert.equal(lobby.host, "p1");
  const ada = { ...lobby.players.p1, status: "left", connected: false };
  const gone = session.reduce(lobby, { type: "player_left", v: 1, seq: lobby.seq + 1, player: ada, host: null }, 0);
  assert.equal(gone.host, null);
  const away = session.reduce(lobby, { type: "progress", v: 1, seq: lobby.seq + 1, player: { ...lobby.players.p1, connected: false }, host: null }, 0);
  assert.equal(away.host, null);
  const joined = session.reduce(gone, { type: "player_joined", v: 1, seq: gone.seq + 1, player: { id: "p9", name: "Zed", status: "waiting" }, host: null }, 0);
  assert.equal(joined.host, null);
  const kept = session.reduce(lobby, { type: "progress", v: 1, seq: lobby.seq + 1, player: { ...lobby.players.p2, connected: false } }, 0);
  assert.equal(kept.host, "p1", "no host field (after the start): the host stays");
  const snapshot = session.reduce(lobby, { type: "welcome", v: 1, seq: lobby.seq + 1, role: "spectator", you: null, room: { ...lobbyRoom(), host: null } }, 0);
  assert.equal(snapshot.host, null);
});

/** The lobby snapshot Bob's welcome carried. */
const lobbyRoom = () => SCENARIOS.race.pages.Bob.timeline.find((e) => e.recv && e.recv.type === "welcome").recv.room;

test("a snapshot or countdown without a numeric now keeps the clock offset it had", () => {
  const [countdown, at] = atCountdown();
  assert.equal(countdown.offset, 1500);
  const before = { ...countdown, seq: countdown.seq - 1 }; // so the same countdown is applied again
  const withNow = (message, now) => {
    const { now: _, ...rest } = message;
    return now === undefined ? rest : { ...rest, now };
  };
  const tick = { type: "countdown", v: 1, seq: countdown.seq, starts_at: countdown.startsAt, time_limit_s: 600 };
  const welcome = { type: "welcome", v: 1, seq: countdown.seq, role: "player", you: "p1", token: "TOKEN-1" };
  for (const bad of [undefined, null, "1796000000000"]) {
    const counted = session.reduce(before, withNow(tick, bad), at);
    assert.equal(counted.offset, 1500, `countdown with now ${JSON.stringify(bad)}`);
    assert.equal(session.countdownS(counted, at), 1);
    const welcomed = session.reduce(before, { ...welcome, room: withNow(lobbyRoom(), bad) }, at);
    assert.equal(welcomed.offset, 1500, `snapshot with now ${JSON.stringify(bad)}`);
  }
});

test("a passing refusal (a failure, a full or restarting server, a log that is down) may be tried again", () => {
  for (const code of ["internal", "server_full", "rate_limited", "unavailable", "shutting_down"]) assert.ok(session.passing(code), code);
  for (const code of ["no_such_room", "bad_code", "bad_name", "name_taken", "room_full", "private_room", "bad_token"]) assert.ok(!session.passing(code), code);
});

test("welcome says whether the attempt is ranked; a solo clock runs from the first move and stands still while stalled", () => {
  const room = { room: "R", mode: "solo", phase: "running", code: "HM1-N-AAAAAAB", host: "p1", now: 1000, started_at: 0,
    players: [{ id: "p1", name: "Ada", status: "playing", score: 0, moves: 0, cards_left: 104, elapsed_ms: 0 }],
    board: { tops: Array(20).fill(null), counts: Array(20).fill(0) } };
  let s = session.reduce(session.initialState({ kind: "daily" }), { type: "welcome", role: "player", you: "p1", token: "t", ranked: false, room: { ...room, mode: "daily" }, seq: 1 }, 1000);
  assert.equal(s.ranked, false);
  s = session.reduce(session.initialState({ kind: "solo" }), { type: "welcome", role: "player", you: "p1", token: "t", ranked: true, room, seq: 1 }, 1000);
  assert.equal(s.ranked, true);
  assert.equal(session.clockMs(s, 60_000), 0, "nothing counts before the first move");
  const moved = (seq, status, elapsed) => ({ type: "moved", seq, player: "p1", action: "move", positions: [], score: 10, moves: 1, cards_left: 102, status, elapsed_ms: elapsed });
  s = session.reduce(s, moved(2, "playing", 0), 60_000);
  assert.equal(session.clockMs(s, 63_000), 3000);
  s = session.reduce(s, moved(3, "stalled", 5000), 65_000);
  assert.equal(session.clockMs(s, 99_000), 5000, "standing still while stalled");
});

test("a sealed race: the commitment from the start, the code and salt at the end, then one check", () => {
  let s = session.initialState({ kind: "race", room: "K7WQ2M" }, null);
  const room = {
    room: "K7WQ2M", mode: "race", phase: "lobby", code: null, sealed: true, commitment: "ab".repeat(32),
    host: "p1", now: 1000, players: [{ id: "p1", name: "Ada", status: "waiting" }], spectators: 0,
  };
  s = session.reduce(s, { type: "welcome", role: "player", you: "p1", token: "t", room, seq: 1 }, 1000);
  assert.equal(s.code, null);
  assert.equal(s.commitment, "ab".repeat(32));
  assert.equal(session.toVerify(s), null, "nothing to check before the code is out");
  s = session.reduce(s, { type: "game_over", seq: 2, outcome: "gave_up", score: 0, moves: 0, time_ms: 1, code: null, game: "g", ranked: true }, 1000);
  assert.equal(session.toVerify(s), null, "others still play: no code yet");
  s = session.reduce(s, { type: "race_over", seq: 3, results: [], code: "HM1-N-AAAAAAA", salt: "0".repeat(32), sealed: true }, 1000);
  assert.deepEqual(session.toVerify(s), { text: `HM1-N-AAAAAAA:${"0".repeat(32)}`, commitment: "ab".repeat(32) });
  s = session.verified(s, false);
  assert.equal(s.verified, false);
  assert.equal(session.toVerify(s), null, "checked once");
});

test("a sealed race's reveal: the seed opens the commitment, gives the code with the contributions, the code deals the opening board", async () => {
  const seed = "5e".repeat(32);
  const contributions = ["b2".repeat(16), "a1".repeat(16)];
  const code = (await sealedCode(seed, contributions)).canonical;
  const opening = session.openingOf(await dealFromCode(code));
  let s = session.initialState({ kind: "race", room: "K7WQ2M" }, null);
  const room = {
    room: "K7WQ2M", mode: "race", phase: "lobby", code: null, sealed: true, commitment: await sealCommitment(seed),
    host: "p1", now: 1000, players: [{ id: "p1", name: "Ada", status: "waiting" }, { id: "p2", name: "Bob", status: "waiting" }], spectators: 0,
  };
  assert.deepEqual(session.hello(s, "Ada", null, "a1".repeat(16)), { type: "join", room: "K7WQ2M", name: "Ada", entropy: "a1".repeat(16) });
  s = session.reduce(s, { type: "welcome", role: "player", you: "p1", token: "t", room, seq: 1 }, 1000);
  s = session.reduce(s, { type: "started", seq: 2, code: null, started_at: 1000, commitment: room.commitment, contributions: [...contributions].sort(), board: opening }, 1000);
  assert.equal(session.toVerify(s), null, "nothing to check before the race is over");
  s = session.reduce(s, { type: "race_over", seq: 3, results: [], code, sealed: true, seed, contributions: [...contributions].sort() }, 1000);
  const check = session.toVerify(s);
  assert.deepEqual(check, { commitment: room.commitment, seed, contributions: [...contributions].sort(), code, opening, racers: 2 });
  assert.ok(session.fromRacers(check));
  assert.equal(await checkSeal(check), true);
  assert.ok(session.sameBoard(session.openingOf(await dealFromCode(check.code)), check.opening));
  // tampered: a contribution left out (a deal the server alone picks), another seed, another board
  assert.equal(await checkSeal({ ...check, contributions: [contributions[0]] }), false);
  assert.equal(await checkSeal({ ...check, seed: "5f".repeat(32) }), false);
  const other = session.openingOf(await dealFromCode((await sealedCode(seed, [])).canonical));
  assert.ok(!session.sameBoard(other, check.opening));
  // a rematch: a fresh contribution goes with the accept, and nothing is left to check
  s = session.reduce({ ...s, seated: {} }, { type: "rematch", seq: 4, round: 2, host: "p2", players: [{ id: "p2", name: "Bob", status: "waiting" }],
    seated: [{ id: "p1", name: "Ada", status: "waiting" }], code: null, sealed: true, commitment: "cd".repeat(32), series: null }, 1000);
  assert.equal(session.toVerify(s), null);
  assert.equal(s.opening, null);
  assert.deepEqual(session.accept(s, "c3".repeat(16)).commands, [{ type: "accept", entropy: "c3".repeat(16) }]);
});

test("a commitment swapped after the lobby (in started, or a mid-race snapshot) fails the page's check", async () => {
  // a server that sees every contribution before the start could draw seeds until one deals what it
  // likes and announce that seed's commitment in `started`: the reveal must open the lobby's commitment
  const seed = "5e".repeat(32);
  const other = "6a".repeat(32);
  const contributions = ["a1".repeat(16), "b2".repeat(16)];
  const code = (await sealedCode(other, contributions)).canonical;
  const opening = session.openingOf(await dealFromCode(code));
  for (const door of ["started", "snapshot"]) {
    let s = session.initialState({ kind: "race", room: "K7WQ2M" }, null);
    const room = {
      room: "K7WQ2M", mode: "race", phase: "lobby", code: null, sealed: true, commitment: await sealCommitment(seed),
      host: "p1", now: 1000, players: [{ id: "p1", name: "Ada", status: "waiting" }], spectators: 0,
    };
    s = session.reduce(s, { type: "welcome", role: "player", you: "p1", token: "t", room, seq: 1 }, 1000);
    const announced = door === "started" ? await sealCommitment(other) : room.commitment;
    s = session.reduce(s, { type: "started", seq: 2, code: null, started_at: 1000, commitment: announced, contributions, board: opening }, 1000);
    if (door === "snapshot") {
      const running = { ...room, phase: "running", commitment: await sealCommitment(other), contributions, board: opening };
      s = session.reduce(s, { type: "welcome", role: "player", you: "p1", token: "t", room: running, seq: 2 }, 1000);
    }
    s = session.reduce(s, { type: "race_over", seq: 3, results: [], code, sealed: true, seed: other, contributions }, 1000);
    const check = session.toVerify(s);
    assert.ok(check === null ? s.verified === false : !(await checkSeal(check)), `${door}: the swapped seal must not verify`);
  }
});

test("a rematch proposed twice before the answer: the contribution the server took still counts as the page's own", () => {
  const [first, second, theirs] = ["a1".repeat(16), "c3".repeat(16), "b2".repeat(16)];
  assert.equal(session.holdsOwn([first, second], [first, theirs].sort()), true, "the first rematch was taken, the second refused");
  assert.equal(session.holdsOwn([first, second], [theirs]), false, "none of the page's is in: a deal it had no say in");
  assert.equal(session.holdsOwn([], [theirs]), true, "a page that sent none (a reload) has nothing to look for");
});

test("more contributions than racers: one came from no racer (the server's own, picked after seeing the others'), and the check fails", async () => {
  const seed = "5e".repeat(32);
  const players = [{ id: "p1", name: "Ada", status: "waiting" }, { id: "p2", name: "Bob", status: "waiting" }];
  for (const [contributions, holds] of [[["a1".repeat(16), "b2".repeat(16)], true], [["a1".repeat(16), "b2".repeat(16), "9c".repeat(16)], false]]) {
    const code = (await sealedCode(seed, contributions)).canonical;
    let s = session.initialState({ kind: "race", room: "K7WQ2M" }, null);
    const room = { room: "K7WQ2M", mode: "race", phase: "lobby", code: null, sealed: true, commitment: await sealCommitment(seed), host: "p1", now: 1000, players, spectators: 0 };
    s = session.reduce(s, { type: "welcome", role: "player", you: "p1", token: "t", room, seq: 1 }, 1000);
    s = session.reduce(s, { type: "started", seq: 2, code: null, started_at: 1000, commitment: room.commitment, contributions, board: session.openingOf(await dealFromCode(code)) }, 1000);
    s = session.reduce(s, { type: "race_over", seq: 3, results: [], code, sealed: true, seed, contributions }, 1000);
    const check = session.toVerify(s);
    assert.equal(await checkSeal(check), true, "the seal itself opens");
    assert.equal(session.fromRacers(check), holds, `${contributions.length} contributions for 2 racers`);
  }
});

test("the daily's commitments are kept as first seen (GET /api/daily: today's, and tomorrow's a day ahead): an attempt dealt under another fails", () => {
  const yesterday = session.keepDailyCommitments({}, { date: "2026-12-05", commitment: "aa".repeat(32), next: { date: "2026-12-06", commitment: "bb".repeat(32) } });
  assert.deepEqual(yesterday, { "2026-12-05": "aa".repeat(32), "2026-12-06": "bb".repeat(32) });
  // today the server answers another commitment for today: the one seen a day ahead stays
  const today = session.keepDailyCommitments(yesterday, { date: "2026-12-06", commitment: "cc".repeat(32), next: { date: "2026-12-07", commitment: "dd".repeat(32) } });
  assert.equal(today["2026-12-06"], "bb".repeat(32));
  assert.equal(today["2026-12-07"], "dd".repeat(32));
  assert.equal(session.dailyAsPublished(today, "2026-12-06", "bb".repeat(32)), true);
  assert.equal(session.dailyAsPublished(today, "2026-12-06", "cc".repeat(32)), false, "an attempt dealt under a commitment not published a day ahead");
  assert.equal(session.dailyAsPublished({}, "2026-12-06", "cc".repeat(32)), true, "nothing kept: nothing to hold it to");
  const old = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`2026-10-${String(i % 28 + 1).padStart(2, "0")}`, "ee".repeat(32)]));
  assert.ok(Object.keys(session.keepDailyCommitments(old, { date: "2026-12-06", commitment: "cc".repeat(32) })).length <= 14, "a fortnight kept");
});

test("a reload after the end brings the end box back: the snapshot's game_over and a sealed race's salt", () => {
  const room = { ...lobbyRoom(), phase: "finished", code: "HM1-N-AAAAAAA", commitment: "c0ffee", sealed: true };
  const over = { outcome: "gave_up", score: 40, moves: 3, time_ms: 9000, code: "HM1-N-AAAAAAA", salt: "5a17", game: "G1", ranked: true };
  const fresh = session.initialState({ kind: "race", room: room.room }, { room: room.room, token: "t" });
  const back = session.reduce(fresh, { type: "welcome", v: 1, role: "player", you: "p2", token: "t", room: { ...room, game_over: over, salt: "5a17" }, seq: 9 }, 0);
  assert.deepEqual(back.gameOver, over);
  assert.deepEqual(session.toVerify(back), { text: "HM1-N-AAAAAAA:5a17", commitment: "c0ffee" });
  // a game still on: no end box, and no salt to check
  const playing = session.reduce(fresh, { type: "welcome", v: 1, role: "player", you: "p2", token: "t", room: { ...room, phase: "running", code: null }, seq: 9 }, 0);
  assert.equal(playing.gameOver, null);
  assert.equal(session.toVerify(playing), null);
});

test("the race's track: every player as they joined, cards removed of 104, the leader; markers move with each moved", () => {
  const page = SCENARIOS.race.pages.Spectator;
  const states = playPage(page, "");
  const started = states[page.timeline.findIndex((e) => e.recv && e.recv.type === "started")];
  assert.deepEqual(session.track(started).map((p) => [p.id, p.removed, p.leads]), [["p1", 0, false], ["p2", 0, false]]);
  // every `moved` the spectator got moves that racer's marker to 104 − cards_left, the leader the best score
  page.timeline.forEach((entry, i) => {
    if (!entry.recv || entry.recv.type !== "moved") return;
    const lane = session.track(states[i]).find((p) => p.id === entry.recv.player);
    assert.equal(lane.removed, 104 - entry.recv.cards_left);
    const best = Math.max(...session.track(states[i]).map((p) => p.score));
    const leads = session.track(states[i]).filter((p) => p.leads);
    assert.equal(leads.length > 0, best > 0);
    assert.ok(leads.every((p) => p.score === best), "the leader has the best score");
  });
  // the race's end: Ada won, Bob gave up; her splits at moves 12, 24, 36 and 48, none for him
  const end = states.at(-1);
  assert.deepEqual(session.track(end).map((p) => [p.name, p.removed, p.leads]), [["Ada", 104, true], ["Bob", 104 - end.players.p2.cards_left, false]]);
  assert.deepEqual(session.SPLITS, [12, 24, 36, 48]);
  assert.deepEqual(end.results.map((r) => [r.name, r.splits]), [["Ada", [21000, 33000, 45000, 57000]], ["Bob", [null, null, null, null]]]);
});

test("the track's leader: ties lead together, then the shorter finished time; nobody before a card is removed", () => {
  const room = { ...lobbyRoom(), phase: "running", players: [
    { id: "p1", name: "Ada", status: "playing", score: 0, moves: 0, cards_left: 104, elapsed_ms: 0 },
    { id: "p2", name: "Bob", status: "playing", score: 0, moves: 0, cards_left: 104, elapsed_ms: 0 }] };
  let s = session.reduce(session.initialState({ kind: "watch", room: room.room }), { type: "welcome", v: 1, role: "spectator", you: null, room, seq: 1 }, 0);
  const leaders = () => session.track(s).filter((p) => p.leads).map((p) => p.name);
  assert.deepEqual(leaders(), []);
  const move = (seq, player, score, cards_left, status = "playing", elapsed_ms = 5000) =>
    session.reduce(s, { type: "moved", v: 1, seq, player, action: "move", positions: ["1", "2"], score, moves: 1, cards_left, status, elapsed_ms }, 0);
  s = move(2, "p1", 10, 102);
  assert.deepEqual(leaders(), ["Ada"]);
  s = move(3, "p2", 10, 102);
  assert.deepEqual(leaders(), ["Ada", "Bob"], "a tie: both lead");
  s = session.reduce(s, { type: "progress", v: 1, seq: 4, player: { id: "p2", name: "Bob", status: "gave_up", score: 10, moves: 1, cards_left: 102, elapsed_ms: 6000 } }, 0);
  assert.deepEqual(leaders(), ["Bob"], "his 10 points are in, at 6 s; hers still run");
  s = move(5, "p1", 25, 99);
  assert.deepEqual(session.track(s).map((p) => [p.name, p.removed, p.leads]), [["Ada", 5, true], ["Bob", 2, false]]);
  s = session.reduce(s, { type: "moved", v: 1, seq: 6, player: "p1", action: "undo", positions: ["3", "4", "5"], score: 10, moves: 1, cards_left: 102, status: "playing", elapsed_ms: 7000 }, 0);
  assert.equal(session.track(s)[0].removed, 2, "an undo moves the marker back");
});

test("the room a socket is for: the seat's, else the room the page is in, else the race or watch page's", () => {
  const at = (intent, seat = null, extra = {}) => session.roomFor({ ...session.initialState(intent, seat), ...extra });
  assert.equal(at({ kind: "race", room: "k7wq2m" }), "K7WQ2M");
  assert.equal(at({ kind: "watch", room: "K7WQ2M" }), "K7WQ2M");
  assert.equal(at({ kind: "solo" }), null, "a new game has no room until its welcome");
  assert.equal(at({ kind: "daily" }), null);
  assert.equal(at({ kind: "solo" }, null, { room: "ABCDEF" }), "ABCDEF", "a new game's room, once welcomed");
  assert.equal(at({ kind: "daily" }, { room: "GHJKMN", token: "t" }), "GHJKMN", "a seat kept from an earlier page");
  assert.equal(at({ kind: "race", room: "K7WQ2M" }, { room: "GHJKMN", token: "t" }), "GHJKMN", "the seat wins");
  for (const bad of ["K7WQ2", "K7WQ2I", "K7WQ2M?x", "", 7]) {
    assert.equal(at({ kind: "race", room: bad }), null, `${bad} is no room id: no ?room= (the join says no_such_room)`);
  }
});


test("the daily: a seat welcomed without a token is the account's attempt from another device, and said so", () => {
  const fresh = session.initialState({ kind: "daily" }, null);
  const room = { room: "K7WQ2M", mode: "daily", phase: "playing", players: [{ id: "p1", name: "Ada", status: "playing", moves: 1 }] };
  const continued = session.reduce(fresh, { type: "welcome", role: "player", you: "p1", room, seq: 3, ranked: true }, 0);
  assert.equal(continued.notice, "dailyContinued");
  assert.equal(continued.seat, null, "no token: no seat kept (a reconnection asks for the daily again)");
  const own = session.reduce(fresh, { type: "welcome", role: "player", you: "p1", token: "t".repeat(32), room, seq: 3, ranked: true }, 0);
  assert.equal(own.notice, null);
  assert.deepEqual(own.seat, { room: "K7WQ2M", token: "t".repeat(32) });
  const resumed = session.reduce(session.initialState({ kind: "daily" }, { room: "K7WQ2M", token: "t".repeat(32) }),
    { type: "welcome", role: "player", you: "p1", room, seq: 3, ranked: true }, 0);
  assert.equal(resumed.notice, null, "this browser's own seat resumed: nothing to say");
});
