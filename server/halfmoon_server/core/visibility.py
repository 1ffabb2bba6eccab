"""Who may see what, and when: the one visibility policy (docs/security.md, "What each party can learn").

A deal code deals every card, so every door — the race core's events and snapshots, the REST
API's rooms, games, history and daily ghosts, the daily's list of past days — asks this module,
and nothing else decides:

- **the code** of a live room's deal (:func:`code_visible`) and of a stored game's
  (:func:`stored_code_visible`), and **what opens its commitment** — a sealed race's seed, a
  daily's salt — which comes out with the code (:func:`opening_visible`);
- **a stored game's record** (:func:`record_hidden`: why not, or None);
- **a daily day**: when its code, salt and records open (:func:`daily_opens_at`, :func:`daily_open`);
- **the cards**: which boards a viewer gets (:func:`boards_seen`), which pile cards spectators may
  see (:func:`public_bar`, :func:`is_public`), whether a room may be watched at all
  (:func:`may_watch`);
- **the live list**: which rooms a stranger finds there (:func:`may_list`: listed, watchable, in
  play) and what it says of each (:data:`LIVE_FIELDS`: never a code, a card or a token);
- **ghost times**: who may race today's daily games as ghosts (:func:`ghost_day_hidden`,
  :func:`ghost_hidden`) and what such a ghost shows (:func:`ghost_steps`).

Pure: no I/O and no clock; the time (epoch ms) and the facts are passed in. Looking up a room or
a stored game is the caller's work; the decision is made here.

>>> from halfmoon.protocol import Mode
>>> running, over = RoomFacts(Mode.RACE, sealed=True, over=False), RoomFacts(Mode.RACE, sealed=True, over=True)
>>> code_visible(running, Viewer.PLAYER, now=0), code_visible(over, Viewer.READER, now=0)
(False, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from enum import Enum
from typing import Any

from halfmoon.positions import PILE_COUNT, PILES, POSITIONS
from halfmoon.protocol import TIME_LIMIT_MAX, Mode
from halfmoon_server.clock import day_start_ms
from halfmoon_server.core.modes import rules_for

DAY_MS = 86_400_000


class Viewer(Enum):
    """Who is looking."""

    #: a player of the room, at their own game (a daily attempt's own player too)
    PLAYER = "player"
    #: anyone watching the room over the WebSocket — a racer in another tab included
    SPECTATOR = "spectator"
    #: anyone through the REST API
    READER = "reader"


class Boards(Enum):
    """Which boards a viewer of a live room gets."""

    OWN = "own"  # their own board: each position's top card and count, never a card under a top
    PUBLIC = "public"  # every board, each pile card only once it is public (:func:`is_public`)
    NONE = "none"


class Hidden(Enum):
    """Why something is not shown (the REST API's error code)."""

    DAILY_HIDDEN = "daily_hidden"  # a daily game, before every attempt of its day has ended
    GAME_HIDDEN = "game_hidden"  # a race's game while someone in its room still plays that deal
    NO_SUCH_DAY = "no_such_day"  # a day that has not come yet
    NOT_TODAY = "not_today"  # a daily ghost of a past day (raced as a stored game instead)
    FINISH_FIRST = "finish_your_attempt_first"  # a daily ghost, before the reader's own attempt ended


# -- the daily's day ------------------------------------------------------------------------------


def daily_opens_at(day: date, time_limit_s: int) -> int:
    """When a daily ``day``'s code, salt and games' records may be public (epoch ms): the day is
    over and every attempt of it has ended — none starts after midnight (the lobby caps a late
    one's limit to end by then) and each lasts at most ``time_limit_s``."""
    return day_start_ms(day) + DAY_MS + time_limit_s * 1000


def daily_open(day: date, time_limit_s: int, now: int) -> bool:
    """Whether ``day``'s daily is public at ``now`` (:func:`daily_opens_at`)."""
    return now >= daily_opens_at(day, time_limit_s)


# -- a live room's deal ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoomFacts:
    """What the policy needs to know of a live room's deal."""

    mode: Mode
    #: the server drew the deal (a sealed race, a rematch): nobody knew the code at the start
    sealed: bool
    #: nobody plays the race any more (its phase is finished)
    over: bool
    #: a daily attempt's: when its day opens (:func:`daily_opens_at`); None for other rooms
    opens_at: int | None = None


def code_visible(room: RoomFacts, viewer: Viewer, now: int) -> bool:
    """Whether ``viewer`` may see the room's deal code at ``now``. The same for every viewer —
    a player gets it no sooner than a stranger:

    - a solo game: from the start (the seed's bar shows it);
    - an open race (the host chose the code): from the start, everybody knows it;
    - a sealed race: once nobody plays it any more — not at one racer's own end (a second seat of
      theirs, another tab, giving up at once would hand them the deal);
    - a daily attempt: once every attempt of its day has ended — not even to its own player
      before (a throwaway attempt learns nothing).
    """
    del viewer  # the rule is the same for all: no party learns a code earlier than another
    if rules_for(room.mode).daily:
        return room.opens_at is not None and now >= room.opens_at
    if room.sealed:  # (only a mode whose rules ``may_seal``)
        return room.over
    return True


def opening_visible(room: RoomFacts, viewer: Viewer, now: int) -> bool:
    """Whether ``viewer`` may see what opens the deal's commitment (a sealed race's seed and
    contributions' code, a daily's salt; a previous release's sealed salt): with the code, for a
    deal that was committed to (a sealed race, a daily). A solo game or an open race has none."""
    committed = room.sealed or rules_for(room.mode).daily
    return committed and code_visible(room, viewer, now)


def may_watch(room: RoomFacts) -> bool:
    """Whether the room can be watched: not a daily attempt (its spectators would see the day's
    cards before the day is over)."""
    return rules_for(room.mode).watchable


# -- the live list -------------------------------------------------------------------------------


#: What the live list (``GET /api/live``) may say of a room, and nothing else: its id, mode,
#: phase, whether it is sealed, its players' names (a spectator sees them too), how many race and
#: how many have finished, its spectators, its times. Never its deal code (a code deals every
#: card: an open race's is on its own page for whoever has the link, a sealed race's with no one
#: before its end), its commitment, seed or salt, a card, a score, a token or a player key.
LIVE_FIELDS = frozenset(
    {"room", "mode", "phase", "sealed", "players", "racing", "finished", "spectators", "starts_at", "started_at",
     "time_limit_s"}
)  # fmt: skip


def may_list(room: RoomFacts, *, listed: bool, in_play: bool) -> bool:
    """Whether a room is on the live list: its host listed it (a room made for a link is private
    to whoever has the link: never listed), it may be watched (:func:`may_watch`: never a daily
    attempt) and its race is in play (counting down or running: ``in_play``), not over."""
    return listed and may_watch(room) and in_play and not room.over


# -- the cards --------------------------------------------------------------------------------------


def boards_seen(viewer: Viewer) -> Boards:
    """Which boards a viewer of a live room gets: a player their own; a spectator every board as
    spectators may see it; a REST reader none."""
    return {Viewer.PLAYER: Boards.OWN, Viewer.SPECTATOR: Boards.PUBLIC, Viewer.READER: Boards.NONE}[viewer]


def public_bar(lowest_of_playing: Iterable[Sequence[int]]) -> list[int]:
    """Per position, the height from which its cards are public — seen by every racer still
    playing, and so shown to spectators (and a move that removes one told them): the card on top
    of position ``p`` when it holds ``count`` cards is public when ``count >= bar[p]``
    (:func:`is_public`). A pile's bar is the highest of the lowest heights it has had in the game
    of each racer still playing (a racer has seen every card from their lowest up; an undo does
    not unsee one); a reserve position's is 0: reserve cards are public from the start. Nobody
    playing: every card is public. (A list, compared inline on the spectators' path: a call per
    position would cost that path 40 %.)"""
    playing = list(lowest_of_playing)
    piles = [max((lowest[pile] for lowest in playing), default=0) for pile in PILES]
    return piles + [0] * (len(POSITIONS) - PILE_COUNT)


def is_public(position: int, count: int, bar: Sequence[int]) -> bool:
    """Whether the card on top of ``position`` when it holds ``count`` cards is public, by
    :func:`public_bar`'s ``bar``."""
    return count >= bar[position]


# -- a stored game ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredFacts:
    """What the policy needs to know of a stored game."""

    #: a sealed race's game (of this release or the previous one)
    sealed: bool
    #: when the game ended (epoch ms)
    finished_at: int
    #: a daily game's: when its day opens (:func:`daily_opens_at`); None for other games
    opens_at: int | None = None


def room_needed(game: StoredFacts, now: int) -> bool:
    """Whether deciding on a sealed game's code needs to know if its room still plays
    (:func:`stored_code_visible`'s ``running_since``): not for a game that ended more than the
    longest time limit ago — a race lasts at most that from its start, so it is over for all."""
    return game.sealed and game.opens_at is None and now - game.finished_at <= TIME_LIMIT_MAX * 1000


def on_a_deal_in_play(game: StoredFacts, running_since: int | None) -> bool:
    """Whether a game of a room whose race has been running since ``running_since`` (None: nobody
    plays there) is on the deal still in play: yes unless it ended before that race started — a
    game of an earlier race of the room (before a rematch), whose code its ``race_over`` gave out."""
    return running_since is not None and game.finished_at >= running_since


def stored_code_visible(game: StoredFacts, now: int, running_since: int | None) -> bool:
    """Whether anyone may see a stored game's deal code at ``now``, by the rules of
    :func:`code_visible`: a daily game's once its day opens; a sealed race's once nobody in its
    room still plays that deal (``running_since``: see :func:`on_a_deal_in_play`); any other's
    always (a solo game shows it from the start, an open race's host chose it)."""
    if game.opens_at is not None:
        return now >= game.opens_at
    if not game.sealed:
        return True
    return not on_a_deal_in_play(game, running_since)


def record_hidden(game: StoredFacts, now: int, running_since: int | None) -> Hidden | None:
    """Why a stored game's record and deal (``GET /api/games/{id}``, and so a replay, a ghost, a
    compare) may not be read at ``now``, or None: a daily game's opens with its day; any other
    race's game once nobody racing that room still plays the same deal (the deal is the same for
    all; an open race's too: its record shows a racer's line while others still play it). What
    opens its commitment (seed, salt) comes with it."""
    if game.opens_at is not None and now < game.opens_at:
        return Hidden.DAILY_HIDDEN
    if on_a_deal_in_play(game, running_since):
        return Hidden.GAME_HIDDEN
    return None


# -- daily ghosts -------------------------------------------------------------------------------------


def ghost_day_hidden(day: date, today: date) -> Hidden | None:
    """Why a daily ghost of ``day`` may not be read, or None: only today's games are raced as
    ghosts this way (a past day's, once public, through its stored record)."""
    if day > today:
        return Hidden.NO_SUCH_DAY
    if day < today:
        return Hidden.NOT_TODAY
    return None


def ghost_hidden(reader_finished_today: bool) -> Hidden | None:
    """Why today's daily games may not be raced as ghosts by a reader (known by their player
    key), or None: only once their own attempt of today has ended."""
    return None if reader_finished_today else Hidden.FINISH_FIRST


def ghost_steps(moves: Sequence[Any], times: Sequence[int]) -> list[dict[str, int]]:
    """What a daily ghost shows of a game: for each step its time and the cards it removed — 2 or
    3 for a move, minus the last move's for an undo — and never a position, card or code.
    ``moves``: the record's steps (``"undo"``, or a move's positions)."""
    taken: list[int] = []
    cards: list[int] = []
    for step in moves:
        if step == "undo":
            cards.append(-taken.pop() if taken else 0)
        else:
            taken.append(len(step))
            cards.append(len(step))
    return [{"at": at, "cards": n} for at, n in zip(times, cards, strict=True)]
