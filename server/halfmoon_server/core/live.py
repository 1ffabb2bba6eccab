"""What the live list says of a room: a stranger's summary of a public race in play.

The list (``GET /api/live``, docs/protocol.md) shows the public races being run now, to be
watched with the spectator view. Whether a room is on it and which fields it may carry are the
visibility policy's (:func:`halfmoon_server.core.visibility.may_list`,
:data:`~halfmoon_server.core.visibility.LIVE_FIELDS`); this module reads them off a race. Pure:
the room shell's instance publishes the summary (:class:`halfmoon_server.ports.LiveList`).

>>> from halfmoon.codes import DealCode
>>> from halfmoon.protocol import Mode
>>> from halfmoon_server.core.race import Race, RaceConfig
>>> race = Race("K7WQ2M", Mode.RACE, DealCode.parse("HM1-N-AAAAAAB"), RaceConfig(countdown_ms=0), now=0)
>>> _ = race.join("Ada", 0)
>>> live_summary(race, listed=True) is None  # still in its lobby
True
>>> _ = race.start("p1", 300, 0); _ = race.tick(0)
>>> summary = live_summary(race, listed=True)
>>> summary["players"], summary["racing"], "code" in summary
(['Ada'], 1, False)
>>> live_summary(race, listed=False) is None  # a private race: never
True
"""

from __future__ import annotations

from typing import Any

from halfmoon.protocol import Phase
from halfmoon_server.core import visibility
from halfmoon_server.core.race import Race

#: The phases a listed room is on the list in: its countdown (about to start) and its race.
IN_PLAY = frozenset({Phase.COUNTDOWN, Phase.RUNNING})


def live_summary(race: Race, *, listed: bool) -> dict[str, Any] | None:
    """What the live list says of ``race`` now (only :data:`~halfmoon_server.core.visibility.LIVE_FIELDS`),
    or None when it is not on the list (:func:`~halfmoon_server.core.visibility.may_list`).
    ``listed``: its room's header lists it (:func:`halfmoon_server.core.commands.is_listed`)."""
    if not visibility.may_list(race.facts(), listed=listed, in_play=race.phase in IN_PLAY):
        return None
    racers = list(race.players.values())
    summary = {
        "room": race.id,
        "mode": str(race.mode),
        "phase": str(race.phase),
        "sealed": race.sealed,
        "players": [racer.name for racer in racers],
        "racing": sum(racer.playing for racer in racers),
        "finished": sum(racer.finished for racer in racers),
        "spectators": race.spectators,
        "starts_at": race.starts_at,
        "started_at": race.started_at,
        "time_limit_s": race.time_limit_s,
    }
    assert summary.keys() <= visibility.LIVE_FIELDS, "the live list says only what the visibility policy allows"
    return summary
