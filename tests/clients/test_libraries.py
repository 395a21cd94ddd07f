"""Real instrumentation libraries, installed from the package registry, each playing the same
scenario against a loopback OpenAI-compatible server and exporting to a real turnwatch: two
conversations of four user turns, history resent, one tool round trip. Every conversation must
come out whole, turn by turn, with its tool call joined to its result and its user and key
pseudonymous.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.pseudonym import Pseudonymizer
from turnwatch.collector.deid.secret import session_id_key
from turnwatch.collector.session_keys import session_id_for

from tests.clients.conftest import DEID_SECRET, Client
from tests.clients.environments import HERE, NODE_BIN, node_project, python_environment
from tests.clients.scenario import (
    CONVERSATIONS,
    TOOL_NAME,
    Settings,
    call_id,
    conversation_id,
    tool_result,
    user_id,
)
from tests.otlp_requests import LOOPBACK
from turnwatch.schema import Role, Session

pytestmark = pytest.mark.slow  # installs libraries, runs client processes, loads Presidio

PSEUDONYMS = Pseudonymizer(DEID_SECRET.encode(), DeidConfig().phone_regions)
ID_KEY = session_id_key(DEID_SECRET.encode())
SCRIPTS = HERE / "scripts"


def assert_rebuilt(settings: Settings, sessions: list[Session]) -> None:
    """Each scenario conversation is exactly one session of nine turns in order: every user
    message once, every answer once, the tool call with its arguments and result."""
    by_key = {session.conversation_key: session for session in sessions}
    # One session for each conversation, so each closed once: a single revision (whose number
    # comes from its close time, not a count).
    assert len(sessions) == len(CONVERSATIONS), [
        (s.conversation_key, s.key_source, len(s.turns)) for s in sessions
    ]
    for conversation in CONVERSATIONS:
        named = conversation_id(settings.run, conversation)
        session = by_key[PSEUDONYMS.token("CONVERSATION_KEY", named)]
        assert session.session_id == session_id_for(settings.service, named, ID_KEY)
        assert session.user_id == PSEUDONYMS.token("USER_ID", user_id(conversation))
        expected = []
        for exchange in conversation.exchanges:
            expected.append((Role.USER, exchange.user, []))
            if exchange.tool_label is not None:
                expected.append((Role.ASSISTANT, None, [TOOL_NAME]))
            expected.append((Role.ASSISTANT, exchange.answer, []))
        shape = [(t.role, t.text, [c.name for c in t.tool_calls]) for t in session.turns]
        assert shape == expected
        [exchange] = [e for e in conversation.exchanges if e.tool_label is not None]
        [call] = [c for t in session.turns for c in t.tool_calls]
        # De-identification keys tool-call ids like trace ids: the same call, an opaque id.
        assert call.id == PSEUDONYMS.keyed_id(call_id(exchange.user))
        assert call.arguments == {"label": exchange.tool_label}
        assert call.result == tool_result(exchange.tool_label)
        assert not session.incomplete, session.incomplete_reasons


def python_client(script: str, environment: str, client: Client, service: str = "", **env: str):
    """Run `scripts/SCRIPT.py` in the `environment` virtualenv as its own service."""
    python = python_environment(environment)
    command = [str(python), str(SCRIPTS / f"{script}.py")]
    return client(command, service=service or script.replace("_", "-"), **env)


def test_openinference_openai_with_session_and_user_context_managers(client):
    assert_rebuilt(*python_client("openinference_openai", "openinference", client))


def test_openllmetry_in_attribute_mode(client):
    assert_rebuilt(*python_client("openllmetry_openai", "openllmetry", client))


def test_openllmetry_in_event_mode(client):
    settings, sessions = python_client(
        "openllmetry_openai",
        "openllmetry",
        client,
        service="openllmetry-events",
        SCENARIO_OPENLLMETRY_EVENTS="1",
    )
    assert_rebuilt(settings, sessions)
    assert {dialect for s in sessions for dialect in s.provenance.dialects} == {"genai_events"}


def test_traceloop_sdk_with_association_properties(client, turnwatch):
    assert_rebuilt(*python_client("traceloop_sdk", "openllmetry", client))
    # Its metric exports (to /v1/metrics) are answered and counted, not refused.
    text = LOOPBACK.get(f"{turnwatch.ops_url}/metrics", timeout=10).text
    metric_requests = {
        sample.labels["outcome"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "turnwatch_otlp_requests_total" and sample.labels["signal"] == "metrics"
    }
    assert set(metric_requests) == {"ignored"} and metric_requests["ignored"] >= 1


def test_official_openai_v2_instrumentation_under_an_application_span(client):
    settings, sessions = python_client(
        "opentelemetry_openai_v2",
        "opentelemetry-genai",
        client,
        OTEL_SEMCONV_STABILITY_OPT_IN="gen_ai_latest_experimental",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="span_only",
    )
    assert_rebuilt(settings, sessions)


def test_pydantic_ai_agent_with_conversation_id(client):
    assert_rebuilt(*python_client("pydantic_ai_agent", "pydantic-ai", client))


def test_langchain_agent_through_openinference_with_a_langgraph_thread(client):
    assert_rebuilt(*python_client("openinference_langchain", "openinference", client))


def test_openai_agents_sdk_through_openinference(client):
    assert_rebuilt(*python_client("openinference_openai_agents", "openinference", client))


def test_vercel_ai_sdk_with_session_and_user_in_telemetry_metadata(client):
    project = node_project()
    command = [str(NODE_BIN / "node"), str(project / "vercel_ai.mjs")]
    settings, sessions = client(command, "vercel-ai", project)
    assert_rebuilt(settings, sessions)
    assert {dialect for s in sessions for dialect in s.provenance.dialects} == {"vercel_ai"}
