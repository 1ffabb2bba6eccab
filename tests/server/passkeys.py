"""A software WebAuthn authenticator for the server's tests: an ES256 (P-256) passkey that answers a
registration with a ``none`` attestation and a sign-in with a real signature, as a browser would
send them (``PublicKeyCredential`` as JSON, base64url fields). Each answer may be bent — another
origin, another RP id, a counter that does not grow, a signature over other bytes — to show what the
server refuses."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

#: Authenticator data flags (WebAuthn §6.1): user present, user verified, attested credential data.
UP, UV, AT = 0x01, 0x04, 0x40


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SoftPasskey:
    """One passkey (a discoverable ES256 credential) for ``rp_id``, used from ``origin``. Copying
    the object is what a synced passkey is: the same key on another device."""

    def __init__(self, rp_id: str, origin: str) -> None:
        self.rp_id = rp_id
        self.origin = origin
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(16)
        self.sign_count = 0
        self.user_handle: str | None = None

    @property
    def id(self) -> str:
        return b64url(self.credential_id)

    def _cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        x, y = numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: x, -3: y})  # EC2, ES256, P-256

    def _client_data(self, kind: str, challenge: str, origin: str | None) -> bytes:
        data = {"type": kind, "challenge": challenge, "origin": origin or self.origin, "crossOrigin": False}
        return json.dumps(data).encode()

    def create(self, options: dict[str, Any], *, origin: str | None = None, rp_id: str | None = None) -> dict[str, Any]:
        """``navigator.credentials.create()``'s answer to the server's ``publicKey`` options."""
        client_data = self._client_data("webauthn.create", options["challenge"], origin)
        self.user_handle = options["user"]["id"]
        auth_data = (
            hashlib.sha256((rp_id or self.rp_id).encode()).digest()
            + bytes([UP | UV | AT])
            + self.sign_count.to_bytes(4, "big")
            + bytes(16)  # no AAGUID
            + len(self.credential_id).to_bytes(2, "big")
            + self.credential_id
            + self._cose_key()
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(attestation),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
        }

    def get(
        self,
        options: dict[str, Any],
        *,
        origin: str | None = None,
        rp_id: str | None = None,
        count: int | None = None,
        forge: bool = False,
    ) -> dict[str, Any]:
        """``navigator.credentials.get()``'s answer: an assertion signed with the passkey's key
        (the counter grows by one unless ``count`` says what to send; ``forge`` signs other bytes)."""
        if count is None:
            self.sign_count += 1
            count = self.sign_count
        client_data = self._client_data("webauthn.get", options["challenge"], origin)
        rp_id_hash = hashlib.sha256((rp_id or self.rp_id).encode()).digest()
        auth_data = rp_id_hash + bytes([UP | UV]) + count.to_bytes(4, "big")
        signed = auth_data + hashlib.sha256(b"something else" if forge else client_data).digest()
        signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                "userHandle": self.user_handle,
            },
            "clientExtensionResults": {},
        }
