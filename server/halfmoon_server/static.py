"""The browser client's files: the single-page app's routes all answer ``index.html`` and
``/static/{path}`` serves the files under the static directory with the right content types
(``.js`` as ``text/javascript`` for ES modules) and cache headers."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from aiohttp import web

from halfmoon_server import keys

CONTENT_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".webmanifest": "application/manifest+json",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/plain; charset=utf-8",
}
SPA_ROUTES: Final = ("/", "/play", "/play/{code}", "/r/{room}", "/watch/{room}", "/daily", "/rules", "/replay/{game}",
                     "/leaderboard", "/leaderboard/{rest:.*}")


def static_dir(app: web.Application) -> Path:
    configured = app[keys.SETTINGS].static_dir
    if configured is not None:
        return configured
    from halfmoon_web import STATIC_DIR

    return STATIC_DIR


async def index(request: web.Request) -> web.StreamResponse:
    path = static_dir(request.app) / "index.html"
    if not path.is_file():
        return web.Response(
            status=503,
            text="The browser client is not installed (no index.html); the API and /ws work.",
            content_type="text/plain",
        )
    return web.FileResponse(
        path, headers={"Content-Type": CONTENT_TYPES[".html"], "Cache-Control": "no-cache"}
    )


async def static_file(request: web.Request) -> web.StreamResponse:
    root = static_dir(request.app).resolve()
    relative = request.match_info["path"]
    try:
        path = (root / relative).resolve()
        # is_file() raises for a name too long for the file system (ENAMETOOLONG): still a 404
        found = root in path.parents and path.is_file()
    except (OSError, ValueError):
        raise web.HTTPNotFound() from None
    if not found:
        raise web.HTTPNotFound()
    content_type = CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return web.FileResponse(
        path,
        headers={
            "Content-Type": content_type,
            "Cache-Control": "public, max-age=300, must-revalidate",
            "X-Content-Type-Options": "nosniff",
        },
    )


def add_routes(app: web.Application) -> None:
    for route in SPA_ROUTES:
        app.router.add_get(route, index)
    app.router.add_get("/static/{path:.+}", static_file)
