// Which cards may be removed, in the browser's rules (client/halfmoon_web/static/js/taps.js: the
// tap machine, legal moves, placement help; replay.js: a record's moves checked on its deal),
// against the engine's shared removal vectors (tests/vectors/removals.json, format in
// docs/engine.md): every pair and triple of ranks under every suiting, and attempted moves on
// real deals.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { parsePosition } from "../../client/halfmoon_web/static/js/cards.js";
import { NotPlayableError, REMOVED, legalMoves, matchingPositions, tap } from "../../client/halfmoon_web/static/js/taps.js";
import { ReplayError, replayBoards } from "../../client/halfmoon_web/static/js/replay.js";
import { dealFromCode } from "./deal.mjs";

const ROOT = new URL("../../", import.meta.url);
const DOCUMENT = JSON.parse(readFileSync(new URL("tests/vectors/removals.json", ROOT), "utf8"));
const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
const SUITS = ["S", "H", "D", "C"];
const rankOf = (card) => card.slice(0, -1);
const key = (ranks) => [...ranks].sort((a, b) => RANKS.indexOf(a) - RANKS.indexOf(b)).join(" ");
const PAIRS = new Map(DOCUMENT.pairs.map((c) => [key(c.ranks), c.pair]));
const TRIPLES = new Map(DOCUMENT.triples.map((c) => [key(c.ranks), c.triple]));
const isPairByVectors = (cards) => PAIRS.get(key(cards.map(rankOf)));
const isTripleByVectors = (cards) => TRIPLES.get(key(cards.map(rankOf)));

// Where a case's cards lie: piles, slots, both (indexes 0-11 piles, 12-19 slots).
const PAIR_PLACES = [[0, 12], [3, 7], [13, 19]];
const TRIPLE_PLACES = [[11, 15, 4], [12, 14, 16], [1, 2, 18]];
const sortedMove = (positions) => [...positions].sort((a, b) => a - b).join(",");

/** Every choice of suits a two-deck game can show for these ranks (no card three times). */
function* suitings(ranks) {
  const total = SUITS.length ** ranks.length;
  for (let n = 0; n < total; n++) {
    let rest = n;
    const cards = ranks.map((rank) => {
      const suit = SUITS[rest % SUITS.length];
      rest = Math.floor(rest / SUITS.length);
      return rank + suit;
    });
    if (!(cards.length === 3 && cards[0] === cards[1] && cards[1] === cards[2])) yield cards;
  }
}

/** A board holding these cards at these positions and nothing else. */
function boardOf(cards, places) {
  const tops = Array(20).fill(null);
  const counts = Array(20).fill(0);
  cards.forEach((card, i) => {
    tops[places[i]] = card;
    counts[places[i]] = 1;
  });
  return { tops, counts };
}

/** Tap these positions in order (removed cards leave the board); the moves removed. */
function tapped(board, places) {
  const tops = board.tops.slice();
  let selection = [];
  const removed = [];
  for (const p of places) {
    const result = tap({ tops, counts: board.counts }, selection, p);
    assert.equal(result.event === REMOVED, result.move !== null);
    if (result.move) {
      removed.push(result.move.join(","));
      for (const q of result.move) tops[q] = null;
    }
    selection = result.selection;
  }
  return removed;
}

/** What tapping these cards in this order removes, by the vector tables (as test_removals.py). */
function expectedRemovals(cards, places) {
  if (isPairByVectors(cards.slice(0, 2))) return [places.slice(0, 2).join(",")];
  if (cards.length === 3 && isTripleByVectors(cards)) return [places.join(",")];
  return [];
}

test("the vectors hold every rank pair (91) and triple (455), with the seed's five kinds and J Q K", () => {
  assert.equal(PAIRS.size, 91);
  assert.equal(TRIPLES.size, 455);
  assert.deepEqual([...PAIRS].filter(([, ok]) => ok).map(([k]) => k), ["A 10", "2 9", "3 8", "4 7", "5 6"]);
  assert.deepEqual([...TRIPLES].filter(([, ok]) => ok).map(([k]) => k), ["J Q K"]);
});

test("every pair of ranks under every suiting: taps, legal moves, placement help", () => {
  let checked = 0;
  for (const { ranks, pair } of DOCUMENT.pairs) {
    let n = 0;
    for (const cards of suitings(ranks)) {
      const where = cards.join(" + ");
      const places = PAIR_PLACES[n++ % PAIR_PLACES.length];
      const board = boardOf(cards, places);
      assert.deepEqual(legalMoves(board).map((m) => m.join(",")), pair ? [sortedMove(places)] : [], where);
      assert.deepEqual([...matchingPositions(board, [places[0]])], pair ? [places[1]] : [], where);
      assert.deepEqual(tapped(board, places), expectedRemovals(cards, places), where);
      const back = [...places].reverse();
      assert.deepEqual(tapped(board, back), expectedRemovals([...cards].reverse(), back), where);
      assert.deepEqual(tapped(board, places), pair ? [places.join(",")] : [], where);
      checked++;
    }
  }
  assert.equal(checked, 91 * 16);
});

test("every multiset of three ranks under every suiting: taps in every order, legal moves, placement help", () => {
  const orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
  let checked = 0;
  for (const { ranks, triple } of DOCUMENT.triples) {
    let n = 0;
    for (const cards of suitings(ranks)) {
      const where = cards.join(" ");
      const places = TRIPLE_PLACES[n++ % TRIPLE_PLACES.length];
      const board = boardOf(cards, places);
      const expected = [[0, 1], [0, 2], [1, 2]]
        .filter(([i, j]) => isPairByVectors([cards[i], cards[j]]))
        .map(([i, j]) => sortedMove([places[i], places[j]]));
      if (triple) expected.push(sortedMove(places));
      assert.deepEqual(legalMoves(board).map((m) => m.join(",")).sort(), expected.sort(), where);
      assert.deepEqual([...matchingPositions(board, places.slice(0, 2))], triple ? [places[2]] : [], where);
      for (const order of orders) {
        const at = order.map((i) => places[i]);
        assert.deepEqual(tapped(board, at), expectedRemovals(order.map((i) => cards[i]), at), where);
      }
      checked++;
    }
  }
  assert.ok(checked > 455 * 60);
});

test("attempted moves on real deals: the replay accepts exactly the legal ones, and taps agree", () => {
  let legalSeen = 0;
  let refusedSeen = 0;
  for (const group of DOCUMENT.moves) {
    const deal = dealFromCode(group.code);
    const frames = replayBoards(deal, group.setup);
    const { board, score } = frames.at(-1);
    for (const { move, cards, legal, error } of group.attempts) {
      const where = `${group.code} after ${group.setup.length} moves: ${move.join(" ")}`;
      const shown = move.map((name) => {
        try {
          return board.tops[parsePosition(name)];
        } catch {
          return null;
        }
      });
      assert.deepEqual(shown, cards, `${where}: the cards there`);
      if (!legal) {
        assert.throws(() => replayBoards(deal, [...group.setup, move]), ReplayError, where);
        refusedSeen++;
      } else {
        const after = replayBoards(deal, [...group.setup, move]).at(-1);
        assert.equal(after.score, score + (move.length === 2 ? 10 : 15), where);
        legalSeen++;
      }
      if (error === "bad_position" || error === "illegal_move" || error === "same_position") continue;
      const positions = move.map(parsePosition);
      const inLegalMoves = legalMoves(board).some((m) => m.join(",") === sortedMove(positions));
      assert.equal(inLegalMoves, legal, where);
      if (error === "not_playable") {
        const empty = positions.find((p) => board.tops[p] === null);
        assert.throws(() => tap(board, [], empty), NotPlayableError, where);
      } else {
        assert.deepEqual(tapped(board, positions), expectedRemovals(cards, positions), where);
      }
    }
  }
  assert.ok(legalSeen >= 10 && refusedSeen >= 40);
});
