"""Which results are ranked, decided in one place (docs/security.md, "Ranked and casual results").

A result is *ranked* — it may stand on a ranked board (the daily's) and count for a player's
streak and bests — only where nobody could know the cards before the start and a person played:

- a **sealed race** (the server drew the deal; its rematches and series too), or the **daily's
  first attempt** of a name (within the address's ranked attempts);
- not a **bot** (a player that said so when it joined: ``halfmoon bot`` does);
- not **too fast**: a game over in less time than a person needs to tap its moves —
  :func:`taps_of` taps, at least ``tap_floor_ms`` each.

Everything else is *casual* (:attr:`~halfmoon.protocol.Unranked.CASUAL`: the code was known in
advance — an open race on a code the host chose, a solo game, any typed or shared code): stored,
replayable, raced as a ghost and in the history, never on a ranked board.

>>> from halfmoon.protocol import Mode
>>> unranked_reason(Mode.RACE, sealed=False, daily_first=True, bot=False, taps=0, time_ms=None, tap_floor_ms=90)
<Unranked.CASUAL: 'casual'>
>>> unranked_reason(Mode.RACE, sealed=True, daily_first=True, bot=False, taps=104, time_ms=60_000, tap_floor_ms=90)
>>> unranked_reason(Mode.RACE, sealed=True, daily_first=True, bot=False, taps=104, time_ms=9_000, tap_floor_ms=90)
<Unranked.TOO_FAST: 'too_fast'>
"""

from __future__ import annotations

from collections.abc import Iterable

from halfmoon.game import Move
from halfmoon.protocol import Mode, Unranked
from halfmoon.record import Step
from halfmoon_server.core.modes import Ranked, rules_for

#: The default floor per tap (ms): no person selects cards faster. docs/security.md gives the
#: published figures it comes from (an aimed touch at 1 bit of difficulty takes 1/6.95 s ≈ 144 ms;
#: alternating two fingers taps up to 50 % faster: 144 / 1.5 ≈ 96 ms), rounded down.
DEFAULT_TAP_FLOOR_MS = 90


def taps_of(steps: Iterable[Step]) -> int:
    """The taps a game needed: one per card of every move made — 2 for a pair, 3 for a triple —
    the moves later undone included (they were tapped too). Undos are not counted: the floor
    stays below what a person can do."""
    return sum(len(step.positions) for step in steps if isinstance(step, Move))


def unranked_reason(
    mode: Mode,
    *,
    sealed: bool,
    daily_first: bool,
    bot: bool,
    taps: int,
    time_ms: int | None,
    tap_floor_ms: int,
) -> Unranked | None:
    """Why a player's result is not ranked, or None when it is ranked.

    ``mode``: its rules (:attr:`halfmoon_server.core.modes.ModeRules.ranked`) say when its
    results may be ranked at all;
    ``sealed``: a race on a deal the server drew; ``daily_first``: a daily attempt that is the
    name's ranked one (:meth:`halfmoon_server.ports.Storage.claim_daily_attempt`); ``bot``: the
    player said it is one; ``taps`` (:func:`taps_of`) and ``time_ms``: the game as it ended (None:
    not over yet — the too-fast rule waits for the end); ``tap_floor_ms``: 0 turns that rule off.
    The first reason that applies is given: bot, casual, daily retry, too fast."""
    if bot:
        return Unranked.BOT
    ranked = rules_for(mode).ranked  # when the mode's results may be ranked at all
    if ranked is Ranked.NEVER or (ranked is Ranked.IF_SEALED and not sealed):
        return Unranked.CASUAL
    if ranked is Ranked.FIRST_OF_DAY and not daily_first:
        return Unranked.DAILY_RETRY
    if time_ms is not None and time_ms < taps * tap_floor_ms:
        return Unranked.TOO_FAST
    return None
