"""Configuration of the regression loop (`regressions:` in the YAML file).

The flagging rules run in the scorer stage and are declared there (`FlaggingConfig`); the case
store, the incidents API and replay add theirs here, so one YAML block configures the loop.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from turnwatch.scorers.config import FlaggingConfig

from turnwatch.secret_files import token_from


class RegressionConfig(FlaggingConfig):
    """The whole `regressions:` block: the scorer's flagging rules, then the case store's own."""

    dataset_version: str = Field(
        default="production-regressions-1",
        min_length=1,
        description="Written into every case; bump it when the team curates the case set.",
    )
    max_cases: int = Field(
        default=1_000, gt=0, description="Case files kept; the least recently seen is evicted."
    )
    max_occurrences: int = Field(
        default=20,
        gt=0,
        description="Occurrences listed per case (the count keeps counting past it).",
    )
    api_token: SecretStr | None = Field(
        default=None, description="When set, /api/incidents needs `Authorization: Bearer <token>`."
    )
    api_token_file: Path | None = Field(
        default=None, description="File holding `api_token` (a mounted secret)."
    )
    replay_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Per request to the replay target."
    )
    replay_max_tool_rounds: int = Field(
        default=8, gt=0, description="Tool-call rounds per user turn before replay gives up."
    )

    @model_validator(mode="after")
    def _token_file(self) -> RegressionConfig:
        self.api_token = token_from(self.api_token, self.api_token_file, "api_token")
        return self
