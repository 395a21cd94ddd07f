"""Leaks on everything turnwatch emits: the PII corpus's conversations sent as OTel spans (the
real SDK over OTLP/HTTP) to a running turnwatch (`turnwatch.app.serve.run`, every role, real
ports, the embedded bus), then every labelled value and every raw conversation and user id is
looked for in what came out: records published on the bus (sessions, scores, incidents), the
regression case files, `/api/incidents` (list and each case), the log lines and `/metrics`.

Every conversation is force-sampled and so flagged (`sampling.force_attributes` on its user
id), so each becomes an incident and a case. Used by `benchmarks/deid.py`.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from turnwatch.collector.pipeline import HandedOn

from benchmarks.corpus.emit import Emitter
from benchmarks.corpus.model import Conversation, Message, ToolCall
from benchmarks.corpus.pii import Person
from benchmarks.pii.model import LabelledConversation, plain
from benchmarks.pii.score import needle, occurs
from benchmarks.pii.sessions import SYSTEM_PROMPT, conversation_session
from turnwatch.app.collector_role import BusSink, build_collector
from turnwatch.app.context import ServiceContext
from turnwatch.app.roles import Roles, build_exporter, build_scorer
from turnwatch.app.serve import BackgroundService
from turnwatch.app.settings import load_settings
from turnwatch.logs import JsonFormatter
from turnwatch.schema import Session

SERVICE = "support-bot"
API_TOKEN = "leak-benchmark-api-token-0123456789"


class Recorder:
    """Taps after the collector's bus sink and after the exporter: what went onto the bus."""

    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any]]] = []

    def sink(self, bus_sink: BusSink):
        recorder = self

        class Tap:
            async def deliver(self, session: Session, handed_on: HandedOn | None = None) -> bool:
                await bus_sink.deliver(session)
                recorder.records.append(("turnwatch.sessions", session.model_dump(mode="json")))
                return False

        return Tap()

    async def tap(self, topic: str, record: Any) -> list[Any]:
        self.records.append((topic, record.model_dump(mode="json")))
        return []

    def compose(self, context: ServiceContext) -> Roles:
        collector = build_collector(context, output=self.sink(BusSink(context.bus())))
        consumers = [build_scorer(context), build_exporter(context, tap=self.tap)]
        return Roles(collector=collector, consumers=consumers)


class LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JsonFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def corpus_conversation(conversation: LabelledConversation) -> Conversation:
    """The conversation as the corpus emitter sends it (it starts at the first user turn)."""
    messages = []
    for turn in conversation.turns:
        if not messages and turn.role != "user":
            continue
        calls = [
            ToolCall(call.id, call.name, plain(call.arguments), plain(call.result))
            for call in turn.calls
        ]
        messages.append(Message(turn.role, turn.text.text if turn.text else None, calls))
    person = Person("x", "y", "x@example.com", "0", "0", "0", conversation.user_id)
    return Conversation(
        conversation.conversation_id, "dev", "retail", SERVICE, "agent", person, SYSTEM_PROMPT,
        "pii", messages, [], [], "resolved",
    )  # fmt: skip


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def emitted(
    conversations: list[LabelledConversation], secret: str, timeout: float
) -> dict[str, str]:
    """Everything the server emitted, one searchable text per artefact."""
    recorder, logs = Recorder(), LogLines()
    root = logging.getLogger()
    root.addHandler(logs)
    root.setLevel(logging.DEBUG)
    users = sorted({conversation.user_id for conversation in conversations})
    with tempfile.TemporaryDirectory(prefix="turnwatch-leaks-") as workdir:
        settings = load_settings(
            None,
            {
                "otlp.http_port": 0, "otlp.grpc_port": 0, "ops.port": 0,
                "data_dir": workdir,
                "deid.secret": secret,
                "regressions.api_token": API_TOKEN,
                "sampling.force_attributes": {"user.id": users},
                "sessions.idle_timeout_seconds": 2.0,
                "sessions.sweep_interval_seconds": 0.2,
            },
        )  # fmt: skip
        background = BackgroundService(settings, recorder.compose)
        service = background.start(timeout=120)
        try:
            provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
            exporter = OTLPSpanExporter(
                endpoint=f"http://127.0.0.1:{service.ports.otlp_http}/v1/traces"
            )
            provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=256))
            emitter = Emitter({SERVICE: provider})
            for conversation in conversations:
                emitter.emit(corpus_conversation(conversation))
            provider.shutdown()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                incidents = {
                    r["session_id"] for t, r in recorder.records if t == "turnwatch.incidents"
                }
                if len(incidents) >= len(conversations):
                    break
                time.sleep(0.5)
            ops = f"http://127.0.0.1:{service.ports.ops}"
            headers = {"Authorization": f"Bearer {API_TOKEN}"}
            with httpx.Client(timeout=30) as client:
                listed = client.get(
                    f"{ops}/api/incidents", params={"limit": 200}, headers=headers
                ).json()
                cases = [
                    client.get(f"{ops}/api/incidents/{item['id']}", headers=headers).json()
                    for item in listed["items"]
                ]
                metrics = client.get(f"{ops}/metrics").text
        finally:
            background.stop()
            root.removeHandler(logs)
        files = [
            json.loads(path.read_text()) for path in (Path(workdir) / "regressions").glob("*.json")
        ]
    by_topic: dict[str, list[Any]] = {}
    for topic, record in recorder.records:
        by_topic.setdefault(topic, []).append(record)
    out = {f"bus {topic}": "\n".join(strings(records)) for topic, records in by_topic.items()}
    out["regression case files"] = "\n".join(strings(files))
    out["/api/incidents"] = "\n".join(strings([listed, cases]))
    out["log lines"] = "\n".join(s for line in logs.lines for s in strings(json.loads(line)))
    out["/metrics"] = metrics
    out["counts"] = json.dumps(
        {k: len(v) for k, v in by_topic.items()}
        | {"cases": len(files), "api": len(cases), "log lines": len(logs.lines)}
    )
    return out


def leak_report(
    conversations: list[LabelledConversation], secret: str, timeout: float = 300
) -> str:
    artefacts = emitted(conversations, secret, timeout)
    counts = json.loads(artefacts.pop("counts"))
    needles = [
        (item.entity, needle(text.text, item))
        for conversation in conversations
        for text in conversation.texts()
        for item in text.occurrences
    ]
    ids = [c.conversation_id for c in conversations] + sorted({c.user_id for c in conversations})
    lines = [
        f"leaks on everything a running turnwatch emitted ({len(conversations)} conversations, "
        f"{len(needles)} labelled occurrences; records: {counts})",
        "",
        "| emitted | characters | leaked values | leaked raw ids |",
        "|---|---|---|---|",
    ]
    total = 0
    for name, text in artefacts.items():
        leaked = [entity for entity, value in needles if occurs(value, text)]
        leaked_ids = [value for value in ids if occurs(value, text)]
        total += len(leaked) + len(leaked_ids)
        kinds = f" ({', '.join(sorted(set(leaked)))})" if leaked else ""
        lines.append(f"| {name} | {len(text)} | {len(leaked)}{kinds} | {len(leaked_ids)} |")
    raw = "\n".join(
        strings([conversation_session(c).model_dump(mode="json") for c in conversations])
    )
    found = sum(occurs(value, raw) for _, value in needles)
    lines.append(
        f"| control: the raw sessions (not emitted) | {len(raw)} | {found} | "
        f"{sum(occurs(value, raw) for value in ids)} |"
    )
    lines.append(f"\ntotal leaks: {total}")
    return "\n".join(lines)
