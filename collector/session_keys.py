"""Session keys and ids: a conversation id is scoped by the service that named it."""

from __future__ import annotations

import hashlib

SCOPE_SEPARATOR = "\x1f"


def scoped_key(service: str, conversation_key: str) -> str:
    """A conversation id names a conversation within its service: two chatbots that both number
    their conversations from 1 have two sessions each, not one merged session. (A trace id is
    unique on its own and stays unscoped.)"""
    return f"{service}{SCOPE_SEPARATOR}{conversation_key}"


def session_id_for(service: str, conversation_key: str) -> str:
    return session_id_of_key(scoped_key(service, conversation_key))


def session_id_of_key(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def conversation_of_key(key: str) -> str:
    """The key as the chatbot named it: without its service scope."""
    _, separator, conversation = key.partition(SCOPE_SEPARATOR)
    return conversation if separator else key
