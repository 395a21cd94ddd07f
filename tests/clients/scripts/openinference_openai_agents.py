"""The OpenAI Agents SDK on the Chat Completions API, instrumented with OpenInference's
`OpenAIAgentsInstrumentor` (an exclusive trace processor, so nothing goes to OpenAI's own
tracing backend). The SDK's traces become OTel spans; the conversation and user are set with
OpenInference's `using_session` and `using_user`, and the history is passed back on every run
(`to_input_list`)."""

from __future__ import annotations

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from common import tracer_provider
from openai import AsyncOpenAI
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from scenario import (
    CONVERSATIONS,
    MODEL,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    Settings,
    conversation_id,
    lookup_parcel,
    user_id,
)

settings = Settings.from_environment()
provider = tracer_provider(settings)
OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
client = AsyncOpenAI(base_url=settings.chat_base_url, api_key="loopback", max_retries=0)
tool = function_tool(lookup_parcel, name_override=TOOL_NAME, description_override=TOOL_DESCRIPTION)
agent = Agent(
    name="parcel-shop-bot",
    instructions=SYSTEM_PROMPT,
    model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
    tools=[tool],
)

for conversation in CONVERSATIONS:
    history: list = []
    with (
        using_session(conversation_id(settings.run, conversation)),
        using_user(user_id(conversation)),
    ):
        for exchange in conversation.exchanges:
            result = Runner.run_sync(agent, [*history, {"role": "user", "content": exchange.user}])
            history = result.to_input_list()
provider.shutdown()
