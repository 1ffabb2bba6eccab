"""Optional accounts with passkeys (docs/protocol.md, "Accounts"; docs/security.md, "Accounts"):
``/api/account/…``. An account has no password and no e-mail. Registering a passkey (the WebAuthn
registration ceremony, verified by the ``webauthn`` library) makes it and links the device's
player key (its history stays); signing in (the authentication ceremony) links the signing-in
device's key too; a signed-in device may add another with a one-time link.

Each ceremony's challenge is kept server-side (in the database, so any instance of a cluster can
finish it) under the hash of a random ceremony id, for :data:`~halfmoon_server.core.accounts.CEREMONY_TTL_MS`,
and is taken once, whatever the answer. The expected origin and RP id come from the settings
(:func:`relying_party`). A session is an opaque random secret in an ``HttpOnly``,
``SameSite=Strict`` cookie (``Secure`` when the origin is ``https``), stored only as its hash.
Every state-changing endpoint also checks ``Origin`` against the expected origin (CSRF).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)
from yarl import URL

from halfmoon.errors import BadMessageError
from halfmoon.protocol import check_name, check_player_key, player_key_hash
from halfmoon_server.core.accounts import (
    CEREMONY_TTL_MS,
    DEVICE_LINK,
    DEVICE_LINK_TTL_MS,
    REAUTH_WINDOW_MS,
    REGISTRATION,
    SESSION_COOKIE,
    SESSION_TTL_MS,
    SIGN_IN,
    TERMINAL,
    TERMINAL_ALPHABET,
    TERMINAL_CODE_LENGTH,
    Account,
    Passkey,
    Session,
    normalise_terminal_code,
    secret_hash,
)
from halfmoon_server.core.names import name_key
from halfmoon_server.errors import Refusal, StorageError
from halfmoon_server.web import keys
from halfmoon_server.web.connection import client_address
from halfmoon_server.web.rest import ApiError, base_url, current_session, json_response, read_body

#: The relying party's name a browser shows beside the passkey.
RP_NAME = "Half Moon"
#: The longest label a device or passkey may be given.
LABEL_MAX = 64
#: A ceremony's credential is at most this many bytes of JSON (an attestation is ~1 KiB; some
#: authenticators send certificates).
MAX_CREDENTIAL_BODY = 16 * 1024


@dataclass(frozen=True, slots=True)
class RelyingParty:
    """Who the passkeys belong to: the RP id (a host name), the one origin a ceremony's client data
    must name, and whether that origin is ``https`` (then the cookie is ``Secure``)."""

    id: str
    origin: str
    secure: bool


def relying_party(request: web.Request) -> RelyingParty:
    """The relying party for this request: the public URL's origin (``--public-url``) and the RP id
    (``--rp-id``, else the public URL's host). With an RP id and no public URL, the request's own
    origin (``Host``; its scheme from ``X-Forwarded-Proto`` behind a trusted proxy), only when its
    host is the RP id or under it — so a forged ``Host`` can name no other relying party.

    Raises :class:`ApiError` 404 ``accounts_off`` when neither is set (or the public URL's host is
    an IP address), 403 ``forbidden_origin`` for a request whose host is not under the RP id."""
    settings = request.app[keys.SETTINGS]
    if settings.public_url:
        url = URL(settings.public_url)
        rp_id = settings.rp_id or url.host or ""
    elif settings.rp_id:
        rp_id = settings.rp_id
        scheme = request.scheme
        if settings.trust_forwarded:
            scheme = request.headers.get("X-Forwarded-Proto", scheme).split(",")[0].strip() or scheme
        try:
            url = URL(f"{scheme}://{request.host}")
            host = url.host or ""
        except (ValueError, UnicodeError):
            host = ""
        if host != rp_id and not host.endswith("." + rp_id):
            raise ApiError(403, "forbidden_origin", f"this server's passkeys belong to {rp_id!r}, not {host!r}")
    else:
        raise ApiError(404, "accounts_off", "accounts are off on this server (it has no --public-url or --rp-id)")
    if not rp_id or _is_ip(rp_id):
        raise ApiError(404, "accounts_off", "accounts need the server's host name (--rp-id): an IP address is none")
    origin = str(url.origin())
    return RelyingParty(rp_id, origin, url.scheme == "https")


def _is_ip(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host


def check_origin(request: web.Request, party: RelyingParty) -> None:
    """CSRF: a state-changing request must come from the server's own page — its ``Origin`` is the
    relying party's origin (the cookie's ``SameSite=Strict`` is the other half). A request without
    ``Origin`` is refused too: every browser sends it on a POST or DELETE. Raises
    :class:`ApiError` 403 ``forbidden_origin``."""
    origin = request.headers.get("Origin")
    if origin != party.origin:
        shown = "no Origin" if origin is None else f"Origin {origin[:100]!r}"
        raise ApiError(403, "forbidden_origin", f"{shown}: account requests must come from {party.origin}")


def _spend_credit(request: web.Request) -> None:
    """A ceremony or a device-link use costs the client's address a credit (``--account-burst``,
    ``--account-per-min``): each keeps or looks up a token in the database, and needs no sign-in.
    Raises :class:`ApiError` 429 ``rate_limited``."""
    limits = request.app.get(keys.ACCOUNT_LIMITS)
    if limits is None:
        return
    settings = request.app[keys.SETTINGS]
    client = client_address(request, trust_forwarded=settings.trust_forwarded)
    if not limits.allow(client, settings.clock.now_ms() / 1000.0):
        raise ApiError(429, "rate_limited", "too many passkey ceremonies from your address lately: wait a minute")


async def _json_body(request: web.Request, limit: int = MAX_CREDENTIAL_BODY) -> dict[str, Any]:
    raw = await read_body(request, limit)
    if not raw:
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ApiError(400, "bad_json", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_json", "the body must be a JSON object")
    return body


def _text(body: dict[str, Any], field: str, *, required: bool = True, limit: int = 200) -> str | None:
    value = body.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise ApiError(400, "bad_request", f"{field!r} must be a string of 1 to {limit} characters")
    return value


def _label(body: dict[str, Any], default: str) -> str:
    label = _text(body, "label", required=False, limit=LABEL_MAX)
    label = (label or "").strip() or default
    if any(not ch.isprintable() for ch in label):
        raise ApiError(400, "bad_request", "'label' holds a character that cannot be shown")
    return label


def _player_of(request: web.Request) -> str | None:
    """The hash of the player key in ``Authorization: Bearer <key>``, if the device sent one (it is
    then linked to the account). Raises :class:`ApiError` 401 ``bad_player_key``."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "bad_player_key", "the Authorization header must be 'Bearer <key>'")
    try:
        return player_key_hash(check_player_key(key.strip()))
    except BadMessageError:
        raise ApiError(401, "bad_player_key", "a player key is 22-64 URL-safe base64 characters") from None


async def _signed_in(request: web.Request) -> Session:
    session = await current_session(request)
    if session is None:
        raise ApiError(401, "not_signed_in", "sign in with a passkey first")
    return session


async def _start_session(
    request: web.Request, party: RelyingParty, account: str, passkey: str | None, label: str
) -> tuple[str, Session, bool | None]:
    """A new session for ``account`` (and the device's player key linked to it); returns the
    cookie's secret, the session and whether the player key was linked (None: none was sent;
    False: it is another account's)."""
    accounts = request.app[keys.ACCOUNTS]
    now = request.app[keys.SETTINGS].clock.now_ms()
    player = _player_of(request)
    linked = None if player is None else await accounts.link_player(account, player, now)
    older = await current_session(request)
    if older is not None:  # this device signs in again: its older session ends (one row a device)
        await accounts.end_session(older.account, older.id)
    secret = secrets.token_urlsafe(32)
    session = Session(
        id=secrets.token_urlsafe(12),
        secret_hash=secret_hash(secret),
        account=account,
        passkey=passkey,
        player=player if linked else None,
        label=label,
        created_ms=now,
        expires_ms=now + SESSION_TTL_MS,
    )
    await accounts.add_session(session)
    return secret, session, linked


def _with_cookie(response: web.Response, party: RelyingParty, secret: str) -> web.Response:
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=SESSION_TTL_MS // 1000,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=party.secure,
    )
    return response


def _without_cookie(response: web.Response, party: RelyingParty) -> web.Response:
    # (set_cookie with max_age 0, not del_cookie: aiohttp before 3.11 takes no secure/samesite there)
    response.set_cookie(
        SESSION_COOKIE, "", max_age=0, path="/", secure=party.secure, httponly=True, samesite="Strict"
    )
    return response


async def _account_view(request: web.Request, session: Session) -> dict[str, Any]:
    accounts = request.app[keys.ACCOUNTS]
    account = await accounts.account(session.account)
    if account is None:
        raise ApiError(401, "not_signed_in", "the account is gone: sign in again")
    now = request.app[keys.SETTINGS].clock.now_ms()
    passkeys = await accounts.passkeys_of(account.id)
    devices = await accounts.sessions_of(account.id, now)
    players = await accounts.players_of(account.id)
    return {
        "id": account.id,
        "name": account.name,
        "player_keys": len(players),
        "passkeys": [
            {"id": p.id, "label": p.label, "created_at": p.created_ms, "used_at": p.used_ms} for p in passkeys
        ],
        "devices": [
            {
                "id": d.id,
                "label": d.label,
                "passkey": d.passkey,
                "created_at": d.created_ms,
                "expires_at": d.expires_ms,
                "current": d.id == session.id,
            }
            for d in devices
        ],
    }


def _check_fresh(request: web.Request, session: Session) -> None:
    """Adding a passkey needs a session begun within :data:`~halfmoon_server.core.accounts.REAUTH_WINDOW_MS`.
    Raises :class:`ApiError` 401 ``sign_in_again``."""
    if request.app[keys.SETTINGS].clock.now_ms() - session.created_ms > REAUTH_WINDOW_MS:
        message = "adding a passkey needs a fresh sign-in on this device: sign in again first"
        raise ApiError(401, "sign_in_again", message)


async def _ceremony(request: web.Request, purpose: str, data: dict[str, Any], options_json: str) -> web.Response:
    ceremony = secrets.token_urlsafe(32)
    now = request.app[keys.SETTINGS].clock.now_ms()
    await request.app[keys.ACCOUNTS].put_token(secret_hash(ceremony), purpose, data, now + CEREMONY_TTL_MS)
    public_key = orjson.loads(options_json)
    return json_response({"ceremony": ceremony, "expires_at": now + CEREMONY_TTL_MS, "publicKey": public_key})


async def _take_ceremony(request: web.Request, body: dict[str, Any], purpose: str) -> dict[str, Any]:
    ceremony = _text(body, "ceremony")
    assert ceremony is not None
    now = request.app[keys.SETTINGS].clock.now_ms()
    data = await request.app[keys.ACCOUNTS].take_token(secret_hash(ceremony), purpose, now)
    if data is None:
        raise ApiError(400, "bad_ceremony", "this ceremony is unknown, used or expired: ask for new options")
    return data


def _credential(body: dict[str, Any]) -> dict[str, Any]:
    credential = body.get("credential")
    if not isinstance(credential, dict) or not isinstance(credential.get("id"), str):
        raise ApiError(400, "bad_request", "'credential' must be the browser's PublicKeyCredential as JSON")
    return credential


async def registration_options(request: web.Request) -> web.Response:
    """Options for ``navigator.credentials.create()``: a new account named ``name`` (refused when
    another account holds the name, by its look-alike skeleton), or, when signed in, one more
    passkey for the signed-in account."""
    party = relying_party(request)
    check_origin(request, party)
    _spend_credit(request)
    body = await _json_body(request)
    accounts = request.app[keys.ACCOUNTS]
    session = await current_session(request)
    exclude: list[PublicKeyCredentialDescriptor] = []
    if session is not None:
        account = await accounts.account(session.account)
        if account is None:
            raise ApiError(401, "not_signed_in", "the account is gone: sign in again")
        _check_fresh(request, session)
        account_id, name, new = account.id, account.name, False
        held = await accounts.passkeys_of(account_id)
        exclude = [PublicKeyCredentialDescriptor(id=base64url_to_bytes(p.id)) for p in held]
    else:
        raw = _text(body, "name", limit=100)
        assert raw is not None
        try:
            name = check_name(raw)
        except BadMessageError as exc:
            raise ApiError(400, exc.code, exc.message) from None
        if await accounts.account_of_name(name_key(name)) is not None:
            raise ApiError(409, "name_taken", f"the name {name!r} (or one that looks like it) belongs to an account")
        account_id, new = secrets.token_urlsafe(16), True
    options = generate_registration_options(
        rp_id=party.id,
        rp_name=RP_NAME,
        user_name=name,
        user_id=account_id.encode("ascii"),
        user_display_name=name,
        timeout=CEREMONY_TTL_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED, user_verification=UserVerificationRequirement.PREFERRED
        ),
        exclude_credentials=exclude,
    )
    data = {"challenge": bytes_to_base64url(options.challenge), "account": account_id, "name": name, "new": new}
    return await _ceremony(request, REGISTRATION, data, options_to_json(options))


async def register(request: web.Request) -> web.Response:
    """Finish a registration: verify the attestation (challenge, origin, RP id), then make the
    account with this passkey — or add it to the signed-in account — and sign this device in."""
    party = relying_party(request)
    check_origin(request, party)
    body = await _json_body(request)
    credential = _credential(body)
    data = await _take_ceremony(request, body, REGISTRATION)
    try:
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(data["challenge"]),
            expected_rp_id=party.id,
            expected_origin=party.origin,
        )
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise ApiError(400, "passkey_refused", f"the passkey was refused: {str(exc)[:200]}") from None
    accounts = request.app[keys.ACCOUNTS]
    now = request.app[keys.SETTINGS].clock.now_ms()
    credential_id = bytes_to_base64url(verified.credential_id)
    if await accounts.passkey(credential_id) is not None:
        raise ApiError(409, "passkey_known", "this passkey is registered already: sign in with it")
    passkey = Passkey(
        id=credential_id,
        account=data["account"],
        public_key=verified.credential_public_key,
        sign_count=verified.sign_count,
        label=_label(body, "passkey"),
        created_ms=now,
        used_ms=now,
    )
    if data["new"]:
        account = Account(data["account"], data["name"], name_key(data["name"]), now)
        if not await accounts.create_account(account, passkey):
            taken = f"the name {data['name']!r} (or one that looks like it) belongs to an account"
            raise ApiError(409, "name_taken", taken)
    else:
        session = await current_session(request)
        if session is None or session.account != data["account"]:
            raise ApiError(401, "not_signed_in", "adding a passkey needs the account signed in on this device")
        _check_fresh(request, session)
        await accounts.add_passkey(passkey)
        view = await _account_view(request, session)  # this device stays signed in as it was
        return json_response({"account": view, "player_linked": None}, 201)
    secret, session, linked = await _start_session(request, party, passkey.account, passkey.id, _label(body, "device"))
    view = await _account_view(request, session)
    return _with_cookie(json_response({"account": view, "player_linked": linked}, 201), party, secret)


async def signin_options(request: web.Request) -> web.Response:
    """Options for ``navigator.credentials.get()``: any of this server's passkeys (discoverable
    credentials: the authenticator offers the ones it holds)."""
    party = relying_party(request)
    check_origin(request, party)
    _spend_credit(request)
    options = generate_authentication_options(
        rp_id=party.id, timeout=CEREMONY_TTL_MS, user_verification=UserVerificationRequirement.PREFERRED
    )
    data = {"challenge": bytes_to_base64url(options.challenge)}
    return await _ceremony(request, SIGN_IN, data, options_to_json(options))


async def signin(request: web.Request) -> web.Response:
    """Finish a sign-in: verify the assertion (challenge, origin, RP id, signature with the stored
    public key, the signature counter against a cloned authenticator, the user handle), then sign
    this device in and link its player key."""
    party = relying_party(request)
    check_origin(request, party)
    body = await _json_body(request)
    credential = _credential(body)
    data = await _take_ceremony(request, body, SIGN_IN)
    accounts = request.app[keys.ACCOUNTS]
    passkey = await accounts.passkey(credential["id"])
    if passkey is None:
        raise ApiError(401, "unknown_passkey", "this passkey is not registered here (or was revoked)")
    response = credential.get("response")
    handle = response.get("userHandle") if isinstance(response, dict) else None
    if handle and handle != bytes_to_base64url(passkey.account.encode("ascii")):
        raise ApiError(401, "passkey_refused", "the passkey answered for another account")
    try:
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(data["challenge"]),
            expected_rp_id=party.id,
            expected_origin=party.origin,
            credential_public_key=passkey.public_key,
            credential_current_sign_count=passkey.sign_count,
        )
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise ApiError(401, "passkey_refused", f"the passkey was refused: {str(exc)[:200]}") from None
    now = request.app[keys.SETTINGS].clock.now_ms()
    await accounts.passkey_used(passkey.id, verified.new_sign_count, now)
    body_label = _label(body, "device")
    secret, session, linked = await _start_session(request, party, passkey.account, passkey.id, body_label)
    view = await _account_view(request, session)
    return _with_cookie(json_response({"account": view, "player_linked": linked}), party, secret)


async def signout(request: web.Request) -> web.Response:
    """End this device's session (no session: nothing to do) and clear its cookie."""
    party = relying_party(request)
    check_origin(request, party)
    session = await current_session(request)
    if session is not None:
        await request.app[keys.ACCOUNTS].end_session(session.account, session.id)
    return _without_cookie(json_response({"signed_in": False}), party)


async def get_account(request: web.Request) -> web.Response:
    """The signed-in account: its name, passkeys and devices (this one marked ``current``)."""
    relying_party(request)
    session = await _signed_in(request)
    return json_response(await _account_view(request, session))


async def revoke_passkey(request: web.Request) -> web.Response:
    """Remove one of the account's passkeys; every device signed in with it is signed out. The
    last passkey stays (``last_passkey``): without one, nobody could sign in again."""
    party = relying_party(request)
    check_origin(request, party)
    session = await _signed_in(request)
    accounts = request.app[keys.ACCOUNTS]
    credential_id = request.match_info["passkey"]
    mine = await accounts.passkeys_of(session.account)
    if not any(p.id == credential_id for p in mine):
        raise ApiError(404, "no_such_passkey", "the account has no such passkey")
    if len(mine) == 1:
        raise ApiError(409, "last_passkey", "this is the account's only passkey: add another before removing it")
    await accounts.revoke_passkey(session.account, credential_id)
    response = json_response({"revoked": credential_id})
    return _without_cookie(response, party) if session.passkey == credential_id else response


async def revoke_device(request: web.Request) -> web.Response:
    """Sign one of the account's devices out (this one too: its cookie is then cleared)."""
    party = relying_party(request)
    check_origin(request, party)
    session = await _signed_in(request)
    device = request.match_info["device"]
    if not await request.app[keys.ACCOUNTS].end_session(session.account, device):
        raise ApiError(404, "no_such_device", "the account has no such signed-in device")
    response = json_response({"revoked": device})
    return _without_cookie(response, party) if device == session.id else response


async def create_device_link(request: web.Request) -> web.Response:
    """A one-time link that signs another device in to this account: good for
    :data:`~halfmoon_server.core.accounts.DEVICE_LINK_TTL_MS`, once. The token rides in the URL's
    fragment, which never reaches a server's log."""
    party = relying_party(request)
    check_origin(request, party)
    session = await _signed_in(request)
    token = secrets.token_urlsafe(32)
    now = request.app[keys.SETTINGS].clock.now_ms()
    expires = now + DEVICE_LINK_TTL_MS
    await request.app[keys.ACCOUNTS].put_token(secret_hash(token), DEVICE_LINK, {"account": session.account}, expires)
    url = f"{base_url(request)}/account#link={token}"
    return json_response({"token": token, "url": url, "expires_at": expires}, 201)


async def redeem_device_link(request: web.Request) -> web.Response:
    """Sign this device in with a one-time link (then it is used up) and link its player key."""
    party = relying_party(request)
    check_origin(request, party)
    _spend_credit(request)
    body = await _json_body(request)
    token = _text(body, "token")
    assert token is not None
    accounts = request.app[keys.ACCOUNTS]
    now = request.app[keys.SETTINGS].clock.now_ms()
    data = await accounts.take_token(secret_hash(token), DEVICE_LINK, now)
    if data is None or await accounts.account(data["account"]) is None:
        raise ApiError(400, "bad_link", "this link is unknown, used or expired: make a new one on a signed-in device")
    secret, session, linked = await _start_session(request, party, data["account"], None, _label(body, "device"))
    view = await _account_view(request, session)
    return _with_cookie(json_response({"account": view, "player_linked": linked}, 201), party, secret)


async def create_terminal_code(request: web.Request) -> web.Response:
    """A short code for a terminal client (its player key in ``Authorization: Bearer``) to show its
    player; approved in a signed-in browser (:func:`approve_terminal_code`) within 10 minutes,
    once, it links the terminal's player key to that account. Raises :class:`ApiError` 401
    ``no_player_key``/``bad_player_key``, 429 ``rate_limited``."""
    relying_party(request)
    _spend_credit(request)
    player = _player_of(request)
    if player is None:
        raise ApiError(401, "no_player_key", "send the terminal's player key as 'Authorization: Bearer <key>'")
    code = "".join(secrets.choice(TERMINAL_ALPHABET) for _ in range(TERMINAL_CODE_LENGTH))
    now = request.app[keys.SETTINGS].clock.now_ms()
    expires = now + DEVICE_LINK_TTL_MS
    await request.app[keys.ACCOUNTS].put_token(secret_hash(code), TERMINAL, {"player": player}, expires)
    return json_response({"code": f"{code[:4]}-{code[4:]}", "expires_at": expires}, 201)


async def approve_terminal_code(request: web.Request) -> web.Response:
    """Link the terminal whose code this is to the signed-in account (the code is used up either
    way). Raises :class:`ApiError` 400 ``bad_terminal_code``, 401 ``not_signed_in``, 409
    ``player_taken`` (that terminal's key is another account's)."""
    party = relying_party(request)
    check_origin(request, party)
    _spend_credit(request)
    session = await _signed_in(request)
    body = await _json_body(request)
    code = normalise_terminal_code(_text(body, "code", limit=40) or "")
    now = request.app[keys.SETTINGS].clock.now_ms()
    accounts = request.app[keys.ACCOUNTS]
    data = None if code is None else await accounts.take_token(secret_hash(code), TERMINAL, now)
    if data is None:
        raise ApiError(400, "bad_terminal_code", "no terminal shows this code (or it was used, or expired)")
    if not await accounts.link_player(session.account, data["player"], now):
        raise ApiError(409, "player_taken", "that terminal is linked to another account")
    return json_response({"linked": True})


async def linked_account(request: web.Request) -> web.Response:
    """The account the player key in ``Authorization: Bearer`` is linked to (what a terminal asks
    while its code waits for approval). Raises :class:`ApiError` 401 ``no_player_key``, 404
    ``not_linked``."""
    relying_party(request)
    player = _player_of(request)
    if player is None:
        raise ApiError(401, "no_player_key", "send your player key as 'Authorization: Bearer <key>'")
    accounts = request.app[keys.ACCOUNTS]
    account_id = await accounts.account_of_player(player)
    account = None if account_id is None else await accounts.account(account_id)
    if account is None:
        raise ApiError(404, "not_linked", "this player key is linked to no account")
    return json_response({"account": account.name})


async def daily_accounts(
    app: web.Application, session_secret: str | None, player: str | None
) -> tuple[str | None, str | None]:
    """Whose account a ``daily`` is asked for: the account of the connection's signed-in session
    (its handshake's cookie, ``session_secret``; it may resume the account's attempt) and the
    account the player key (its hash, ``player``) is linked to (the daily's one ranked attempt
    is that account's, signed in or not — a terminal's linked key too). (None, None) without
    accounts.

    Raises :class:`~halfmoon_server.errors.Refusal` ``unavailable`` (the database did not answer:
    nothing changed — an attempt is never ranked because its account could not be read)."""
    accounts = app.get(keys.ACCOUNTS)
    if accounts is None:
        return None, None
    try:
        session = None
        if session_secret is not None:  # (checked at the handshake: core.accounts.session_secret)
            session = await accounts.session(secret_hash(session_secret), app[keys.SETTINGS].clock.now_ms())
        linked = None if player is None else await accounts.account_of_player(player)
    except StorageError:
        raise Refusal("unavailable", "the server cannot read accounts right now; nothing changed: try again") from None
    return (None if session is None else session.account), linked


async def check_ranked_name(app: web.Application, name: str, player: str | None) -> None:
    """In ranked play (a daily attempt, a sealed race) a name registered to an account — or one
    that looks like it (:func:`~halfmoon_server.core.names.name_key`) — is that account's: only a
    player key linked to it may use it.

    Raises :class:`~halfmoon_server.errors.Refusal` ``name_reserved`` (another identity), or
    ``unavailable`` (the database did not answer: nothing changed)."""
    accounts = app.get(keys.ACCOUNTS)
    if accounts is None:
        return
    try:
        account = await accounts.account_of_name(name_key(name))
        if account is None or (player is not None and player in await accounts.players_of(account.id)):
            return
    except StorageError:
        raise Refusal("unavailable", "the server cannot check names right now; nothing changed: try again") from None
    raise Refusal(
        "name_reserved",
        f"the name {name!r} (or one that looks like it) belongs to an account: sign in to it on this device"
        " to race under it in ranked play, or pick another name",
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/api/account", get_account)
    app.router.add_post("/api/account/register/options", registration_options)
    app.router.add_post("/api/account/register", register)
    app.router.add_post("/api/account/signin/options", signin_options)
    app.router.add_post("/api/account/signin", signin)
    app.router.add_post("/api/account/signout", signout)
    app.router.add_delete("/api/account/passkeys/{passkey}", revoke_passkey)
    app.router.add_delete("/api/account/devices/{device}", revoke_device)
    app.router.add_post("/api/account/links", create_device_link)
    app.router.add_post("/api/account/links/redeem", redeem_device_link)
    app.router.add_post("/api/account/terminal", create_terminal_code)
    app.router.add_post("/api/account/terminal/approve", approve_terminal_code)
    app.router.add_get("/api/account/player", linked_account)
