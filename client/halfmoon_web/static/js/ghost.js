// Ghosts (issue 17): race a stored game. Each step's time on its player's clock and the cards it
// removed is all the ghost's lane needs: it shows no card of the ghost's.

/** A record's steps as [{at, cards}]: the cards each removed (2, 3; an undo, minus its move's). Throws when the times do not fit. */
export function ghostSteps(moves, times) {
  if (!Array.isArray(moves) || !Array.isArray(times) || times.length !== moves.length) throw new Error("the game has no time for each step");
  const taken = [];
  return moves.map((step, i) => {
    if (step === "undo") {
      if (!taken.length) throw new Error(`step ${i + 1}: nothing to undo`);
      return { at: times[i], cards: -taken.pop() };
    }
    if (!Array.isArray(step) || step.length < 2 || step.length > 3) throw new Error(`step ${i + 1}: not a move`);
    taken.push(step.length);
    return { at: times[i], cards: step.length };
  });
}

/** The ghost's progress after each step of a record: [{at, removed, moves, score}]. */
export const ghostTimeline = (moves, times) => stepsTimeline(ghostSteps(moves, times));

/** The progress after each of `steps` ({at, cards}): a pair scores 10, a triple 15, an undo takes its move back. */
export function stepsTimeline(steps) {
  let [removed, moves, score] = [0, 0, 0];
  return steps.map(({ at, cards }, i) => {
    if (!Number.isInteger(at) || at < (i ? steps[i - 1].at : 0) || ![2, 3, -2, -3].includes(cards)) throw new Error(`step ${i + 1}: bad time or size`);
    removed += cards;
    moves += Math.sign(cards);
    score += Math.sign(cards) * (Math.abs(cards) === 2 ? 10 : 15);
    return { at, removed, moves, score };
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

/** A ghost {name, timeMs, outcome, timeline} from a stored game (GET /api/games/{id}) or, with `steps`, today's daily one (GET /api/daily/{date}/ghosts/{id}). */
export function ghostOf(game) {
  return { name: game.name, timeMs: game.time_ms, outcome: game.outcome, timeline: game.steps ? stepsTimeline(game.steps) : ghostTimeline(game.moves, game.times) };
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
