"""The visibility policy, case by case: who may see a deal's code, what opens its commitment, a
stored game's record, the cards and a daily ghost, and when.

Every expectation below is written from docs/security.md ("What each party can learn") and
docs/protocol.md ("Who sees what", "Sealed races"), not read off the code.
"""

from __future__ import annotations

from datetime import date

import pytest

from halfmoon.codes import daily_code
from halfmoon.positions import PILE_COUNT, POSITIONS
from halfmoon.protocol import TIME_LIMIT_MAX, Mode
from halfmoon_server.clock import day_start_ms
from halfmoon_server.core import visibility
from halfmoon_server.core.commands import apply_entry
from halfmoon_server.core.race import Race, RaceConfig
from halfmoon_server.core.visibility import Boards, Hidden, RoomFacts, StoredFacts, Viewer

DAY = date(2026, 11, 28)
LIMIT_S = 1800  # the daily's attempts last at most 30 minutes
MIDNIGHT = day_start_ms(date(2026, 11, 29))  # the end of DAY
OPENS = MIDNIGHT + LIMIT_S * 1000  # every attempt of DAY has ended
DURING = day_start_ms(DAY) + 3_600_000  # 01:00 on DAY
ALL = list(Viewer)

# -- a live room's code --------------------------------------------------------------------------

SOLO_ON, SOLO_OVER = RoomFacts(Mode.SOLO, sealed=False, over=False), RoomFacts(Mode.SOLO, sealed=False, over=True)
OPEN_ON, OPEN_OVER = RoomFacts(Mode.RACE, sealed=False, over=False), RoomFacts(Mode.RACE, sealed=False, over=True)
SEALED_ON, SEALED_OVER = RoomFacts(Mode.RACE, sealed=True, over=False), RoomFacts(Mode.RACE, sealed=True, over=True)
DAILY_ON = RoomFacts(Mode.DAILY, sealed=False, over=False, opens_at=OPENS)
DAILY_OVER = RoomFacts(Mode.DAILY, sealed=False, over=True, opens_at=OPENS)  # that attempt is over

# (what, room, now, whether its code may be seen) — the same for every viewer: a racer learns it
# no sooner than a spectator or a stranger reading REST
CODE_CASES = [
    # a solo game: "from the start (the seed's bar)"
    ("solo, playing", SOLO_ON, DURING, True),
    ("solo, over", SOLO_OVER, DURING, True),
    # an open race (the host chose the code): "from the start" — the lobby too, POST /api/rooms answers it
    ("open race, lobby or running", OPEN_ON, DURING, True),
    ("open race, over", OPEN_OVER, DURING, True),
    # a sealed race: "the code and seed once nobody plays the race any more" — not at the end of
    # one racer's own game while others still play
    ("sealed race, lobby, countdown or running", SEALED_ON, DURING, False),
    ("sealed race, over", SEALED_OVER, DURING, True),
    # the daily: "only once the day is over and every attempt of it has ended — not even at the
    # end of their own attempt"
    ("daily, playing, on its day", DAILY_ON, DURING, False),
    ("daily, its attempt over, on its day", DAILY_OVER, DURING, False),
    ("daily, at midnight (an attempt may still run)", DAILY_OVER, MIDNIGHT, False),
    ("daily, a millisecond before the last attempt ends", DAILY_OVER, OPENS - 1, False),
    ("daily, every attempt of the day ended", DAILY_OVER, OPENS, True),
    ("daily, a day later", DAILY_OVER, OPENS + 86_400_000, True),
]


@pytest.mark.parametrize("viewer", ALL, ids=lambda v: v.value)
@pytest.mark.parametrize(("what", "room", "now", "visible"), CODE_CASES, ids=[c[0] for c in CODE_CASES])
def test_who_may_see_a_rooms_code_and_when(what: str, room: RoomFacts, now: int, visible: bool, viewer: Viewer) -> None:
    assert visibility.code_visible(room, viewer, now) is visible, what


# (what, room, now, whether what opens its commitment — a sealed race's seed, a daily's salt — may be seen)
OPENING_CASES = [
    # "at the end seed comes out with the code"; the daily's commitment is "opened by the code and
    # salt of its reveal"; a solo game and an open race were committed to nothing
    ("sealed race, running", SEALED_ON, DURING, False),
    ("sealed race, over", SEALED_OVER, DURING, True),
    ("daily, on its day", DAILY_OVER, DURING, False),
    ("daily, every attempt ended", DAILY_OVER, OPENS, True),
    ("open race", OPEN_OVER, DURING, False),
    ("solo", SOLO_OVER, DURING, False),
]


@pytest.mark.parametrize("viewer", ALL, ids=lambda v: v.value)
@pytest.mark.parametrize(("what", "room", "now", "visible"), OPENING_CASES, ids=[c[0] for c in OPENING_CASES])
def test_what_opens_a_commitment_comes_out_with_the_code(
    what: str, room: RoomFacts, now: int, visible: bool, viewer: Viewer
) -> None:
    assert visibility.opening_visible(room, viewer, now) is visible, what


def test_the_daily_opens_when_the_day_is_over_and_every_attempt_of_it_has_ended() -> None:
    # "attempts last at most HALFMOON_DAILY_TIME_LIMIT_S, 30 minutes": 00:30 UTC the next day
    assert visibility.daily_opens_at(DAY, LIMIT_S) == MIDNIGHT + 30 * 60_000
    assert visibility.daily_opens_at(DAY, 60) == MIDNIGHT + 60_000  # a server with 1-minute attempts
    assert not visibility.daily_open(DAY, LIMIT_S, MIDNIGHT)
    assert not visibility.daily_open(DAY, LIMIT_S, OPENS - 1)
    assert visibility.daily_open(DAY, LIMIT_S, OPENS)
    assert not visibility.daily_open(date(2026, 11, 29), LIMIT_S, OPENS)  # the next day is not


# -- the cards ------------------------------------------------------------------------------------


def test_each_viewer_gets_the_boards_it_may_see() -> None:
    # a racer: their own board; a spectator: every board, public cards only; a REST reader: no boards
    assert visibility.boards_seen(Viewer.PLAYER) is Boards.OWN
    assert visibility.boards_seen(Viewer.SPECTATOR) is Boards.PUBLIC
    assert visibility.boards_seen(Viewer.READER) is Boards.NONE


@pytest.mark.parametrize(
    ("mode", "watchable"), [(Mode.RACE, True), (Mode.SOLO, True), (Mode.DAILY, False)], ids=lambda x: str(x)
)
def test_daily_rooms_cannot_be_watched(mode: Mode, watchable: bool) -> None:
    assert visibility.may_watch(RoomFacts(mode, sealed=False, over=False)) is watchable


def test_a_pile_card_is_public_once_every_racer_still_playing_has_seen_it() -> None:
    # pile 0 holds 4 cards at the deal: Ada has dug it down to 1 card, Bob to 3. A racer has seen
    # every card from the lowest its pile has been in their game upwards.
    full = [4] * PILE_COUNT
    ada, bob = list(full), list(full)
    ada[0], bob[0] = 1, 3
    bar = visibility.public_bar([ada, bob])
    assert visibility.is_public(0, 3, bar) and visibility.is_public(0, 4, bar)  # both have seen them
    assert not visibility.is_public(0, 2, bar) and not visibility.is_public(0, 1, bar)  # Bob has not
    assert visibility.is_public(1, 4, bar) and not visibility.is_public(1, 3, bar)  # nobody dug pile 1
    # Bob finishes (gives up): only Ada still plays, so what she has seen is public
    bar = visibility.public_bar([ada])
    assert visibility.is_public(0, 1, bar) and not visibility.is_public(0, 0, bar)
    # nobody plays any more: every card is
    bar = visibility.public_bar([])
    assert all(visibility.is_public(p, c, bar) for p in POSITIONS for c in range(5))


def test_reserve_cards_are_public_from_the_start() -> None:
    bar = visibility.public_bar([[4] * PILE_COUNT])
    reserve = [p for p in POSITIONS if p >= PILE_COUNT]
    assert reserve and all(visibility.is_public(p, 1, bar) for p in reserve)


# -- a stored game -----------------------------------------------------------------------------------

NOW = DURING + 600_000
ENDED = DURING  # the game ended 10 minutes ago
BEFORE = ENDED - 120_000  # its room's race started 2 minutes before it ended
AFTER = ENDED + 60_000  # a race of its room (a rematch) started a minute after it ended

SEALED = StoredFacts(sealed=True, finished_at=ENDED)
OPEN = StoredFacts(sealed=False, finished_at=ENDED)  # an open race's game, or a solo game
DAILY = StoredFacts(sealed=False, finished_at=ENDED, opens_at=OPENS)

# (what, game, now, running_since — when the race someone in its room still plays started, None:
# nobody plays there —, why its record is hidden (None: shown), whether its code may be shown)
STORED_CASES = [
    # "a race's game only once nobody racing that room is still playing (game_hidden)" — and its code
    ("sealed race, others still play its deal", SEALED, NOW, BEFORE, Hidden.GAME_HIDDEN, False),
    ("sealed race, nobody plays", SEALED, NOW, None, None, True),
    # "a game of an earlier race of a rematch room opens with that race's race_over"
    ("sealed race, its room plays a rematch", SEALED, NOW, AFTER, None, True),
    # an open race's record waits like any race's; its code was public from the start
    ("open race, others still play its deal", OPEN, NOW, BEFORE, Hidden.GAME_HIDDEN, True),
    ("open race or solo, nobody plays", OPEN, NOW, None, None, True),
    # "a daily game only once every attempt of its day has ended (daily_hidden)"
    ("daily, on its day", DAILY, NOW, None, Hidden.DAILY_HIDDEN, False),
    ("daily, at midnight", DAILY, MIDNIGHT, None, Hidden.DAILY_HIDDEN, False),
    ("daily, every attempt ended", DAILY, OPENS, None, None, True),
]


@pytest.mark.parametrize(
    ("what", "game", "now", "running_since", "hidden", "code"), STORED_CASES, ids=[c[0] for c in STORED_CASES]
)
def test_who_may_read_a_stored_game_and_its_code(
    what: str, game: StoredFacts, now: int, running_since: int | None, hidden: Hidden | None, code: bool
) -> None:
    assert visibility.record_hidden(game, now, running_since) is hidden, what
    assert visibility.stored_code_visible(game, now, running_since) is code, what


def test_a_sealed_game_older_than_the_longest_race_needs_no_look_at_its_room() -> None:
    # a race lasts at most TIME_LIMIT_MAX from its start: a game that ended longer ago is over for all
    long_ago = StoredFacts(sealed=True, finished_at=NOW - TIME_LIMIT_MAX * 1000 - 1)
    assert not visibility.room_needed(long_ago, NOW)
    assert visibility.stored_code_visible(long_ago, NOW, running_since=None)
    assert visibility.room_needed(SEALED, NOW)
    assert not visibility.room_needed(OPEN, NOW) and not visibility.room_needed(DAILY, NOW)


# -- daily ghosts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("day", "finished_own", "hidden"),
    [
        (date(2026, 11, 29), True, Hidden.NO_SUCH_DAY),  # tomorrow
        (date(2026, 11, 27), True, Hidden.NOT_TODAY),  # "only today": a past day's games are read as records
        (DAY, False, Hidden.FINISH_FIRST),  # "only to a player key with a finished game of today's daily"
        (DAY, True, None),
    ],
    ids=["tomorrow", "yesterday", "own attempt not over", "own attempt over"],
)
def test_who_may_race_todays_daily_games_as_ghosts(day: date, finished_own: bool, hidden: Hidden | None) -> None:
    found = visibility.ghost_day_hidden(day, DAY) or visibility.ghost_hidden(reader_finished_today=finished_own)
    assert found is hidden


def test_a_daily_ghost_shows_each_steps_time_and_cards_removed_never_a_position() -> None:
    # "each step's time and the number of cards it removed (2, 3, or minus for an undo)"
    moves = [["1", "R8"], ["2", "3", "R1"], "undo", ["4", "R2"], "undo", "undo"]
    steps = visibility.ghost_steps(moves, [900, 2100, 2500, 4000, 4200, 4300])
    assert steps == [
        {"at": 900, "cards": 2},
        {"at": 2100, "cards": 3},
        {"at": 2500, "cards": -3},
        {"at": 4000, "cards": 2},
        {"at": 4200, "cards": -2},
        {"at": 4300, "cards": -2},
    ]
    assert all(set(step) == {"at", "cards"} for step in steps)


# -- the race core asks the policy --------------------------------------------------------------------


def test_a_daily_attempt_begun_after_midnight_shows_no_code_before_its_day_opens() -> None:
    begun = MIDNIGHT + 5_000  # asked for at 23:59:59.9 with the database slow: its day is DAY
    limit_s = (OPENS - begun) // 1000  # the lobby caps it to end when DAY opens: 1795 s
    config = RaceConfig(daily_time_limit_s=(OPENS - MIDNIGHT) // 1000)  # as the lobby configures every room
    race = Race("K7WQ2M", Mode.DAILY, daily_code(DAY, b"secret", long=True), config, now=begun, daily_day=DAY)
    apply_entry(race, {"k": "single", "n": "Ada", "tok": "t", "r": True, "lim": limit_s, "t": begun})
    assert race.players["p1"].playing and race.next_deadline() == begun + limit_s * 1000
    assert race.snapshot("p1", OPENS - 2_000, watcher=False).code is None, "Ada still plays: 2 s are left"
