"""Sampling: a consistent hash of the conversation key against the configured rate.

Every replica computes the same fraction for the same key, and a key selected at rate r is also
selected at any higher rate, so lowering the rate keeps a subset of the sessions. Force triggers
(an error, a failed tool, a configured attribute such as negative feedback) override the rate.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from turnwatch.collector.config import SamplingConfig

from turnwatch.schema import SamplingDecision, SamplingReason

_HASH_SPACE = float(1 << 64)


def hash_fraction(conversation_key: str) -> float:
    digest = hashlib.blake2b(conversation_key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _HASH_SPACE


@dataclass(slots=True)
class SamplingSignals:
    error_spans: int
    tool_errors: int
    forced_attribute: str | None


class Sampler:
    def __init__(self, config: SamplingConfig) -> None:
        self.config = config

    def decide(self, conversation_key: str, signals: SamplingSignals) -> SamplingDecision:
        fraction = hash_fraction(conversation_key)
        rate = self.config.rate
        # Triggers are named before the rate: the regression loop flags force-sampled sessions
        # (an error, negative feedback) whether or not the rate would have kept them too.
        if self.config.force_on_tool_error and signals.tool_errors:
            reason, sampled = SamplingReason.FORCED_TOOL_ERROR, True
        elif self.config.force_on_error and signals.error_spans:
            reason, sampled = SamplingReason.FORCED_ERROR, True
        elif signals.forced_attribute:
            reason, sampled = SamplingReason.FORCED_ATTRIBUTE, True
        elif fraction < rate:
            reason, sampled = SamplingReason.RATE, True
        else:
            reason, sampled = SamplingReason.NOT_SELECTED, False
        return SamplingDecision(sampled=sampled, reason=reason, rate=rate, hash_fraction=fraction)
