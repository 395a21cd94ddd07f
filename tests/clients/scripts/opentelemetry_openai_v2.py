"""The official OpenTelemetry OpenAI instrumentation (`opentelemetry-instrumentation-openai-v2`)
in the latest experimental conventions with content on spans, set up by environment as its
README says (`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`,
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only`, given by the test).

The instrumentation knows no conversation: the chatbot's own span around each user turn carries
`gen_ai.conversation.id` and `user.id`, and the model calls inside join that turn's trace.
"""

from __future__ import annotations

from common import asker, in_turn_span, openai_client, play, tracer_provider
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from scenario import CONVERSATIONS, Settings

settings = Settings.from_environment()
provider = tracer_provider(settings)
OpenAIInstrumentor().instrument(tracer_provider=provider)
ask = asker(openai_client(settings))
for conversation in CONVERSATIONS:
    play(conversation, in_turn_span(provider, settings, conversation, ask))
provider.shutdown()
