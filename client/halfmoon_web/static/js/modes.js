// The game modes' rules as the page needs them: one object per mode (a room's `mode`), asked by
// the session reducer (session.js) and the live screen (live.js) instead of the mode's name. The
// server's own table is server/halfmoon_server/core/modes.py; the rules both state are checked
// against tests/vectors/modes.json (tests/web/modes.test.mjs).

/** lobby: players join by link and race each other (the track, places); rematch: a rematch may
 * follow; ownClock: the clock waits for the first move and stands still while stalled; daily: one
 * deal a day, its code hidden until the day is over; newGame: the page offers a new game where
 * the others give up (a game left for a new one is no result). */
export const MODES = Object.freeze({
  race: Object.freeze({ lobby: true, rematch: true, ownClock: false, daily: false, newGame: false }),
  solo: Object.freeze({ lobby: false, rematch: false, ownClock: true, daily: false, newGame: true }),
  daily: Object.freeze({ lobby: false, rematch: false, ownClock: false, daily: true, newGame: false }),
});

/** The rules of `mode` (null before the room is known); a name that is no mode throws. */
export function modeRules(mode) {
  if (mode == null) return null;
  if (!Object.hasOwn(MODES, mode)) throw new Error(`unknown game mode ${JSON.stringify(mode)}`);
  return MODES[mode];
}
