"""Rebuild one conversation transcript from the observations buffered for a session.

Stateless chat APIs resend the whole history on every model call, so the transcript is not the
concatenation of every call's messages: each call's inputs are aligned against the transcript so
far (the longest suffix of the transcript that the inputs start with is already known) and only
the rest is appended, followed by the call's outputs. Delta-style APIs (which send only the new
message) align on nothing and simply append. Tool executions are then joined to the tool calls
that requested them, by call id or else by name within the same trace.

The sessionizer already dropped the resent part of a call whose input extends the previous call's
(`Observation.resends`): such a call holds only its new messages, and when the transcript ends
with the previous call's input and outputs it is aligned from those alone, which gives the same
result as aligning its whole input at a cost that does not grow with the conversation. Anything
else (calls out of order, an edited history, a cut message) aligns the whole input as before.
Observations are never changed here: each revision is assembled from working copies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from turnwatch.collector.records import Message, Observation, ObservationKind

# Each `ObservationKind.X` is a lookup through the enum's metaclass (slow on Python 3.11), and
# these are tested once per observation: looked up once here instead.
LLM_CALL = ObservationKind.LLM_CALL
MESSAGE_EVENT = ObservationKind.MESSAGE_EVENT
TOOL_EXECUTION = ObservationKind.TOOL_EXECUTION
CONTEXT = ObservationKind.CONTEXT

TurnFields = dict[str, Any]
"""A `turnwatch.schema.Turn` as plain fields: validated once, with the whole Session, which is
several times cheaper than building thousands of models one field at a time."""


EPOCH = datetime.fromtimestamp(0, UTC)


def ns_to_datetime(ns: int) -> datetime | None:
    if ns <= 0:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC)


@dataclass(slots=True)
class Transcript:
    turns: list[TurnFields] = field(default_factory=list)
    system_instructions: list[str] = field(default_factory=list)
    incomplete_reasons: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    dialects: list[str] = field(default_factory=list)
    tool_errors: int = 0


Placed = tuple[Message, Observation, bool]
"""A transcript message, the model call that first revealed it, and whether it was an output."""


class _Resent:
    """How working copies of model calls extend one another's inputs (`Observation.resends`)."""

    def __init__(self, copies: dict[int, Observation]) -> None:
        self.copies = copies  # id(buffered observation) -> its working copy
        self.merged_into: dict[int, Observation] = {}  # id(copy) -> the copy that absorbed it
        self.wholes: dict[int, list[Message]] = {}

    def previous(self, call: Observation) -> Observation | None:
        """The working copy of the call whose whole input `call`'s input starts with."""
        if call.resends is None:
            return None
        target = self.copies.get(id(call.resends))
        while target is not None and id(target) in self.merged_into:
            target = self.merged_into[id(target)]
        return None if target is call else target

    def whole_inputs(self, call: Observation) -> list[Message]:
        chain: list[Observation] = []
        seen: set[int] = set()
        whole: list[Message] = []
        link: Observation | None = call
        while link is not None and id(link) not in seen:
            known = self.wholes.get(id(link))
            if known is not None:
                whole = known
                break
            seen.add(id(link))
            chain.append(link)
            link = self.previous(link)
        for item in reversed(chain):
            whole = (
                whole + item.inputs if item is not chain[-1] or link is not None else item.inputs
            )
            self.wholes[id(item)] = whole
        return whole

    def expand(self, call: Observation) -> None:
        """Give `call` its whole input, no longer relying on the call it extends."""
        if call.resends is not None:
            call.inputs = list(self.whole_inputs(call))
            call.resends = None


def _merge_same_span(calls: list[Observation], resent: _Resent) -> list[Observation]:
    """A span and its log events (details event, per-message events) describe one call.

    Per-message events carry one message each and accumulate, also into a span that carried no
    content itself (the usual legacy shape: a bare chat span plus one log record per message).
    A span or details event carries the whole call, so its content replaces what events built
    (and with it which call's input it extends).
    """
    merged: dict[tuple[str, str], Observation] = {}
    from_events: set[tuple[str, str]] = set()
    ordered: list[Observation] = []
    for call in calls:
        key = (call.trace_id, call.span_id)
        existing = merged.get(key) if call.span_id else None
        if existing is None:
            merged[key] = call
            ordered.append(call)
            if call.kind is MESSAGE_EVENT:
                from_events.add(key)
            continue
        resent.merged_into[id(call)] = existing
        is_event = call.kind is MESSAGE_EVENT
        if is_event:
            resent.expand(existing)
        empty = not existing.inputs and not existing.outputs and not existing.system_instructions
        takes_content = empty or key in from_events
        if is_event and takes_content:
            existing.inputs.extend(call.inputs)
            existing.outputs.extend(call.outputs)
            existing.system_instructions.extend(call.system_instructions)
            if empty:
                existing.dialect = call.dialect
            from_events.add(key)
        elif not is_event and takes_content and (call.inputs or call.outputs):
            existing.inputs, existing.outputs = call.inputs, call.outputs
            existing.system_instructions = call.system_instructions
            existing.dialect = call.dialect
            existing.resends = call.resends
            from_events.discard(key)
        if not is_event and existing.kind is MESSAGE_EVENT:
            existing.kind = LLM_CALL
            existing.start_ns, existing.end_ns = call.start_ns, call.end_ns
        existing.model = existing.model or call.model
        existing.provider = existing.provider or call.provider
        existing.input_tokens = existing.input_tokens or call.input_tokens
        existing.output_tokens = existing.output_tokens or call.output_tokens
        existing.incomplete_reasons.extend(call.incomplete_reasons)
    return ordered


def _overlap(known: list[tuple[Any, ...]], incoming: list[tuple[Any, ...]]) -> int:
    """Length of the longest suffix of `known` that `incoming` starts with."""
    if not known or not incoming:
        return 0
    limit = min(len(known), len(incoming))
    first = incoming[0]
    for length in range(limit, 0, -1):
        start = len(known) - length
        if known[start] == first and known[start:] == incoming[:length]:
            return length
    return 0


def _cut_history_is_known(known: list[tuple[Any, ...]], incoming: list[tuple[Any, ...]]) -> bool:
    """Whether a history cut by a length limit lies wholly inside the transcript so far.

    The limit cuts every later call's history at the same place, so such a call resends a
    prefix of what is known rather than all of it. Its last (cut) message is left out of the
    match, but must fall inside the known transcript: past its end it is a new message.
    """
    head = incoming[:-1]
    if not head:
        return False
    last_start = len(known) - len(incoming)
    return any(known[start : start + len(head)] == head for start in range(last_start + 1))


def _known_from_previous(
    identities: list[tuple[Any, ...]], previous: Observation, call: Observation, whole: int
) -> int:
    """How many of `call.inputs` (what follows the previous call's `whole` input messages) the
    transcript already holds, or -1 when only the whole input can tell.

    The transcript ends with the previous call's whole input and outputs. If the new messages
    start with those outputs (the answer resent as history), aligning the whole input finds the
    previous input and outputs at the end of the transcript, unless a longer suffix matches: that
    needs the transcript to hold the first input message again earlier, which is checked.
    """
    rest = call.inputs
    outputs = len(previous.outputs)
    if outputs > len(rest):
        return -1
    if outputs and identities[-outputs:] != [message.identity() for message in rest[:outputs]]:
        return -1
    if len(rest) > outputs and rest[-1].truncated:
        return -1
    matched = whole + outputs
    if whole:
        first = identities[len(identities) - matched]
    elif rest:
        first = rest[0].identity()
    else:
        return outputs
    longest = min(len(identities), whole + len(rest))
    for start in range(len(identities) - longest, len(identities) - matched):
        if identities[start] == first:
            return -1
    return outputs


def _align(calls: list[Observation], resent: _Resent) -> list[Placed]:
    placed: list[Placed] = []
    identities: list[tuple[Any, ...]] = []
    last: Observation | None = None
    last_whole = 0  # messages in the last call's whole input
    contiguous = False  # the transcript ends with the last call's whole input and outputs
    for call in calls:
        previous = resent.previous(call)
        known = -1
        if previous is not None and previous is last and contiguous:
            known = _known_from_previous(identities, previous, call, last_whole)
        if known >= 0:
            for message in call.inputs[known:]:
                placed.append((message, call, False))
                identities.append(message.identity())
            last_whole += len(call.inputs)
            contiguous = True
        else:
            inputs = resent.whole_inputs(call) if previous is not None else call.inputs
            incoming = [message.identity() for message in inputs]
            known = _overlap(identities, incoming)
            cut = known < len(incoming) and inputs[-1].truncated
            contiguous = not (cut and _cut_history_is_known(identities, incoming))
            if not contiguous:
                known = len(incoming)
            for message in inputs[known:]:
                placed.append((message, call, False))
            identities += incoming[known:]
            last_whole = len(inputs)
        for message in call.outputs:
            placed.append((message, call, True))
            identities.append(message.identity())
        last = call
    return placed


def _response_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _build_turns(placed: list[Placed]) -> list[TurnFields]:
    turns: list[TurnFields] = []
    pending: dict[str, TurnFields] = {}
    # The latest assistant turn's calls not answered yet, in order: a tool message without a
    # call id (OpenLLMetry's `gen_ai.tool.message` events carry none) answers the first of them.
    awaiting: list[TurnFields] = []
    for message, call, is_output in placed:
        role = message.role
        if role == "tool":
            if message.tool_call_id is not None:
                target = pending.get(message.tool_call_id)
            else:
                target = awaiting[0] if awaiting else None
            if target is not None and not message.redacted:
                target["result"] = message.tool_response
                if target in awaiting:
                    awaiting.remove(target)
                continue
        # Only what differs from the schema's defaults: Session validation fills the rest, and
        # every key left out is one less to build and to validate.
        turn: TurnFields = {
            "index": len(turns),
            "role": role,
            "text": message.text if role != "tool" else _response_text(message.tool_response),
            "started_at": ns_to_datetime(call.end_ns if is_output else call.start_ns),
            "trace_id": call.trace_id or None,
            "tool_calls": [
                {"id": part.id, "name": part.name, "arguments": part.arguments}
                for part in message.tool_calls
            ],
        }
        if message.tool_call_id is not None:
            turn["tool_call_id"] = message.tool_call_id
        if message.name is not None:
            turn["name"] = message.name
        if message.redacted:
            turn["redacted"] = True
        if message.truncated:
            turn["truncated"] = True
        if is_output:
            turn["model"] = call.model
            turn["finish_reason"] = message.finish_reason
            if call.end_ns > call.start_ns > 0:
                turn["latency_ms"] = (call.end_ns - call.start_ns) / 1e6
            if call.input_tokens is not None or call.output_tokens is not None:
                turn["usage"] = {
                    "input_tokens": call.input_tokens,
                    "output_tokens": call.output_tokens,
                }
        if turn["tool_calls"]:
            awaiting = list(turn["tool_calls"])
        for tool_call in turn["tool_calls"]:
            if tool_call["id"]:
                pending[tool_call["id"]] = tool_call
        turns.append(turn)
    return turns


def _attach_executions(turns: list[TurnFields], executions: list[Observation]) -> int:
    """Join execute_tool spans to the tool calls that asked for them; return failed count."""
    if not executions:
        return 0
    by_id = {call["id"]: call for turn in turns for call in turn["tool_calls"] if call["id"]}
    joined: set[int] = set()
    failures = 0
    for execution in sorted(executions, key=lambda item: item.start_ns):
        tool = execution.tool
        if tool is None:
            continue
        failures += tool.error is not None
        target = by_id.get(tool.call_id or "")
        if target is None:
            target = next(
                (
                    call
                    for turn in turns
                    if turn["trace_id"] == execution.trace_id
                    for call in turn["tool_calls"]
                    if call["name"] == tool.name and id(call) not in joined
                ),
                None,
            )
        if target is None:
            owner = next(
                (
                    t
                    for t in reversed(turns)
                    if t["role"] == "assistant" and t["trace_id"] == execution.trace_id
                ),
                None,
            )
            if owner is None:
                owner = {
                    "index": len(turns),
                    "role": "assistant",
                    "tool_calls": [],
                    "started_at": ns_to_datetime(execution.start_ns),
                    "trace_id": execution.trace_id,
                }
                turns.append(owner)
            target = {"id": tool.call_id, "name": tool.name, "arguments": tool.arguments}
            owner["tool_calls"].append(target)
        joined.add(id(target))
        if target.get("arguments") is None:
            target["arguments"] = tool.arguments
        if target.get("result") is None:
            target["result"] = tool.result
        target["error"] = tool.error
        target["started_at"] = ns_to_datetime(execution.start_ns)
        if execution.end_ns > execution.start_ns > 0:
            target["duration_ms"] = (execution.end_ns - execution.start_ns) / 1e6
    return failures


def _unique(values: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(filter(None, values)))


def assemble(buffered: list[Observation]) -> Transcript:
    observations = [observation.parsed() for observation in buffered]
    resent = _Resent(
        {id(original): copy for original, copy in zip(buffered, observations, strict=True)}
    )
    calls = [o for o in observations if o.kind is LLM_CALL or o.kind is MESSAGE_EVENT]
    calls = _merge_same_span(sorted(calls, key=lambda o: (o.start_ns, o.event_sequence)), resent)
    if any(not call.agent_level for call in calls):
        # Agent spans repeat the user input and final answer of the model calls inside them.
        calls = [call for call in calls if not call.agent_level]
    calls.sort(key=lambda o: (o.start_ns, o.end_ns))
    transcript = Transcript()
    reasons: list[str] = []
    empty = 0
    for call in calls:
        reasons.extend(call.incomplete_reasons)
        if not call.inputs and not call.outputs and resent.previous(call) is None:
            reasons.append("no_content")
            empty += 1
    if calls and empty == len(calls):
        # Instrumentation without content capture: each call still took time and tokens, so
        # it becomes an assistant turn without text rather than vanishing with its usage. (In
        # a session where other calls carry content, the history they resend shows the turn.)
        for call in calls:
            call.outputs = [Message("assistant")]
    transcript.turns = _build_turns(_align(calls, resent))
    executions = [o for o in observations if o.kind is TOOL_EXECUTION]
    transcript.tool_errors = _attach_executions(transcript.turns, executions)
    if any(turn.get("redacted") for turn in transcript.turns):
        reasons.append("redacted_content")
    transcript.system_instructions = _unique(
        [text for call in calls for text in call.system_instructions]
    )
    transcript.incomplete_reasons = _unique(reasons)
    transcript.providers = _unique([call.provider for call in calls])
    transcript.models = _unique([call.model for call in calls])
    transcript.dialects = _unique([o.dialect for o in observations if o.kind is not CONTEXT])
    return transcript
