"""pydantic-ai: an Agent on its OpenAI chat model, instrumented with its own OTel support
(`Agent.instrument_all(InstrumentationSettings(...))`), the tool a plain function, the history
passed back on every run (`message_history`) and the conversation id given to each run
(`conversation_id`, emitted as `gen_ai.conversation.id`). pydantic-ai has no user id: the
chatbot's span around each turn carries `user.id`."""

from __future__ import annotations

from common import tracer_provider
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from scenario import (
    CONVERSATIONS,
    MODEL,
    SYSTEM_PROMPT,
    TOOL_NAME,
    Settings,
    conversation_id,
    lookup_parcel,
    user_id,
)

settings = Settings.from_environment()
provider = tracer_provider(settings)
model = OpenAIChatModel(
    MODEL, provider=OpenAIProvider(base_url=settings.chat_base_url, api_key="loopback")
)
Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
agent = Agent(model, system_prompt=SYSTEM_PROMPT)
agent.tool_plain(name=TOOL_NAME)(lookup_parcel)
tracer = provider.get_tracer("parcel-shop-bot")

for conversation in CONVERSATIONS:
    history = []
    for exchange in conversation.exchanges:
        user = {"user.id": user_id(conversation)}
        with tracer.start_as_current_span("support turn", attributes=user):
            result = agent.run_sync(
                exchange.user,
                message_history=history,
                conversation_id=conversation_id(settings.run, conversation),
            )
        history = result.all_messages()
provider.shutdown()
