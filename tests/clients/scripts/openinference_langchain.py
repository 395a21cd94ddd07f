"""LangChain 1.x (`create_agent`, a LangGraph graph) on `ChatOpenAI`, instrumented with
OpenInference's LangChain instrumentation. The conversation is the LangGraph thread: an
in-memory checkpointer keeps the history, `thread_id` names it (the instrumentation reports it as
`session.id`), and `using_user` names the user."""

from __future__ import annotations

from common import tracer_provider
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from openinference.instrumentation import using_user
from openinference.instrumentation.langchain import LangChainInstrumentor
from scenario import (
    CONVERSATIONS,
    MODEL,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    Settings,
    conversation_id,
    lookup_parcel,
    user_id,
)

settings = Settings.from_environment()
provider = tracer_provider(settings)
LangChainInstrumentor().instrument(tracer_provider=provider)


@tool(description=TOOL_DESCRIPTION)
def lookup_parcel_tool(label: str) -> str:
    return lookup_parcel(label)


lookup_parcel_tool.name = "lookup_parcel"
model = ChatOpenAI(model=MODEL, base_url=settings.chat_base_url, api_key="loopback", max_retries=0)
agent = create_agent(
    model, tools=[lookup_parcel_tool], system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver()
)

for conversation in CONVERSATIONS:
    thread = {"configurable": {"thread_id": conversation_id(settings.run, conversation)}}
    with using_user(user_id(conversation)):
        for exchange in conversation.exchanges:
            agent.invoke({"messages": [{"role": "user", "content": exchange.user}]}, thread)
provider.shutdown()
