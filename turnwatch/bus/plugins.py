"""The plugin surface of the scorer and exporter roles: what `module:function` paths resolve to.

`bus.scorer_processor` is a `SessionProcessor`: called with each validated `Session`, it returns
the records to publish. `bus.exporter_handler` is a `RecordHandler`: called with each record of
`turnwatch.scores` (a `ScoreRecord`) and `turnwatch.incidents` (an `Incident`), validated before
the call. Both publish `Output(topic, key, model)` tuples; a record is acknowledged only after its
outputs are.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from turnwatch.bus.records import ExporterRecord, Output
from turnwatch.schema import Session

SessionProcessor = Callable[[Session], Awaitable[Sequence[Output]]]
RecordHandler = Callable[[str, ExporterRecord], Awaitable[Sequence[Output]]]


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
