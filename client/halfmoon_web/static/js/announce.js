// What a screen reader hears after a move of the player's own (a polite live region, #say in
// index.html): the cards removed or put back, the score, the moves and the cards left to remove —
// or, with «Annunci brevi» on, the cards, the points and the cards left alone. A stall and the end
// are said by the end box (a status region) as it appears. docs/client.md lists every announcement.

import { cardSymbol, parseCard } from "./cards.js";
import { t } from "./i18n.js";

/** "5♠ e 6♦", "J♣, Q♥ e K♥": the cards of a move, by name ("5S"). */
export function cardList(names, lang) {
  const w = t(lang).said;
  const symbols = names.map((name) => cardSymbol(parseCard(name), lang));
  return symbols.length > 1 ? `${symbols.slice(0, -1).join(", ")} ${w.and} ${symbols[symbols.length - 1]}` : symbols.join("");
}

/**
 * A move's result in words. `cards`: the names of the cards removed (or, `undo`, put back);
 * `score`, `moves`, `left` (cards still on the table) after it; `terse`: the short form.
 */
export function moveSaid(lang, { cards, score, moves, left, undo = false, terse = false }) {
  const w = t(lang).said;
  const list = cardList(cards, lang);
  if (terse) return `${undo ? `${w.undoShort}: ` : ""}${list}. ${score} ${w.points}, ${w.leftShort(left)}.`;
  return `${undo ? w.back : w.removed} ${list}. ${w.score[0].toUpperCase()}${w.score.slice(1)} ${score}, ${w.moves} ${moves}; ${w.left(left)}.`;
}
