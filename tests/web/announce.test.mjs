// What a screen reader hears after a move (announce.js): the cards, the score, the moves and the
// cards left to remove; «Annunci brevi» says the cards, the points and the cards left alone.
import assert from "node:assert/strict";
import { test } from "node:test";

import { cardList, moveSaid } from "../../client/halfmoon_web/static/js/announce.js";

test("a pair and a triple are named card by card, in the reader's language", () => {
  assert.equal(cardList(["5S", "6D"], "it"), "5♠ e 6♦");
  assert.equal(cardList(["JC", "QH", "KH"], "en"), "J♣, Q♥ and K♥");
  assert.equal(cardList(["JC", "QH", "KH"], "it"), "V♣, D♥ e R♥");
});

test("a move is said with its score, its moves and the cards left to remove", () => {
  const move = { cards: ["5S", "6D"], score: 10, moves: 1, left: 102 };
  assert.equal(moveSaid("it", move), "Tolte 5♠ e 6♦. Punteggio 10, mosse 1; restano 102 carte da togliere.");
  assert.equal(moveSaid("en", move), "Removed 5♠ and 6♦. Score 10, moves 1; 102 cards left to remove.");
  assert.equal(moveSaid("en", { ...move, left: 1 }), "Removed 5♠ and 6♦. Score 10, moves 1; 1 card left to remove.");
});

test("an undo says which cards came back", () => {
  const back = { cards: ["5S", "6D"], score: 0, moves: 0, left: 104, undo: true };
  assert.equal(moveSaid("it", back), "Mossa annullata: tornano 5♠ e 6♦. Punteggio 0, mosse 0; restano 104 carte da togliere.");
  assert.equal(moveSaid("en", back), "Move undone, back on the table: 5♠ and 6♦. Score 0, moves 0; 104 cards left to remove.");
});

test("the terse form keeps the cards, the points and the cards left", () => {
  const move = { cards: ["JC", "QH", "KH"], score: 25, moves: 2, left: 99, terse: true };
  assert.equal(moveSaid("it", move), "V♣, D♥ e R♥. 25 punti, 99 carte.");
  assert.equal(moveSaid("en", { ...move, undo: true }), "Undone: J♣, Q♥ and K♥. 25 points, 99 cards.");
});
