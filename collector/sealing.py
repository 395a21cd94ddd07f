"""Sealing observations for the hop from collector to sessionizer, and keying their routes.

Observations carry raw content (messages, tool arguments, user ids), and the rule is that nothing
leaves the collector process before de-identification. De-identifying each observation on its own
would need Presidio in every collector and would judge each message without its conversation;
instead the collector encrypts them with AES-256-GCM under a key derived from the deployment
secret (the one that keys pseudonyms, shared by every replica), and only a sessionizer holding
the same secret can read them. The broker, its disks and anyone reading the topic see ciphertext;
the record key is a keyed digest, so even which records belong together reveals no raw id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12
SEALING_CONTEXT = b"turnwatch observations v1"
ROUTE_CONTEXT = b"turnwatch routes v1"


class Unsealable(Exception):
    """Not sealed with this deployment's key (another secret, or tampered with)."""


class Sealer:
    def __init__(self, secret: bytes) -> None:
        # Separate keys for separate uses, each an HMAC of the secret (a one-step KDF: the
        # secret is already high-entropy, so extraction adds nothing).
        self._aead = AESGCM(hmac.digest(secret, SEALING_CONTEXT, "sha256"))
        self._route_key = hmac.digest(secret, ROUTE_CONTEXT, "sha256")

    def seal(self, plaintext: bytes, associated: bytes) -> str:
        """`associated` (the route) is authenticated with the content: a record cannot be
        re-labelled from one route to another without the key."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext, associated)
        return base64.b64encode(nonce + sealed).decode()

    def open(self, token: str, associated: bytes) -> bytes:
        try:
            raw = base64.b64decode(token, validate=True)
            return self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], associated)
        except (ValueError, InvalidTag):
            raise Unsealable() from None

    def route_key(self, kind: str, value: str) -> str:
        """The record key for a conversation or a trace: the same on every collector sharing
        the secret (so every collector routes it to the same partition), unlinkable without it."""
        message = f"{kind}\x00{value}".encode("utf-8", "surrogatepass")
        return hmac.new(self._route_key, message, hashlib.sha256).hexdigest()[:32]
