// The player's settings, remembered across visits in localStorage: «Errori di mossa» (off at
// first), «Aiuto al posizionamento» (off at first), «Suono» (off at first), «Annunci brevi» (a move said
// shortly to a screen reader, off at first), the language and the nickname.

const KEY = "halfmoon.settings";
export const DEFAULTS = { moveErrors: false, placementHelp: false, sound: false, terse: false, lang: null, name: "" };

/** Read the settings from a Storage (a bad or missing entry gives the defaults). */
export function loadSettings(storage) {
  let saved = {};
  try {
    saved = JSON.parse(storage.getItem(KEY) || "{}") || {};
  } catch {
    saved = {};
  }
  return {
    moveErrors: saved.moveErrors === true,
    placementHelp: saved.placementHelp === true,
    sound: saved.sound === true,
    terse: saved.terse === true,
    lang: saved.lang === "it" || saved.lang === "en" ? saved.lang : null,
    name: typeof saved.name === "string" ? saved.name.slice(0, 20) : "",
  };
}

export function saveSettings(storage, settings) {
  storage.setItem(KEY, JSON.stringify(settings));
}
