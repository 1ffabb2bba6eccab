// «Account» (/account): optional accounts with passkeys (docs/protocol.md, "Accounts"). Signed
// out: make an account (a name and a passkey) or sign in with a passkey. Signed in: this
// account's devices and passkeys (each revocable), another passkey, a one-time link for another
// device, sign-out. The session is an HttpOnly cookie the page never reads; the page sends this
// browser's player key (Authorization: Bearer) so the server links it to the account. A one-time
// link arrives as /account#link=TOKEN (a fragment: it never reaches a log). A terminal client
// (`halfmoon link`) shows a short code that a signed-in page approves here.

import { copyText, h } from "./dom.js";
import { playerKey } from "./me.js";

/** base64url (no padding) to bytes, and back: WebAuthn's binary fields travel so in JSON. */
export function fromBase64url(text) {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}
export function toBase64url(buffer) {
  return btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The server's creation options (JSON) as navigator.credentials.create() takes them. */
export function creationOptions(json) {
  return { ...json, challenge: fromBase64url(json.challenge), user: { ...json.user, id: fromBase64url(json.user.id) },
    excludeCredentials: (json.excludeCredentials || []).map((c) => ({ ...c, id: fromBase64url(c.id) })) };
}

/** The server's request options (JSON) as navigator.credentials.get() takes them. */
export function requestOptions(json) {
  return { ...json, challenge: fromBase64url(json.challenge),
    allowCredentials: (json.allowCredentials || []).map((c) => ({ ...c, id: fromBase64url(c.id) })) };
}

/** A PublicKeyCredential as the JSON the server verifies (binary fields in base64url). */
export function credentialJson(credential) {
  const r = credential.response;
  const response = { clientDataJSON: toBase64url(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = toBase64url(r.attestationObject);
    response.transports = r.getTransports ? r.getTransports() : [];
  } else {
    response.authenticatorData = toBase64url(r.authenticatorData);
    response.signature = toBase64url(r.signature);
    response.userHandle = r.userHandle ? toBase64url(r.userHandle) : null;
  }
  return { id: credential.id, rawId: toBase64url(credential.rawId), type: credential.type, response,
    clientExtensionResults: credential.getClientExtensionResults(), authenticatorAttachment: credential.authenticatorAttachment || undefined };
}

/** A short label for this device, from what the browser says of itself. */
function deviceLabel() {
  const ua = navigator.userAgent;
  const kind = /iPhone|Android.*Mobile/.test(ua) ? "phone" : /iPad|Android/.test(ua) ? "tablet" : "computer";
  const browser = /Firefox\//.test(ua) ? "Firefox" : /Edg\//.test(ua) ? "Edge" : /Chrom/.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "browser";
  return `${browser}, ${kind}`;
}

/** A device's or passkey's label as this page's language says it: the kind that deviceLabel()
 * stored (in English, whichever language made it) in the reader's words (`kinds`: account.kinds). */
export function shownLabel(label, kinds) {
  return String(label).replace(/, (phone|tablet|computer)$/, (all, kind) => `, ${kinds[kind] || kind}`);
}

async function call(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const key = playerKey(localStorage);
  if (key) headers.Authorization = `Bearer ${key}`;
  const response = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await response.json(); } catch { data = null; }
  return { status: response.status, ok: response.ok, data };
}

/** The /account page into `main`. */
export function accountPage(app, main, w, lang) {
  const a = w.account;
  const box = h("section", { class: "panel account", dataset: { page: "account" } }, h("h1", {}, a.title), h("p", { class: "muted" }, w.loading));
  main.append(box);
  document.title = `${a.title} · Half Moon`;
  const status = h("p", { id: "account-status", role: "status", class: "muted" });
  const say = (text) => { status.textContent = text; };
  const failed = (answer) => {
    const code = answer && answer.data && answer.data.error ? answer.data.error.code : null;
    say((code && a.errors[code]) || (answer && answer.data && answer.data.error && answer.data.error.message) || a.failed);
  };
  const day = (ms) => new Date(ms).toLocaleDateString(lang === "it" ? "it-IT" : "en-GB", { day: "numeric", month: "short", year: "numeric" });

  async function ceremony(kind, body) {
    const options = await call("POST", `/api/account/${kind}/options`, body);
    if (!options.ok) return options;
    let credential;
    try {
      credential = kind === "register"
        ? await navigator.credentials.create({ publicKey: creationOptions(options.data.publicKey) })
        : await navigator.credentials.get({ publicKey: requestOptions(options.data.publicKey) });
    } catch {
      return { ok: false, status: 0, data: { error: { code: "cancelled" } } };
    }
    return call("POST", `/api/account/${kind}`, { ceremony: options.data.ceremony, credential: credentialJson(credential), label: deviceLabel() });
  }

  function signedOut(note) {
    const name = h("input", { id: "account-name", name: "name", required: true, maxlength: "20", autocomplete: "nickname", value: app.settings.name || "" });
    const supported = typeof window.PublicKeyCredential === "function";
    box.replaceChildren(...[
      h("h1", {}, a.title),
      h("p", {}, a.why),
      supported ? null : h("p", { role: "alert" }, a.noPasskeys),
      h("h2", {}, a.create),
      h("form", { class: "row", id: "account-register", onsubmit: async (e) => {
        e.preventDefault();
        say(a.working);
        const answer = await ceremony("register", { name: name.value.trim() });
        if (answer.ok) { app.settings.name = answer.data.account.name; app.saveSettings(); signedIn(answer.data.account, a.registered); } else failed(answer);
      } }, h("label", { for: "account-name" }, w.yourName), name, h("button", { class: "primary", disabled: !supported }, a.register)),
      h("h2", {}, a.haveOne),
      h("p", {}, h("button", { type: "button", id: "account-signin", disabled: !supported, onclick: async () => {
        say(a.working);
        const answer = await ceremony("signin");
        if (answer.ok) signedIn(answer.data.account, a.signedInNow); else failed(answer);
      } }, a.signIn)),
      h("p", { class: "muted note" }, a.linkHint),
      status].filter(Boolean));
    if (note) say(note);
  }

  function signedIn(account, note) {
    const linkBox = h("div", { id: "device-link" });
    const terminalCode = h("input", { id: "terminal-code", name: "code", required: true, maxlength: "12", autocomplete: "off",
      autocapitalize: "characters", spellcheck: false, placeholder: "ABCD-EFGH" });
    const revoke = (path, label) => h("button", { type: "button", class: "small", "aria-label": `${a.revoke}: ${label}`, onclick: async () => {
      const answer = await call("DELETE", path);
      if (answer.ok) load(a.revoked); else failed(answer);
    } }, a.revoke);
    const label = (x) => shownLabel(x, a.kinds);
    const devices = h("ul", { class: "devices", id: "devices" }, account.devices.map((d) =>
      h("li", { dataset: { device: d.id } }, h("span", { class: "what" }, label(d.label), d.current ? h("strong", {}, ` · ${a.thisDevice}`) : null,
        h("small", { class: "muted" }, ` · ${a.since} ${day(d.created_at)}`, d.passkey ? "" : ` · ${a.byLink}`)), " ",
        revoke(`/api/account/devices/${encodeURIComponent(d.id)}`, label(d.label)))));
    const passkeys = h("ul", { class: "devices", id: "passkeys" }, account.passkeys.map((p) =>
      h("li", { dataset: { passkey: p.id } }, h("span", { class: "what" }, label(p.label), h("small", { class: "muted" }, ` · ${a.since} ${day(p.created_at)}`)), " ",
        account.passkeys.length > 1 ? revoke(`/api/account/passkeys/${encodeURIComponent(p.id)}`, label(p.label)) : null)));
    box.replaceChildren(
      h("h1", {}, a.title, h("span", { class: "muted" }, ` · ${account.name}`)),
      h("p", {}, a.signedInAs(account.name), " ", h("a", { href: "/me", "data-link": true }, w.me.title), "."),
      h("h2", {}, a.devices), devices,
      h("h2", {}, a.passkeys), passkeys,
      h("div", { class: "menu account-actions" },
        h("button", { type: "button", id: "account-add-passkey", onclick: async () => {
          say(a.working);
          let answer = await ceremony("register", {});
          if (answer.status === 401 && answer.data && answer.data.error && answer.data.error.code === "sign_in_again") {
            // a passkey is added only right after a sign-in: sign in again here, then add it
            say(a.signInFirst);
            const again = await ceremony("signin");
            answer = again.ok ? await ceremony("register", {}) : again;
          }
          if (answer.ok) signedIn(answer.data.account, a.passkeyAdded); else failed(answer);
        } }, a.addPasskey),
        h("button", { type: "button", id: "account-link", onclick: async () => {
          const answer = await call("POST", "/api/account/links", {});
          if (!answer.ok) { failed(answer); return; }
          const url = answer.data.url;
          linkBox.replaceChildren(h("p", {}, a.linkMade),
            h("p", { class: "row" }, h("input", { id: "device-link-url", readonly: true, value: url, "aria-label": a.linkLabel }),
              h("button", { type: "button", onclick: async () => say((await copyText(url)) ? a.copied : a.failed) }, a.copy)));
        } }, a.addDevice),
        h("button", { type: "button", id: "account-signout", onclick: async () => {
          const answer = await call("POST", "/api/account/signout", {});
          if (answer.ok) signedOut(a.signedOut); else failed(answer);
        } }, a.signOut)),
      linkBox,
      h("h2", {}, a.terminal),
      h("p", { class: "muted note" }, a.terminalWhy),
      h("form", { class: "row", id: "terminal-approve", onsubmit: async (e) => {
        e.preventDefault();
        const answer = await call("POST", "/api/account/terminal/approve", { code: terminalCode.value });
        if (answer.ok) { terminalCode.value = ""; load(a.terminalLinked); } else failed(answer);
      } }, h("label", { for: "terminal-code" }, a.terminalCode), terminalCode, h("button", {}, a.terminalApprove)),
      status);
    if (note) say(note);
  }

  async function redeem(token) {
    history.replaceState(null, "", location.pathname); // the token leaves the address bar
    say(a.working);
    const answer = await call("POST", "/api/account/links/redeem", { token, label: deviceLabel() });
    if (answer.ok) signedIn(answer.data.account, a.linked); else { signedOut(); failed(answer); }
  }

  async function load(note) {
    const link = location.hash.startsWith("#link=") ? location.hash.slice(6) : null;
    let answer;
    try { answer = await call("GET", "/api/account"); } catch { answer = null; }
    if (answer && answer.status === 404 && answer.data && answer.data.error && answer.data.error.code === "accounts_off") {
      box.replaceChildren(h("h1", {}, a.title), h("p", { role: "alert" }, a.off));
      return;
    }
    if (answer && answer.ok) signedIn(answer.data, note);
    else if (answer && answer.status === 401) {
      signedOut(note);
      if (link) await redeem(link);
    } else box.replaceChildren(h("h1", {}, a.title), h("p", { role: "alert" }, a.failed));
    // drawn afresh after an action (a device unlinked, a terminal approved): the button pressed
    // is gone, so the focus goes to the words saying what happened, not back to the page's top
    const lost = !document.activeElement || document.activeElement === document.body || !document.activeElement.isConnected;
    if (note && lost && status.isConnected) {
      status.tabIndex = -1;
      status.focus();
    }
  }
  load();
}
