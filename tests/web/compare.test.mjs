// The divergence view's pure part (compare.js): where two records of one deal part.

import assert from "node:assert/strict";
import { test } from "node:test";

import { positionName } from "../../client/halfmoon_web/static/js/cards.js";
import { divergence } from "../../client/halfmoon_web/static/js/compare.js";
import { EXAMPLE } from "../../client/halfmoon_web/static/js/examples.js";
import { replayBoards } from "../../client/halfmoon_web/static/js/replay.js";
import { legalMoves } from "../../client/halfmoon_web/static/js/taps.js";

const DEAL = { piles: EXAMPLE.piles.map((p) => p.split(" ")), reserve: EXAMPLE.reserve.split(" ") };
const WON = EXAMPLE.moves.map((m) => m.split(" "));

test("the divergence is the number of steps two records share from the start", () => {
  assert.equal(divergence(WON, WON), WON.length); // the same record: never parted
  assert.equal(divergence([], []), 0);
  assert.equal(divergence([], WON), 0);
  assert.equal(divergence(WON.slice(0, 5), WON), 5); // one is the other's beginning
  assert.equal(divergence(WON, WON.slice(0, 5)), 5);
  assert.equal(divergence([...WON.slice(0, 3), ["1", "2"]], WON), 3);
  assert.equal(divergence([WON[0], "undo", WON[0]], [WON[0], WON[0]]), 1); // an undo is a step of its own
  assert.equal(divergence([WON[0], "undo"], [WON[0], "undo"]), 2);
});

test("a move's cards may be named in any order; a different order of moves is a divergence", () => {
  assert.equal(divergence([["8", "1"], ["3", "5", "8"]], [["1", "8"], ["8", "5", "3"]]), 2);
  assert.equal(divergence([["r4", " R8"]], [["R8", "R4"]]), 1); // names as parsePosition reads them
  // the same two moves in the other order part at the first step, even if the table is the same after both
  assert.equal(divergence([WON[2], WON[0]], [WON[0], WON[2]]), 0);
  // a step that is not a move at all compares as itself, never throws
  assert.equal(divergence([["X9", "1"]], [["X9", "1"]]), 1);
  assert.equal(divergence([["X9", "1"]], [["1", "X9"]]), 0);
  assert.equal(divergence([42], ["undo"]), 0);
});

test("two lines agree on the board up to their divergence and differ after it", () => {
  const shared = 3;
  const frames = replayBoards(DEAL, WON);
  const key = (move) => [...move].sort().join(",");
  const other = legalMoves(frames[shared].board).map((m) => m.map(positionName)).find((m) => key(m) !== key(WON[shared]));
  assert.ok(other, "the example's fourth table offers another move");
  const line = [...WON.slice(0, shared), other];
  const otherFrames = replayBoards(DEAL, line);
  const at = divergence(WON, line);
  assert.equal(at, shared);
  assert.deepEqual(otherFrames[at].board, frames[at].board);
  assert.notDeepEqual(otherFrames[at + 1].board, frames[at + 1].board);
});
