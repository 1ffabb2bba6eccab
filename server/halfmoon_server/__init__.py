"""The Half Moon race server: rooms on one deal, every move checked by the engine, spectators,
leaderboards and the daily challenge, over one WebSocket endpoint and a small REST API.

``create_app(settings)`` builds the aiohttp application; ``halfmoon serve`` runs it.
"""

from halfmoon_server.app import create_app
from halfmoon_server.settings import Settings

__all__ = ["Settings", "create_app"]
