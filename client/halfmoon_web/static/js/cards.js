// Cards and positions: machine names ("5S", "10H", "QD"; "1"…"12", "R1"…"R8") and how players read them.
// Mirrors shared/halfmoon/cards.py and positions.py.

export const POSITION_NAMES = [
  "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12",
  "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8",
];
export const PILE_COUNT = 12;
/** What a spectator gets instead of a card it is not shown yet (docs/protocol.md). */
export const HIDDEN = "??";
export const RANK_NAMES = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
export const RANK_NAMES_IT = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "V", "D", "R"];
export const SUIT_SYMBOLS = { S: "♠", H: "♥", D: "♦", C: "♣" };
export const JACK = 11;
export const QUEEN = 12;
export const KING = 13;

/** Parse "5S" → {rank: 5, suit: "S", name: "5S"}; throws Error naming the input. */
export function parseCard(name) {
  if (typeof name === "string") {
    const text = name.trim().toUpperCase();
    const rank = RANK_NAMES.indexOf(text.slice(0, -1)) + 1;
    const suit = text.slice(-1);
    if (rank > 0 && suit in SUIT_SYMBOLS) return { rank, suit, name: RANK_NAMES[rank - 1] + suit };
  }
  throw new Error(`not a card: ${JSON.stringify(name)}`);
}

export const isFace = (card) => card.rank >= JACK;
export const isRed = (card) => card.suit === "H" || card.suit === "D";

/** "5♠", "10♥", "Q♦" — "D♦" in Italian. */
export function cardSymbol(card, lang) {
  const ranks = lang === "it" ? RANK_NAMES_IT : RANK_NAMES;
  return ranks[card.rank - 1] + SUIT_SYMBOLS[card.suit];
}

/** "1"…"12" → 0…11, "R1"…"R8" → 12…19; throws Error naming the input. */
export function parsePosition(name) {
  const index = typeof name === "string" ? POSITION_NAMES.indexOf(name.trim().toUpperCase()) : -1;
  if (index < 0) throw new Error(`no such position: ${JSON.stringify(name)}`);
  return index;
}

export const positionName = (index) => POSITION_NAMES[index];
