// The account page's pure part (account.js): a device's stored label said in the reader's language.

import assert from "node:assert/strict";
import { test } from "node:test";

import { shownLabel } from "../../client/halfmoon_web/static/js/account.js";
import { t } from "../../client/halfmoon_web/static/js/i18n.js";

test("a device's kind is said in the page's language, whichever language stored it", () => {
  const it = t("it").account.kinds;
  const en = t("en").account.kinds;
  assert.equal(shownLabel("Chrome, phone", it), "Chrome, telefono");
  assert.equal(shownLabel("Chrome, phone", en), "Chrome, phone");
  assert.equal(shownLabel("Safari, tablet", it), "Safari, tablet");
  assert.equal(shownLabel("Firefox, computer", it), "Firefox, computer");
});

test("a label of another shape (a terminal's, an older one) is shown as it is", () => {
  const it = t("it").account.kinds;
  assert.equal(shownLabel("halfmoon link", it), "halfmoon link");
  assert.equal(shownLabel("my phone, phone case", it), "my phone, phone case");
});
