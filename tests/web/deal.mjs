// Test helper: a deal code's cards, by the shuffle written down in docs/deal-codes.md
// (SHA-256 counter-mode word stream, rejection sampling, Fisher-Yates), with node's crypto.
// Checked against the engine's golden deals (tests/vectors/deals.json) in taps.test.mjs.

import { createHash } from "node:crypto";

const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
const SUITS = ["S", "H", "D", "C"];
const UNSHUFFLED = [0, 1].flatMap(() => SUITS.flatMap((suit) => RANKS.map((rank) => rank + suit)));

function* words(seed) {
  for (let counter = 0; ; counter++) {
    const block = Buffer.alloc(4);
    block.writeUInt32BE(counter);
    const digest = createHash("sha256").update(Buffer.concat([seed, block])).digest();
    for (let k = 0; k < 32; k += 4) yield digest.readUInt32BE(k);
  }
}

/** {code, piles: [[8 cards, bottom to top] × 12], reserve: [R1 … R8]} of a canonical code. */
export function dealFromCode(code) {
  const stream = words(createHash("sha256").update(code, "ascii").digest());
  const deck = UNSHUFFLED.slice();
  for (let i = deck.length - 1; i >= 1; i--) {
    const n = i + 1;
    const limit = 2 ** 32 - (2 ** 32 % n);
    let word = stream.next().value;
    while (word >= limit) word = stream.next().value;
    const j = word % n;
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  const piles = Array.from({ length: 12 }, (_, p) => deck.slice(p * 8, p * 8 + 8));
  return { code, piles, reserve: deck.slice(96) };
}
