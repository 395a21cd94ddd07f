"""What replay needs from a conversation to test: a regression case, or a scenario file written in
the evaluation guide's dataset schema.

`Scenario` is the common shape: the recorded turns (user turns, and the assistant's tool calls
with their recorded results, which answer the new version's tools), the service whose contract
scores the new transcript, the slices, and the failures already recorded (a replayed case passes
when none recurs). A regression case carries all of it; a scenario file (an expert-authored
conversation, `ScenarioFile`) carries the guide's fields plus `service`, and records no failures.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field, ValidationError
from turnwatch.exporters.regressions.model import Case, CaseTurn

from turnwatch.schema import JsonValue, Role, WireModel, first_problem


class ScenarioInvalid(ValueError):
    """A file is neither a regression case nor a scenario file; the message names the field."""


class ScenarioFile(WireModel):
    """An authored conversation in the dataset schema of the evaluation guide, plus `service`."""

    conversation_id: str = Field(min_length=1)
    dataset_version: str = Field(min_length=1)
    scenario: str = Field(min_length=1)
    service: str = Field(min_length=1, description="The contract's service (service.name).")
    slice: list[str] = Field(default_factory=list)
    initial_state: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Application state; `user_id` and `system_instructions` are read if present.",
    )
    turns: list[CaseTurn] = Field(min_length=1)
    required_facts: list[str] = Field(default_factory=list)
    forbidden_actions: list[str] = Field(default_factory=list)
    success: dict[str, JsonValue] = Field(default_factory=dict)
    critical_failures: list[str] = Field(default_factory=list)
    rubric_version: str = Field(min_length=1)


class Scenario(WireModel):
    """One conversation to replay, from a case or a scenario file."""

    scenario_id: str
    service: str
    goal: str = Field(description="What the user wants: the case's scenario line.")
    slices: list[str]
    turns: list[CaseTurn]
    user_id: str | None = None
    system_instructions: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    recorded_failures: list[str] = Field(
        default_factory=list, description="Checks that failed in the recorded conversation."
    )
    known_token_owners: dict[str, str] = Field(default_factory=dict)
    rubric_version: str

    @classmethod
    def of_case(cls, case: Case) -> Scenario:
        return cls(
            scenario_id=case.case_id,
            service=case.signature.service,
            goal=case.scenario,
            slices=list(case.slice),
            turns=list(case.turns),
            user_id=case.initial_state.user_id,
            system_instructions=list(case.initial_state.system_instructions),
            models=list(case.provenance.models),
            recorded_failures=sorted({item.check for item in case.findings.failed_checks}),
            known_token_owners=dict(case.initial_state.known_token_owners),
            rubric_version=case.rubric_version,
        )

    @classmethod
    def of_file(cls, authored: ScenarioFile) -> Scenario:
        state = authored.initial_state
        instructions = state.get("system_instructions")
        user_id = state.get("user_id")
        return cls(
            scenario_id=authored.conversation_id,
            service=authored.service,
            goal=authored.scenario,
            slices=list(authored.slice),
            turns=list(authored.turns),
            user_id=user_id if isinstance(user_id, str) else None,
            system_instructions=[str(item) for item in instructions]
            if isinstance(instructions, list)
            else [],
            rubric_version=authored.rubric_version,
        )

    def user_turns(self) -> list[CaseTurn]:
        return [turn for turn in self.turns if turn.role is Role.USER]


def load_scenario(path: Path) -> Scenario:
    """A regression case file or a scenario file; anything else is `ScenarioInvalid`."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ScenarioInvalid(f"{path}: not readable JSON ({exc})") from None
    if isinstance(document, dict) and "case_id" in document:
        try:
            return Scenario.of_case(Case.model_validate(document))
        except ValidationError as exc:
            problem = first_problem(exc)
            raise ScenarioInvalid(f"{path}: not a valid regression case: {problem}") from None
    try:
        return Scenario.of_file(ScenarioFile.model_validate(document))
    except ValidationError as exc:
        raise ScenarioInvalid(f"{path}: not a valid scenario file: {first_problem(exc)}") from None


def load_scenarios(paths: list[Path]) -> list[Scenario]:
    """Every `*.json` of each directory given, and each file given, in name order."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return [load_scenario(file) for file in files]
