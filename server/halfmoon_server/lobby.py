"""Where rooms come from and go: races made for a link (``POST /api/rooms``), solo games and
daily attempts (started at once), the server's capacity and each address's room credits, and
the ticker that settles deadlines and closes abandoned rooms.

The transport (:mod:`halfmoon_server.ws`, :mod:`halfmoon_server.rest`) asks the :class:`Lobby`
for a room and hands it the connection; it never builds one itself.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass
from datetime import date

from halfmoon.codes import DealCode, random_code
from halfmoon.errors import InvalidCodeError
from halfmoon.protocol import Mode
from halfmoon_server.clock import utc_datetime
from halfmoon_server.daily import DailyService
from halfmoon_server.errors import Refusal, StorageError
from halfmoon_server.limits import CreatorLimits
from halfmoon_server.ports import LiveState, Outbox, Storage
from halfmoon_server.race import Race, RaceConfig
from halfmoon_server.room import Room, RoomServices
from halfmoon_server.settings import Settings

log = logging.getLogger("halfmoon_server.lobby")

_SYSTEM_RANDOM = secrets.SystemRandom()


def race_code(text: str | None) -> DealCode:
    """The deal a player or host asks for (None: a fresh random one). Raises :class:`Refusal`
    ``bad_code`` for a malformed code or a daily-challenge code (played only as the daily)."""
    if text is None:
        return random_code(_SYSTEM_RANDOM)
    try:
        code = DealCode.parse(text)
    except InvalidCodeError as exc:
        raise Refusal("bad_code", str(exc)) from None
    if code.kind != "N":
        raise Refusal("bad_code", f"{code} is a daily-challenge deal; play it with 'daily' on its day")
    return code


@dataclass(frozen=True, slots=True)
class DailyTicket:
    """A claimed daily attempt: the day, its deal, and whether it is ranked."""

    day: date
    code: DealCode
    ranked: bool


class Lobby:
    """Creates the rooms of this server and closes them. See the module docstring."""

    def __init__(
        self, settings: Settings, live: LiveState, services: RoomServices, storage: Storage, daily: DailyService
    ) -> None:
        self.settings = settings
        self.clock = settings.clock
        self.live = live
        self.services = services
        self.storage = storage
        self.daily = daily
        self._claiming = 0  # daily attempts between their claim and their room
        self.creators = CreatorLimits(settings.room_burst, settings.room_per_min / 60.0)
        self.config = RaceConfig(
            max_players=settings.max_players,
            countdown_ms=int(settings.countdown_s * 1000),
            default_time_limit_s=settings.default_time_limit_s,
            abandon_after_ms=int(settings.abandon_after_s * 1000),
            finished_ttl_ms=int(settings.finished_ttl_s * 1000),
        )

    def _new_room(self, mode: Mode, code: DealCode, daily_day: date | None = None) -> Room:
        race = Race(self.live.new_room_id(), mode, code, self.config, now=self.clock.now_ms(), daily_day=daily_day)
        room = Room(race, self.services)
        self.live.add(room)
        return room

    def ensure_capacity(self) -> None:
        """Raises :class:`Refusal` ``server_full`` when no room can be added (daily attempts
        being claimed hold a place)."""
        if len(self.live) + self._claiming >= self.settings.max_rooms:
            raise Refusal("server_full", "the server holds as many rooms as it can; try again later")

    def charge(self, client: str) -> None:
        """Spend one of the client's room credits. Raises :class:`Refusal` ``rate_limited``."""
        if not self.creators.allow(client, self.clock.now_ms() / 1000.0):
            raise Refusal("rate_limited", "too many new games from your address in a short time; try again in a minute")

    def create_race(self, code: DealCode, client: str) -> Room:
        """A race lobby on ``code``, for a link. Raises :class:`Refusal` (``server_full``, ``rate_limited``)."""
        self.ensure_capacity()
        self.charge(client)
        return self._new_room(Mode.RACE, code)

    def solo(self, outbox: Outbox, name: str, code: DealCode, client: str) -> tuple[Room, str]:
        """A solo game on ``code``, started at once: the room and the player's id.
        Raises :class:`Refusal` (``server_full``, ``rate_limited``)."""
        self.ensure_capacity()
        self.charge(client)
        room = self._new_room(Mode.SOLO, code)
        return room, room.start_single(outbox, name, ranked=True)

    async def claim_daily(self, name: str, client: str) -> DailyTicket:
        """Today's deal for ``name``, and whether this is their ranked attempt (their first of the
        day; claiming spends it). Raises :class:`Refusal` (``server_full``, ``rate_limited``, and
        ``internal`` when the database fails)."""
        self.ensure_capacity()  # before the ranked attempt is spent
        self.charge(client)
        day = self.daily.today()
        self._claiming += 1
        try:
            code = DealCode.parse(await self.daily.code_for(day))
            ranked = await self.storage.claim_daily_attempt(day, name.casefold(), utc_datetime(self.clock.now_ms()))
        except BaseException as exc:
            self._claiming -= 1
            if isinstance(exc, StorageError):
                log.exception("the daily challenge is unavailable")
                raise Refusal("internal", "the daily challenge is unavailable right now") from None
            raise
        return DailyTicket(day, code, ranked)

    def start_daily(self, outbox: Outbox, name: str, ticket: DailyTicket) -> tuple[Room, str]:
        """The daily attempt a :meth:`claim_daily` granted (already charged), started at once:
        the room and the player's id."""
        self._claiming -= 1
        room = self._new_room(Mode.DAILY, ticket.code, daily_day=ticket.day)
        return room, room.start_single(outbox, name, ranked=ticket.ranked)

    def drop_ticket(self, ticket: DailyTicket) -> None:
        """A claimed attempt whose connection closed before its room was made."""
        self._claiming -= 1

    # -- housekeeping ----------------------------------------------------------------------------------

    def tick(self) -> None:
        """Deadlines due and abandoned rooms (called by the ticker)."""
        now = self.clock.now_ms()
        for room in self.live:
            room.tick()
            if room.is_stale(now):
                room.abandon(now)
                if room.recording == 0:
                    room.close_timer()
                    self.live.drop(room)

    async def run_ticker(self) -> None:
        while True:
            await asyncio.sleep(self.settings.tick_s)
            try:
                self.tick()
            except Exception:
                log.exception("the room ticker failed")
