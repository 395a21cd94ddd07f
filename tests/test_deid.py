"""De-identification stage: corpus coverage, referential integrity, fail-closed, offline."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import socket
import threading
import time

import pytest
from presidio_analyzer import EntityRecognizer, RecognizerResult
from prometheus_client import CollectorRegistry, generate_latest
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import Deidentifier, Quarantined
from turnwatch.collector.deid.metrics import DeidMetrics
from turnwatch.collector.deid.quarantine import QuarantineStore
from turnwatch.collector.deid.secret import SecretError, load_secret
from turnwatch.collector.deid.sink import DeidentifyingSink
from turnwatch.collector.deid.stage import build_deidentifier, build_deidentifying_sink
from turnwatch.collector.deid.workers import ThreadWorker

from benchmarks.pii.generate import make_corpus
from benchmarks.pii.model import LabelledConversation
from benchmarks.pii.score import needle, occurs
from benchmarks.pii.sessions import conversation_session, session
from tests.conftest import CapturingSink
from turnwatch.schema import Role, Session, ToolCall, Turn

Labelled = tuple[LabelledConversation, Session]

pytestmark = pytest.mark.slow  # Presidio and the spaCy model, loaded for most tests

SECRET = b"test-secret-0123456789abcdef"
TOKEN = re.compile(r"<[A-Z][A-Z0-9_]+_[0-9a-f]{8}>")


@pytest.fixture(scope="module")
def deidentifier() -> Deidentifier:
    return build_deidentifier(DeidConfig(), SECRET)


@pytest.fixture(scope="module")
def corpus() -> list[Labelled]:
    conversations = make_corpus(seed=3, texts=0, conversations=40).conversations
    return [(conversation, conversation_session(conversation)) for conversation in conversations]


def _leaked(labelled: LabelledConversation, emitted: str) -> list[str]:
    return [
        item.entity
        for text in labelled.texts()
        for item in text.occurrences
        if occurs(needle(text.text, item), emitted)
    ]


def _session(*turns: Turn, conversation_key: str = "conv-1", user_id: str | None = "u-1"):
    return session(conversation_key, list(turns), user_id)


def _user(index: int, text: str) -> Turn:
    return Turn(index=index, role=Role.USER, text=text)


def _tool(index: int, arguments: object, result: object = None) -> Turn:
    call = ToolCall(id="c1", name="lookup_customer", arguments=arguments, result=result)
    return Turn(index=index, role=Role.ASSISTANT, tool_calls=[call])


def test_no_labelled_value_survives_anywhere_in_the_corpus(deidentifier, corpus):
    for labelled, raw in corpus:
        out = deidentifier.deidentify(raw).session
        dumped = out.model_dump_json()
        assert not _leaked(labelled, dumped), labelled.conversation_id
        assert out.deidentified
        assert out.user_id is not None and TOKEN.fullmatch(out.user_id)
        assert TOKEN.fullmatch(out.conversation_key)
        # Allow-listed fields stay raw, so downstream checks can still read them.
        assert out.service == "support-bot"
        assert out.session_id == raw.session_id
        assert [t.model for t in out.turns] == [t.model for t in raw.turns]
    # Control: the same search finds the values in the raw sessions.
    labelled, raw = corpus[0]
    assert len(_leaked(labelled, raw.model_dump_json())) > 5


def test_corpus_covers_every_kind_of_pii_and_every_place(corpus):
    occurrences = [
        item for labelled, _ in corpus for text in labelled.texts() for item in text.occurrences
    ]
    kinds = {item.entity for item in occurrences}
    assert kinds >= {
        "PERSON",
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "CREDIT_CARD",
        "STREET_ADDRESS",
        "DATE_TIME",
        "ORDER_NUMBER",
        "ACCOUNT_ID",
        "PASSWORD",
    }
    names = {item.value for item in occurrences if item.entity == "PERSON"}
    assert any(name.islower() for name in names)
    assert any(item.ambiguous for item in occurrences)  # common-word names used alone


def test_same_value_same_token_across_sessions_and_places(deidentifier):
    email = "maria.garcia77@example.com"
    first = _session(
        _user(0, f"Hello, my email is {email}."),
        _tool(1, {"customer_email": email}, {"contact": {"email": email}}),
        conversation_key="conv-a",
    )
    second = _session(_user(0, f"Reach me at {email.upper()} please"), conversation_key="conv-b")
    other = _session(_user(0, "Reach me at james.okafor12@example.com please"))

    a = deidentifier.deidentify(first).session
    b = deidentifier.deidentify(second).session
    c = deidentifier.deidentify(other).session
    [token] = TOKEN.findall(a.turns[0].text)
    assert token.startswith("<EMAIL_ADDRESS_")
    assert a.turns[1].tool_calls[0].arguments == {"customer_email": token}
    assert a.turns[1].tool_calls[0].result == {"contact": {"email": token}}
    assert TOKEN.findall(b.turns[0].text) == [token]
    assert TOKEN.findall(c.turns[0].text) != [token]
    assert a.conversation_key != b.conversation_key
    assert a.user_id == b.user_id


def test_phone_formats_of_one_number_share_a_token(deidentifier):
    texts = [
        "Call me on (415) 867-5309.",
        "Call me on +1 415 867 5309.",
        "Call me on 415-867-5309.",
    ]
    sessions = [deidentifier.deidentify(_session(_user(0, t))).session for t in texts]
    tokens = {TOKEN.findall(s.turns[0].text)[0] for s in sessions}
    assert len(tokens) == 1 and next(iter(tokens)).startswith("<PHONE_NUMBER_")


def test_a_phone_number_the_model_calls_a_date_keeps_its_phone_token(deidentifier):
    """The model tags "07700 900966" DATE_TIME above the phone recognizer's score; a date has
    at most eight digits, so the number gets the token its record gets."""
    number = "07700 900966"
    session = _session(
        _user(0, f"It's {number}"),
        _tool(1, {"phone": number}, {"phone": number}),
        _user(2, "I was born 12/05/1990 and moved on 05.06.2024."),
    )
    turns = deidentifier.deidentify(session).session.turns
    [token] = TOKEN.findall(turns[0].text)
    assert token.startswith("<PHONE_NUMBER_")
    assert turns[1].tool_calls[0].result == {"phone": token}
    dates = TOKEN.findall(turns[2].text)
    assert len(dates) == 2 and all(date.startswith("<DATE_TIME_") for date in dates)


def test_a_name_in_the_possessive_is_the_same_name(deidentifier):
    session = _session(
        _user(0, "That's Ethan Carter's account, isn\u2019t it? Ask Ethan Carter\u2019s bank."),
        _tool(1, {"customer_name": "Ethan Carter"}),
    )
    turns = deidentifier.deidentify(session).session.turns
    name = turns[1].tool_calls[0].arguments["customer_name"]
    assert turns[0].text == f"That's {name}'s account, isn\u2019t it? Ask {name}\u2019s bank."


def test_an_address_closing_a_sentence_is_the_address_in_the_record(deidentifier):
    session = _session(
        _user(0, "Scratch that. It's 4502 Maple Avenue."),
        _user(1, "Or 12 Main St. as before"),
        _tool(2, {"address": "4502 Maple Avenue"}, {"address": "12 Main St"}),
    )
    turns = deidentifier.deidentify(session).session.turns
    call = turns[2].tool_calls[0]
    assert turns[0].text == f"Scratch that. It's {call.arguments['address']}."
    assert turns[1].text == f"Or {call.result['address']} as before"


def test_tokens_depend_on_the_secret(deidentifier):
    session = _session(_user(0, "my email is olga.schmidt@example.org"))
    other = build_deidentifier(DeidConfig(), b"another-secret-0123456789")
    assert (
        deidentifier.deidentify(session).session.turns[0].text
        != other.deidentify(session).session.turns[0].text
    )


def test_json_numbers_keys_and_nested_lists_are_analysed(deidentifier):
    card = "4111111111111111"
    session = _session(
        _tool(0, {"card": int(card), "olga.schmidt@example.org": [["ok", {"ip": "8.8.4.4"}]]})
    )
    dumped = deidentifier.deidentify(session).session.model_dump_json()
    for raw in (card, "olga.schmidt@example.org", "8.8.4.4"):
        assert raw not in dumped
    assert '"ok"' in dumped


def test_identifier_keys_stay_raw_so_contracts_can_read_arguments(deidentifier):
    arguments = {"order_id": "ORD-123456", "customer_name": "Olga Schmidt", "refund_amount": 12}
    [turn] = deidentifier.deidentify(_session(_tool(0, arguments))).session.turns
    deidentified = turn.tool_calls[0].arguments
    assert set(deidentified) == set(arguments)
    assert deidentified["refund_amount"] == 12
    assert deidentified["order_id"].startswith("<ORDER_NUMBER_")
    assert deidentified["customer_name"].startswith("<PERSON_")


def test_prefixed_ids_and_addresses_keep_their_type_over_ner_guesses(deidentifier):
    text = "Order ORD-31860 goes to 18 Elm Road. Parcel 90442 is on its way."
    [turn] = deidentifier.deidentify(_session(_user(0, text))).session.turns
    assert re.search(r"<ORDER_NUMBER_[0-9a-f]{8}> goes to <STREET_ADDRESS_[0-9a-f]{8}>", turn.text)
    assert "ORD-31860" not in turn.text and "Elm" not in turn.text
    assert "is on its way" in turn.text


def test_repeated_texts_come_from_the_cache(corpus):
    fresh = build_deidentifier(DeidConfig(), SECRET)
    first = fresh.deidentify(corpus[0][1])
    again = fresh.deidentify(corpus[0][1])
    assert first.stats.analysed > 0
    assert again.stats.analysed == 0 and again.stats.cache_hits == first.stats.analysed
    assert again.session == first.session


def test_cache_is_bounded_and_holds_no_text(corpus):
    fresh = build_deidentifier(DeidConfig(cache_size=3), SECRET)
    for _, raw in corpus[:4]:
        fresh.deidentify(raw)
    cache = fresh.analyzer.cache
    assert len(cache) == 3
    assert all(isinstance(key, bytes) and len(key) == 32 for key in cache._entries)


def test_spacy_vocabulary_does_not_grow_with_traffic(deidentifier):
    nlp = deidentifier.analyzer.engine.nlp_engine.get_nlp("en")
    rng = random.Random(99)

    def novel_session(n: int):
        words = " ".join(f"zq{rng.randrange(10**9)}x" for _ in range(20))
        return _session(_user(0, f"{words} {n}"))

    deidentifier.deidentify(novel_session(0))
    before = len(nlp.vocab.strings)
    for n in range(1, 30):
        deidentifier.deidentify(novel_session(n))
    assert len(nlp.vocab.strings) == before
    # Control: the same kind of text through spaCy outside a memory zone does grow it.
    nlp(novel_session(30).turns[0].text)
    assert len(nlp.vocab.strings) > before


def test_allow_deny_lists_and_custom_patterns():
    config = DeidConfig(
        allow_list=["Acme"],
        deny_list=["Project Falcon"],
        patterns=[
            {"entity": "TICKET_ID", "regex": r"\bTK-\d{5}\b", "score": 0.1, "context": ["ticket"]}
        ],
    )
    engine = build_deidentifier(config, SECRET)
    text = "Ticket TK-12345 about Project Falcon at Acme Corp. Unrelated TK-54321 code."
    out = engine.deidentify(_session(_user(0, text))).session.turns[0].text
    assert "TK-12345" not in out and "<TICKET_ID_" in out
    assert "Project Falcon" not in out and "<DENY_LIST_" in out
    assert "Acme Corp" in out
    # Without its context word, the low-score pattern stays under the threshold.
    assert "TK-54321" in out


# --- fail closed -------------------------------------------------------------------------------


class ExplodingRecognizer(EntityRecognizer):
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        super().__init__(supported_entities=["PERSON"], name="exploding")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None) -> list[RecognizerResult]:
        if self.delay:
            time.sleep(self.delay)
            return []
        raise ValueError(f"cannot parse {text!r}")


def _sink_with(recognizer: EntityRecognizer | None, **config) -> tuple[DeidentifyingSink, ...]:
    registry = CollectorRegistry()
    settings = DeidConfig(**config)
    engine = build_deidentifier(settings, SECRET)
    if recognizer is not None:
        engine.analyzer.engine.registry.add_recognizer(recognizer)
    downstream = CapturingSink()
    metrics = DeidMetrics(registry, settings.all_entities())
    sink = DeidentifyingSink(ThreadWorker(engine), settings, downstream, metrics)
    return sink, downstream, registry


def _quarantined(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value(
        "turnwatch_deid_sessions_quarantined_total", {"reason": reason}
    )
    return value or 0.0


SECRET_TEXT = "my name is will may, card 4111 1111 1111 1111"


async def test_a_recognizer_that_raises_quarantines_the_session(caplog):
    caplog.set_level(logging.DEBUG)
    sink, downstream, registry = _sink_with(ExplodingRecognizer())
    await sink.deliver(_session(_user(0, SECRET_TEXT)))
    assert downstream.sessions == []
    assert _quarantined(registry, "analyzer_error") == 1
    assert "quarantined" in caplog.text
    for raw in ("will may", "4111"):
        assert raw not in caplog.text
        assert raw not in generate_latest(registry).decode()


async def test_time_limit_quarantines_the_session():
    sink, downstream, registry = _sink_with(
        ExplodingRecognizer(delay=0.3), session_time_limit_seconds=0.1
    )
    session = _session(_user(0, "first text"), _user(1, "second text"), _user(2, "third"))
    await sink.deliver(session)
    assert downstream.sessions == []
    assert _quarantined(registry, "time_limit") == 1


async def test_a_stuck_analyzer_is_abandoned_at_the_time_limit(monkeypatch):
    sink, downstream, registry = _sink_with(None, session_time_limit_seconds=0.05)
    monkeypatch.setattr("turnwatch.collector.deid.sink.DEADLINE_GRACE_SECONDS", 0.0)
    sink._timeout = 0.05
    unstuck, finished = threading.Event(), threading.Event()

    def stuck(session):
        unstuck.wait(5)
        finished.set()

    monkeypatch.setattr(sink.workers.deidentifier, "deidentify", stuck)
    await sink.deliver(_session(_user(0, "hello")))
    # deliver came back while the analyzer is still stuck: it was abandoned, not waited for.
    assert not finished.is_set()
    assert downstream.sessions == [] and _quarantined(registry, "time_limit") == 1
    unstuck.set()
    sink.close()


@pytest.mark.parametrize(
    "turn",
    [
        _user(0, "bad \ud800 surrogate from jane@example.com"),
        _user(0, "x" * 300_000),
        _tool(0, {"set": {1, 2}}),
        _tool(0, {b"bytes": "key"}),
        _tool(0, {"deep": eval("[" * 60 + "]" * 60)}),
    ],
    ids=["lone_surrogate", "too_long", "not_json", "non_string_key", "too_deep"],
)
async def test_garbage_input_is_quarantined_as_invalid(turn):
    sink, downstream, registry = _sink_with(None)
    session = Session.model_construct(**{**_session().__dict__, "turns": [turn]})
    await sink.deliver(session)
    assert downstream.sessions == []
    assert _quarantined(registry, "invalid_input") == 1


def test_deidentifier_raises_quarantined_not_the_analyzer_error(deidentifier, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("text: will may")

    monkeypatch.setattr(deidentifier.analyzer.engine, "analyze", boom)
    with pytest.raises(Quarantined) as info:
        deidentifier.deidentify(_session(_user(0, "a brand new text for will may")))
    assert info.value.reason == "analyzer_error"
    assert "will may" not in str(info.value) and info.value.__cause__ is None


async def test_metrics_count_entities_and_sessions_without_values(corpus):
    sink, downstream, registry = _sink_with(None)
    for _, raw in corpus[:6]:
        await sink.deliver(raw)
    assert len(downstream.sessions) == 6
    assert registry.get_sample_value("turnwatch_deid_sessions_total") == 6
    assert registry.get_sample_value("turnwatch_deid_entities_total", {"entity": "PERSON"}) > 0
    assert registry.get_sample_value("turnwatch_deid_duration_seconds_count") == 6
    exposition = generate_latest(registry).decode()
    for labelled, _ in corpus[:6]:
        assert not _leaked(labelled, exposition)


class WaitsForTheEventLoop(EntityRecognizer):
    """Finds nothing, but only once the event loop has run a callback: on the loop it would
    wait for itself, give up and raise."""

    def __init__(self, loop_ran: threading.Event) -> None:
        self.loop_ran = loop_ran
        super().__init__(supported_entities=["PERSON"], name="waits_for_the_loop")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None) -> list[RecognizerResult]:
        if not self.loop_ran.wait(5):
            raise TimeoutError("the event loop did not run while the analyzer worked")
        return []


async def test_deidentification_runs_off_the_event_loop():
    loop_ran = threading.Event()
    sink, downstream, registry = _sink_with(WaitsForTheEventLoop(loop_ran))
    asyncio.get_running_loop().call_soon(loop_ran.set)
    await sink.deliver(_session(_user(0, "one fresh text")))
    assert len(downstream.sessions) == 1 and _quarantined(registry, "analyzer_error") == 0


# --- secret and quarantine ---------------------------------------------------------------------


def test_production_refuses_to_start_without_a_secret(tmp_path):
    with pytest.raises(SecretError, match=r"deid\.secret"):
        load_secret(DeidConfig(), "production", tmp_path)
    with pytest.raises(SecretError, match=r"deid\.secret_file"):
        load_secret(DeidConfig(secret_file=tmp_path / "missing"), "production", tmp_path)
    with pytest.raises(ValueError, match="16 bytes"):
        DeidConfig(secret="short")
    assert load_secret(DeidConfig(secret="s" * 16), "production", tmp_path) == b"s" * 16


def test_embedded_mode_generates_and_keeps_a_secret(tmp_path):
    first = load_secret(DeidConfig(), "embedded", tmp_path)
    second = load_secret(DeidConfig(), "embedded", tmp_path)
    assert first == second and len(first) >= 32
    assert os.stat(tmp_path / "deid.secret").st_mode & 0o777 == 0o600


async def test_local_quarantine_is_encrypted_and_bounded(tmp_path):
    registry = CollectorRegistry()
    config = DeidConfig(quarantine={"enabled": True, "max_files": 1}, secret="q" * 20, workers=1)
    downstream = CapturingSink()
    sink = build_deidentifying_sink(config, "production", tmp_path, registry, downstream)
    sink.workers.deidentifier.analyzer.engine.registry.add_recognizer(ExplodingRecognizer())
    await sink.deliver(_session(_user(0, SECRET_TEXT), conversation_key="c1"))
    await sink.deliver(_session(_user(0, SECRET_TEXT + "!"), conversation_key="c2"))
    [stored] = list((tmp_path / "quarantine").iterdir())
    assert b"will may" not in stored.read_bytes()
    assert sink.quarantine.read(stored).turns[0].text == SECRET_TEXT
    sample = registry.get_sample_value
    assert sample("turnwatch_deid_quarantine_stored_total", {"outcome": "stored"}) == 1
    assert sample("turnwatch_deid_quarantine_stored_total", {"outcome": "dropped"}) == 1
    assert isinstance(sink.quarantine, QuarantineStore)


# --- offline -----------------------------------------------------------------------------------


def test_deidentifying_a_corpus_opens_no_outbound_socket(monkeypatch, corpus):
    attempts: list[object] = []
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def loopback(host: object) -> bool:
        return isinstance(host, str) and (host in ("localhost", "::1") or host.startswith("127."))

    def guarded_connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and not loopback(host):
            attempts.append(host)
            raise OSError("outbound connection blocked by test")
        return real_connect(self, address)

    def guarded_getaddrinfo(host, *args, **kwargs):
        if not loopback(host):
            attempts.append(host)
            raise socket.gaierror("name resolution blocked by test")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    # Built inside the block: loading the model and the recognizers must not reach out either.
    engine = build_deidentifier(DeidConfig(), SECRET)
    for labelled, raw in corpus[:20]:
        assert not _leaked(labelled, engine.deidentify(raw).session.model_dump_json())
    assert attempts == []
    # Control: the guard does see an outbound connection when one is tried.
    with pytest.raises(OSError):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
    assert attempts == ["192.0.2.1"]


# --- classes that need the NER model ------------------------------------------------------------


def test_a_name_the_model_calls_an_organisation_is_a_person_in_a_name_slot(deidentifier):
    text = "My name is Ngozi Okafor and I need help"
    [turn] = deidentifier.deidentify(_session(_user(0, text))).session.turns
    assert "Ngozi" not in turn.text and "Okafor" not in turn.text
    company = "Hello, this is Acme support. What can I do for you?"
    [kept] = deidentifier.deidentify(_session(_user(0, company))).session.turns
    assert kept.text == company


def test_first_names_and_surnames_alone_get_the_full_names_token(deidentifier):
    answer = "Thanks, Grace! Ms Hill, I will check. By grace of the hill team."
    result = {"holder": "grace hill", "beneficiary": "Ngozi Okafor"}
    session = _session(
        _user(0, "Hi, I'm Grace Hill, my order ORD-31860 is late."),
        Turn(index=1, role=Role.ASSISTANT, text=answer),
        _tool(2, {"order_id": "ORD-31860"}, result),
    )
    out = deidentifier.deidentify(session).session
    [person] = set(TOKEN.findall(out.turns[0].text)) - set(
        TOKEN.findall(out.turns[2].tool_calls[0].arguments["order_id"])
    )
    assert (
        out.turns[1].text.count(person) == 2
        and "by grace of the hill team" in out.turns[1].text.lower()
    )
    assert out.turns[2].tool_calls[0].result["holder"] == person
    assert out.turns[2].tool_calls[0].result["beneficiary"].startswith("<PERSON_")
    assert out.turns[2].tool_calls[0].arguments["order_id"] in out.turns[0].text


def test_trace_and_tool_call_ids_are_keyed(deidentifier):
    session = _session(_tool(0, {"q": "x"})).model_copy(update={"trace_ids": ["ab" * 16]})
    out = deidentifier.deidentify(session).session
    assert out.trace_ids != ["ab" * 16] and len(out.trace_ids[0]) == 32
    assert out.turns[0].tool_calls[0].id not in (None, "c1")


def test_identifying_resource_attributes_leave_as_keyed_ids_and_the_rest_as_configured(
    deidentifier,
):
    raw = _session(_user(0, "hello"))
    raw.provenance.resource_attributes = {
        "deployment.environment": "prod",
        "host.name": "web-7.internal",
        "team.contact": "ops-lead@example.com",
    }
    out = deidentifier.deidentify(raw).session.provenance.resource_attributes
    assert out["deployment.environment"] == "prod"  # provenance is raw by default
    assert out["team.contact"] == "ops-lead@example.com"
    assert re.fullmatch(r"[0-9a-f]{32}", out["host.name"])
    again = deidentifier.deidentify(raw).session.provenance.resource_attributes
    assert again["host.name"] == out["host.name"]  # one host, one id
    assert raw.provenance.resource_attributes["host.name"] == "web-7.internal"

    analysed = build_deidentifier(
        DeidConfig(raw_fields=["service"], keyed_resource_attributes=[]), SECRET
    )
    out = analysed.deidentify(raw).session.provenance.resource_attributes
    assert out["deployment.environment"] == "prod"
    assert not re.fullmatch(r"[0-9a-f]{32}", out["host.name"])  # analysed, not keyed
    assert TOKEN.fullmatch(out["team.contact"]), out["team.contact"]
