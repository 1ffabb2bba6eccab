// The browser's deal codes (client/halfmoon_web/static/js/codes.js) against the engine's golden
// vectors: tests/vectors/codes.json (long codes, parsing and its errors, long dailies, sealed
// races) and tests/vectors/deals.json (the short codes' deals). The Python engine passes the same
// files (tests/engine/test_codes.py, tests/engine/test_deal.py).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  InvalidCodeError, LONG_CODE_SPACE, checkContribution, checkSeal, codeOf, dealFromCode, parseCode,
  sealCommitment, sealedCode,
} from "../../client/halfmoon_web/static/js/codes.js";
import { dealFromCode as dealFromCodeSync } from "./deal.mjs";

const ROOT = new URL("../../", import.meta.url);
const readJson = (path) => JSON.parse(readFileSync(new URL(path, ROOT), "utf8"));
const GOLDEN = readJson("tests/vectors/codes.json");
const SHORT_DEALS = readJson("tests/vectors/deals.json").deals;

test("the golden parse vectors pass", () => {
  assert.ok(GOLDEN.parse.length >= 10);
  for (const vector of GOLDEN.parse) {
    const code = parseCode(vector.input);
    assert.deepEqual(code, {
      kind: vector.kind, long: vector.long, letters: vector.letters, number: BigInt(vector.number),
      canonical: vector.canonical,
    }, vector.input);
    assert.deepEqual(parseCode(code.canonical), code, "the canonical text parses to itself");
  }
});

test("the golden invalid codes throw the engine's exact message", () => {
  assert.ok(GOLDEN.invalid.length >= 15);
  for (const vector of GOLDEN.invalid) {
    assert.throws(() => parseCode(vector.input), (error) => {
      assert.ok(error instanceof InvalidCodeError);
      assert.equal(error.message, vector.error);
      return true;
    }, vector.input);
  }
  assert.throws(() => parseCode(12), /a deal code must be a string, not 12/);
});

test("codes of each kind and length round-trip through their numbers", () => {
  assert.equal(codeOf("S", 1n, true).canonical, "HM1-S-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAB");
  assert.equal(codeOf("N", 1n).canonical, "HM1-N-AAAAAAB");
  assert.equal(codeOf("D", LONG_CODE_SPACE - 1n, true).letters, "Z".repeat(28));
  assert.throws(() => codeOf("N", 26n ** 7n), /outside 0…8031810175 \(a short code\)/);
  assert.throws(() => codeOf("S", LONG_CODE_SPACE, true), /\(a long code\)/);
  assert.throws(() => codeOf("Q", 0n), /unknown deal kind 'Q'/);
  assert.throws(() => codeOf("N", 1), /a deal number must be a BigInt, not 1/);
});

test("the golden deals pass: short codes (deals.json) and long ones of each kind (codes.json)", async () => {
  const deals = [...SHORT_DEALS, ...GOLDEN.deals];
  assert.ok(GOLDEN.deals.some((deal) => parseCode(deal.code).kind === "S" && parseCode(deal.code).long));
  for (const deal of deals) {
    assert.deepEqual(await dealFromCode(deal.code), deal, deal.code);
    assert.deepEqual(dealFromCodeSync(deal.code), deal, `${deal.code} (the tests' synchronous helper)`);
  }
  const typed = await dealFromCode("  hm1-s-abcdefghijklmnopqrstuvwxyzab ");
  assert.equal(typed.code, "HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB");
  assert.deepEqual(typed, GOLDEN.deals.find((deal) => deal.code === typed.code));
  await assert.rejects(dealFromCode("HM1-N-AAAA"), /ends in 4 letters; it needs exactly 7 or 28/);
});

test("the golden long dailies' codes deal as the engine's", async () => {
  for (const vector of GOLDEN.daily.filter((v) => v.long)) {
    const number = BigInt(`0x${vector.hmac}`) % LONG_CODE_SPACE;
    assert.equal(codeOf("D", number, true).canonical, vector.code, vector.day);
  }
});

test("the golden seals pass: commitments, sealed codes and their check", async () => {
  assert.ok(GOLDEN.seals.length >= 5);
  for (const vector of GOLDEN.seals) {
    const where = `${vector.seed.slice(0, 8)}… with ${vector.contributions.length} contribution(s)`;
    assert.equal(await sealCommitment(vector.seed), vector.commitment, where);
    assert.equal((await sealedCode(vector.seed, vector.contributions)).canonical, vector.code, where);
    assert.equal(await checkSeal({ ...vector }), true, where);
    assert.equal(await checkSeal({ ...vector, code: vector.code.toLowerCase() }), true, where);
  }
});

test("a seal that does not hold is refused, never an error", async () => {
  const vector = GOLDEN.seals.find((v) => v.contributions.length === 3);
  const [first, ...rest] = vector.contributions;
  const other = GOLDEN.seals.find((v) => v.seed !== vector.seed);
  assert.equal(await checkSeal({ ...vector, contributions: rest }), false, "a contribution left out");
  assert.equal(await checkSeal({ ...vector, contributions: [...rest, first, first] }), false, "one added");
  assert.equal(await checkSeal({ ...vector, commitment: other.commitment }), false, "another commitment");
  assert.equal(await checkSeal({ ...vector, seed: other.seed }), false, "another seed");
  assert.equal(await checkSeal({ ...vector, code: other.code }), false, "another code");
  assert.equal(await checkSeal({ ...vector, code: "HM1-S-NOPE" }), false, "a malformed code");
  assert.equal(await checkSeal({ ...vector, contributions: ["xyz"] }), false, "a malformed contribution");
  assert.equal(await checkSeal({ ...vector, seed: undefined }), false, "no seed");
  assert.equal(await checkSeal({ ...vector, contributions: "a".repeat(32) }), false, "a string, not a list");
});

test("the golden bad contributions throw the engine's exact message", async () => {
  for (const vector of GOLDEN.bad_contributions) {
    assert.throws(() => checkContribution(vector.input), { message: vector.error }, vector.input);
  }
  const seed = GOLDEN.seals[0].seed;
  await assert.rejects(sealedCode(seed, ["a".repeat(31)]), /has 31 hex characters/);
  await assert.rejects(sealedCode(seed, "a".repeat(32)), /not the string/);
  await assert.rejects(sealCommitment("5EED".repeat(16)), /seal's seed must be 64 lowercase hex characters/);
});
