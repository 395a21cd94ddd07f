"""OTel GenAI semantic conventions v1.37+: `gen_ai.input.messages` / `gen_ai.output.messages`.

Content arrives as a JSON string (Python SDKs) or as structured AnyValues (SDKs that support
complex attributes, and always on the `gen_ai.client.inference.operation.details` log event).
Tool executions are `execute_tool` spans with `gen_ai.tool.*` attributes.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson
from turnwatch.collector.dialects.base import (
    CONTENT_OVERHEAD,
    INFERENCE_OPERATIONS,
    OBSERVATION_OVERHEAD,
    LogDecoder,
    SpanDecoder,
    first_int,
    first_str,
    held_size,
    mark_truncated,
    maybe_json,
    normalise_role,
    salvage_json,
    split_system,
    text_or_marker,
    tool_call_part,
    tool_execution,
)
from turnwatch.collector.message_runs import TextPieces
from turnwatch.collector.records import (
    STATUS_ERROR,
    DeferredContent,
    LogView,
    Message,
    Observation,
    ObservationKind,
    SpanView,
)
from turnwatch.collector.run_bytes import TEXT_HEAD

INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
LLM_CALL = ObservationKind.LLM_CALL


def _structured(value: Any, reasons: list[str]) -> tuple[Any, bool]:
    """Return (value, truncated); a JSON string is parsed, salvaging what a length limit cut."""
    if isinstance(value, str):
        parsed, truncated = salvage_json(value)
        if truncated:
            reasons.append("truncated_content")
        return parsed, truncated
    return value, False


def _read_message(
    raw: Any, markers: frozenset[str], reasons: list[str], into: list[Message]
) -> None:
    """Append one GenAI ChatMessage; a tool message with several responses adds several."""
    if not isinstance(raw, dict):
        reasons.append("malformed_message")
        return
    role = normalise_role(raw.get("role"))
    if role is None:
        reasons.append("unknown_role")
        return
    parts = raw.get("parts")
    if not isinstance(parts, list):
        parts = [{"type": "text", "content": raw["content"]}] if "content" in raw else []
    # Keyword arguments to a dataclass cost more than the attribute stores they would replace.
    message = Message(role)
    name = raw.get("name")
    if isinstance(name, str):
        message.name = name
    finish_reason = raw.get("finish_reason")
    if isinstance(finish_reason, str):
        message.finish_reason = finish_reason
    if len(parts) == 1:
        # Most messages are one text part: the loop below would find the same, slower.
        part = parts[0]
        if isinstance(part, dict) and part.get("type") == "text":
            message.text, message.redacted = text_or_marker(part.get("content"), markers)
            into.append(message)
            return
    texts: list[str] = []
    responses: list[Message] = []
    has_text_part = False
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            has_text_part = True
            text, redacted = text_or_marker(part.get("content"), markers)
            message.redacted |= redacted
            if text is not None:
                texts.append(text)
        elif kind == "tool_call":
            message.tool_calls.append(
                tool_call_part(part.get("id"), part.get("name"), part.get("arguments"))
            )
        elif kind == "tool_call_response":
            response = part["response"] if "response" in part else part.get("result")
            responses.append(
                Message(
                    role="tool",
                    tool_call_id=str(part["id"]) if part.get("id") not in (None, "") else None,
                    tool_response=maybe_json(response),
                )
            )
    if texts:
        message.text = "\n".join(texts)
    # An empty text part is still a turn (the bot said nothing), though its text is None.
    keep = texts or has_text_part or message.tool_calls or message.redacted
    if keep and not (responses and role == "tool" and not texts):
        into.append(message)
    into.extend(responses)


def parse_messages(value: Any, markers: frozenset[str], reasons: list[str]) -> list[Message]:
    value, truncated = _structured(value, reasons)
    if value is None:
        return []
    if not isinstance(value, list):
        reasons.append("malformed_messages")
        return []
    messages: list[Message] = []
    for raw in value:
        _read_message(raw, markers, reasons, messages)
    # Only this attribute's own cut marks its last message: `reasons` is shared by the input
    # and output attributes of one call, and a cut input says nothing about the output.
    if truncated:
        mark_truncated(messages)
    return messages


def parse_system_instructions(value: Any, markers: frozenset[str], reasons: list[str]) -> list[str]:
    if value is None:
        return []
    value, _ = _structured(value, reasons)
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return []
    texts = []
    for part in value:
        if isinstance(part, dict) and part.get("type", "text") == "text":
            text, _ = text_or_marker(part.get("content"), markers)
            if text:
                texts.append(text)
        elif isinstance(part, str):
            texts.append(part)
    return texts


class GenAIContent(DeferredContent):
    """One call's `gen_ai.input.messages`, output messages and system instructions, unparsed.

    Resent history is recognised on the raw values: a JSON string that starts with the whole
    previous input but its closing bracket and goes on with a comma, or a structured list that
    starts with the previous list's elements. Only the rest is kept (`inputs`) and, at assembly,
    parsed: the previous input was a complete JSON array, so the whole input parses to its
    messages followed by the rest's. When it was not (a length limit cut it), the whole input is
    rebuilt from the pieces and parsed as it arrived.

    When the protobuf receiver recognised the previous call's text in the span's bytes, the
    string holds only what follows it (`resent`, the previous call's `message_runs.TextPieces`)
    and the channel keeps this call's pieces (`run.items`) for the next: extending the previous
    call is then one identity check, and no call decodes, copies or compares its history.
    """

    def __init__(
        self,
        channel: str,
        markers: frozenset[str],
        inputs: Any,
        outputs: Any,
        system: Any,
        finish_reasons: Any,
        run: Any = None,
        resent: Any = None,
    ) -> None:
        self.channel = channel
        self.markers = markers
        self.inputs = inputs  # after `resent`'s text (the whole input when it is None)
        self.resent = resent
        self.outputs = outputs
        self.system = system
        self.finish_reasons = finish_reasons
        self.previous: GenAIContent | None = None
        self.whole_is_array = -1  # memo: does the whole input parse as a complete JSON array?
        # The receiver's run for the next call lives while this call is the channel's last; its
        # pieces (this call's own string among them) are the whole input the channel keeps.
        self.run = run
        self.tail_bytes = run.held_bytes() if run is not None else 0
        self.history_bytes = held_size(inputs) if run is None else 0
        self.held_bytes = (
            CONTENT_OVERHEAD
            + held_size(inputs)
            + held_size(outputs)
            + held_size(system)
            + held_size(finish_reasons)
            + (sys.getsizeof(run.items) if run is not None else 0)
        )

    def history(self) -> object:
        if self.run is not None:
            return self.run.items
        return self.inputs if isinstance(self.inputs, str | list) else None

    def _whole_text(self) -> Any:
        """The input as it arrived, when the receiver handed on only what followed the text of
        the call it resent."""
        if self.resent is not None:
            whole = self.resent.text()[:-1] + self.inputs
            self.held_bytes += held_size(whole) - held_size(self.inputs)
            self.inputs, self.resent = whole, None
        return self.inputs

    def drop_known(self, previous: DeferredContent | None, history: object) -> bool:
        if not isinstance(previous, GenAIContent):
            self._whole_text()
            return False
        if self.resent is not None and self.resent is history and isinstance(self.inputs, str):
            if self.inputs.lstrip()[:1] != ",":
                self._whole_text()
                return False
            self.previous, self.resent = previous, None  # the rest is what the receiver kept
            return True
        new = self._whole_text()
        if isinstance(history, TextPieces):
            history = history.text()
        rest: str | list[Any]
        if isinstance(new, str) and isinstance(history, str):
            end = len(history) - 1
            if end < 1 or history[end] != "]" or len(new) <= end:
                return False
            if not new.startswith(history[:end]):
                return False
            rest = new[end:]
            if rest.lstrip()[:1] != ",":
                return False
        elif isinstance(new, list) and isinstance(history, list):
            if len(new) <= len(history) or new[: len(history)] != history:
                return False
            rest = new[len(history) :]
        else:
            return False
        # With a run, the channel's pieces hold this call's string (here the whole input) on.
        self.held_bytes += held_size(rest) - (held_size(new) if self.run is None else 0)
        self.inputs, self.previous = rest, previous
        return True

    def whole_input(self) -> Any:
        """The input as it arrived, rebuilt from the first call's and each later call's rest."""
        chain: list[GenAIContent] = []
        link = self
        while link.previous is not None:
            chain.append(link)
            link = link.previous
        whole = link._whole_text()
        for piece in reversed(chain):
            if isinstance(whole, str) and isinstance(piece.inputs, str):
                whole = whole[:-1] + piece.inputs
            elif isinstance(whole, list) and isinstance(piece.inputs, list):
                whole = whole + piece.inputs
        return whole

    def _whole_is_array(self) -> bool:
        if self.whole_is_array < 0:
            whole = self.whole_input()
            if isinstance(whole, str):
                try:
                    self.whole_is_array = int(isinstance(orjson.loads(whole), list))
                except orjson.JSONDecodeError:
                    self.whole_is_array = 0
            else:
                self.whole_is_array = int(isinstance(whole, list))
        return self.whole_is_array == 1

    def _rest(self, reasons: list[str]) -> list[Message] | None:
        """The messages after the previous call's input, or None when they cannot be parsed
        apart from it (the previous input or this rest is not a complete array)."""
        rest = self.inputs
        previous = self.previous
        if previous is None:
            return None
        if isinstance(rest, list):
            self.whole_is_array = 1
            return parse_messages(rest, self.markers, reasons)
        if not isinstance(rest, str) or not previous._whole_is_array():
            return None
        try:
            value = orjson.loads("[" + rest[rest.index(",") + 1 :])
        except orjson.JSONDecodeError:
            return None
        if not isinstance(value, list):
            return None
        self.whole_is_array = 1
        return parse_messages(value, self.markers, reasons)

    def fill(self, call: Observation) -> bool:
        reasons = call.incomplete_reasons
        inputs = self._rest(reasons)
        extends = inputs is not None
        if inputs is None:
            inputs = parse_messages(self.whole_input(), self.markers, reasons)
        outputs = parse_messages(self.outputs, self.markers, reasons)
        inputs, system = split_system(inputs)
        system = parse_system_instructions(self.system, self.markers, reasons) + system
        finish_reasons = self.finish_reasons
        if isinstance(finish_reasons, list) and outputs and not outputs[0].finish_reason:
            outputs[0].finish_reason = str(finish_reasons[0]) if finish_reasons else None
        call.inputs, call.outputs, call.system_instructions = inputs, outputs, system
        return extends


def llm_call(
    attributes: dict[str, Any],
    markers: frozenset[str],
    dialect: str,
    channel: str,
    trace_id: str,
    span_id: str,
    start_ns: int,
    end_ns: int,
    runs: tuple[Any, Any] = (None, None),
) -> Observation:
    """`runs`: the span's `message_run` and `resent_run` (the protobuf receiver's, for resent
    history recognised in the request bytes)."""
    call = Observation(LLM_CALL, dialect, trace_id, span_id, start_ns, end_ns)
    # Attribute stores, not keyword arguments: this runs for every model call, and a dataclass's
    # keyword arguments cost twice as much.
    call.provider = first_str(attributes, "gen_ai.provider.name", "gen_ai.system")
    call.model = first_str(attributes, "gen_ai.response.model", "gen_ai.request.model")
    call.input_tokens = first_int(
        attributes, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"
    )
    call.output_tokens = first_int(
        attributes, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"
    )
    run = runs[0] if runs[0] is not None and runs[0].head == TEXT_HEAD else None
    known = runs[1] if runs[1] is not None and runs[1].head == TEXT_HEAD else None
    content = GenAIContent(
        channel,
        markers,
        attributes.get(INPUT_MESSAGES),
        attributes.get(OUTPUT_MESSAGES),
        attributes.get(SYSTEM_INSTRUCTIONS),
        attributes.get("gen_ai.response.finish_reasons"),
        run,
        known.items if known is not None else None,
    )
    call.content = content
    call.size_bytes = OBSERVATION_OVERHEAD + content.held_bytes
    return call


def _error_text(span: SpanView) -> str | None:
    if span.status_code != STATUS_ERROR and "error.type" not in span.attributes:
        return None
    return first_str(span.attributes, "error.type") or "error"


class GenAISpanDecoder(SpanDecoder):
    name = "genai"

    def decode(self, span: SpanView) -> Observation | None:
        attributes = span.attributes
        operation = attributes.get("gen_ai.operation.name")
        if not isinstance(operation, str):
            operation = None
        if operation == "execute_tool" or (operation is None and "gen_ai.tool.name" in attributes):
            return tool_execution(
                span,
                self.name,
                call_id=first_str(attributes, "gen_ai.tool.call.id"),
                name=first_str(attributes, "gen_ai.tool.name") or "unknown",
                arguments=attributes.get("gen_ai.tool.call.arguments"),
                result=attributes.get("gen_ai.tool.call.result"),
                error=_error_text(span),
            )
        has_content = INPUT_MESSAGES in attributes or OUTPUT_MESSAGES in attributes
        if not has_content and operation not in INFERENCE_OPERATIONS:
            return None
        if not has_content and (
            operation == "invoke_agent"
            or any(event.name.startswith("gen_ai.") for event in span.events)
        ):
            return None
        agent_level = operation == "invoke_agent"
        observation = llm_call(
            attributes,
            self.markers,
            self.name,
            "genai.agent" if agent_level else "genai.span",
            span.trace_id,
            span.span_id,
            span.start_ns,
            span.end_ns,
            (span.message_run, span.resent_run),
        )
        observation.agent_level = agent_level
        return observation


class GenAIDetailsEventDecoder(LogDecoder):
    """The v1.37+ `gen_ai.client.inference.operation.details` event, emitted as a log record."""

    name = "genai"

    def decode(self, record: LogView) -> Observation | None:
        event_name = record.event_name or record.attributes.get("event.name")
        if event_name != DETAILS_EVENT:
            return None
        return llm_call(
            record.attributes,
            self.markers,
            self.name,
            "genai.details",
            record.trace_id,
            record.span_id,
            record.time_ns,
            record.time_ns,
        )
