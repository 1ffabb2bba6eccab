// The browser's tap logic (client/halfmoon_web/static/js/taps.js) against the engine's shared
// tap-sequence vectors (tests/vectors/taps.json, format in docs/engine.md) and the seed's cases.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { parsePosition, positionName } from "../../client/halfmoon_web/static/js/cards.js";
import {
  CANCELLED, DESELECTED, REMOVED, REPLACED, SELECTED, NotPlayableError,
  applyOptimistic, legalMoves, matchingPositions, tap, tapMessage,
} from "../../client/halfmoon_web/static/js/taps.js";
import { replayBoards } from "../../client/halfmoon_web/static/js/replay.js";
import { dealFromCode } from "./deal.mjs";

const ROOT = new URL("../../", import.meta.url);
const readJson = (path) => JSON.parse(readFileSync(new URL(path, ROOT), "utf8"));

/** A board whose playable cards are given by position name: {"1": "5S", "R2": "6D"}. */
function boardOf(cards) {
  const tops = Array(20).fill(null);
  const counts = Array(20).fill(0);
  for (const [name, card] of Object.entries(cards)) {
    const p = parsePosition(name);
    tops[p] = card;
    counts[p] = p < 12 ? 3 : 1;
  }
  return { tops, counts };
}

const P = (name) => parsePosition(name);

test("a first tap selects; tapping it again deselects", () => {
  const board = boardOf({ 1: "5S", 8: "6D" });
  const first = tap(board, [], P("1"));
  assert.equal(first.event, SELECTED);
  assert.deepEqual(first.selection, [P("1")]);
  const again = tap(board, first.selection, P("1"));
  assert.equal(again.event, DESELECTED);
  assert.deepEqual(again.selection, []);
});

test("a second card summing to 11 removes the pair (5♠ + 6♦, the seed's first move)", () => {
  const board = boardOf({ 1: "5S", 8: "6D" });
  const result = tap(board, [P("1")], P("8"));
  assert.equal(result.event, REMOVED);
  assert.deepEqual(result.move, [P("1"), P("8")]);
  assert.deepEqual(result.selection, []);
  assert.deepEqual(tap(boardOf({ R1: "AH", R8: "10C" }), [P("R1")], P("R8")).move, [P("R1"), P("R8")]);
});

test("a triple is removed on the third tap, never before", () => {
  const board = boardOf({ 8: "JC", 5: "QH", 3: "KH" });
  const one = tap(board, [], P("8"));
  const two = tap(board, one.selection, P("5"));
  assert.equal(two.event, SELECTED);
  assert.deepEqual(two.selection, [P("8"), P("5")]);
  assert.equal(two.move, null, "the app never picks the third card");
  const three = tap(board, two.selection, P("3"));
  assert.equal(three.event, REMOVED);
  assert.deepEqual(three.move, [P("8"), P("5"), P("3")]);
});

test("two number cards not summing to 11 cancel, with the seed's sum message", () => {
  const board = boardOf({ 1: "5S", 2: "AH" });
  const result = tap(board, [P("1")], P("2"));
  assert.equal(result.event, CANCELLED);
  assert.deepEqual(result.selection, []);
  assert.equal(result.move, null);
  assert.equal(result.reason, "sum");
  assert.equal(tapMessage(result, "it", true), "La somma deve essere uguale a 11");
  assert.equal(tapMessage(result, "en", true), "The sum must equal 11");
  assert.equal(tapMessage(result, "it", false), null, "«Errori di mossa» off: no message");
});

test("a number card and a face card cancel: the message follows the first card", () => {
  const board = boardOf({ 1: "5S", 3: "KH" });
  const numberFirst = tap(board, [P("1")], P("3"));
  assert.equal(numberFirst.event, CANCELLED);
  assert.equal(numberFirst.reason, "sum");
  const faceFirst = tap(board, [P("3")], P("1"));
  assert.equal(faceFirst.event, CANCELLED);
  assert.equal(faceFirst.reason, "triple");
  assert.equal(tapMessage(faceFirst, "it", true), "Servono un Fante, una Donna e un Re");
  const twoFacesThenNumber = tap(boardOf({ 1: "JS", 2: "QS", 3: "4C" }), [P("1"), P("2")], P("3"));
  assert.equal(twoFacesThenNumber.event, CANCELLED);
  assert.deepEqual(twoFacesThenNumber.selection, []);
});

test("a face card of an already-selected rank replaces it (two K♥)", () => {
  const board = boardOf({ 3: "KH", 9: "KH", 5: "QH" });
  const result = tap(board, [P("3")], P("9"));
  assert.equal(result.event, REPLACED);
  assert.deepEqual(result.selection, [P("9")]);
  const kept = tap(board, [P("5"), P("3")], P("9"));
  assert.equal(kept.event, REPLACED);
  assert.deepEqual(kept.selection, [P("5"), P("9")]);
});

test("tapping an empty position is refused and changes nothing", () => {
  const board = boardOf({ 1: "5S" });
  assert.throws(() => tap(board, [P("1")], P("2")), NotPlayableError);
});

test("placement help: the playable cards that can complete a move with the selection", () => {
  const board = boardOf({ 1: "5S", 2: "6D", 3: "6H", 4: "AH", 5: "JC", 6: "QH", 7: "KS", 8: "QD" });
  assert.deepEqual([...matchingPositions(board, [P("1")])].sort(), [P("2"), P("3")].sort());
  assert.deepEqual([...matchingPositions(board, [P("4")])], []);
  assert.deepEqual([...matchingPositions(board, [P("5")])].sort((a, b) => a - b), [P("6"), P("7"), P("8")]);
  assert.deepEqual([...matchingPositions(board, [P("5"), P("6")])], [P("7")]);
  assert.equal(matchingPositions(board, []).size, 8);
});

test("legal moves and stalls", () => {
  assert.deepEqual(legalMoves(boardOf({ 1: "5S", 2: "5D", R1: "JC", R2: "QC" })), [], "a stall");
  assert.deepEqual(legalMoves(boardOf({ 1: "5S", R5: "6C" })), [[0, 16]]);
  assert.deepEqual(legalMoves(boardOf({ 1: "JS", 2: "QS", 3: "KS", 4: "KD" })), [[0, 1, 2], [0, 1, 3]]);
});

test("the optimistic board: removed cards gone, counts down, an unknown top until revealed", () => {
  const board = boardOf({ 1: "5S", R1: "6D" });
  const after = applyOptimistic(board, [P("1"), P("R1")]);
  assert.deepEqual([after.tops[0], after.counts[0]], [null, 2]);
  assert.deepEqual([after.tops[12], after.counts[12]], [null, 0]);
  assert.deepEqual([board.tops[0], board.counts[0]], ["5S", 3], "the confirmed board is unchanged");
});

// -- the engine's shared vectors ---------------------------------------------------------------

test("the test's deal helper deals exactly as the engine (golden deals)", () => {
  const golden = readJson("tests/vectors/deals.json").deals;
  assert.ok(golden.length >= 10);
  for (const deal of golden) assert.deepEqual(dealFromCode(deal.code), deal, deal.code);
});

test("the shared tap vectors pass (tests/vectors/taps.json)", () => {
  const { vectors } = readJson("tests/vectors/taps.json");
  assert.ok(Array.isArray(vectors) && vectors.length >= 10, "the file holds vectors");
  let steps = 0;
  for (const vector of vectors) steps += runVector(vector);
  assert.ok(steps >= 40);
});

/** Play one vector's taps on its deal (after its setup moves); returns the number of steps. */
function runVector(vector) {
  const deal = dealFromCode(vector.code);
  const played = [...vector.setup];
  const boardNow = () => replayBoards(deal, played).at(-1).board;
  let selection = [];
  vector.steps.forEach((step, i) => {
    const where = `${vector.name}: step ${i + 1} (tap ${step.tap})`;
    const board = boardNow();
    const position = parsePosition(step.tap);
    assert.equal(board.tops[position], step.card, `${where}: the card there`);
    if (step.event === "error") {
      assert.equal(step.error, "not_playable");
      assert.throws(() => tap(board, selection, position), NotPlayableError, where);
    } else {
      const result = tap(board, selection, position);
      assert.equal(result.event, step.event, where);
      assert.deepEqual(result.selection.map(positionName), step.selection, where);
      assert.deepEqual(result.move ? result.move.map(positionName) : null, step.removed, where);
      assert.deepEqual(tapMessage(result, "it", vector.move_errors) && {
        it: tapMessage(result, "it", vector.move_errors), en: tapMessage(result, "en", vector.move_errors),
      }, step.message, where);
      selection = result.selection;
      if (result.move) played.push(result.move.map(positionName));
    }
    const after = boardNow();
    const matching = [...matchingPositions(after, selection)].sort((a, b) => a - b).map(positionName);
    assert.deepEqual(matching, step.matching, `${where}: placement help`);
  });
  return vector.steps.length;
}
