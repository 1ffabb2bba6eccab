"""The Half Moon race server: rooms on one deal, every move checked by the engine, spectators,
leaderboards and the daily challenge, over one WebSocket endpoint and a small REST API.

``create_app(settings)`` builds the aiohttp application; ``halfmoon serve`` runs it.

Both names are imported on first use (PEP 562): the solver's worker process imports
``halfmoon_server.solver.pool``, ``halfmoon_server.rooms.daily`` and ``halfmoon_server.solver.search`` only,
not aiohttp, SQLAlchemy and the whole server, so a worker starts (and restarts) quickly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from halfmoon_server.settings import Settings
    from halfmoon_server.web.app import create_app

__all__ = ["Settings", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from halfmoon_server.web.app import create_app

        return create_app
    if name == "Settings":
        from halfmoon_server.settings import Settings

        return Settings
    raise AttributeError(f"module 'halfmoon_server' has no attribute {name!r}")
