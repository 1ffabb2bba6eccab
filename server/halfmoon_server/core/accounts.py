"""What an account is: values only, no I/O. An account has no password and no e-mail: it is its
passkeys (WebAuthn credentials), the player keys linked to it (their games are its history) and
its signed-in devices (sessions). Every secret the server hands out — a session id, a ceremony's
id, a one-time device link — is stored only as its SHA-256 (:func:`secret_hash`): a copy of the
database signs nobody in.

The time limits are here, in milliseconds of the injected clock (docs/security.md, "Accounts").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

#: The session cookie: an opaque random secret, ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over TLS.
SESSION_COOKIE = "hm_session"

#: A ceremony's challenge (registration or sign-in) must be answered within this; once, either way.
CEREMONY_TTL_MS = 5 * 60 * 1000
#: A one-time link to add a device is good this long, and once.
DEVICE_LINK_TTL_MS = 10 * 60 * 1000
#: Adding a passkey to an account needs a session begun this recently (a fresh sign-in): a stolen
#: cookie alone cannot plant a passkey of its own.
REAUTH_WINDOW_MS = 10 * 60 * 1000
#: A session (a signed-in device) lasts this long after it began; signing in again makes a new one.
SESSION_TTL_MS = 90 * 24 * 3600 * 1000

#: What a stored token is for: each is taken back only for its own purpose.
REGISTRATION = "register"
TERMINAL = "terminal"
SIGN_IN = "signin"
DEVICE_LINK = "link"
PURPOSES = frozenset({REGISTRATION, SIGN_IN, DEVICE_LINK, TERMINAL})

#: A terminal's link code: 8 symbols of an alphabet without look-alikes (40 bits), shown as
#: ``ABCD-EFGH``; approved from a signed-in browser within :data:`DEVICE_LINK_TTL_MS`, once.
TERMINAL_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
TERMINAL_CODE_LENGTH = 8


def normalise_terminal_code(text: str) -> str | None:
    """A terminal code as typed (any case, with or without its dash and spaces) in its canonical
    form, or None when it cannot be one.

    >>> normalise_terminal_code(" abcd-efgh ")
    'ABCDEFGH'
    >>> normalise_terminal_code("ABCD-EFG0") is None
    True
    """
    code = "".join(text.split()).replace("-", "").upper()
    if len(code) != TERMINAL_CODE_LENGTH or any(ch not in TERMINAL_ALPHABET for ch in code):
        return None
    return code


#: What a session cookie this server set can hold: ``secrets.token_urlsafe`` (43 characters now).
_SESSION_SECRET = re.compile(r"[A-Za-z0-9_-]{1,100}")


def session_secret(value: str | None) -> str | None:
    """A session cookie's value when it can be a secret this server handed out (URL-safe base64,
    at most 100 characters), else None — as no cookie: a value that is not one (bytes that are
    not UTF-8, a quoted value that unquotes to a line break) is never hashed, looked up nor
    carried on (a cluster's relay sends it to the room's owner in a ``Cookie`` header).

    >>> session_secret("AbC-_9"), session_secret('a"b'), session_secret("a\\r\\nX: 1"), session_secret("")
    ('AbC-_9', None, None, None)
    """
    if value is None or not _SESSION_SECRET.fullmatch(value):
        return None
    return value


def secret_hash(secret: str) -> str:
    """The SHA-256 (hex) under which a secret the server handed out is stored and looked up."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Account:
    """An account: its id (random, also the WebAuthn user handle), its name (reserved, by its
    look-alike skeleton ``name_key``, to this account in ranked play) and when it was made (ms)."""

    id: str
    name: str
    name_key: str
    created_ms: int


@dataclass(frozen=True, slots=True)
class Passkey:
    """A WebAuthn credential of an account: its id (base64url, as the browser names it), its COSE
    public key, the authenticator's last signature counter, a label and when it was added and
    last used (ms)."""

    id: str
    account: str
    public_key: bytes
    sign_count: int
    label: str
    created_ms: int
    used_ms: int | None


@dataclass(frozen=True, slots=True)
class Session:
    """A signed-in device: a public id (shown in the device list, revokes it), the hash of its
    secret cookie value, its account, the passkey it signed in with (None: added with a one-time
    link from another device), the player key hash it linked, a label, and its times (ms)."""

    id: str
    secret_hash: str
    account: str
    passkey: str | None
    player: str | None
    label: str
    created_ms: int
    expires_ms: int
