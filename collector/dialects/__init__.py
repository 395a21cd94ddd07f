"""Dialect decoders: one small class per way chatbots put conversations into OTel data.

Each decoder looks at one span (or log record) and returns an `Observation` when it recognises
its dialect, else None. `build_span_decoders` composes them in the configured order.
"""

from __future__ import annotations

from collections.abc import Sequence

from turnwatch.collector.dialects.base import LogDecoder, SpanDecoder
from turnwatch.collector.dialects.genai import GenAIDetailsEventDecoder, GenAISpanDecoder
from turnwatch.collector.dialects.genai_events import (
    GenAIMessageEventLogDecoder,
    GenAISpanEventDecoder,
)
from turnwatch.collector.dialects.openinference import OpenInferenceDecoder
from turnwatch.collector.dialects.openllmetry import OpenLLMetryDecoder
from turnwatch.collector.dialects.vercel_ai import VercelAIDecoder

SPAN_DECODERS: dict[str, type[SpanDecoder]] = {
    "genai": GenAISpanDecoder,
    "genai_events": GenAISpanEventDecoder,
    "openinference": OpenInferenceDecoder,
    "openllmetry": OpenLLMetryDecoder,
    "vercel_ai": VercelAIDecoder,
}

LOG_DECODERS: dict[str, type[LogDecoder]] = {
    "genai": GenAIDetailsEventDecoder,
    "genai_events": GenAIMessageEventLogDecoder,
}


def build_span_decoders(names: Sequence[str], redaction_markers: list[str]) -> list[SpanDecoder]:
    return [SPAN_DECODERS[name](redaction_markers) for name in names if name in SPAN_DECODERS]


def build_log_decoders(names: Sequence[str], redaction_markers: list[str]) -> list[LogDecoder]:
    return [LOG_DECODERS[name](redaction_markers) for name in names if name in LOG_DECODERS]
