"""Configuration of the judge metrics (`scorers.judge` in the YAML file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from turnwatch.section import Section

MetricName = Literal[
    "turn_relevancy", "role_adherence", "knowledge_retention", "conversation_completeness", "geval"
]
ALL_METRICS: list[MetricName] = [
    "turn_relevancy",
    "role_adherence",
    "knowledge_retention",
    "conversation_completeness",
    "geval",
]


class EndpointConfig(Section):
    """An OpenAI-compatible chat-completions endpoint; no base_url = the heuristic judge."""

    base_url: str | None = Field(
        default=None, description="e.g. https://api.openai.com/v1; none = built-in heuristic judge."
    )
    model: str = "gpt-4o-mini"
    # The key itself never lives in the config (which may be logged or dumped): only where it is.
    api_key_env: str | None = Field(
        default="TURNWATCH_JUDGE_API_KEY", description="Environment variable holding the API key."
    )
    api_key_file: Path | None = Field(default=None, description="File holding the API key.")
    timeout_seconds: float = Field(
        default=30.0, gt=0, description="Longest wait for each read (or the connect) of a request."
    )
    request_deadline_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Wall-clock limit on one request (connect, send and every read): an endpoint "
        "that drips its answer a byte at a time never trips the per-read timeout.",
    )
    max_response_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="Longer answers are refused unread."
    )
    max_reported_tokens: int = Field(
        default=1_000_000,
        gt=0,
        description="Token counts the endpoint reports above this (per call), negative or not "
        "whole numbers are refused, counted, and the estimate is charged to the budget instead.",
    )
    stuck_after_seconds: float = Field(
        default=180.0,
        ge=0,
        description="/readyz fails while requests wait on an endpoint that has answered none "
        "for this long; 0 = never.",
    )
    max_retries: int = Field(default=3, ge=0, le=10)
    backoff_seconds: float = Field(default=0.5, ge=0, description="First retry delay (doubles).")
    max_backoff_seconds: float = Field(
        default=30.0, gt=0, description="Longest wait, Retry-After included; longer = give up."
    )
    max_concurrency: int = Field(default=4, gt=0, description="Judge requests in flight.")
    max_pending: int = Field(
        default=64, ge=0, description="Judge requests waiting for a slot; more are skipped."
    )
    requests_per_second: float = Field(default=5.0, gt=0)
    json_mode: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Send response_format json_object; auto = until the endpoint rejects it.",
    )
    context_tokens: int = Field(default=16_000, ge=512, description="The model's context window.")
    max_output_tokens: int = Field(default=800, ge=16)
    top_logprobs: int = Field(
        default=5, ge=0, le=20, description="For G-Eval score weighting; 0 = do not ask."
    )
    input_per_million_usd: float = Field(default=0.0, ge=0)
    output_per_million_usd: float = Field(default=0.0, ge=0)

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://", value):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/") if value else value


class BudgetConfig(Section):
    calls_per_hour: int = Field(default=2_000, ge=0, description="Judge calls per rolling hour.")
    tokens_per_hour: int = Field(
        default=2_000_000, ge=0, description="Prompt + completion tokens per rolling hour."
    )


class RelevancyConfig(Section):
    window: int = Field(default=3, gt=0, description="k: exchanges in each window.")
    stride: int = Field(default=1, gt=0, description="s: judge every s-th window.")
    windows_per_call: int = Field(default=10, gt=0, description="Windows judged in one call.")


class RoleConfig(Section):
    overlap_turns: int = Field(
        default=4, ge=0, description="Turns repeated between chunks of a long session."
    )


class GEvalCriterion(Section):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")
    criteria: str = Field(min_length=1, max_length=2_000)
    evaluation_steps: list[str] | None = Field(
        default=None, description="None = generated once by the judge and cached."
    )


class JudgeConfig(Section):
    enabled: bool = True
    sample_rate: float = Field(
        default=1.0, ge=0, le=1, description="Fraction of scored sessions judged (nested hash)."
    )
    metrics: list[MetricName] = Field(default_factory=lambda: list(ALL_METRICS))
    endpoint: EndpointConfig = Field(default_factory=EndpointConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    relevancy: RelevancyConfig = Field(default_factory=RelevancyConfig)
    role: RoleConfig = Field(default_factory=RoleConfig)
    geval: list[GEvalCriterion] = Field(default_factory=list)
    cache_size: int = Field(default=10_000, ge=0, description="Verdicts kept (LRU).")
    session_deadline_seconds: float = Field(
        default=300.0,
        gt=0,
        description="Wall-clock limit on all judge calls of one session; metrics not done by "
        "then are unscored.",
    )
    max_sessions_in_flight: int = Field(
        default=8,
        gt=0,
        description="Sessions being judged at once after their checks were published; a session "
        "arriving when all are taken has its judge metrics unscored.",
    )
    max_turn_chars: int = Field(
        default=2_000, gt=0, description="Longer turn texts are cut before judging."
    )
    max_intentions: int = Field(default=10, gt=0)

    @model_validator(mode="after")
    def _unique_criteria(self) -> JudgeConfig:
        names = [criterion.name for criterion in self.geval]
        if len(names) != len(set(names)):
            raise ValueError("geval criterion names must be unique")
        return self
