// Deal codes, the shuffle and the sealed race's commit-reveal, exactly as shared/halfmoon/codes.py
// and docs/deal-codes.md say; both pass the same golden vectors (tests/vectors/codes.json and
// deals.json, run by tests/web/codes.test.mjs). Hashing goes through the Web Crypto API
// (`crypto.subtle`, async: a secure context in the browser, `globalThis.crypto` in node 20), so
// every function that hashes returns a Promise. Code numbers are BigInts (a long code's reach 26^28).
//
// A code is "HM1-<kind>-<body>": kind N (ordinary), D (daily challenge) or S (sealed race); the
// body is 7 letters A-Z (short) or 28 letters written in four groups of seven (long).

export const FORMAT_VERSION = 1;
export const KINDS = { N: "ordinary deal", D: "daily challenge", S: "sealed race" };
export const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
export const BODY_LENGTH = 7;
export const LONG_BODY_LENGTH = 28;
export const LONG_GROUPS = LONG_BODY_LENGTH / BODY_LENGTH;
export const CODE_SPACE = 26n ** 7n;
export const LONG_CODE_SPACE = 26n ** 28n;
export const CONTRIBUTION_RE = /^[0-9a-f]{32,64}$/;
export const SEED_HEX_RE = /^[0-9a-f]{64}$/;

const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
const SUITS = ["S", "H", "D", "C"];
/** Two decks, copy 1 then copy 2, each spades A-K, hearts, diamonds, clubs. */
export const UNSHUFFLED = Object.freeze([0, 1].flatMap(() => SUITS.flatMap((suit) => RANKS.map((rank) => rank + suit))));

const CODE_RE = /^HM([0-9]+)-([A-Z])-([A-Z]+(?:-[A-Z]+)*)$/;
const EXAMPLE = "for example HM1-N-AAAAAAB";
const LONG_EXAMPLE = "for example HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB";
const BODY_RULE = `the body is ${BODY_LENGTH} or ${LONG_BODY_LENGTH} letters A-Z`;
// Python's str.strip() on ASCII: blanks, \t \n \v \f \r and the separators \x1c-\x1f
const BLANKS = /^[\t\n\v\f\r\x1c-\x1f ]+|[\t\n\v\f\r\x1c-\x1f ]+$/g;

/** An invalid code or seal part; the message quotes the input the way the engine does. */
export class InvalidCodeError extends Error {
  constructor(message) {
    super(message);
    this.name = "InvalidCodeError";
    this.code = "bad_code";
  }
}

/**
 * Parse a deal code: case and surrounding blanks are forgiven, a long body may be written with or
 * without its inner hyphens. Returns {kind, long, letters (7 or 28, no hyphens), number (BigInt),
 * canonical}; throws InvalidCodeError saying what is wrong (the engine's very words).
 */
export function parseCode(text) {
  if (typeof text !== "string") throw new InvalidCodeError(`a deal code must be a string, not ${quote(text)}`);
  const canonical = text.replace(BLANKS, "").toUpperCase();
  const match = isAscii(text) ? CODE_RE.exec(canonical) : null;
  if (match === null) throw new InvalidCodeError(diagnose(text));
  const [, version, kind] = match;
  let body = match[3];
  if (version !== String(FORMAT_VERSION)) {
    throw new InvalidCodeError(
      `deal code ${quote(text)} has format version ${version}; this engine reads version ${FORMAT_VERSION} (HM1-…)`,
    );
  }
  if (!Object.hasOwn(KINDS, kind)) {
    const known = Object.entries(KINDS).map(([k, v]) => `${k} = ${v}`).join(", ");
    throw new InvalidCodeError(`deal code ${quote(text)} has unknown kind ${quote(kind)} (known: ${known})`);
  }
  if (body.includes("-")) {
    const groups = body.split("-");
    if (groups.length !== LONG_GROUPS || groups.some((group) => group.length !== BODY_LENGTH)) {
      throw new InvalidCodeError(wrongParts(text));
    }
    body = groups.join("");
  }
  if (body.length !== BODY_LENGTH && body.length !== LONG_BODY_LENGTH) {
    throw new InvalidCodeError(
      `deal code ${quote(text)} ends in ${body.length} letters; it needs exactly ${BODY_LENGTH} or ${LONG_BODY_LENGTH} (A-Z)`,
    );
  }
  let number = 0n;
  for (const letter of body) number = number * 26n + BigInt(LETTERS.indexOf(letter));
  return codeOf(kind, number, body.length === LONG_BODY_LENGTH);
}

/** The code {kind, long, letters, number, canonical} of a kind and number (BigInt). */
export function codeOf(kind, number, long = false) {
  const space = long ? LONG_CODE_SPACE : CODE_SPACE;
  if (!Object.hasOwn(KINDS, kind)) throw new InvalidCodeError(`unknown deal kind ${quote(kind)} (known: ${Object.keys(KINDS).join(", ")})`);
  if (typeof number !== "bigint") throw new InvalidCodeError(`a deal number must be a BigInt, not ${quote(number)}`);
  if (number < 0n || number >= space) {
    throw new InvalidCodeError(`deal number ${number} is outside 0…${space - 1n} (a ${long ? "long" : "short"} code)`);
  }
  let letters = "";
  let n = number;
  for (let k = 0; k < (long ? LONG_BODY_LENGTH : BODY_LENGTH); k++) {
    letters = LETTERS[Number(n % 26n)] + letters;
    n /= 26n;
  }
  const groups = letters.match(/.{7}/g).join("-");
  return { kind, long, letters, number, canonical: `HM${FORMAT_VERSION}-${kind}-${groups}` };
}

/**
 * The deal a code names: {code (canonical), piles: 12 × 8 cards bottom to top, reserve: R1…R8}.
 * Async (SHA-256 through crypto.subtle). Throws InvalidCodeError on a malformed code.
 */
export async function dealFromCode(text) {
  const { canonical } = parseCode(text);
  const seed = await sha256(ascii(canonical));
  // 13 blocks (104 words) almost always suffice for the 103 draws; a rejected word asks for more
  const blocks = [];
  for (let wanted = 13; ; wanted += 13) {
    while (blocks.length < wanted) blocks.push(await sha256(concat(seed, uint32(blocks.length))));
    const deck = shuffledDeck(wordsOf(blocks));
    if (deck !== null) return dealOf(canonical, deck);
  }
}

/**
 * Fisher-Yates from the top down on the word stream `next()` (each call the next 32-bit word,
 * or null when the words run out): the shuffled 104 cards, or null if the words ran out.
 * Rejection sampling: a word at or above 2^32 - 2^32 mod n is skipped.
 */
export function shuffledDeck(next) {
  const deck = UNSHUFFLED.slice();
  for (let i = deck.length - 1; i >= 1; i--) {
    const n = i + 1;
    const limit = 2 ** 32 - (2 ** 32 % n);
    let word;
    do {
      word = next();
      if (word === null) return null;
    } while (word >= limit);
    const j = word % n;
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  return deck;
}

/** A shuffled deck as deal JSON: {code, piles (12 × 8, bottom to top), reserve (R1…R8)}. */
export function dealOf(code, deck) {
  const piles = Array.from({ length: 12 }, (_, p) => deck.slice(p * 8, p * 8 + 8));
  return { code, piles, reserve: deck.slice(96) };
}

/** Check a contribution: 32 to 64 lowercase hex characters; returns it unchanged, or throws. */
export function checkContribution(text) {
  if (typeof text !== "string") {
    throw new InvalidCodeError(`a contribution must be a string of 32 to 64 lowercase hex characters, not ${quoteShort(text)}`);
  }
  if (!CONTRIBUTION_RE.test(text)) {
    throw new InvalidCodeError(
      /^[0-9a-f]*$/.test(text)
        ? `contribution ${quoteShort(text)} has ${text.length} hex characters; it needs 32 to 64 (0-9, a-f)`
        : `contribution ${quoteShort(text)} must be 32 to 64 lowercase hex characters (0-9, a-f only)`,
    );
  }
  return text;
}

/** Check a seal's seed: 64 lowercase hex characters; returns it unchanged, or throws. */
export function checkSeedHex(seedHex) {
  if (typeof seedHex !== "string" || !SEED_HEX_RE.test(seedHex)) {
    throw new InvalidCodeError(`a seal's seed must be 64 lowercase hex characters (32 bytes), not ${quoteShort(seedHex)}`);
  }
  return seedHex;
}

/** The commitment: lowercase hex SHA-256 of "halfmoon-seal:" + seedHex. */
export async function sealCommitment(seedHex) {
  checkSeedHex(seedHex);
  return hex(await sha256(ascii(`halfmoon-seal:${seedHex}`)));
}

/**
 * A sealed race's code: SHA-256 of "halfmoon-deal:" + seedHex + ":" + the contributions sorted and
 * joined by "," (duplicates kept), as a big-endian integer mod 26^28 → a long code of kind S.
 */
export async function sealedCode(seedHex, contributions) {
  checkSeedHex(seedHex);
  if (typeof contributions === "string") {
    throw new InvalidCodeError(`contributions must be a list of strings, not the string ${quoteShort(contributions)}`);
  }
  if (!contributions || typeof contributions[Symbol.iterator] !== "function") {
    throw new InvalidCodeError(`contributions must be a list of strings, not ${quoteShort(contributions)}`);
  }
  const sorted = [...contributions].map(checkContribution).sort();
  const digest = await sha256(ascii(`halfmoon-deal:${seedHex}:${sorted.join(",")}`));
  return codeOf("S", BigInt(`0x${hex(digest)}`) % LONG_CODE_SPACE, true);
}

/**
 * Whether a revealed seal holds: the seed's commitment is the one shown at the start and the seed
 * with the contributions gives `code` (a code's text). Resolves to true or false, never throws.
 */
export async function checkSeal({ commitment, seed, contributions, code }) {
  try {
    if ((await sealCommitment(seed)) !== commitment) return false;
    return (await sealedCode(seed, contributions)).canonical === parseCode(code).canonical;
  } catch (error) {
    if (error instanceof InvalidCodeError) return false;
    throw error;
  }
}

// -- helpers ---------------------------------------------------------------------------------

function wrongParts(text) {
  return (
    `deal code ${quote(text)} must have three parts separated by '-' (${EXAMPLE}); only a long code's ` +
    `${LONG_BODY_LENGTH} letters may be split, in ${LONG_GROUPS} groups of ${BODY_LENGTH} (${LONG_EXAMPLE})`
  );
}

/** What is wrong with a code that does not match the overall pattern (as the engine says it). */
function diagnose(text) {
  const stripped = text.replace(BLANKS, "");
  const canonical = stripped.toUpperCase();
  const parts = canonical.split("-");
  if (!canonical) return `empty deal code (${EXAMPLE})`;
  if (parts.length !== 3 && parts.length !== 3 + LONG_GROUPS - 1) return wrongParts(text);
  const [head, kind] = parts;
  const body = parts.slice(2).join("");
  if (!/^HM[0-9]+$/.test(head)) return `deal code ${quote(text)} must start with 'HM' and a version number (${EXAMPLE})`;
  if (!/^[A-Z]$/.test(kind)) {
    return `deal code ${quote(text)}: the kind ${quote(kind)} must be one letter (${Object.keys(KINDS).join(", ")})`;
  }
  const allowed = LETTERS + "-0123456789";
  let bad = [...new Set(Array.from(stripped).filter((ch) => !isAscii(ch) || !allowed.includes(ch.toUpperCase())))];
  if (bad.length) return `deal code ${quote(text)}: ${quote(sortedCodePoints(bad).join(""))} not allowed, ${BODY_RULE}`;
  bad = [...new Set(Array.from(body).filter((ch) => !LETTERS.includes(ch)))];
  if (bad.length) return `deal code ${quote(text)}: ${quote(sortedCodePoints(bad).join(""))} not allowed, ${BODY_RULE}`;
  return `deal code ${quote(text)} is malformed (${EXAMPLE})`;
}

const sortedCodePoints = (chars) => chars.sort((a, b) => a.codePointAt(0) - b.codePointAt(0));
// eslint-disable-next-line no-control-regex
const isAscii = (text) => /^[\x00-\x7f]*$/.test(text);

/** Quote a value the way Python's repr() quotes a string (the engine's messages use it). */
function quote(value) {
  if (typeof value !== "string") return value === null || value === undefined ? "None" : String(value);
  const q = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of value) {
    const c = ch.codePointAt(0);
    if (ch === "\\" || ch === q) out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else out += ch;
  }
  return q + out + q;
}

/** quote(), cut short past 80 characters (seal parts can be long). */
function quoteShort(value) {
  const quoted = quote(value);
  return quoted.length <= 80 ? quoted : quoted.slice(0, 77) + "…";
}

function wordsOf(blocks) {
  let k = 0;
  return () => {
    const block = k >> 3;
    if (block >= blocks.length) return null;
    const view = new DataView(blocks[block].buffer, blocks[block].byteOffset, 32);
    const word = view.getUint32((k & 7) * 4, false);
    k++;
    return word;
  };
}

async function sha256(bytes) {
  return new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", bytes));
}

const ascii = (text) => new TextEncoder().encode(text);
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function uint32(n) {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n, false);
  return out;
}

function concat(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
