"""The game modes' rules: one :class:`ModeRules` object per :class:`~halfmoon.protocol.Mode`.

A mode is what a room is for — a race among friends, a solo game, the daily challenge — and
everything that differs between them is a field of its rules object, asked by whoever needs
it: the race core (:mod:`halfmoon_server.core.race`: who may see the code, whose clock runs
how, whether spectators may watch, whether a rematch may follow), the ranking
(:mod:`halfmoon_server.core.ranking`: which results are ranked), the lobby
(:mod:`halfmoon_server.rooms.lobby`: how a room of the mode is made and started) and the
transport (a ``join`` seats a player only in a mode with a lobby; a leaderboard drops a game
left for a new one). A new mode is a new entry in :data:`RULES` (and its wire value in
:class:`~halfmoon.protocol.Mode`); the browser has its own table of the same rules
(``client/halfmoon_web/static/js/modes.js``), and both are checked against
``tests/vectors/modes.json``.

>>> rules_for(Mode.DAILY).watchable
False
>>> rules_for("race").rematch
True
>>> rules_for("race").rated, rules_for("solo").rated, rules_for("daily").rated
(True, False, False)
>>> rules_for("blitz")
Traceback (most recent call last):
...
ValueError: 'blitz' is not a game mode (one of race, solo, daily)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from halfmoon.protocol import Mode


class Ranked(enum.Enum):
    """When a mode's results may be ranked (:func:`halfmoon_server.core.ranking.unranked_reason`
    decides, in its order, with the player's and the game's own reasons)."""

    #: never: the player chose (or may know) the deal — casual
    NEVER = "never"
    #: when the server drew the deal (a sealed race); a race on a code the host chose is casual
    IF_SEALED = "if_sealed"
    #: a name's first attempt of the day (within its address's ranked attempts); a retry is not
    FIRST_OF_DAY = "first_of_day"


class TimeLimit(enum.Enum):
    """Where a mode's time limit comes from."""

    #: the host's ``start`` (else the server's default limit)
    HOST = "host"
    #: no limit: the game lasts until it is won, stalled and left, or given up
    NONE = "none"
    #: the daily's setting, shortened so that every attempt ends by the day's reveal
    DAILY = "daily"


@dataclass(frozen=True, slots=True)
class ModeRules:
    """What one mode's rooms do differently. Every field is a rule some module asks."""

    mode: Mode
    #: players join by the room's link in a lobby and its host starts the race (a countdown
    #: first); otherwise the room starts at once with its one player
    lobby: bool
    #: spectators may watch (``watch``); otherwise ``private_room``
    watchable: bool
    #: a finished race may be followed by a rematch (and played as a series); its ``race_over``
    #: then says the round, the series and the deal (code, salt or seed)
    rematch: bool
    #: the server may draw the deal, sealed: nobody sees its code before the race is over
    may_seal: bool
    #: the player's clock runs from their first move and stands still while stalled; otherwise
    #: every clock runs from the start
    own_clock: bool
    #: one deal a day for everyone: its code is told to nobody (its own player included) until
    #: every attempt of the day has ended, and the day's salt opens its commitment
    daily: bool
    #: a game may be left for a new one: a game its player left is no result on a leaderboard
    #: (the page offers a new game where other modes give up)
    new_game: bool
    ranked: Ranked
    time_limit: TimeLimit
    #: its ranked results between identified players update their ratings
    #: (:func:`halfmoon_server.core.rating.rateable`: a sealed race's ranked seats with a player
    #: key). Left out (None), it follows the rules above: a mode whose results may be ranked and
    #: that is not the daily (whose players race the day, not each other) is rated — so a new
    #: mode of sealed races (a quick race) is rated without saying so; solo and the daily are not
    rated: bool | None = None

    def __post_init__(self) -> None:
        if self.rated is None:
            object.__setattr__(self, "rated", self.ranked is not Ranked.NEVER and not self.daily)


#: The rules of every mode, by mode.
RULES: dict[Mode, ModeRules] = {
    rules.mode: rules
    for rules in (
        ModeRules(
            Mode.RACE,
            lobby=True,
            watchable=True,
            rematch=True,
            may_seal=True,
            own_clock=False,
            daily=False,
            new_game=False,
            ranked=Ranked.IF_SEALED,
            time_limit=TimeLimit.HOST,
        ),
        ModeRules(
            Mode.SOLO,
            lobby=False,
            watchable=True,
            rematch=False,
            may_seal=False,
            own_clock=True,
            daily=False,
            new_game=True,
            ranked=Ranked.NEVER,
            time_limit=TimeLimit.NONE,
        ),
        ModeRules(
            Mode.DAILY,
            lobby=False,
            watchable=False,
            rematch=False,
            may_seal=False,
            own_clock=False,
            daily=True,
            new_game=False,
            ranked=Ranked.FIRST_OF_DAY,
            time_limit=TimeLimit.DAILY,
        ),
    )
}


def rules_for(mode: Mode | str) -> ModeRules:
    """The rules of ``mode`` (a :class:`Mode`, or its wire value as stored with a game).

    Raises :class:`ValueError` for a value that names no mode."""
    try:
        return RULES[Mode(mode)]
    except ValueError:
        names = ", ".join(m.value for m in Mode)
        raise ValueError(f"{mode!r} is not a game mode (one of {names})") from None
