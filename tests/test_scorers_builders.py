"""Builders for de-identified sessions in scorer tests (tokens stand for PII, as after deid)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from turnwatch.scorers.config import ScorerConfig
from turnwatch.scorers.registry import ContractRegistry, load_contract
from turnwatch.scorers.runner import Scorer

from turnwatch.schema import (
    CloseReason,
    Role,
    SamplingDecision,
    SamplingReason,
    Session,
    TokenUsage,
    ToolCall,
    Turn,
)

ROOT = Path(__file__).resolve().parent.parent
SUPPORT_CONTRACT = ROOT / "deploy" / "contracts" / "support-bot.yaml"

ALICE = "<USER_ID_a11ce000>"
BOB = "<USER_ID_b0b00000>"
EMAIL_A = "<EMAIL_ADDRESS_aaaa0001>"
EMAIL_A2 = "<EMAIL_ADDRESS_aaaa0002>"
EMAIL_B = "<EMAIL_ADDRESS_bbbb0001>"
ORDER_A = "<ORDER_NUMBER_aaaa1111>"
ORDER_B = "<ORDER_NUMBER_bbbb1111>"

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def user(text: str) -> dict:
    return {"role": Role.USER, "text": text}


def bot(text: str | None = None, *calls: ToolCall, **extra: object) -> dict:
    return {"role": Role.ASSISTANT, "text": text, "tool_calls": list(calls), **extra}


def call(
    name: str, arguments: object = None, result: object = None, error: str | None = None
) -> ToolCall:
    return ToolCall(name=name, arguments=arguments or {}, result=result, error=error)


def session(
    *turns: dict,
    service: str = "support-bot",
    user_id: str | None = ALICE,
    session_id: str = "s-1",
) -> Session:
    return Session(
        session_id=session_id,
        revision=1,
        conversation_key="<CONVERSATION_KEY_00000001>",
        key_source="session.id",
        service=service,
        user_id=user_id,
        deidentified=True,
        started_at=NOW,
        ended_at=NOW,
        turns=[Turn(index=index, **turn) for index, turn in enumerate(turns)],
        close_reason=CloseReason.IDLE,
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.5
        ),
    )


def usage(input_tokens: int, output_tokens: int) -> TokenUsage:
    return TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens)


def support_scorer(**config: object) -> Scorer:
    registry = ContractRegistry([load_contract(SUPPORT_CONTRACT)])
    return Scorer(ScorerConfig.model_validate(config), registry)
