// Replaying a finished game's record on its deal with the rules in JavaScript: the board after
// every step, for the replay screen (step through it move by move, like the seed's Examples).

import { PILE_COUNT, parseCard, parsePosition, positionName } from "./cards.js";
import { legalMoves } from "./taps.js";

export class ReplayError extends Error {}

/** The board {tops, counts} of a full layout (piles bottom to top, reserve slots or null). */
function boardOf(piles, reserve) {
  return {
    tops: [...piles.map((pile) => (pile.length ? pile[pile.length - 1] : null)), ...reserve],
    counts: [...piles.map((pile) => pile.length), ...reserve.map((card) => (card ? 1 : 0))],
  };
}

/**
 * Every board of a game: boards[0] is the deal, boards[i] the board after step i. `deal` is the
 * engine's deal JSON ({piles: [[8 cards, bottom to top] × 12], reserve: [8 cards]}); `moves` the
 * record's steps (lists of position names, or "undo"). Returns [{board, step, score, moves}].
 * Throws ReplayError naming the step when the record does not fit the deal.
 */
export function replayBoards(deal, moves) {
  if (!deal || !Array.isArray(deal.piles) || deal.piles.length !== 12 || !Array.isArray(deal.reserve)) {
    throw new ReplayError("the deal must have 12 piles and a reserve");
  }
  const piles = deal.piles.map((pile) => pile.map((name) => parseCard(name).name));
  const reserve = deal.reserve.map((name) => parseCard(name).name);
  const history = [];
  let score = 0;
  let count = 0;
  const frames = [{ board: boardOf(piles, reserve), step: null, score, moves: count }];
  (moves || []).forEach((step, i) => {
    if (step === "undo") {
      const last = history.pop();
      if (!last) throw new ReplayError(`step ${i + 1}: nothing to undo`);
      last.positions.forEach((p, k) => {
        if (p < PILE_COUNT) piles[p].push(last.cards[k]);
        else reserve[p - PILE_COUNT] = last.cards[k];
      });
      score = Math.max(0, score - (last.positions.length === 2 ? 10 : 15));
      count -= 1;
    } else {
      if (!Array.isArray(step)) throw new ReplayError(`step ${i + 1}: not a move: ${JSON.stringify(step)}`);
      let positions;
      try {
        positions = step.map(parsePosition);
      } catch (error) {
        throw new ReplayError(`step ${i + 1}: ${error.message}`);
      }
      const board = boardOf(piles, reserve);
      const key = [...positions].sort((a, b) => a - b).join(",");
      if (!legalMoves(board).some((m) => m.join(",") === key)) {
        throw new ReplayError(`step ${i + 1}: ${step.join(" ")} is not a legal move here`);
      }
      const cards = positions.map((p) => (p < PILE_COUNT ? piles[p].pop() : reserve[p - PILE_COUNT]));
      positions.forEach((p) => {
        if (p >= PILE_COUNT) reserve[p - PILE_COUNT] = null;
      });
      history.push({ positions, cards });
      score += positions.length === 2 ? 10 : 15;
      count += 1;
    }
    frames.push({ board: boardOf(piles, reserve), step: step === "undo" ? "undo" : step.map((n) => positionName(parsePosition(n))), score, moves: count });
  });
  return frames;
}
