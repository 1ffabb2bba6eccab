// The tap state machine, exactly as shared/halfmoon/taps.py (and the seed) say; tested against
// the same vectors as the engine (tests/vectors/taps.json, run by tests/web/taps.test.mjs).
//
// A board is {tops: [20 card names or null], counts: [20 ints]} in position order 1…12, R1…R8;
// positions here are indexes 0…19 (see cards.js). Every function is pure.

import { JACK, KING, QUEEN, isFace, parseCard, positionName } from "./cards.js";

export const SELECTED = "selected";
export const DESELECTED = "deselected";
export const REPLACED = "replaced";
export const CANCELLED = "cancelled";
export const REMOVED = "removed";

/** The seed's two explanations of a cancelled selection. */
export const MOVE_ERROR_MESSAGES = {
  sum: { it: "La somma deve essere uguale a 11", en: "The sum must equal 11" },
  triple: { it: "Servono un Fante, una Donna e un Re", en: "A Jack, a Queen and a King are needed" },
};

export class NotPlayableError extends Error {}

function cardAt(board, position) {
  const name = board.tops[position];
  return name == null ? null : parseCard(name);
}

/**
 * What tapping `position` does to `selection` (an array of position indexes, in tap order).
 * Returns {event, selection, move (array of indexes, on "removed") or null, reason ("sum" |
 * "triple", on "cancelled") or null}. Throws NotPlayableError when the position holds no card.
 */
export function tap(board, selection, position) {
  const card = cardAt(board, position);
  if (card === null) throw new NotPlayableError(`position ${positionName(position)} has no playable card`);
  const result = (event, sel, move = null, reason = null) => ({ event, selection: sel, move, reason });
  if (selection.includes(position)) return result(DESELECTED, selection.filter((p) => p !== position));
  if (selection.length === 0) return result(SELECTED, [position]);
  const selected = selection.map((p) => {
    const c = cardAt(board, p);
    if (c === null) throw new NotPlayableError(`selected position ${positionName(p)} has no playable card`);
    return c;
  });
  if (!isFace(selected[0])) {
    if (!isFace(card) && selected[0].rank + card.rank === 11) return result(REMOVED, [], [selection[0], position]);
    return result(CANCELLED, [], null, "sum");
  }
  if (!isFace(card)) return result(CANCELLED, [], null, "triple");
  const sameRank = selection.filter((p, i) => selected[i].rank === card.rank);
  if (sameRank.length > 0) {
    return result(REPLACED, [...selection.filter((p) => !sameRank.includes(p)), position]);
  }
  const grown = [...selection, position];
  if (grown.length === 3) return result(REMOVED, [], grown);
  return result(SELECTED, grown);
}

/** The explanation to show for a tap result, or null (only when «Errori di mossa» is on). */
export function tapMessage(result, lang, moveErrors) {
  return moveErrors && result.reason ? MOVE_ERROR_MESSAGES[result.reason][lang] : null;
}

/** Every playable card by position: [[position, card], …]. */
export function playable(board) {
  const out = [];
  board.tops.forEach((name, p) => {
    if (name != null) out.push([p, parseCard(name)]);
  });
  return out;
}

/** Every legal move now (arrays of sorted position indexes): pairs, then triples. */
export function legalMoves(board) {
  const byRank = new Map();
  for (const [p, card] of playable(board)) {
    if (!byRank.has(card.rank)) byRank.set(card.rank, []);
    byRank.get(card.rank).push(p);
  }
  const get = (rank) => byRank.get(rank) || [];
  const moves = [];
  for (let rank = 1; rank <= 5; rank++) {
    for (const a of get(rank)) for (const b of get(11 - rank)) moves.push(a < b ? [a, b] : [b, a]);
  }
  for (const j of get(JACK)) for (const q of get(QUEEN)) for (const k of get(KING)) {
    moves.push([j, q, k].sort((x, y) => x - y));
  }
  return moves;
}

/**
 * Playable positions whose card can still complete a legal move with the selection (a Set);
 * with nothing selected, every playable position. «Aiuto al posizionamento» dims the others.
 */
export function matchingPositions(board, selection) {
  if (selection.length === 0) return new Set(playable(board).map(([p]) => p));
  const out = new Set();
  for (const move of legalMoves(board)) {
    if (selection.every((p) => move.includes(p))) for (const p of move) if (!selection.includes(p)) out.add(p);
  }
  return out;
}

/**
 * The board after a move, as far as a player can know it: the removed cards are gone, the
 * counts go down, and a pile that still holds cards has a null top (drawn face down) until the
 * server reveals it. Used for the optimistic drawing; pure.
 */
export function applyOptimistic(board, move) {
  const tops = board.tops.slice();
  const counts = board.counts.slice();
  for (const p of move) {
    counts[p] = Math.max(0, counts[p] - 1);
    tops[p] = null;
  }
  return { tops, counts };
}
