// The quick-race queue's pure part (queue.js): server messages in, what the waiting screen shows.

import assert from "node:assert/strict";
import { test } from "node:test";

import { t } from "../../client/halfmoon_web/static/js/i18n.js";
import { initialQueue, queueLine, queueReduce, secondsLeft } from "../../client/halfmoon_web/static/js/queue.js";

const queued = (fields) => ({ type: "queued", count: 1, starts_at: null, starts_in_ms: null, offer: false, ...fields });

test("a lone player waits with no countdown, in both languages", () => {
  const s = queueReduce(initialQueue(), queued({}), 1000);
  assert.equal(s.phase, "queued");
  assert.equal(secondsLeft(s, 1000), null);
  assert.equal(queueLine(s, 1000, t("it")), "Aspettiamo un avversario…");
  assert.equal(queueLine(s, 1000, t("en")), "Waiting for a rival…");
});

test("the countdown runs on the local clock from starts_in_ms and stops at 0", () => {
  const s = queueReduce(initialQueue(), queued({ count: 2, starts_at: 99, starts_in_ms: 9500 }), 1000);
  assert.equal(s.startsAt, 10500);
  assert.equal(secondsLeft(s, 1000), 10); // 9.5 s, rounded up
  assert.equal(queueLine(s, 6000, t("it")), "Si parte tra 5 s");
  assert.equal(queueLine(s, 20000, t("en")), "Starts in 0 s");
  assert.equal(t("it").quick.players(2), "2 giocatori");
  assert.equal(t("en").quick.players(1), "1 player");
});

test("the offer carries its ghost, and keeping on clears it", () => {
  const ghost = { game: "g1", code: "HM1-S-AAAAAAAAAAAAAAAAAAAAAAAAAA", name: "Ann" };
  let s = queueReduce(initialQueue(), queued({ offer: true, ghost }), 0);
  assert.equal(s.offer, true);
  assert.deepEqual(s.ghost, ghost);
  s = queueReduce(s, queued({}), 10);
  assert.equal(s.offer, false);
  assert.equal(s.ghost, null);
});

test("matched gives the room and the name to join under; an error before any queued is a refusal", () => {
  const s = queueReduce(initialQueue(), { type: "matched", room: "K7WQ2M", players: 2, name: "Ada 2" }, 0);
  assert.deepEqual([s.phase, s.room, s.name, s.count], ["matched", "K7WQ2M", "Ada 2", 2]);
  const refused = queueReduce(initialQueue(), { type: "error", code: "already_queued", message: "…" }, 0);
  assert.equal(refused.phase, "refused");
  assert.equal(refused.error.code, "already_queued");
  assert.throws(() => queueReduce(initialQueue(), { type: "moved" }, 0), /unexpected message type/);
});

test("a refused tab says it is not in the queue, never that it waits for a rival", () => {
  const refused = queueReduce(initialQueue(), { type: "error", code: "already_queued", message: "…" }, 0);
  assert.equal(queueLine(refused, 0, t("it")), "Non sei in coda.");
  assert.equal(queueLine(refused, 0, t("en")), "You are not in the queue.");
});

test("the offer's text names the ghost only when a ghost is offered, in both languages", () => {
  for (const lang of ["it", "en"]) {
    const fantasma = lang === "it" ? /fantasma/ : /ghost/;
    assert.match(t(lang).quick.offerText(true), fantasma);
    assert.doesNotMatch(t(lang).quick.offerText(false), fantasma);
  }
});
