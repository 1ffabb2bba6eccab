// The divergence view (/compare/{a}/{b}): two finished games of one deal, where their records
// parted — the first step that differs, not the first position that differs — and what each line
// led to, both boards side by side (stacked on a phone) and stepped on together.

import { createBoard } from "./board.js";
import { POSITION_NAMES, cardSymbol, parseCard, parsePosition } from "./cards.js";
import { formatTime, h } from "./dom.js";
import { errorText } from "./i18n.js";
import { fetchStored } from "./net.js";
import { replayBoards } from "./replay.js";

/** A step's identity: "undo", or a move's positions in order (a record may name them in any order). */
function stepKey(step) {
  if (!Array.isArray(step)) return JSON.stringify(step);
  try {
    return step.map(parsePosition).sort((a, b) => a - b).join(",");
  } catch {
    return JSON.stringify(step);
  }
}

/**
 * How many steps two records share from the start: the index of the first step that differs
 * (the shorter record's length when one is the other's beginning; both lengths when they are the
 * same). Two orders of the same moves can reach the same board: they count as differing here.
 */
export function divergence(movesA, movesB) {
  const shared = Math.min(movesA.length, movesB.length);
  let at = 0;
  while (at < shared && stepKey(movesA[at]) === stepKey(movesB[at])) at += 1;
  return at;
}

/** A step on `board` in words: "5♠ (pila 1) + 6♥ (pila 8)", or «Annulla». */
function stepText(step, board, w, lang) {
  if (step === "undo") return w.undo;
  return step.map((name) => {
    const p = POSITION_NAMES.indexOf(name);
    return `${cardSymbol(parseCard(board.tops[p]), lang)} (${p < 12 ? w.pile : w.slot} ${name})`;
  }).join(" + ");
}

/** The compare page into `main`: loads both records (the server refuses while their deal is in
 * play; a game just finished may take a moment to be stored: fetchStored). */
export function comparePage(main, w, lang, idA, idB) {
  document.title = `${w.compare} · Half Moon`;
  const box = h("section", { class: "compare" }, h("p", { class: "muted" }, w.loading));
  main.append(box);
  const load = (id) => fetchStored(`/api/games/${encodeURIComponent(id)}`).then(async (response) => {
    const data = await response.json().catch(() => null);
    if (response.ok) return data;
    throw Object.assign(new Error(String(response.status)), { code: data && data.error && data.error.code });
  });
  Promise.all([load(idA), load(idB)]).then(([a, b]) => {
    if (a.code !== b.code) return fail("other_deal", w.compareOtherDeal);
    const lines = [a, b].map((game, i) => ({ game, id: [idA, idB][i], frames: replayBoards(game.deal, game.moves) }));
    box.replaceChildren(...draw(lines, divergence(a.moves, b.moves), w, lang));
  }).catch((error) => {
    const said = errorText(lang, error.code, null, "");
    fail(error.code || "failed", said && said !== error.code ? said : w.gameUnavailable);
  });

  function fail(code, text) {
    box.replaceWith(h("section", { class: "panel compare-error", dataset: { error: code } },
      h("h1", {}, w.compare), h("p", { role: "alert" }, text),
      h("p", {}, [idA, idB].flatMap((id, i) => [i ? " · " : "", h("a", { href: `/replay/${encodeURIComponent(id)}`, "data-link": true }, `${w.replay} ${i ? "B" : "A"}`)]))));
  }
}

function draw(lines, parted, w, lang) {
  const last = Math.max(...lines.map((line) => line.frames.length)) - 1;
  const same = lines.every((line) => line.game.moves.length === parted);
  let at = parted;
  const sides = lines.map((line, i) => {
    const { game, frames } = line;
    const end = frames[frames.length - 1];
    const wrap = h("div", { class: "board-wrap" });
    const now = h("p", { class: "step", role: "status" });
    const box = h("article", { class: "compare-line", dataset: { line: i ? "b" : "a" } },
      h("h2", {}, `${i ? "B" : "A"} · ${game.name || ""}`), now, wrap,
      h("dl", {}, [
        [w.status, w.statuses[game.outcome] || game.outcome, "outcome"], [w.score, game.score, "score"],
        [w.cardsLeft, end.board.counts.reduce((sum, n) => sum + n, 0), "cards"], [w.moves, end.moves, "moves"],
        [w.time, formatTime(game.time_ms), "time"],
      ].flatMap(([name, value, key]) => [h("dt", {}, name), h("dd", { dataset: { result: key } }, value)])),
      h("a", { href: `/replay/${encodeURIComponent(line.id)}`, "data-link": true }, w.seeReplay));
    return { board: createBoard(wrap, {}), now, box };
  });
  const counter = h("span", { class: "muted counter", "aria-live": "polite" });
  const button = (label, to, name) => h("button", { type: "button", dataset: { step: name }, onclick: () => go(to()) }, label);
  const prev = button("◀ " + w.prev, () => at - 1, "prev");
  const next = button(w.next + " ▶", () => at + 1, "next");
  const go = (i) => {
    at = Math.max(0, Math.min(last, i));
    sides.forEach((side, k) => {
      const { frames, game } = lines[k];
      const frame = frames[Math.min(at, frames.length - 1)];
      const step = game.moves[at];
      // the board after `at` steps, the cards of this line's next move ringed
      const ring = Array.isArray(step) ? step.map((name) => POSITION_NAMES.indexOf(name)) : [];
      side.board.update(frame.board, { lang, label: `${game.name} · ${w.step} ${Math.min(at, frames.length - 1)}`, selection: ring });
      side.now.textContent = step === undefined ? w.compareLineOver : `${w.compareNext}: ${stepText(step, frame.board, w, lang)}`;
    });
    counter.textContent = `${w.step} ${at} / ${last}`;
    prev.disabled = at === 0;
    next.disabled = at === last;
  };
  const section = [
    h("h1", {}, w.compare, " ", h("span", { class: "muted nowrap" }, lines[0].game.code)),
    h("p", { class: "parted", dataset: { divergence: parted } }, same ? w.compareSame : w.compareParted(parted)),
    h("p", { class: "muted note" }, w.compareNote),
    h("div", { class: "compare-grid" }, sides.map((side) => side.box)),
    h("div", { class: "actions replay-controls", onkeydown: (e) => {
      const to = { ArrowLeft: at - 1, ArrowRight: at + 1 }[e.key];
      if (to !== undefined) { e.preventDefault(); go(to); }
    } },
    button("« " + w.first, () => 0, "first"), prev, counter, next,
    button(w.compareAtSplit, () => parted, "split"), button(w.last + " »", () => last, "last")),
  ];
  go(at);
  return section;
}
