// A live room as a reducer, like the terminal client's sans-I/O Session: server messages in, a
// new state out; actions return {state, commands} (messages to send). No DOM, socket, clock or
// storage: time is passed in, and the caller sends the commands and keeps the seat ({room,
// token}). Pure: a state is never changed. Tested on recorded sessions (tests/vectors/sessions.json).

import { HIDDEN, POSITION_NAMES, positionName } from "./cards.js";
import { modeRules } from "./modes.js";
import { REMOVED, applyOptimistic, matchingPositions, tap } from "./taps.js";

const FINISHED = new Set(["won", "gave_up", "left", "timed_out"]);

/** `intent`: {kind: "solo", code?} | {kind: "daily"} | {kind: "race" | "watch", room}; `seat`: {room, token} kept by an earlier page, or null. */
export function initialState(intent, seat = null) {
  return {
    intent, seat, role: null, you: null, token: null, room: null, mode: null, phase: null, code: null,
    host: null, seq: 0, offset: 0, startedAt: null, startsAt: null, timeLimit: null,
    players: {}, spectators: 0, board: null, boards: {}, canUndo: false, results: null,
    gameOver: null, notice: null, failed: null, ranked: null, clockAt: 0,
    pending: [], selection: [], nextId: 1, // optimistic moves {id, move} sent, not yet answered
  };
}

/** Refusals that pass (a failure, a full or restarting server, a log that is down): the same request may work again. */
const PASSING = new Set(["internal", "server_full", "rate_limited", "unavailable", "shutting_down"]);
export const passing = (code) => PASSING.has(code);

// -- the server's messages

/** After one server message (an event already applied changes nothing); throws on an unknown type. */
export function reduce(state, msg, localNowMs) {
  const seq = typeof msg.seq === "number" ? msg.seq : null;
  if (msg.type !== "welcome" && seq !== null && seq <= state.seq) return state;
  let next = event(state, msg, localNowMs);
  // when the server last said how long my game has run: a solo clock runs on from there
  if (next.you && next.players[next.you] !== state.players[next.you]) next = { ...next, clockAt: localNowMs };
  // spectators: tops that came into sight since the last event (a racer caught up or finished)
  for (const reveal of msg.reveals || []) {
    if (next.boards[reveal.player]) next = { ...next, boards: { ...next.boards, [reveal.player]: applyChanges(next.boards[reveal.player], [reveal]) } };
  }
  return seq === null ? next : { ...next, seq };
}

/** What an `error` means to the state before it: "move" (taken back), "seat" (token forgotten: hello afresh), "entry" (refused before entering), "other". */
export function refusal(state, msg) {
  if (msg.id != null && state.pending.some((p) => p.id === msg.id)) return "move";
  if (msg.code === "bad_token" && state.seat) return "seat";
  if (!state.role) return "entry";
  return "other";
}

function event(s, msg, now) {
  switch (msg.type) {
    case "welcome": {
      let next = { ...s, role: msg.role, you: msg.you, token: msg.token || (s.seat ? s.token : null), ranked: msg.ranked ?? s.ranked };
      if (msg.room) next = snapshot(next, msg.room, now); // null: a resume caught up by the events that follow
      if (s.intent.kind === "race" && msg.role === "spectator" && !s.seat) next.notice = "becameSpectator";
      // a daily seat welcomed without a token: the account's attempt, started on another of its devices (docs/protocol.md, "daily")
      if (s.intent.kind === "daily" && msg.role === "player" && !msg.token && !s.seat) next.notice = "dailyContinued";
      return msg.role === "player" ? seated(next) : next;
    }
    case "player_joined": // (a seated player who accepted a rematch is seated no more)
      return { ...s, players: withPlayer(s.players, msg.player.id, msg.player), host: hostOf(s, msg), seated: byId(Object.values(s.seated || {}).filter((p) => p.id !== msg.player.id)) };
    case "player_left": { // gone from the list before the start (the server drops them); after it, kept as "left"
      const players = withPlayer(s.players, msg.player.id, msg.player);
      if (s.phase === "lobby" || s.phase === "countdown") delete players[msg.player.id];
      return { ...s, host: hostOf(s, msg), players };
    }
    case "countdown":
      return { ...s, phase: "countdown", offset: offsetOf(s, msg.now, now), startsAt: msg.starts_at, timeLimit: msg.time_limit_s };
    case "started": {
      const players = {};
      for (const p of Object.values(s.players)) players[p.id] = p.status === "waiting" ? { ...p, status: "playing" } : p;
      // a sealed race's contributions, and the opening board a player was shown: what its reveal is checked against
      // the commitment given in the lobby stays the one the reveal must open: one named only now, after
      // the contributions, could be a seed drawn to deal what the server likes (docs/security.md)
      return seated({ ...s, phase: "running", code: msg.code, commitment: s.commitment || msg.commitment || null, startedAt: msg.started_at, players,
        board: msg.board || s.board, boards: msg.boards || s.boards, contributions: msg.contributions || s.contributions || null,
        opening: msg.board || null });
    }
    case "moved":
      return moved(s, msg);
    case "progress": // in the lobby a host who drops hands over
      return { ...s, players: withPlayer(s.players, msg.player.id, msg.player), host: hostOf(s, msg) };
    case "game_over":
      return { ...s, gameOver: msg, code: msg.code || s.code, salt: msg.salt || s.salt, seed: msg.seed || s.seed || null, pending: [], selection: [] };
    case "race_over": // a sealed race's code and seed (a daily's or an older race's salt) come out with it
      return { ...s, results: msg.results, phase: "finished", code: msg.code || s.code, salt: msg.salt || s.salt, seed: msg.seed || s.seed || null,
        contributions: msg.contributions || s.contributions || null, series: "series" in msg ? msg.series : s.series };
    case "rematch": // the room's next race, on a new sealed deal: a lobby again (docs/protocol.md, "Rematches and series")
      return { ...s, round: msg.round, phase: "lobby", host: msg.host, code: msg.code, commitment: msg.commitment, salt: null, verified: undefined,
        seed: null, contributions: null, opening: null,
        series: msg.series, players: byId(msg.players), seated: byId(msg.seated), board: null, boards: {}, results: null, gameOver: null,
        startedAt: null, startsAt: null, canUndo: false, pending: [], selection: [] };
    case "spectators":
      return { ...s, spectators: msg.count };
    case "error":
      switch (refusal(s, msg)) {
        case "move": return { ...s, pending: s.pending.filter((p) => p.id !== msg.id) };
        case "seat": return { ...s, seat: null };
        case "entry": return { ...s, failed: msg };
        default: return s;
      }
    case "pong":
      return s;
    default:
      throw new Error(`unexpected message type ${JSON.stringify(msg.type)}`);
  }
}

function snapshot(s, room, now) {
  const sameRace = s.room === room.room && s.round === (room.round || 1);
  return {
    ...s, room: room.room, mode: room.mode, phase: room.phase, code: room.code, host: room.host,
    // a resume into the race this page saw begin keeps the commitment it was given first
    commitment: (sameRace && s.commitment) || room.commitment || null,
    offset: offsetOf(s, room.now, now), startedAt: room.started_at, startsAt: room.starts_at, timeLimit: room.time_limit_s,
    players: Object.fromEntries((room.players || []).map((p) => [p.id, p])), spectators: room.spectators || 0,
    board: room.board, boards: room.boards || {}, pending: [], selection: [], results: room.results,
    canUndo: Boolean(room.can_undo), round: room.round || 1, series: room.series || null, seated: byId(room.seated || []),
    quick: Boolean(room.quick), // a quick race's first race: it starts by itself
    // a resume after the end: the end box (and a sealed race's salt, to check again) come back with the board
    gameOver: room.game_over || null, salt: room.salt || (room.game_over && room.game_over.salt) || null,
    seed: room.seed || (room.game_over && room.game_over.seed) || null, contributions: room.contributions || null,
    // the board a reload shows is the game as it stands: the opening board is known only from `started`
    opening: sameRace ? s.opening || null : null,
  };
}

/** A revealed deal not checked yet, and what to check it with (docs/protocol.md, "Sealed races"):
 * a sealed race's {commitment, seed, contributions, code, opening} — the seed must open the
 * commitment, and with the contributions give the code, which must deal the opening board the
 * page was shown (null after a reload) — or a daily's (an older race's) {text: "CODE:SALT",
 * commitment}; null when there is nothing to check. */
export function toVerify(s) {
  if (!s.commitment || !s.code || s.verified !== undefined) return null;
  if (s.seed) {
    return { commitment: s.commitment, seed: s.seed, contributions: s.contributions || [], code: s.code, opening: s.opening || null,
      racers: Object.keys(s.players || {}).length }; // the race's players: none joins after the start
  }
  if (s.salt) return { text: `${s.code}:${s.salt}`, commitment: s.commitment };
  return null;
}

/** How many days of the daily's commitments a browser keeps. */
const DAILY_COMMITMENTS_KEPT = 14;

/** The daily's commitments as this browser first saw them, day → commitment, with those of a
 * `GET /api/daily` answer added (today's, and tomorrow's `next`, a day ahead): a day already kept
 * keeps its first value, so a commitment seen a day ahead is the one the day's reveal must open. */
export function keepDailyCommitments(kept, daily) {
  const out = { ...(kept || {}) };
  for (const day of [daily, daily && daily.next]) {
    if (day && typeof day.date === "string" && typeof day.commitment === "string" && !(day.date in out)) out[day.date] = day.commitment;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? 1 : -1)).slice(0, DAILY_COMMITMENTS_KEPT));
}

/** Whether a daily attempt's commitment is the one this browser kept for its day (true when it kept none). */
export const dailyAsPublished = (kept, day, commitment) => !(kept && day in kept) || kept[day] === commitment;

/** Whether a sealed race's contributions are no more than its racers: one from nobody would be the
 * server's own, chosen after it saw the others' — with its seed, a deal it picked. */
export const fromRacers = (check) => check.contributions.length <= check.racers;

/** Whether a sealed race's contributions hold one this page sent for it (any of them: a rematch or
 * accept sent twice before the answer is taken once, the first), or the page sent none (a reload). */
export const holdsOwn = (sent, contributions) => !sent.length || sent.some((entropy) => (contributions || []).includes(entropy));

/** The check's answer: true when the reveal opens the commitment the race started with. */
export const verified = (s, ok) => ({ ...s, verified: ok });

/** The board a deal ({piles: 12 × 8 bottom to top, reserve: R1…R8}) opens with, as `started` shows it. */
export function openingOf(deal) {
  return {
    tops: [...deal.piles.map((pile) => pile[pile.length - 1]), ...deal.reserve],
    counts: [...deal.piles.map((pile) => pile.length), ...deal.reserve.map(() => 1)],
  };
}

/** Whether two boards ({tops, counts}) are the same. */
export const sameBoard = (a, b) => JSON.stringify([a.tops, a.counts]) === JSON.stringify([b.tops, b.counts]);

/** The host a message names: `host` when present (null: nobody is), else the one before. */
const hostOf = (s, msg) => ("host" in msg ? msg.host : s.host);

/** Server clock minus local clock from the server's `now`; without a numeric one, the offset before. */
const offsetOf = (s, serverNow, localNow) => (Number.isFinite(serverNow) ? serverNow - localNow : s.offset);

/** A player with a token keeps a seat to resume. */
const seated = (s) => (s.token && s.room ? { ...s, seat: { room: s.room, token: s.token } } : s);

const byId = (players) => Object.fromEntries(players.map((p) => [p.id, p]));

const withPlayer = (players, id, fields) => ({ ...players, [id]: { ...(players[id] || { id }), ...fields } });

function moved(s, msg) {
  const { score, moves, cards_left, status, elapsed_ms } = msg;
  const next = { ...s, players: withPlayer(s.players, msg.player, { score, moves, cards_left, status, elapsed_ms }) };
  if (msg.player === s.you) {
    // the answer to an optimistic move: by its id, else by its positions
    if (msg.id != null) next.pending = s.pending.filter((p) => p.id !== msg.id);
    else if (msg.action === "move") next.pending = s.pending.filter((p) => p.move.map(positionName).join() !== (msg.positions || []).join());
    next.board = applyChanges(s.board, msg.changes);
    if (typeof msg.can_undo === "boolean") next.canUndo = msg.can_undo;
    if (msg.action === "undo") next.selection = [];
  } else if (s.boards[msg.player] && msg.changes) {
    next.boards = { ...s.boards, [msg.player]: applyChanges(s.boards[msg.player], msg.changes) };
  }
  return next;
}

/** A board with `changes` (or `reveals`) applied: [{pos, card, count}, …]. */
export function applyChanges(board, changes) {
  if (!board) return board;
  const out = { tops: board.tops.slice(), counts: board.counts.slice() };
  for (const change of changes || []) {
    const i = POSITION_NAMES.indexOf(change.pos);
    if (i < 0) continue;
    out.tops[i] = change.card;
    out.counts[i] = change.count;
  }
  return out;
}

// -- the player's actions: {state, commands}

/** A tap on the board shown; `tap`: the tap machine's result, null when the tap does nothing. */
export function onTap(state, position) {
  const board = canPlay(state) ? shownBoard(state) : null;
  if (!board || !board.tops[position]) return { state, commands: [], tap: null };
  const result = tap(board, state.selection, position);
  const out = result.event === REMOVED ? playMove(state, result.move) : { state, commands: [] };
  return { state: { ...out.state, selection: result.selection }, commands: out.commands, tap: result };
}

/** Send a move (position indexes), drawn at once until `moved` or `error` answers it. */
export function playMove(state, move) {
  const id = state.nextId;
  return {
    state: { ...state, nextId: id + 1, pending: [...state.pending, { id, move }] },
    commands: [{ type: "move", positions: move.map(positionName), id }],
  };
}

/** A command the connection could not send: a move is taken back (ids are not reused). */
export function unsent(state, command) {
  return command.type === "move" ? { ...state, pending: state.pending.filter((p) => p.id !== command.id) } : state;
}

/** Undo waits for the server (it knows the cards that come back): not with a move in flight. */
export function undo(state) {
  if (state.role !== "player" || state.pending.length) return { state, commands: [] };
  return { state: { ...state, selection: [], nextId: state.nextId + 1 }, commands: [{ type: "undo", id: state.nextId }] };
}

export const giveUp = (state) => ({ state, commands: [{ type: "give_up" }] });

/** A time limit outside 30 s – 2 h is left to the server's default; `races` 2–10: a series, when none is under way. */
export function start(state, minutes, races = 1) {
  const seconds = Math.round(Number(minutes) * 60);
  const command = seconds >= 30 && seconds <= 7200 ? { type: "start", time_limit_s: seconds } : { type: "start" };
  if (races >= 2 && races <= 10 && mayStartSeries(state)) command.series = Number(races);
  return { state, commands: [command] };
}

/** No series is under way (none, or its last race is over): the host may start one. */
export const mayStartSeries = (state) => !state.series || state.series.over;

/** After a race (its results out): propose the next, on a new deal; the others accept. */
export const rematch = (state, entropy = null) => ({
  state, commands: state.role === "player" && state.results ? [withEntropy({ type: "rematch" }, entropy)] : [],
});

/** A message with the page's contribution to a sealed deal (32 random hex characters), when it has one. */
const withEntropy = (message, entropy) => (entropy ? { ...message, entropy } : message);

/** A rematch's lobby you are seated for: take your place. */
export const mayAccept = (state) => state.phase === "lobby" && Boolean(state.you && state.seated && state.seated[state.you]);
export const accept = (state, entropy = null) => ({ state, commands: mayAccept(state) ? [withEntropy({ type: "accept" }, entropy)] : [] });

/** Give up the seat; a game still on, or a place before the start (lobby or countdown), is left on the server too. */
export function leave(state) {
  const before = state.phase === "lobby" || state.phase === "countdown";
  return { state: { ...state, seat: null }, commands: canPlay(state) || before ? [{ type: "leave" }] : [] };
}

/** The socket dropped: moves in flight are drawn as the server knows them (a resume replays what it took). */
export const disconnected = (state) => (state.pending.length ? { ...state, pending: [], selection: [] } : state);

export const clearSelection = (state) => ({ ...state, selection: [] });

/** The first message on a socket: resume the seat (`since` once events were seen), else what the intent asks — with the player key (js/me.js), when there is one, so the game joins the player's history. */
export function hello(state, name, playerKey = null, entropy = null) {
  const { intent, seat } = state;
  if (seat) {
    const resume = state.seq ? { type: "resume", room: seat.room, token: seat.token, since: state.seq } : { type: "resume", room: seat.room, token: seat.token };
    // in a sealed race's lobby a fresh contribution replaces the last (a reloaded page forgot it); later the server ignores it
    return intent.kind === "race" ? withEntropy(resume, entropy) : resume;
  }
  if (state.role === "spectator" && state.room) return { type: "watch", room: state.room };
  const key = playerKey ? { player_key: playerKey } : {};
  switch (intent.kind) {
    case "solo": return intent.code ? { type: "solo", name, code: intent.code, ...key } : { type: "solo", name, ...key };
    case "daily": return { type: "daily", name, ...key };
    case "race": return withEntropy({ type: "join", room: intent.room, name, ...key }, entropy);
    case "watch": return { type: "watch", room: intent.room };
    default: throw new Error(`unknown live intent ${intent.kind}`);
  }
}

/** A room id (docs/protocol.md): 6 characters of this alphabet (no look-alikes). */
const ROOM_ID = /^[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{6}$/;

/** The room the next socket is for, put in its URL (`/ws?room=ID`) so that a balancer routing by
 * room sends every member of a room to the same instance (docs/protocol.md, "Routing by room"):
 * the seat's, else the room the page is in (a solo or daily game learns its id with the welcome),
 * else the room a race or watch page was opened for; null for a new game not made yet, or for a
 * room id that cannot be one (its join is refused as `no_such_room` in words, not by the URL). */
export function roomFor(state) {
  const { intent, seat } = state;
  const room = (seat && seat.room) || state.room || (intent.kind === "race" || intent.kind === "watch" ? intent.room : null);
  const id = typeof room === "string" ? room.toUpperCase() : null;
  return id && ROOM_ID.test(id) ? id : null;
}

// -- what the screen shows

export const me = (state) => (state.you ? state.players[state.you] || null : null);
export const playerList = (state) => Object.values(state.players);
export const isHost = (state) => state.role === "player" && state.you === state.host;

/** "failed" | "connecting" | "lobby" | "watch" | "game". */
export function screen(state) {
  if (state.failed) return "failed";
  if (!state.role) return "connecting";
  if (state.phase === "lobby" || state.phase === "countdown") return "lobby";
  return state.role === "spectator" ? "watch" : "game";
}

/** The player's own board with the moves in flight drawn (null before the start). */
export const shownBoard = (state) => state.pending.reduce((board, p) => applyOptimistic(board, p.move), state.board);

/** Score and moves with the moves in flight counted; status and time as the server said. */
export function shownStats(state) {
  const mine = me(state) || {};
  const extra = state.pending.reduce((sum, p) => sum + (p.move.length === 2 ? 10 : 15), 0);
  return { score: (mine.score || 0) + extra, moves: (mine.moves || 0) + state.pending.length, status: mine.status, elapsed: mine.elapsed_ms };
}

export function canPlay(state) {
  const mine = me(state);
  return Boolean(state.role === "player" && state.phase === "running" && mine && !FINISHED.has(mine.status) && !state.gameOver);
}

/** A player of the room not in this race (a rematch they did not accept in time): from the start to the results they follow the track. */
export const sittingOut = (state) => state.role === "player" && Boolean(modeRules(state.mode)?.rematch) && Boolean(state.you)
  && state.phase !== "lobby" && state.phase !== "countdown" && !(state.players && state.players[state.you]);

export const mayUndo = (state) => canPlay(state) && state.canUndo && state.pending.length === 0;

/** «Aiuto al posizionamento»: the playable positions that cannot complete a move with the selection. */
export function dimmed(state) {
  const shown = shownBoard(state);
  if (!state.selection.length || !shown) return new Set();
  const ok = matchingPositions(shown, state.selection);
  return new Set(shown.tops.map((c, p) => p).filter((p) => shown.tops[p] && !ok.has(p) && !state.selection.includes(p)));
}

/** The bar's time: the server's once the game is over, else the running clock (a solo game's
 * from its first move, standing still while stalled: docs/protocol.md, "The clock"). */
export function clockMs(state, localNowMs) {
  const mine = me(state);
  if (mine && (FINISHED.has(mine.status) || state.gameOver)) return state.gameOver ? state.gameOver.time_ms : mine.elapsed_ms;
  if (modeRules(state.mode)?.ownClock) {
    if (!mine || !mine.moves || mine.status === "stalled") return mine ? mine.elapsed_ms || 0 : 0;
    return (mine.elapsed_ms || 0) + Math.max(0, localNowMs - state.clockAt);
  }
  if (state.startedAt && state.phase !== "lobby" && state.phase !== "countdown") return localNowMs + state.offset - state.startedAt;
  return 0;
}

/** Whole seconds to the start (null when no countdown was given). */
export const countdownS = (state, localNowMs) => (state.startsAt ? Math.max(0, Math.ceil((state.startsAt - localNowMs - state.offset) / 1000)) : null);

/** Spectators: does some board show a card face down? */
export const anyHidden = (state) => Object.values(state.boards).some((b) => b && b.tops.includes(HIDDEN));

/** The track: the players as they joined, with `removed` (cards of 104) and `leads`: the best
 * score (5 points a card), then the shorter finished time; ties lead together; nobody at 0. */
export function track(state) {
  const rank = (p) => [-(p.score || 0), FINISHED.has(p.status) ? p.elapsed_ms : Infinity];
  const [best] = playerList(state).map(rank).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return playerList(state).map((p) => ({ ...p, removed: 104 - (p.cards_left ?? 104), leads: best[0] < 0 && rank(p).join() === best.join() }));
}

/** The moves of a race's splits. */
export const SPLITS = [12, 24, 36, 48];

/** [my place, players] in a race: from the results (each names its `player`), else the winners so far ranked by time. */
export function placing(state) {
  if (!modeRules(state.mode)?.lobby || !state.you) return null;
  const mine = me(state);
  const line = state.results && state.results.find((r) => r.player === state.you);
  if (line) return [line.rank, state.results.length];
  if (!mine || mine.status !== "won") return null;
  const ahead = playerList(state).filter((p) => p.id !== state.you && p.status === "won" && p.elapsed_ms < mine.elapsed_ms);
  return [ahead.length + 1, playerList(state).length];
}
