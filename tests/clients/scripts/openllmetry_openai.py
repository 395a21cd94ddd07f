"""OpenLLMetry's OpenAI instrumentation without the Traceloop SDK, in attribute mode (the
default: `gen_ai.input.messages` on spans) or, with `SCENARIO_OPENLLMETRY_EVENTS=1`, in event
mode (`use_attributes=False`: `gen_ai.*.message` and `gen_ai.choice` log records).

The instrumentation names no conversation, so the chatbot opens one span per user turn with
`gen_ai.conversation.id` and `user.id`: the model calls inside join that turn's trace.
"""

from __future__ import annotations

import os

from common import asker, in_turn_span, openai_client, play, tracer_provider
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from scenario import CONVERSATIONS, Settings

settings = Settings.from_environment()
provider = tracer_provider(settings)
events = os.environ.get("SCENARIO_OPENLLMETRY_EVENTS") == "1"
logger_provider = None
if events:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    logger_provider = LoggerProvider(resource=provider.resource)
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{settings.otlp_endpoint}/v1/logs"))
    )
    OpenAIInstrumentor(use_attributes=False).instrument(
        tracer_provider=provider, logger_provider=logger_provider
    )
else:
    OpenAIInstrumentor().instrument(tracer_provider=provider)

ask = asker(openai_client(settings))
for conversation in CONVERSATIONS:
    play(conversation, in_turn_span(provider, settings, conversation, ask))
provider.shutdown()
if logger_provider is not None:
    logger_provider.shutdown()
