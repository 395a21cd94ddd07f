"""The corpus records: a conversation's messages exactly as turnwatch will rebuild them.

Message `i` of `Conversation.messages` is session turn `i`: a user message, or one assistant
model output (its text, its tool calls, or both). Tool results are joined to their calls, as the
collector joins them, so they are not turns. Every label's `turn_index` indexes this list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from benchmarks.corpus.pii import Person

Shape = Literal["agent", "chat"]


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None
    """The error type of a failed call (the execute_tool span's `error.type`)."""


@dataclass
class Message:
    role: Literal["user", "assistant"]
    text: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    """Fact ids this message reveals (the dataset schema's `facts_revealed`)."""


@dataclass(frozen=True)
class Label:
    kind: str
    check: str
    turn_index: int
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Conversation:
    conversation_id: str
    split: str
    domain: str
    service: str
    shape: Shape
    user: Person
    system_prompt: str
    scenario: str
    messages: list[Message]
    defects: list[Label]
    near_misses: list[Label]
    outcome: str
    initial_state: dict[str, Any] = field(default_factory=dict)

    def turn(self, index: int) -> Message:
        return self.messages[index]

    def to_record(self, labels: dict[str, Any], dataset_version: str) -> dict[str, Any]:
        """The evaluation guide's dataset schema, plus the emission details and the labels."""
        return {
            "conversation_id": self.conversation_id,
            "dataset_version": dataset_version,
            "scenario": self.scenario,
            "slice": labels["slices"],
            "initial_state": self.initial_state,
            "turns": [
                {
                    "turn_id": index,
                    "role": message.role,
                    "content": message.text,
                    "tool_calls": [asdict(call) for call in message.calls],
                    "facts_revealed": message.facts,
                }
                for index, message in enumerate(self.messages)
            ],
            "required_facts": labels["required_facts"],
            "forbidden_actions": labels["forbidden_actions"],
            "success": {"outcome": self.outcome},
            "critical_failures": labels["critical_failures"],
            "rubric_version": "turnwatch-corpus-1",
            "emission": {
                "service": self.service,
                "shape": self.shape,
                "user": asdict(self.user),
                "system_prompt": self.system_prompt,
                "domain": self.domain,
                "split": self.split,
            },
            "labels": labels,
        }


def from_record(record: dict[str, Any]) -> Conversation:
    """The conversation a corpus record describes (labels stay in the record)."""
    emission = record["emission"]
    labels = record["labels"]
    user = Person(**emission["user"])
    messages = [
        Message(
            turn["role"],
            turn["content"],
            [ToolCall(**call) for call in turn["tool_calls"]],
            list(turn["facts_revealed"]),
        )
        for turn in record["turns"]
    ]
    return Conversation(
        conversation_id=record["conversation_id"],
        split=emission["split"],
        domain=emission["domain"],
        service=emission["service"],
        shape=emission["shape"],
        user=user,
        system_prompt=emission["system_prompt"],
        scenario=record["scenario"],
        messages=messages,
        defects=[
            Label(d["kind"], d["check"], d["turn_index"], d["detail"]) for d in labels["defects"]
        ],
        near_misses=[
            Label(n["kind"], n["check"], n["turn_index"], n["detail"])
            for n in labels["near_misses"]
        ],
        outcome=labels["outcome"],
        initial_state=record["initial_state"],
    )
