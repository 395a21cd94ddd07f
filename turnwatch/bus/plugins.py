"""Plugged-in work for the scorer and exporter roles, named in the configuration.

The scorer role calls `bus.scorer_processor(session)` for each session, instead of turnwatch's
scorers, and publishes what it returns; the exporter role calls `bus.exporter_handler(topic,
record)` for each score and incident instead of turnwatch's exporters. Either is a
`module:function` path, resolved here at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from turnwatch.bus.records import Output
from turnwatch.schema import Session

SessionProcessor = Callable[[Session], Awaitable[Sequence[Output]]]
RecordHandler = Callable[[str, dict[str, Any]], Awaitable[Sequence[Output]]]


class PluginError(ValueError):
    """A `bus.scorer_processor` / `bus.exporter_handler` path that does not resolve."""


def load_callable(path: str) -> Callable[..., Any]:
    """`package.module:function` -> the function; PluginError naming the path otherwise."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise PluginError(f"{path!r} is not of the form module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f"{path!r}: cannot import {module_name} ({exc.name})") from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise PluginError(f"{path!r}: {attribute} is not a function in {module_name}")
    return function
