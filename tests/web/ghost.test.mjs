// The ghost's pure part (ghost.js): a stored record's steps and times as a lane on your clock.

import assert from "node:assert/strict";
import { test } from "node:test";

import { EXAMPLE } from "../../client/halfmoon_web/static/js/examples.js";
import { ghostAt, ghostLane, ghostOf, ghostTimeline } from "../../client/halfmoon_web/static/js/ghost.js";
import { replayBoards } from "../../client/halfmoon_web/static/js/replay.js";

const DEAL = { piles: EXAMPLE.piles.map((p) => p.split(" ")), reserve: EXAMPLE.reserve.split(" ") };
const WON = EXAMPLE.moves.map((m) => m.split(" "));

test("a pair removes 2 cards and scores 10, a triple 3 and 15, an undo takes its move back", () => {
  const moves = [["1", "2"], ["3", "4", "5"], "undo", ["6", "7"]];
  assert.deepEqual(ghostTimeline(moves, [0, 1000, 1500, 4000]), [
    { at: 0, removed: 2, moves: 1, score: 10 },
    { at: 1000, removed: 5, moves: 2, score: 25 },
    { at: 1500, removed: 2, moves: 1, score: 10 },
    { at: 4000, removed: 4, moves: 2, score: 20 },
  ]);
});

test("the counts agree with the full replay on the seed's won example, step by step", () => {
  const timeline = ghostTimeline(WON, WON.map((_, i) => i * 1000));
  const frames = replayBoards(DEAL, WON).slice(1);
  assert.equal(timeline.length, frames.length);
  timeline.forEach((point, i) => {
    const left = frames[i].board.counts.reduce((a, b) => a + b, 0);
    assert.equal(point.removed, 104 - left, `step ${i + 1}`);
    assert.equal(point.score, frames[i].score);
    assert.equal(point.moves, frames[i].moves);
  });
  assert.equal(timeline.at(-1).removed, 104); // the example is a win
});

test("the ghost's progress at a time is its last step played by then", () => {
  const timeline = ghostTimeline([["1", "2"], ["3", "4"], ["5", "6", "7"]], [500, 2000, 2000]);
  assert.equal(ghostAt(timeline, 0).removed, 0); // before its first step: the deal
  assert.equal(ghostAt(timeline, 499).removed, 0);
  assert.equal(ghostAt(timeline, 500).removed, 2);
  assert.equal(ghostAt(timeline, 1999).removed, 2);
  assert.equal(ghostAt(timeline, 2000).removed, 7); // two steps at one instant: both
  assert.equal(ghostAt(timeline, 10 ** 9).removed, 7);
  assert.equal(ghostAt([], 5000).removed, 0);
});

test("the lane shows the ghost's result only once its time is up or your game is over", () => {
  const ghost = ghostOf({ name: "Ada", time_ms: 3000, outcome: "gave_up", moves: [["1", "2"], ["3", "4"]], times: [1000, 2000] });
  assert.equal(ghostLane(ghostOf({ name: "G", time_ms: 0, outcome: "won", moves: [["1", "2"]], times: [0] }), 0, false, true).removed, 2);
  assert.deepEqual(ghostLane(ghost, 1500, false), { id: "ghost", name: "Ada", removed: 2, moves: 1, score: 10, status: "playing", timeMs: null, leads: false });
  const ended = ghostLane(ghost, 3000, false);
  assert.equal(ended.status, "gave_up");
  assert.equal(ended.timeMs, 3000);
  assert.equal(ended.removed, 4);
  const waiting = ghostLane(ghost, 0, false, false); // your clock has not started: the deal
  assert.equal(waiting.removed, 0);
  assert.equal(waiting.status, "playing");
  const yoursOver = ghostLane(ghost, 100, true); // you finished first: the ghost's end is shown
  assert.equal(yoursOver.status, "gave_up");
  assert.equal(yoursOver.removed, 4);
});

test("a record without times, or with times that do not fit, makes no ghost", () => {
  assert.throws(() => ghostOf({ name: "Ada", time_ms: 0, outcome: "won", moves: [["1", "2"]] }), /no time/);
  assert.throws(() => ghostTimeline([["1", "2"], ["3", "4"]], [0]), /no time/);
  assert.throws(() => ghostTimeline([["1", "2"], ["3", "4"]], [5, 4]), /step 2: bad time/);
  assert.throws(() => ghostTimeline(["undo"], [0]), /step 1: nothing to undo/);
  assert.throws(() => ghostTimeline([["1"]], [0]), /step 1: not a move/);
});
