"""Replay regression cases (and scenario files) against a new chatbot version, K times each.

A simulated user (`simulator.py`; the deterministic `ScriptedUser` by default) speaks for the
user: it starts with the user's goal, answers what the new version asks from the user's private
state, and stops by the profile's stopping rule. The new version's tool calls are answered with
the recorded results (`chat.py`), so no side effect reaches a real system. Each transcript is
scored by the same checks, judge and contract as production (`Scorer.score_with_judge`), and the
run compared with the recorded failures (`compare`): it passes when none of them recurs, there
is no critical failure, joint success has not failed, and no new error-level finding appears. A
failure at or after a turn where the simulator was unsure is counted as the simulator's
(`results.RunOutcome.SIMULATOR`), apart from the chatbot's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from turnwatch.exporters.regressions.chat import (
    ChatClient,
    Completion,
    RecordedTools,
    ReplayError,
    answer_tools,
    openai_tools,
)
from turnwatch.exporters.regressions.profile import profile_of
from turnwatch.exporters.regressions.results import ReplayRun, RunOutcome
from turnwatch.exporters.regressions.scenario import Scenario
from turnwatch.exporters.regressions.simulator import (
    RecordedUser,
    ScriptedUser,
    SimulatedUser,
    SimulatorNote,
    StopReason,
)
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.runner import Scorer
from turnwatch.scorers.summary import JOINT_CONDITIONS

from turnwatch.schema import (
    CloseReason,
    Provenance,
    Role,
    SamplingDecision,
    SamplingReason,
    Session,
    ToolCall,
    Turn,
)
from turnwatch.scores import ScoreRecord, Severity, Status

SERIOUS = {Severity.ERROR, Severity.CRITICAL}
MAX_USER_TURNS = 100
"""A last bound on one replayed conversation, whatever the simulated user's own rule says."""

UserKind = Literal["scripted", "recorded", "llm"]
MakeUser = Callable[[Scenario, Contract | None, int], SimulatedUser]
"""(scenario, its contract, which repetition) -> the simulated user of that run."""


def scripted_user(scenario: Scenario, contract: Contract | None, repeat: int) -> SimulatedUser:
    return ScriptedUser(profile_of(scenario, contract), contract)


def recorded_user(scenario: Scenario, contract: Contract | None, repeat: int) -> SimulatedUser:
    return RecordedUser([turn.content or "" for turn in scenario.user_turns()])


@dataclass(frozen=True)
class ReplayOptions:
    model: str | None = None
    max_tool_rounds: int = 8
    send_system_prompt: bool = True
    repeat: int = 1
    release: str | None = None
    """The release under test: recorded as the replayed sessions' `service.version`."""


class Scoring:
    """The scorer on one event loop for the whole replay (the judge's client lives on it)."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self._loop = asyncio.new_event_loop()

    def score(self, session: Session) -> tuple[ScoreRecord, int]:
        """The session's score record and the judge requests it took."""
        before = self._judge_calls()
        record = self._loop.run_until_complete(self.scorer.score_with_judge(session))
        return record, self._judge_calls() - before

    def _judge_calls(self) -> int:
        samples = [
            sample
            for metric in self.scorer.judge.telemetry.calls.collect()
            for sample in metric.samples
            if sample.name.endswith("_total")
        ]
        return int(sum(sample.value for sample in samples))

    def close(self) -> None:
        self._loop.run_until_complete(self.scorer.judge.aclose())
        self._loop.close()


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)
    unrecorded: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    simulator_notes: list[SimulatorNote] = field(default_factory=list)
    stop: StopReason | None = None

    def add(
        self,
        role: Role,
        text: str | None = None,
        calls: list[ToolCall] | None = None,
        completion: Completion | None = None,
    ) -> None:
        self.turns.append(
            Turn(
                index=len(self.turns),
                role=role,
                text=text,
                tool_calls=calls or [],
                latency_ms=completion.latency_ms if completion else None,
                usage=completion.usage if completion else None,
                model=completion.model if completion else None,
            )
        )


def converse(
    scenario: Scenario,
    client: ChatClient,
    model: str,
    tools: list[dict[str, Any]],
    user: SimulatedUser,
    options: ReplayOptions,
) -> Conversation:
    recorded = RecordedTools(scenario.turns)
    conversation = Conversation()
    messages: list[dict[str, Any]] = []
    if options.send_system_prompt and scenario.system_instructions:
        messages.append({"role": "system", "content": "\n\n".join(scenario.system_instructions)})
    move = user.first()
    while True:
        conversation.simulator_notes.extend(move.notes)
        if move.text is None:
            conversation.stop = move.stop
            return conversation
        if sum(turn.role is Role.USER for turn in conversation.turns) >= MAX_USER_TURNS:
            conversation.notes.append(f"stopped after {MAX_USER_TURNS} user turns")
            return conversation
        messages.append({"role": "user", "content": move.text})
        conversation.add(Role.USER, move.text)
        _respond(client, model, tools, messages, recorded, conversation, options)
        move = user.next(session_of(scenario, conversation.turns, options))


def _respond(
    client: ChatClient,
    model: str,
    tools: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    recorded: RecordedTools,
    conversation: Conversation,
    options: ReplayOptions,
) -> None:
    """The new version's reply to the last user turn: tool rounds until it answers in text."""
    for _ in range(options.max_tool_rounds):
        completion = client.complete(model, messages, tools)
        message = completion.message
        requested = message.get("tool_calls") or []
        content = message.get("content")
        text = content if isinstance(content, str) else None
        if not isinstance(requested, list) or not requested:
            conversation.add(Role.ASSISTANT, text, completion=completion)
            messages.append({"role": "assistant", "content": text or ""})
            return
        calls, replies = answer_tools(requested, recorded, conversation.unrecorded)
        conversation.add(Role.ASSISTANT, text, calls, completion)
        messages.append({"role": "assistant", "content": text, "tool_calls": requested})
        messages.extend(replies)
    user_turn = sum(turn.role is Role.USER for turn in conversation.turns)
    conversation.notes.append(
        f"user turn {user_turn}: still calling tools after {options.max_tool_rounds} rounds"
    )


def session_of(
    scenario: Scenario, turns: list[Turn], options: ReplayOptions, repeat: int = 0
) -> Session:
    now = datetime.now(UTC)
    session_id = f"replay-{scenario.scenario_id}-{repeat}"
    models = sorted({turn.model for turn in turns if turn.model})
    return Session(
        session_id=session_id,
        revision=1,
        conversation_key=session_id,
        key_source="replay",
        service=scenario.service,
        user_id=scenario.user_id,
        # Replayed from de-identified turns; the answers never saw raw values.
        deidentified=True,
        provenance=Provenance(models=models, service_version=options.release),
        started_at=now,
        ended_at=now,
        system_instructions=list(scenario.system_instructions),
        turns=turns,
        close_reason=CloseReason.END_MARKER,
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.0
        ),
    )


@dataclass(frozen=True)
class Comparison:
    passed: bool
    fixed: list[str]
    still_failing: list[str]
    new: list[str]
    critical: list[str]
    joint_success: bool | None
    failure_turns: list[int | None]
    """Turns of the findings that make the run fail (None: the whole session)."""


def compare(scenario: Scenario, record: ScoreRecord) -> Comparison:
    """The new score record against the scenario's recorded failures."""
    before = set(scenario.recorded_failures)
    failed = {r.check: r for r in record.results() if r.status is Status.FAILED}
    serious_new = {
        check
        for check, result in failed.items()
        if check not in before and any(f.severity in SERIOUS for f in result.findings)
    }
    critical = sorted({finding.check for finding in record.critical_failures})
    still = sorted(before & failed.keys())
    joint = record.joint_success.value
    failing = set(still) | serious_new | set(critical)
    if joint is False:
        failing |= {check for check in failed if check in _joint_checks(record)}
    return Comparison(
        passed=not critical and joint is not False and not still and not serious_new,
        fixed=sorted(before - failed.keys()),
        still_failing=still,
        new=[
            f"{check} ({max((f.severity for f in result.findings), key=_rank).value})"
            for check, result in sorted(failed.items())
            if check not in before
        ],
        critical=critical,
        joint_success=joint,
        failure_turns=[f.turn_index for check in failing for f in failed[check].findings]
        if failing
        else [],
    )


def _joint_checks(record: ScoreRecord) -> set[str]:
    return {JOINT_CONDITIONS[name] for name in record.joint_success.conditions}


def _rank(severity: Severity) -> int:
    return list(Severity).index(severity)


def attribute(comparison: Comparison, notes: list[SimulatorNote]) -> RunOutcome:
    """Whose failure a failed run is: the simulator's when it broke a rule, or when the first
    failing finding comes at or after the first turn where it was unsure."""
    if comparison.passed:
        return RunOutcome.PASSED
    if any(note.kind == "violation" for note in notes):
        return RunOutcome.SIMULATOR
    unsure = [note.turn_index for note in notes if note.kind == "unsure"]
    if not unsure:
        return RunOutcome.FAILED
    turns = [turn for turn in comparison.failure_turns if turn is not None]
    whole_session = not turns or None in comparison.failure_turns
    if whole_session or min(turns) >= min(unsure):
        return RunOutcome.SIMULATOR
    return RunOutcome.FAILED


def replay_scenario(
    scenario: Scenario,
    client: ChatClient,
    scoring: Scoring,
    make_user: MakeUser = scripted_user,
    options: ReplayOptions | None = None,
    repeat: int = 0,
) -> ReplayRun:
    options = options or ReplayOptions()
    started = time.perf_counter()
    scorer = scoring.scorer
    contract = scorer.registry.for_service(scenario.service)
    # A fresh scorer knows no other user's tokens; the case names those this conversation leaked.
    for token, owner in scenario.known_token_owners.items():
        scorer.owner_index.learn(token, owner)
    model = options.model or next(iter(scenario.models), "default")
    user = make_user(scenario, contract, repeat)
    base = {
        "case_id": scenario.scenario_id,
        "repeat": repeat,
        "seed": user.info.seed,
        "slices": list(scenario.slices),
    }
    try:
        conversation = converse(
            scenario, client, model, openai_tools(scenario.turns, contract), user, options
        )
    except ReplayError as exc:
        seconds = time.perf_counter() - started
        return ReplayRun(**base, outcome=RunOutcome.ERROR, error=str(exc), seconds=seconds)
    session = session_of(scenario, conversation.turns, options, repeat)
    record, judge_calls = scoring.score(session)
    comparison = compare(scenario, record)
    notes = list(conversation.notes)
    current_rubric = f"{contract.id}@{contract.version}" if contract else "generic"
    if scenario.rubric_version != current_rubric:
        notes.append(f"contract changed: recorded {scenario.rubric_version}, now {current_rubric}")
    return ReplayRun(
        **base,
        outcome=attribute(comparison, conversation.simulator_notes),
        fixed=comparison.fixed,
        still_failing=comparison.still_failing,
        new=comparison.new,
        critical=comparison.critical,
        joint_success=comparison.joint_success,
        stop=conversation.stop,
        simulator_notes=conversation.simulator_notes,
        unrecorded_tools=sorted(set(conversation.unrecorded)),
        notes=notes,
        seconds=time.perf_counter() - started,
        judge_calls=judge_calls,
        session=session,
        score=record,
    )


Progress = Callable[[int, int, ReplayRun], None]


def replay_all(
    scenarios: list[Scenario],
    client: ChatClient,
    scoring: Scoring,
    make_user: MakeUser = scripted_user,
    options: ReplayOptions | None = None,
    progress: Progress | None = None,
) -> list[ReplayRun]:
    """Every scenario `options.repeat` times: one round over all of them, then the next, so a
    drift of the target over time spreads over every case instead of hitting the last ones."""
    options = options or ReplayOptions()
    total = len(scenarios) * options.repeat
    runs = []
    for repeat in range(options.repeat):
        for scenario in scenarios:
            run = replay_scenario(scenario, client, scoring, make_user, options, repeat)
            runs.append(run)
            if progress is not None:
                progress(len(runs), total, run)
    return runs
