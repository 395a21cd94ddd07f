"""Who and which conversation a span or log record belongs to, whatever its dialect."""

from __future__ import annotations

from typing import Any

from turnwatch.collector.config import ConversationKeyConfig, SamplingConfig, SessionConfig
from turnwatch.collector.records import STATUS_ERROR, Context

MAX_KEY_LENGTH = 256


def _first(
    attributes: dict[str, Any], resource: dict[str, Any], names: list[str]
) -> tuple[str | None, str | None]:
    """The first named attribute with a usable value (span before resource), and its name."""
    for name in names:
        value = attributes.get(name)
        text = _text(value) if value is not None else None
        if text is None:
            value = resource.get(name)
            text = _text(value) if value is not None else None
        if text:
            return text, name
    return None, None


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        value = value.strip()
        return value[:MAX_KEY_LENGTH] if value else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


class ContextReader:
    """Reads conversation key, user, errors and lifecycle markers from attributes."""

    def __init__(
        self,
        keys: ConversationKeyConfig,
        sessions: SessionConfig,
        sampling: SamplingConfig,
        service_fallback: str,
    ) -> None:
        self.key_attributes = [*keys.priority]
        if keys.custom_attribute:
            self.key_attributes.append(keys.custom_attribute)
        self.user_attributes = keys.user_attributes
        self.end_markers = {
            attribute: expected.lower()
            for attribute, expected in sessions.end_marker_attributes.items()
        }
        self.end_events = frozenset(sessions.end_marker_events)
        self.force_attributes = {
            key: frozenset(values) for key, values in sampling.force_attributes.items()
        }
        self.service_fallback = service_fallback
        self.resource_attributes = sessions.resource_attributes
        self.max_resource_attribute_chars = sessions.max_resource_attribute_chars
        self._last_resource: dict[str, Any] | None = None
        self._last_facts: tuple[str, str | None, dict[str, str]] = (service_fallback, None, {})

    def read(
        self,
        attributes: dict[str, Any],
        resource: dict[str, Any],
        scope_name: str,
        status_code: int,
        event_names: tuple[str, ...],
        dropped_attributes: int,
    ) -> Context:
        key, source = _first(attributes, resource, self.key_attributes)
        user, _ = _first(attributes, resource, self.user_attributes)
        is_end = False
        for attribute, expected in self.end_markers.items():
            value = attributes.get(attribute)
            if value is not None and str(value).lower() == expected:
                is_end = True
                break
        if event_names and not is_end:
            is_end = any(name in self.end_events for name in event_names)
        forced = None
        for attribute, values in self.force_attributes.items():
            value = attributes.get(attribute)
            if isinstance(value, str) and value in values:
                forced = attribute
                break
        service, service_version, resource_attributes = self._resource_facts(resource)
        agent_name = attributes.get("gen_ai.agent.name")
        agent_version = attributes.get("gen_ai.agent.version")
        # Positional (Context's field order): keyword arguments to a dataclass cost half a
        # microsecond more, and this runs for every span.
        return Context(
            service,
            key,
            source,
            user,
            status_code == STATUS_ERROR or "error.type" in attributes,
            is_end,
            forced,
            service_version,
            _text(agent_name) if agent_name is not None else None,
            _text(agent_version) if agent_version is not None else None,
            scope_name,
            dropped_attributes,
            resource_attributes,
        )

    def _resource_facts(self, resource: dict[str, Any]) -> tuple[str, str | None, dict[str, str]]:
        """Service name, version and the kept attributes; every span of an OTLP resource block
        shares the dict, so they are read once per block."""
        if resource is not self._last_resource:
            service = resource.get("service.name")
            self._last_resource = resource
            self._last_facts = (
                (_text(service) if service else None) or self.service_fallback,
                _text(resource.get("service.version")),
                self._kept_attributes(resource),
            )
        return self._last_facts

    def _kept_attributes(self, resource: dict[str, Any]) -> dict[str, str]:
        """The listed attributes with a text, number or boolean value, as text; arrays and maps
        have no one value to select on and are left out."""
        kept: dict[str, str] = {}
        for key in self.resource_attributes:
            value = resource.get(key)
            if isinstance(value, bool):
                text: str | None = "true" if value else "false"
            elif isinstance(value, str | int | float):
                text = str(value).strip()
            else:
                continue
            if text:
                kept[key] = text[: self.max_resource_attribute_chars]
        return kept

    def has_identity(self, context: Context) -> bool:
        """A span worth remembering even without content: it names, ends or flags a session."""
        return bool(
            context.conversation_key
            or context.user_id
            or context.is_end_marker
            or context.force_attribute
        )
