"""Every typed key the application stores state under (``app[KEY]``), in one place."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from halfmoon_server.core.limits import AddressCount, CreatorLimits
    from halfmoon_server.ports import Accounts, Storage
    from halfmoon_server.rooms.daily import DailyService
    from halfmoon_server.rooms.lobby import Lobby
    from halfmoon_server.rooms.quick import QuickQueue
    from halfmoon_server.rooms.ratings import RatingJob
    from halfmoon_server.rooms.results import Recorder
    from halfmoon_server.rooms.room import BackgroundTasks
    from halfmoon_server.settings import Settings
    from halfmoon_server.web.admission import ConnectionGuard
    from halfmoon_server.web.connection import Connection, Flusher
    from halfmoon_server.web.logs import Throttle
    from halfmoon_server.web.metrics import Metrics

SETTINGS: web.AppKey[Settings] = web.AppKey("settings")
STORAGE: web.AppKey[Storage] = web.AppKey("storage")
ACCOUNTS: web.AppKey[Accounts] = web.AppKey("accounts")
ACCOUNT_LIMITS: web.AppKey[CreatorLimits] = web.AppKey("account_limits")  # ceremonies per address
EXECUTOR: web.AppKey[Executor | None] = web.AppKey("executor")
DAILY: web.AppKey[DailyService] = web.AppKey("daily")
RECORDER: web.AppKey[Recorder] = web.AppKey("recorder")
RATINGS: web.AppKey[RatingJob] = web.AppKey("ratings")  # the ratings job (rooms/ratings.py)
LOBBY: web.AppKey[Lobby] = web.AppKey("lobby")
QUICK: web.AppKey[QuickQueue] = web.AppKey("quick")
TASKS: web.AppKey[BackgroundTasks] = web.AppKey("tasks")
CONNECTIONS: web.AppKey[set[Connection]] = web.AppKey("connections")
FLUSHER: web.AppKey[Flusher] = web.AppKey("flusher")
METRICS: web.AppKey[Metrics] = web.AppKey("metrics")
ADDRESSES: web.AppKey[AddressCount] = web.AppKey("addresses")
GUARD: web.AppKey[ConnectionGuard] = web.AppKey("guard")
THROTTLE: web.AppKey[Throttle] = web.AppKey("throttle")  # the app's lines rate-limited by cause
