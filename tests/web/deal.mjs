// Test helper: a deal code's cards, synchronously, for tests that replay deals step by step.
// The parsing and the shuffle are the browser's own (client/halfmoon_web/static/js/codes.js:
// parseCode, shuffledDeck, dealOf); only the SHA-256 is node's synchronous one instead of the
// browser's async crypto.subtle. Checked against the golden deals in taps.test.mjs and codes.test.mjs.

import { createHash } from "node:crypto";

import { dealOf, parseCode, shuffledDeck } from "../../client/halfmoon_web/static/js/codes.js";

function words(seed) {
  let counter = 0;
  let digest = null;
  let k = 8;
  return () => {
    if (k === 8) {
      const block = Buffer.alloc(4);
      block.writeUInt32BE(counter++);
      digest = createHash("sha256").update(Buffer.concat([seed, block])).digest();
      k = 0;
    }
    return digest.readUInt32BE(4 * k++);
  };
}

/** {code, piles: [[8 cards, bottom to top] × 12], reserve: [R1 … R8]} of a code (any case). */
export function dealFromCode(code) {
  const { canonical } = parseCode(code);
  return dealOf(canonical, shuffledDeck(words(createHash("sha256").update(canonical, "ascii").digest())));
}
