// The browser client's pure modules: the rules text, the two languages, the settings and the
// replay of a finished game with the rules in JavaScript.

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { RANK_NAMES_IT, cardSymbol, parseCard, parsePosition } from "../../client/halfmoon_web/static/js/cards.js";
import { _STRINGS_FOR_TESTS as STRINGS, errorText, pickLanguage, t } from "../../client/halfmoon_web/static/js/i18n.js";
import { ReplayError, replayBoards } from "../../client/halfmoon_web/static/js/replay.js";
import { RULES } from "../../client/halfmoon_web/static/js/rules.js";
import { DEFAULTS, loadSettings, saveSettings } from "../../client/halfmoon_web/static/js/settings.js";

const ROOT = new URL("../../", import.meta.url);
const read = (path) => readFileSync(new URL(path, ROOT), "utf8");

const SEED = new URL("../shared/seed/", ROOT);

// The seed's last rule, word for word: the rules page quotes it (the first test checks these copies
// against the seed itself when the seed is beside the work tree).
const LAST_RULE = {
  it: "Non ci sono né un risolutore né un pulsante per i suggerimenti: l’app non indica se una smazzata si può vincere.",
  en: "There is neither a solver nor a hint button: the app does not say whether a deal can be won.",
};

test("the rules hold every sentence of the seed, in Italian and in English", { skip: !existsSync(SEED) && "the seed directory is not beside the work tree" }, () => {
  const norm = (text) => text.replace(/^(• |- |#+ )/gm, "").replace(/\s+/g, " ");
  const italian = read("../shared/seed/000_c026d1baf5ef2d78.txt");
  const english = read("../shared/seed/RULES-en.md");
  for (const [text, rules, last] of [[italian, RULES.it, LAST_RULE.it], [english, RULES.en, LAST_RULE.en]]) {
    assert.ok(norm(text).includes(last), `the seed's last rule is not: ${last}`);
    const sentences = norm(text).split(/(?<=[.:!?)]) /).filter((x) => x.trim());
    assert.ok(sentences.length > 30);
    for (const sentence of sentences) {
      assert.ok(norm(rules).includes(sentence), `missing from rules.js: ${sentence.slice(0, 60)}`);
    }
  }
});

test("the rules quote the seed's last rule word for word, as an item of what the app does", () => {
  assert.ok(RULES.it.includes(`\n- ${LAST_RULE.it}\n`));
  assert.ok(RULES.en.includes(`\n- ${LAST_RULE.en}\n`));
});

test("the rules page never talks about whether a deal can be won (the seed), but to quote the rule that it does not", () => {
  const winnability = /vincer|vincibil|risolvibil|winnab|solvab|can be won|could (?:have )?be(?:en)? won/i;
  for (const [text, last] of [[RULES.it, LAST_RULE.it], [RULES.en, LAST_RULE.en]]) {
    assert.doesNotMatch(text.replace(last, ""), winnability);
  }
});

test("Italian cards use the seed's letters A, V, D, R; English A, J, Q, K", () => {
  assert.deepEqual(RANK_NAMES_IT.slice(10), ["V", "D", "R"]);
  assert.equal(cardSymbol(parseCard("JC"), "it"), "V♣");
  assert.equal(cardSymbol(parseCard("QH"), "it"), "D♥");
  assert.equal(cardSymbol(parseCard("KH"), "it"), "R♥");
  assert.equal(cardSymbol(parseCard("KH"), "en"), "K♥");
  assert.equal(cardSymbol(parseCard("10d"), "en"), "10♦");
  assert.throws(() => parseCard("11H"), /not a card: "11H"/);
  assert.throws(() => parsePosition("R9"), /no such position: "R9"/);
});

test("the language comes from the saved choice, else the browser's", () => {
  assert.equal(pickLanguage(null, ["it-IT", "en"]), "it");
  assert.equal(pickLanguage(null, ["de-DE", "en-GB"]), "en");
  assert.equal(pickLanguage(null, ["fr"]), "en");
  assert.equal(pickLanguage("it", ["en-US"]), "it");
  assert.equal(pickLanguage("xx", ["it"]), "it");
});

test("both languages have every word, and the Italian uses the seed's words", () => {
  assert.deepEqual(Object.keys(STRINGS.it).sort(), Object.keys(STRINGS.en).sort());
  assert.deepEqual(Object.keys(STRINGS.it.statuses).sort(), Object.keys(STRINGS.en.statuses).sort());
  assert.equal(t("it").moveErrors, "Errori di mossa");
  assert.equal(t("it").placementHelp, "Aiuto al posizionamento");
  assert.equal(t("zz").undo, "Undo");
});

test("a refusal from the server is told in the player's language, naming what it is about", () => {
  assert.deepEqual(Object.keys(STRINGS.it.errors).sort(), Object.keys(STRINGS.en.errors).sort());
  assert.deepEqual(Object.keys(STRINGS.it.outcomes).sort(), Object.keys(STRINGS.en.outcomes).sort());
  assert.equal(errorText("it", "no_such_room", "ZZZZZZ", "there is no room 'ZZZZZZ'"), "La gara ZZZZZZ non esiste (forse è già finita).");
  assert.equal(errorText("en", "no_such_room", "ZZZZZZ", "x"), "There is no race ZZZZZZ (it may have ended).");
  assert.match(errorText("it", "bad_code", "HM1-N-AAA", "x"), /^Il codice HM1-N-AAA non è valido/);
  assert.match(errorText("it", "room_full", null, "x"), /al completo/);
  assert.match(errorText("it", "room_log_full", null, "x"), /numero massimo di azioni/);
  assert.match(errorText("en", "room_log_full", null, "x"), /accepts no more/);
  assert.match(errorText("it", "too_many_steps", null, "x"), /mosse e annullamenti/);
  assert.match(errorText("en", "too_many_steps", null, "x"), /moves and undos as one player may/);
  assert.match(errorText("it", "unavailable", null, "the game state cannot be saved right now"), /non è cambiato nulla: riprova/);
  assert.match(errorText("en", "shutting_down", null, "this server is restarting"), /restarting: try again/);
  for (const lang of ["it", "en"]) {
    for (const [code, say] of Object.entries(STRINGS[lang].errors)) {
      const text = errorText(lang, code, "Ada", "server message");
      assert.ok(text.length > 10 && text !== "server message", `${lang} ${code}`);
      if (say.length > 0) assert.ok(text.includes("Ada"), `${lang} ${code} names its subject`);
    }
  }
  // an error without words of its own, or whose subject is unknown, keeps the server's message
  assert.equal(errorText("it", "rate_limited", null, "too many messages"), "too many messages");
  assert.equal(errorText("it", "no_such_room", null, "there is no room 'X'"), "there is no room 'X'");
  assert.equal(errorText("en", undefined, null, "Error: 500 Internal Server Error"), "Error: 500 Internal Server Error");
});

test("settings are remembered, with «Errori di mossa» and the sound off at first", () => {
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
  assert.deepEqual(loadSettings(storage), DEFAULTS);
  assert.equal(DEFAULTS.sound, false);
  assert.equal(DEFAULTS.terse, false); // «Annunci brevi»: the full announcement at first
  saveSettings(storage, { moveErrors: true, placementHelp: true, sound: true, terse: true, lang: "en", name: "Ada" });
  assert.deepEqual(loadSettings(storage), { moveErrors: true, placementHelp: true, sound: true, terse: true, lang: "en", name: "Ada" });
  store.set("halfmoon.settings", "{not json");
  assert.deepEqual(loadSettings(storage), DEFAULTS);
});

const WON = JSON.parse(read("tests/vectors/won_game_browser.json"));
const DEAL = JSON.parse(read("tests/vectors/deals.json")).deals.find((d) => d.code === WON.code);

test("a won record replays on its deal to an empty table, 520 points in 48 moves", () => {
  const frames = replayBoards(DEAL, WON.moves);
  assert.equal(frames.length, 49);
  assert.deepEqual(frames[0].board.counts, [...Array(12).fill(8), ...Array(8).fill(1)]);
  assert.equal(frames[0].board.tops[0], DEAL.piles[0][7]);
  const last = frames.at(-1);
  assert.deepEqual([last.score, last.moves], [520, 48]);
  assert.ok(last.board.counts.every((n) => n === 0));
  assert.ok(last.board.tops.every((c) => c === null));
});

test("an undo in a record puts the cards back and takes the points away", () => {
  const [first, second] = WON.moves;
  const frames = replayBoards(DEAL, [first, "undo", first, second]);
  assert.deepEqual(frames[2].board, frames[0].board);
  assert.deepEqual([frames[2].score, frames[2].moves], [0, 0]);
  assert.deepEqual([frames[4].moves], [2]);
});

test("a record that does not fit its deal is refused, naming the step", () => {
  assert.throws(() => replayBoards(DEAL, [["1", "2"]]), (e) => e instanceof ReplayError && /step 1/.test(e.message) && /not a legal move/.test(e.message));
  assert.throws(() => replayBoards(DEAL, ["undo"]), /step 1: nothing to undo/);
  assert.throws(() => replayBoards(DEAL, [["1", "Z"]]), /step 1: no such position/);
  assert.throws(() => replayBoards({ piles: [] }, []), ReplayError);
});
