// The live races' words (watchlist.js): what each line says of a race, in both languages.

import assert from "node:assert/strict";
import test from "node:test";

import { _STRINGS_FOR_TESTS as STRINGS, t } from "../../client/halfmoon_web/static/js/i18n.js";
import { raceFacts } from "../../client/halfmoon_web/static/js/watchlist.js";

const running = { phase: "running", racing: 2, finished: 1, spectators: 1, elapsed_ms: 192000 };

test("a race in progress says who races, who finished, how long and who watches", () => {
  assert.equal(raceFacts(running, t("en")), "2 racing · 1 finished · running for 3:12 · 1 spectator");
  assert.equal(raceFacts(running, t("it")), "2 in gara · 1 all'arrivo · in corso da 3:12 · 1 spettatore");
  const fresh = { ...running, finished: 0, spectators: 0 };
  assert.equal(raceFacts(fresh, t("en")), "2 racing · running for 3:12 · 0 spectators");
});

test("a race counting down says it is about to start", () => {
  const counting = { phase: "countdown", racing: 0, finished: 0, spectators: 3, elapsed_ms: 0 };
  assert.equal(raceFacts(counting, t("en")), "about to start · 3 spectators");
  assert.equal(raceFacts(counting, t("it")), "sta per partire · 3 spettatori");
});

test("both languages have every live-list word", () => {
  assert.deepEqual(Object.keys(STRINGS.it.live).sort(), Object.keys(STRINGS.en.live).sort());
});
