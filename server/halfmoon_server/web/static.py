"""The browser client's files: the single-page app's routes all answer ``index.html``, any other
address too but with status 404 (the app then draws its own 404 page), and ``/static/{path}``
serves the files under the static directory with the right content types (``.js`` as
``text/javascript`` for ES modules) and cache headers. HTML, CSS and JavaScript go gzipped to a
browser that accepts it (what it downloads is what the 100 KB budget counts)."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path
from typing import Final

from aiohttp import web

from halfmoon_server.web import keys

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
SPA_ROUTES: Final = ("/", "/play", "/play/{code}", "/r/{room}", "/watch/{room}", "/daily", "/rules", "/examples",
                     "/replay/{game}", "/compare/{game}/{other}", "/leaderboard", "/leaderboard/{rest:.*}", "/me",
                     "/account", "/quick")


def static_dir(app: web.Application) -> Path:
    configured = app[keys.SETTINGS].static_dir
    if configured is not None:
        return configured
    from halfmoon_web import STATIC_DIR

    return STATIC_DIR


#: what is sent gzipped (small text files, compressed once and kept)
COMPRESSED: Final = frozenset({".html", ".js", ".css"})


@functools.lru_cache(maxsize=64)
def _gzipped(path: Path, mtime_ns: int) -> bytes:
    """The file's bytes gzipped (cached by path and modification time)."""
    return gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)


def _file_response(request: web.Request, path: Path, headers: dict[str, str], status: int = 200) -> web.StreamResponse:
    if path.suffix.lower() in COMPRESSED and "gzip" in request.headers.get("Accept-Encoding", ""):
        body = _gzipped(path, path.stat().st_mtime_ns)
        return web.Response(
            status=status, body=body, headers={**headers, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
        )
    if status != 200:
        return web.Response(status=status, body=path.read_bytes(), headers=headers)
    return web.FileResponse(path, headers=headers)


async def index(request: web.Request) -> web.StreamResponse:
    return _index(request, 200)


async def not_found(request: web.Request) -> web.StreamResponse:
    """Any other address: the app's own 404 page (``index.html`` with status 404); the API's and
    the files' own addresses keep their plain 404."""
    if request.path.startswith(("/api/", "/static/", "/ws")):
        raise web.HTTPNotFound()
    return _index(request, 404)


def _index(request: web.Request, status: int) -> web.StreamResponse:
    path = static_dir(request.app) / "index.html"
    if not path.is_file():
        return web.Response(
            status=503 if status == 200 else status,
            text="The browser client is not installed (no index.html); the API and /ws work.",
            content_type="text/plain",
        )
    return _file_response(request, path, {"Content-Type": CONTENT_TYPES[".html"], "Cache-Control": "no-cache"}, status)


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
    headers = {
        "Content-Type": content_type,
        "Cache-Control": "public, max-age=300, must-revalidate",
        "X-Content-Type-Options": "nosniff",
    }
    return _file_response(request, path, headers)


def add_routes(app: web.Application) -> None:
    for route in SPA_ROUTES:
        app.router.add_get(route, index)
    app.router.add_get("/static/{path:.+}", static_file)
    app.router.add_get("/{tail:.*}", not_found)  # last: every address not matched before
