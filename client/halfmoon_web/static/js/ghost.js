// Ghosts (issue 17): race a stored game. Its record gives each step's positions and the time on
// its player's clock ("times"): a move of 2 or 3 positions removes that many cards, an undo puts
// the last move's back. That is all the ghost's lane needs: it moves in time with your clock and
// shows no card of the ghost's (a record is readable only once its deal is public anyway).

/** The ghost's progress after each step of a record: [{at, removed, moves, score}] (at: ms on
 * its clock; a pair scores 10, a triple 15, an undo takes its move back). Throws when the
 * record has no times, or they do not fit its moves. */
export function ghostTimeline(moves, times) {
  if (!Array.isArray(moves) || !Array.isArray(times) || times.length !== moves.length) throw new Error("the game has no time for each step");
  const taken = [];
  let removed = 0;
  let score = 0;
  return moves.map((step, i) => {
    if (step === "undo") {
      const size = taken.pop();
      if (!size) throw new Error(`step ${i + 1}: nothing to undo`);
      removed -= size;
      score -= size === 2 ? 10 : 15;
    } else {
      if (!Array.isArray(step) || step.length < 2 || step.length > 3) throw new Error(`step ${i + 1}: not a move`);
      taken.push(step.length);
      removed += step.length;
      score += step.length === 2 ? 10 : 15;
    }
    if (!Number.isInteger(times[i]) || times[i] < (i ? times[i - 1] : 0)) throw new Error(`step ${i + 1}: bad time`);
    return { at: times[i], removed, moves: taken.length, score };
  });
}

/** The ghost's progress at `elapsedMs` on your clock: its last step played by then (the deal, before its first). */
export function ghostAt(timeline, elapsedMs) {
  let lo = 0;
  let hi = timeline.length; // the first step after elapsedMs
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (timeline[mid].at <= elapsedMs) lo = mid + 1;
    else hi = mid;
  }
  return lo ? timeline[lo - 1] : { at: 0, removed: 0, moves: 0, score: 0 };
}

/** A stored game (GET /api/games/{id}) as a ghost: {name, timeMs, outcome, timeline}; throws when it has no times. */
export function ghostOf(game) {
  return { name: game.name, timeMs: game.time_ms, outcome: game.outcome, timeline: ghostTimeline(game.moves, game.times) };
}

/** The ghost's lane on your clock (the shape session.track gives a racer): the deal until your
 * clock starts (`started`: at your first move, as the ghost's did), then its progress by now;
 * once its time is up or your game is over, its end and its result. */
export function ghostLane(ghost, elapsedMs, yourGameOver, started = true) {
  const over = yourGameOver || (started && elapsedMs >= ghost.timeMs);
  const at = over ? ghostAt(ghost.timeline, Infinity) : started ? ghostAt(ghost.timeline, elapsedMs) : ghostAt([], 0);
  return { id: "ghost", name: ghost.name, removed: at.removed, moves: at.moves, score: at.score,
    status: over ? ghost.outcome : "playing", timeMs: over ? ghost.timeMs : null, leads: false };
}
