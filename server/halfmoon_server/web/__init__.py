"""The web edge: the aiohttp application, its WebSocket and REST handlers, static files and metrics."""
