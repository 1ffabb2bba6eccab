// Tiny DOM helpers shared by the screens.

/** h("button", {class: "x", onclick: f, dataset: {pos: "1"}}, "text", child…) */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** "m:ss" (or "h:mm:ss") from milliseconds. */
export function formatTime(ms) {
  const total = Math.max(0, Math.floor((ms || 0) / 1000));
  const s = String(total % 60).padStart(2, "0");
  const m = Math.floor(total / 60) % 60;
  const hours = Math.floor(total / 3600);
  return hours ? `${hours}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/** A UTC day ("2026-11-30") in the reader's words: «30 novembre 2026», "30 November 2026". */
export const localDate = (day, lang) =>
  new Date(`${day}T12:00:00Z`).toLocaleDateString(lang === "it" ? "it-IT" : "en-GB", { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });

/** Copy text to the clipboard; resolves true on success. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { readonly: true }, text);
    Object.assign(area.style, { position: "fixed", opacity: "0" }); // CSSOM: the CSP allows no style attribute
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

const FOCUSABLE = "button, a[href], input, select, textarea, [tabindex]";
const drawn = new WeakMap(); // container → the markup last put in it

/**
 * Put `nodes` in `container` only if they differ from what it shows (a status region drawn again
 * the same is said again by a screen reader); and a control focused in it keeps the focus (the
 * one at the same place), not lost to the page. Returns whether anything changed.
 */
export function replaceIfChanged(container, nodes) {
  const html = nodes.map((n) => (n instanceof Element ? n.outerHTML : String(n instanceof Node ? n.textContent : n))).join("");
  if (drawn.get(container) === html) return false;
  const focused = container.contains(document.activeElement) ? document.activeElement : null;
  const at = focused ? [...container.querySelectorAll(FOCUSABLE)].indexOf(focused) : -1;
  container.replaceChildren(...nodes);
  drawn.set(container, html);
  const again = at >= 0 ? container.querySelectorAll(FOCUSABLE)[at] : null;
  if (again) again.focus();
  return true;
}
