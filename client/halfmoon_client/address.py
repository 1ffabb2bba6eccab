"""Where to connect: server URLs, the WebSocket endpoint, room ids and room links.

>>> parse_room_or_link("k7wq2m", default_server="http://127.0.0.1:8080")
('http://127.0.0.1:8080', 'K7WQ2M')
>>> parse_room_or_link("https://halfmoon.example/r/K7WQ2M", default_server="http://127.0.0.1:8080")
('https://halfmoon.example', 'K7WQ2M')
>>> websocket_url("https://halfmoon.example")
'wss://halfmoon.example/ws'
>>> websocket_url("http://127.0.0.1:8080", room="k7wq2m")
'ws://127.0.0.1:8080/ws?room=K7WQ2M'
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qs, urlsplit

from halfmoon_client.errors import AddressError

DEFAULT_SERVER: Final = "http://127.0.0.1:8080"
#: Room ids: 6 characters from this alphabet (no look-alikes), as docs/protocol.md says.
ROOM_ALPHABET: Final = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
_ROOM_RE: Final = re.compile(f"[{ROOM_ALPHABET}]{{6}}")


def normalize_server(url: str) -> str:
    """``http(s)://host[:port]`` without a trailing path; a bare ``host:port`` means http.

    Raises :class:`AddressError` naming the input when it is not such a URL.
    """
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        raise AddressError(f"not a server URL: {url!r} (expected e.g. http://127.0.0.1:8080)")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise AddressError(f"not a server URL: {url!r} (bad port)") from None
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return f"{scheme}://{parts.netloc}"


def websocket_url(server: str, room: str | None = None) -> str:
    """The ``/ws`` endpoint of a server: ``http`` becomes ``ws``, ``https`` becomes ``wss``; with
    ``room``, ``/ws?room=ID``, so that a balancer routing by room (deploy/nginx.conf) sends every
    connection of a room to the same instance (docs/protocol.md, "Routing by room"). Raises
    :class:`AddressError` when ``room`` cannot be a room id."""
    base = normalize_server(server)
    url = ("wss" + base[5:] if base.startswith("https") else "ws" + base[4:]) + "/ws"
    return url if room is None else f"{url}?room={parse_room(room)}"


def parse_room(text: str) -> str:
    """A room id, upper-cased; raises :class:`AddressError` when it cannot be one."""
    room = text.strip().upper()
    if not _ROOM_RE.fullmatch(room):
        raise AddressError(f"not a room id: {text!r} (a room id is 6 characters from {ROOM_ALPHABET}, e.g. K7WQ2M)")
    return room


def parse_room_or_link(text: str, *, default_server: str) -> tuple[str, str]:
    """``(server, room)`` from a room id or a room link such as ``http://host:8080/r/K7WQ2M``.

    A link names its own server; a bare id uses ``default_server``. The room is the link's
    ``room`` query parameter, or else the last segment of its path or fragment.
    Raises :class:`AddressError` when no room id can be read.
    """
    if "://" not in text:
        return normalize_server(default_server), parse_room(text)
    server = normalize_server(text)
    parts = urlsplit(text.strip())
    candidates = parse_qs(parts.query).get("room", [])
    candidates += [seg for seg in (parts.fragment.split("/") + parts.path.split("/"))[::-1] if seg]
    for candidate in candidates:
        if _ROOM_RE.fullmatch(candidate.strip("#").upper()):
            return server, candidate.strip("#").upper()
    raise AddressError(f"no room id in the link {text!r} (expected e.g. {server}/r/K7WQ2M)")
