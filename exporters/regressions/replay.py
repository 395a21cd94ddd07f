"""Replay a regression case against a new chatbot version and score the new transcript.

The case's user turns are sent, in order, to an OpenAI-compatible chat endpoint
(`POST {target}/chat/completions`). When the new version asks for a tool, replay answers with the
recorded result of the same tool (the first unused recorded call with the same arguments, else
the first unused one of that tool): the trajectory is replayed, not re-executed, so no side
effect reaches a real system. A tool the recorded trace never called gets a placeholder answer
and is listed as unrecorded. The transcript is scored by the same scorer and contract
(`turnwatch.scorers.runner.Scorer`), and the case passes when none of the recorded failures
recurs, there is no critical failure, joint success has not failed, and no new error-level
finding appears.

User turns are replayed as recorded even if the new answers would have led a real user
elsewhere: a case tests that the recorded conversation no longer breaks, not every path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from turnwatch.exporters.regressions.model import Case, CaseToolCall
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.runner import Scorer

from turnwatch.schema import (
    CloseReason,
    Role,
    SamplingDecision,
    SamplingReason,
    Session,
    ToolCall,
    Turn,
)
from turnwatch.scores import ScoreRecord, Severity, Status

UNRECORDED = {"replay": "no recorded result for this tool"}
SERIOUS = {Severity.ERROR, Severity.CRITICAL}


class ReplayError(Exception):
    """The target could not be used (transport error, HTTP error, malformed answer)."""


@dataclass
class ReplayResult:
    case_id: str
    passed: bool
    fixed: list[str] = field(default_factory=list)
    still_failing: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    critical: list[str] = field(default_factory=list)
    joint_success: bool | None = None
    unrecorded_tools: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    def report(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        if self.error:
            return f"{verdict} {self.case_id}: {self.error}"
        lines = [f"{verdict} {self.case_id} (joint success: {_joint(self.joint_success)})"]
        lines += [f"  - fixed: {check}" for check in self.fixed]
        lines += [f"  = still failing: {check}" for check in self.still_failing]
        lines += [f"  + new: {item}" for item in self.new]
        lines += [f"  ! critical: {check}" for check in self.critical]
        if self.unrecorded_tools:
            lines.append(f"  ? unrecorded tools: {', '.join(self.unrecorded_tools)}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def _joint(value: bool | None) -> str:
    return {True: "passed", False: "failed", None: "unscored"}[value]


class ChatClient:
    """A minimal OpenAI-compatible chat completions client."""

    def __init__(
        self,
        target: str,
        timeout: float = 30.0,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = target.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else f"{url}/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def complete(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            body["tools"] = tools
        try:
            response = self._http.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise ReplayError(f"cannot reach the target ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise ReplayError(f"the target answered HTTP {response.status_code}")
        try:
            message = response.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ReplayError("the target's answer is not a chat completion") from None
        if not isinstance(message, dict):
            raise ReplayError("the target's answer is not a chat completion")
        return message

    def close(self) -> None:
        self._http.close()


class RecordedTools:
    """The recorded tool calls of a case, handed out once each."""

    def __init__(self, case: Case) -> None:
        self.calls = [call for turn in case.turns for call in turn.tool_calls or []]
        self.used: set[int] = set()

    def answer(self, name: str, arguments: Any) -> CaseToolCall | None:
        candidates = [
            i for i, call in enumerate(self.calls) if call.name == name and i not in self.used
        ]
        same = [i for i in candidates if self.calls[i].arguments == arguments]
        chosen = (same or candidates or [None])[0]
        if chosen is None:
            return None
        self.used.add(chosen)
        return self.calls[chosen]


def openai_tools(case: Case, contract: Contract | None) -> list[dict[str, Any]]:
    if contract is not None:
        declared = {
            name: (tool.description, tool.arguments) for name, tool in contract.tools.items()
        }
    else:
        recorded = RecordedTools(case).calls
        declared = {call.name: ("", {"type": "object"}) for call in recorded}
    return [
        {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
        for name, (description, schema) in declared.items()
    ]


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)
    unrecorded: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, role: Role, text: str | None = None, calls: list[ToolCall] | None = None):
        self.turns.append(Turn(index=len(self.turns), role=role, text=text, tool_calls=calls or []))


def converse(
    case: Case,
    client: ChatClient,
    model: str,
    tools: list[dict[str, Any]],
    max_tool_rounds: int,
    send_system_prompt: bool = True,
) -> Conversation:
    recorded = RecordedTools(case)
    conversation = Conversation()
    messages: list[dict[str, Any]] = []
    instructions = case.initial_state.system_instructions
    if send_system_prompt and instructions:
        messages.append({"role": "system", "content": "\n\n".join(instructions)})
    for turn in case.turns:
        if turn.role is not Role.USER:
            continue
        content = turn.content or ""
        messages.append({"role": "user", "content": content})
        conversation.add(Role.USER, content)
        for _ in range(max_tool_rounds):
            message = client.complete(model, messages, tools)
            requested = message.get("tool_calls") or []
            text = message.get("content")
            if not requested:
                conversation.add(Role.ASSISTANT, text if isinstance(text, str) else None)
                messages.append({"role": "assistant", "content": text or ""})
                break
            calls, replies = _answer_tools(requested, recorded, conversation)
            conversation.add(Role.ASSISTANT, text if isinstance(text, str) else None, calls)
            messages.append({"role": "assistant", "content": text, "tool_calls": requested})
            messages.extend(replies)
        else:
            conversation.notes.append(
                f"turn {turn.turn_id}: still calling tools after {max_tool_rounds} rounds"
            )
    return conversation


def _answer_tools(
    requested: list[Any], recorded: RecordedTools, conversation: Conversation
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    calls, replies = [], []
    for number, item in enumerate(requested):
        if not isinstance(item, dict):
            continue
        function = item.get("function") or {}
        name = str(function.get("name") or "unknown")
        call_id = str(item.get("id") or f"replay_{number}")
        arguments = _arguments(function.get("arguments"))
        answer = recorded.answer(name, arguments)
        if answer is None:
            conversation.unrecorded.append(name)
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
            content: Any = UNRECORDED
        else:
            calls.append(
                ToolCall(
                    id=call_id,
                    name=name,
                    arguments=arguments,
                    result=answer.result,
                    error=answer.error,
                )
            )
            content = {"error": answer.error} if answer.error else answer.result
        replies.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": content if isinstance(content, str) else json.dumps(content),
            }
        )
    return calls, replies


def session_of(case: Case, conversation: Conversation) -> Session:
    now = datetime.now(UTC)
    return Session(
        session_id=f"replay-{case.case_id}",
        revision=1,
        conversation_key=f"replay-{case.case_id}",
        key_source="replay",
        service=case.signature.service,
        user_id=case.initial_state.user_id,
        # Replayed from de-identified turns; the answers never saw raw values.
        deidentified=True,
        started_at=now,
        ended_at=now,
        system_instructions=list(case.initial_state.system_instructions),
        turns=conversation.turns,
        close_reason=CloseReason.END_MARKER,
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.0
        ),
    )


def judge(case: Case, record: ScoreRecord) -> ReplayResult:
    """Compare the new score record with the case's recorded findings."""
    before = {item.check for item in case.findings.failed_checks}
    failed = {r.check: r for r in record.results() if r.status is Status.FAILED}
    serious_new = sorted(
        check
        for check, result in failed.items()
        if check not in before and any(f.severity in SERIOUS for f in result.findings)
    )
    critical = sorted({finding.check for finding in record.critical_failures})
    still = sorted(before & failed.keys())
    new = [
        f"{check} ({max((f.severity for f in result.findings), key=_rank).value})"
        for check, result in sorted(failed.items())
        if check not in before
    ]
    joint = record.joint_success.value
    passed = not critical and joint is not False and not still and not serious_new
    return ReplayResult(
        case_id=case.case_id,
        passed=passed,
        fixed=sorted(before - failed.keys()),
        still_failing=still,
        new=new,
        critical=critical,
        joint_success=joint,
    )


def _rank(severity: Severity) -> int:
    return list(Severity).index(severity)


def replay_case(
    case: Case,
    client: ChatClient,
    scorer: Scorer,
    model: str | None = None,
    max_tool_rounds: int = 8,
    send_system_prompt: bool = True,
) -> ReplayResult:
    contract = scorer.registry.for_service(case.signature.service)
    # A fresh scorer knows no other user's tokens; the case names those this conversation leaked.
    for token, owner in case.initial_state.known_token_owners.items():
        scorer.owner_index.learn(token, owner)
    model = model or next(iter(case.provenance.models), "default")
    try:
        conversation = converse(
            case,
            client,
            model,
            openai_tools(case, contract),
            max_tool_rounds,
            send_system_prompt,
        )
    except ReplayError as exc:
        return ReplayResult(case_id=case.case_id, passed=False, error=str(exc))
    result = judge(case, scorer.score(session_of(case, conversation)))
    result.unrecorded_tools = sorted(set(conversation.unrecorded))
    result.notes = conversation.notes
    recorded_rubric = case.rubric_version
    current_rubric = f"{contract.id}@{contract.version}" if contract else "generic"
    if recorded_rubric != current_rubric:
        result.notes.append(f"contract changed: recorded {recorded_rubric}, now {current_rubric}")
    return result


Progress = Callable[[int, int, ReplayResult], None]


def replay_cases(
    cases: list[Case],
    client: ChatClient,
    scorer: Scorer,
    model: str | None = None,
    max_tool_rounds: int = 8,
    send_system_prompt: bool = True,
    progress: Progress | None = None,
) -> list[ReplayResult]:
    results = []
    for number, case in enumerate(cases, start=1):
        result = replay_case(case, client, scorer, model, max_tool_rounds, send_system_prompt)
        results.append(result)
        if progress is not None:
            progress(number, len(cases), result)
    return results
