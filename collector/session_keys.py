"""Session keys and ids: a conversation id is scoped by the service that named it, and a session
id is a keyed digest of that scoped key under the deployment's session-id key."""

from __future__ import annotations

import hashlib

SCOPE_SEPARATOR = "\x1f"


def scoped_key(service: str, conversation_key: str) -> str:
    """A conversation id names a conversation within its service: two chatbots that both number
    their conversations from 1 have two sessions each, not one merged session. (A trace id is
    unique on its own and stays unscoped.)"""
    return f"{service}{SCOPE_SEPARATOR}{conversation_key}"


def session_id_for(service: str, conversation_key: str, id_key: bytes) -> str:
    """The session id of a conversation a service named, as the sessionizer derives it."""
    return session_id_of_key(scoped_key(service, conversation_key), id_key)


def session_id_of_key(key: str, id_key: bytes) -> str:
    """The session id of a sessionizer key (scoped conversation key or trace id): a keyed
    BLAKE2b with the deployment's session-id key
    (`turnwatch.collector.deid.secret.session_id_key`). Stable within a deployment; without the
    key nobody can tell which conversation id a session id stands for."""
    data = key.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16, key=id_key).hexdigest()


def conversation_of_key(key: str) -> str:
    """The key as the chatbot named it: without its service scope."""
    _, separator, conversation = key.partition(SCOPE_SEPARATOR)
    return conversation if separator else key
