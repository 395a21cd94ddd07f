"""OpenInference's OpenAI instrumentation, conversation and user set with its context managers
(`using_session`, `using_user`), as its README shows."""

from __future__ import annotations

from common import asker, openai_client, play, tracer_provider
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.openai import OpenAIInstrumentor
from scenario import CONVERSATIONS, Settings, conversation_id, user_id

settings = Settings.from_environment()
provider = tracer_provider(settings)
OpenAIInstrumentor().instrument(tracer_provider=provider)
ask = asker(openai_client(settings))
for conversation in CONVERSATIONS:
    with (
        using_session(conversation_id(settings.run, conversation)),
        using_user(user_id(conversation)),
    ):
        play(conversation, ask)
provider.shutdown()
