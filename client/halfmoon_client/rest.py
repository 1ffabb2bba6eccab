"""The REST calls the client needs: ``POST /api/rooms`` creates a race room; ``GET
/api/me/history`` reads the player's games by their key (in the ``Authorization`` header);
``GET /api/games/{id}`` reads a stored game (a ghost to race).

Plain :mod:`urllib` run in a worker thread, so it neither blocks the event loop nor adds a
dependency.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from halfmoon_client.address import normalize_server
from halfmoon_client.errors import ProtocolError, RefusedError, UnreachableError


@dataclass(frozen=True, slots=True)
class CreatedRoom:
    """A new race: its room, its link, and its code — None for a sealed race (the server drew
    the deal: nobody sees the code before their game ends; ``commitment`` is its hash)."""

    room: str
    code: str | None
    url: str
    commitment: str | None = None


def _post(url: str, body: dict[str, Any], timeout: float) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    return _call(request, timeout)


def _call(request: urllib.request.Request, timeout: float) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            payload = json.loads(exc.read() or b"null")
        except ValueError:
            payload = None
        return exc.code, payload


def create_room_sync(server: str, code: str | None = None, *, timeout: float = 10.0) -> CreatedRoom:
    """Create a room (on deal ``code``, or a random one).

    Raises :class:`UnreachableError`, :class:`RefusedError` (the server's error code and
    message, e.g. ``bad_code``) or :class:`ProtocolError` (an answer that is not the documented one).
    """
    base = normalize_server(server)
    body: dict[str, Any] = {} if code is None else {"code": code}
    try:
        status, payload = _post(base + "/api/rooms", body, timeout)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UnreachableError(f"cannot reach the server at {base}: {reason}") from None
    except ValueError:
        raise ProtocolError(f"{base}/api/rooms did not answer JSON: is it a Half Moon server?") from None
    if status != 201:
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            raise RefusedError(str(error.get("code", status)), str(error.get("message", error)))
        if isinstance(payload, dict) and "message" in payload:
            raise RefusedError(str(payload.get("code", status)), str(payload["message"]))
        raise RefusedError(str(status), f"{base}/api/rooms answered HTTP {status}")
    try:
        code, commitment = payload.get("code"), payload.get("commitment")
        return CreatedRoom(
            str(payload["room"]),
            None if code is None else str(code),
            str(payload["url"]),
            None if commitment is None else str(commitment),
        )
    except (KeyError, TypeError):
        raise ProtocolError(f"{base}/api/rooms answered {payload!r:.120}, not a room") from None


async def create_room(server: str, code: str | None = None, *, timeout: float = 10.0) -> CreatedRoom:
    """:func:`create_room_sync` in a worker thread; raises the same errors."""
    return await asyncio.to_thread(create_room_sync, server, code, timeout=timeout)


def history_sync(server: str, player_key: str, *, limit: int = 20, timeout: float = 10.0) -> dict[str, Any]:
    """The player's history (docs/openapi.yaml, ``History``): their games by ``player_key``.

    Raises :class:`UnreachableError`, :class:`RefusedError` (e.g. ``bad_player_key``) or
    :class:`ProtocolError`.
    """
    base = normalize_server(server)
    request = urllib.request.Request(
        f"{base}/api/me/history?limit={limit}",
        headers={"Authorization": f"Bearer {player_key}", "Accept": "application/json"},
    )
    try:
        status, payload = _call(request, timeout)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UnreachableError(f"cannot reach the server at {base}: {reason}") from None
    except ValueError:
        raise ProtocolError(f"{base}/api/me/history did not answer JSON: is it a Half Moon server?") from None
    if status != 200:
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            raise RefusedError(str(error.get("code", status)), str(error.get("message", error)))
        raise RefusedError(str(status), f"{base}/api/me/history answered HTTP {status}")
    if not isinstance(payload, dict) or not isinstance(payload.get("recent"), list):
        raise ProtocolError(f"{base}/api/me/history answered {payload!r:.120}, not a history")
    return payload


async def history(server: str, player_key: str, *, limit: int = 20, timeout: float = 10.0) -> dict[str, Any]:
    """:func:`history_sync` in a worker thread; raises the same errors."""
    return await asyncio.to_thread(history_sync, server, player_key, limit=limit, timeout=timeout)


def stored_game_sync(server: str, game_id: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """A stored game (docs/openapi.yaml, ``/api/games/{game}``). Raises :class:`UnreachableError`,
    :class:`RefusedError` (``no_such_game``; ``game_hidden`` / ``daily_hidden`` while its deal is
    in play) or :class:`ProtocolError`."""
    base = normalize_server(server)
    url = f"{base}/api/games/{urllib.parse.quote(game_id, safe='')}"
    try:
        status, payload = _call(urllib.request.Request(url, headers={"Accept": "application/json"}), timeout)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UnreachableError(f"cannot reach the server at {base}: {reason}") from None
    except ValueError:
        raise ProtocolError(f"{url} did not answer JSON: is it a Half Moon server?") from None
    if status != 200:
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            raise RefusedError(str(error.get("code", status)), str(error.get("message", error)))
        raise RefusedError(str(status), f"{url} answered HTTP {status}")
    if not isinstance(payload, dict):
        raise ProtocolError(f"{url} answered {payload!r:.120}, not a game")
    return payload


async def stored_game(server: str, game_id: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """:func:`stored_game_sync` in a worker thread; raises the same errors."""
    return await asyncio.to_thread(stored_game_sync, server, game_id, timeout=timeout)


def _with_key(server: str, path: str, player_key: str, *, method: str, timeout: float) -> tuple[str, int, Any]:
    """One call of the account API with the player key; the server's base, the status and the
    JSON answer. Raises :class:`UnreachableError`, :class:`ProtocolError`."""
    base = normalize_server(server)
    request = urllib.request.Request(
        f"{base}{path}",
        data=b"{}" if method == "POST" else None,
        headers={"Authorization": f"Bearer {player_key}", "Accept": "application/json",
                 "Content-Type": "application/json"},
        method=method,
    )
    try:
        status, payload = _call(request, timeout)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UnreachableError(f"cannot reach the server at {base}: {reason}") from None
    except ValueError:
        raise ProtocolError(f"{base}{path} did not answer JSON: is it a Half Moon server?") from None
    return base, status, payload


def _refusal(base: str, path: str, status: int, payload: Any) -> RefusedError:
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        return RefusedError(str(error.get("code", status)), str(error.get("message", error)))
    return RefusedError(str(status), f"{base}{path} answered HTTP {status}")


def terminal_code_sync(server: str, player_key: str, *, timeout: float = 10.0) -> tuple[str, int]:
    """A short code (``ABCD-EFGH``) that links this player key to an account once approved in a
    signed-in browser (docs/protocol.md, "Accounts"), and when it expires (ms since the epoch).

    Raises :class:`UnreachableError`, :class:`RefusedError` (``accounts_off``,
    ``rate_limited``…) or :class:`ProtocolError`."""
    base, status, payload = _with_key(server, "/api/account/terminal", player_key, method="POST", timeout=timeout)
    if status != 201:
        raise _refusal(base, "/api/account/terminal", status, payload)
    if not isinstance(payload, dict) or not isinstance(payload.get("code"), str):
        raise ProtocolError(f"{base}/api/account/terminal answered {payload!r:.120}, not a code")
    return payload["code"], int(payload.get("expires_at", 0))


def linked_account_sync(server: str, player_key: str, *, timeout: float = 10.0) -> str | None:
    """The name of the account this player key is linked to; None while it is linked to none.

    Raises :class:`UnreachableError`, :class:`RefusedError` or :class:`ProtocolError`."""
    base, status, payload = _with_key(server, "/api/account/player", player_key, method="GET", timeout=timeout)
    if status == 404 and isinstance(payload, dict) and (payload.get("error") or {}).get("code") == "not_linked":
        return None
    if status != 200:
        raise _refusal(base, "/api/account/player", status, payload)
    if not isinstance(payload, dict) or not isinstance(payload.get("account"), str):
        raise ProtocolError(f"{base}/api/account/player answered {payload!r:.120}, not an account")
    return str(payload["account"])
