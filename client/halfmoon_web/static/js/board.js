// Drawing a board: the 12 piles in an arc open downwards and the reserve in two rows of four
// in its middle (the geometry of shared/halfmoon/diagram.py), each pile or slot a <button>
// carrying data-pos and, while it shows a card, data-card; under each card, its position and count.

import { HIDDEN, POSITION_NAMES, PILE_COUNT, cardSymbol, isRed, parseCard } from "./cards.js";
import { t } from "./i18n.js";

/** Grid cell (row, column) of each position on a 9 × 4 grid; the reserve is shifted half a cell. */
export const PILE_CELLS = [
  [3, 0], [2, 0], [1, 0],
  [0, 1], [0, 2], [0, 3], [0, 4], [0, 5], [0, 6], [0, 7],
  [1, 8], [2, 8],
];
export const RESERVE_CELLS = Array.from({ length: 8 }, (_, slot) => [1 + Math.floor(slot / 4), 2 + (slot % 4)]);
export const CELLS = [...PILE_CELLS, ...RESERVE_CELLS];

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

/** The accessible name of a position: what it shows first (its card, its place and count, as
 * under it: what voice control is told to press), then in words: "5♠ 1·8 (pile 1, 8 cards)",
 * "R3·0 (reserve slot R3, empty)". */
export function slotLabel(lang, position, top, count) {
  const words = t(lang);
  const where = position < PILE_COUNT ? `${words.pile} ${POSITION_NAMES[position]}` : `${words.slot} ${POSITION_NAMES[position]}`;
  const howMany = `${count} ${count === 1 ? words.card : words.cards}`;
  const shown = `${POSITION_NAMES[position]}·${count}`;
  if (top) return `${cardSymbol(parseCard(top), lang)} ${shown} (${where}, ${howMany})`;
  if (count > 0) return `${shown} (${words.faceDown}, ${where}, ${howMany})`;
  return `${shown} (${where}, ${words.empty})`;
}

/**
 * A board view inside `container`. `onTap(position)` is called when a card is activated
 * (omit it for a read-only board). Returns {update(board, {selection, dimmed, lang}), element}.
 */
export function createBoard(container, { onTap = null, small = false } = {}) {
  const root = el("div", small ? "board small" : "board");
  root.setAttribute("role", "group");
  // a read-only board in an aria-hidden wrapper is a picture: no Tab stops in it
  const decorative = !onTap && Boolean(container.closest('[aria-hidden="true"]'));
  const slots = CELLS.map(([row, col], position) => {
    const button = el("button", "slot");
    button.type = "button";
    button.dataset.pos = POSITION_NAMES[position];
    const half = position >= PILE_COUNT ? 1 : 0;
    button.style.gridRow = String(row + 1);
    button.style.gridColumn = `${col * 2 + half + 1} / span 2`;
    const face = el("span", "face");
    face.setAttribute("aria-hidden", "true");
    const corner = el("span", "corner");
    const pip = el("span", "pip");
    face.append(corner, pip);
    const label = el("span", "label");
    label.setAttribute("aria-hidden", "true");
    button.append(face, label);
    if (onTap) button.addEventListener("click", () => onTap(position));
    else button.setAttribute("aria-disabled", "true");
    // one Tab stop per board (a roving tabindex): the card last focused, the arrow keys move within
    button.tabIndex = decorative || position > 0 ? -1 : 0;
    if (!decorative) button.addEventListener("focus", () => slots.forEach((s, p) => { s.button.tabIndex = p === position ? 0 : -1; }));
    root.append(button);
    return { button, face, corner, pip, label, shown: undefined };
  });
  root.addEventListener("keydown", (event) => moveFocus(event, slots));
  container.append(root);
  if (decorative) root.inert = true;

  /** `over`: the game has ended: its cards stay readable but are no buttons to press (disabled). */
  function update(board, { selection = [], dimmed = new Set(), lang = "en", label = "", over = false } = {}) {
    if (label) root.setAttribute("aria-label", label);
    slots.forEach((slot, position) => {
      const { button, face, corner, pip, label: under } = slot;
      const top = board ? board.tops[position] : null;
      // a card that goes leaves with a short animation (a copy of it fades away on top)
      if (!small && slot.shown && slot.shown !== top) {
        const ghost = face.cloneNode(true);
        ghost.classList.add("ghost");
        button.append(ghost);
        setTimeout(() => ghost.remove(), 320);
      }
      slot.shown = top;
      const count = board ? board.counts[position] : 0;
      // "??": a spectator's view of a card not every racer still playing has seen: face down
      const card = top && top !== HIDDEN ? parseCard(top) : null;
      if (card) button.dataset.card = card.name;
      else delete button.dataset.card;
      button.classList.toggle("empty", !card && count === 0);
      button.classList.toggle("down", !card && count > 0);
      button.classList.toggle("red", Boolean(card && isRed(card)));
      button.classList.toggle("selected", selection.includes(position));
      button.classList.toggle("dim", dimmed.has(position));
      button.setAttribute("aria-pressed", selection.includes(position) ? "true" : "false");
      button.setAttribute("aria-label", slotLabel(lang, position, card && card.name, count));
      if (onTap && over) button.removeAttribute("aria-disabled"); // (disabled says it)
      else if (onTap) button.setAttribute("aria-disabled", card ? "false" : "true");
      if (onTap) button.disabled = over;
      corner.textContent = card ? cardSymbol(card, lang) : "";
      pip.textContent = card ? cardSymbol(card, lang).slice(-1) : "";
      under.textContent = `${POSITION_NAMES[position]}·${count}`;
    });
  }
  /** A wrong tap: the card shakes. */
  function shake(position) {
    const { button } = slots[position];
    button.classList.remove("shake");
    void button.offsetWidth; // restart the animation
    button.classList.add("shake");
  }
  return { update, shake, element: root };
}

/** Arrow keys move the focus between the cards, in the arc's grid. */
function moveFocus(event, slots) {
  const step = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[event.key];
  if (!step) return;
  const current = slots.findIndex((s) => s.button === document.activeElement);
  if (current < 0) return;
  event.preventDefault();
  const at = (p) => [CELLS[p][0], CELLS[p][1] + (p >= PILE_COUNT ? 0.5 : 0)];
  const [r0, c0] = at(current);
  let best = -1;
  let bestScore = Infinity;
  slots.forEach((slot, p) => {
    if (p === current) return;
    const [r, c] = at(p);
    const dr = r - r0;
    const dc = c - c0;
    const along = step[0] ? dr * step[0] : dc * step[1];
    if (along <= 0) return;
    const across = step[0] ? Math.abs(dc) : Math.abs(dr);
    const score = along + across * 2;
    if (score < bestScore) {
      bestScore = score;
      best = p;
    }
  });
  if (best >= 0) slots[best].button.focus();
}
