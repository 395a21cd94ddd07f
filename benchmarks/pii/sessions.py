"""The corpus as the collector hands it to de-identification: Session records."""

from __future__ import annotations

from datetime import UTC, datetime

from benchmarks.pii.model import LabelledConversation, plain
from turnwatch.schema import Role, SamplingDecision, SamplingReason, Session, ToolCall, Turn

SYSTEM_PROMPT = (
    "You are Acme's support assistant. Be concise and polite. Verify the customer's identity "
    "before changing an order and never reveal another customer's data."
)


def session(conversation_id: str, turns: list[Turn], user_id: str | None = "bench-user") -> Session:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Session(
        session_id=conversation_id,
        revision=1,
        conversation_key=conversation_id,
        key_source="gen_ai.conversation.id",
        service="support-bot",
        user_id=user_id,
        started_at=now,
        ended_at=now,
        system_instructions=[SYSTEM_PROMPT],
        turns=turns,
        close_reason="idle",
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.5
        ),
    )


def conversation_session(conversation: LabelledConversation) -> Session:
    turns = []
    for index, turn in enumerate(conversation.turns):
        calls = [
            ToolCall(
                id=call.id,
                name=call.name,
                arguments=plain(call.arguments),
                result=plain(call.result),
            )
            for call in turn.calls
        ]
        text = turn.text.text if turn.text is not None else None
        turns.append(Turn(index=index, role=Role(turn.role), text=text, tool_calls=calls))
    return session(conversation.conversation_id, turns, conversation.user_id)
