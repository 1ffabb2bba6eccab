"""Every typed key the application stores state under (``app[KEY]``), in one place."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from halfmoon_server.daily import DailyService
    from halfmoon_server.rooms import RoomRegistry
    from halfmoon_server.settings import Settings
    from halfmoon_server.storage import Storage

SETTINGS: web.AppKey[Settings] = web.AppKey("settings")
STORAGE: web.AppKey[Storage] = web.AppKey("storage")
REGISTRY: web.AppKey[RoomRegistry] = web.AppKey("registry")
DAILY: web.AppKey[DailyService] = web.AppKey("daily")
EXECUTOR: web.AppKey[Executor | None] = web.AppKey("executor")
