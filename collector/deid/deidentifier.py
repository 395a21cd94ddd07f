"""Session in, de-identified Session out, or Quarantined with a reason: never anything else.

Findings come in layers: the recognizers per text (cached, batched through spaCy), then what
the session around a text says (field rules for tool data, answers to the assistant's
questions, values split across user turns), then propagation (every person's name variants,
every value in its other formats) across the whole session. Each merged region is replaced by
the token of its canonical value, labelled with the type its most confident finding in the
session gave it, so one value has one token throughout the session.

Runs in a worker thread (it is CPU-bound), one session at a time: spaCy's memory zones and the
cache are not shared between threads.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from turnwatch.collector.deid.analysis import AnalysisStats, TextAnalyzer, TimeLimitExceeded
from turnwatch.collector.deid.cache import Finding, Findings
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.context import TurnText, answers, split_values
from turnwatch.collector.deid.fields import FieldRules
from turnwatch.collector.deid.people import propagate_people
from turnwatch.collector.deid.propagate import propagate
from turnwatch.collector.deid.pseudonym import Pseudonymizer
from turnwatch.collector.deid.recognizers.identifiers import SocialSecurityRecognizer
from turnwatch.collector.deid.recognizers.numbers import (
    CardNumberRecognizer,
    IbanCodeRecognizer,
    PhoneNumberRecognizer,
    remembered_phone_parses,
)
from turnwatch.collector.deid.replace import merge, replace
from turnwatch.collector.deid.walker import MIN_NUMBER_DIGITS, InvalidInput, Place, SessionWalker

from turnwatch.schema import Session

# What the NER model labels; a product's name or code is neither, whatever it guesses.
NER_TYPES = frozenset({"PERSON", "LOCATION"})


class QuarantineReason:
    ANALYZER_ERROR = "analyzer_error"
    TIME_LIMIT = "time_limit"
    INVALID_INPUT = "invalid_input"

    ALL = (ANALYZER_ERROR, TIME_LIMIT, INVALID_INPUT)


class Quarantined(Exception):
    """The session must not leave the process. The reason is from a fixed set; no text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Deidentified:
    session: Session
    entities: Counter[str] = field(default_factory=Counter)
    stats: AnalysisStats = field(default_factory=AnalysisStats)


@dataclass
class SessionFindings:
    """Merged regions per text, and the token label of each canonical value."""

    regions: dict[str, list[Finding]]
    labels: dict[str, str]
    keys: dict[tuple[str, int, int], str]


class Deidentifier:
    def __init__(
        self, config: DeidConfig, analyzer: TextAnalyzer, pseudonymizer: Pseudonymizer
    ) -> None:
        self.config = config
        self.analyzer = analyzer
        self.pseudonymizer = pseudonymizer
        self.walker = SessionWalker(config.raw_fields, config.max_text_chars, config.max_json_depth)
        self.fields = FieldRules(config)
        self._keyed_attributes = frozenset(config.keyed_resource_attributes)
        self._entities = frozenset(config.all_entities())
        self._preferred = frozenset(
            [pattern.entity for pattern in config.patterns]
            + (["DENY_LIST"] if config.deny_list else [])
        )
        self._split_recognizers = [
            CardNumberRecognizer(),
            PhoneNumberRecognizer(config.phone_regions),
            IbanCodeRecognizer(),
            SocialSecurityRecognizer(),
        ]

    def deidentify(self, session: Session) -> Deidentified:
        deadline = time.monotonic() + self.config.session_time_limit_seconds
        stats = AnalysisStats()
        try:
            with remembered_phone_parses():
                found = self.find(session, deadline, stats)
            entities: Counter[str] = Counter()

            def token(text: str, region: Finding) -> str:
                key = found.keys[(text, region.start, region.end)]
                label = found.labels[key]
                entities[label] += 1
                return self.pseudonymizer.token_for(label, key)

            def substitute(text: str, place: Place) -> str:
                regions = found.regions.get(text)
                if not regions:
                    return text
                return replace(text, regions, lambda region, _value: token(text, region))

            out = self.walker.map(session, substitute)
        except InvalidInput:
            raise Quarantined(QuarantineReason.INVALID_INPUT) from None
        except TimeLimitExceeded:
            raise Quarantined(QuarantineReason.TIME_LIMIT) from None
        except Exception:
            # `from None`: an analyzer exception's message may quote the text it failed on.
            raise Quarantined(QuarantineReason.ANALYZER_ERROR) from None
        token_of = self.pseudonymizer.token
        out.conversation_key = token_of("CONVERSATION_KEY", session.conversation_key)
        if session.user_id is not None:
            out.user_id = token_of("USER_ID", session.user_id)
            entities["USER_ID"] += 1
        self._key_ids(out)
        self._key_resource_attributes(session, out)
        out.deidentified = True
        return Deidentified(out, entities, stats)

    def _key_ids(self, session: Session) -> None:
        """Trace and tool-call ids link back to the chatbot's own logs: keyed like session ids."""
        keyed = self.pseudonymizer.keyed_id
        session.trace_ids = [keyed(trace_id) for trace_id in session.trace_ids]
        for turn in session.turns:
            turn.trace_id = keyed(turn.trace_id) if turn.trace_id else turn.trace_id
            turn.tool_call_id = keyed(turn.tool_call_id) if turn.tool_call_id else None
            for call in turn.tool_calls:
                call.id = keyed(call.id) if call.id else call.id

    def _key_resource_attributes(self, session: Session, out: Session) -> None:
        """Identifying resource attributes (hosts, pods, instances) as keyed ids of their raw
        values, so they group and select sessions without naming the machine."""
        keyed = self.pseudonymizer.keyed_id
        raw = session.provenance.resource_attributes
        for key in self._keyed_attributes.intersection(raw):
            out.provenance.resource_attributes[key] = keyed(raw[key])

    def find(self, session: Session, deadline: float, stats: AnalysisStats) -> SessionFindings:
        """Every region to replace in the session (raises InvalidInput, TimeLimitExceeded)."""
        texts: dict[str, None] = {}
        whole: dict[str, list[Finding]] = {}
        things: set[str] = set()
        turns: list[TurnText] = []

        def collect(text: str, place: Place) -> str:
            entity = self.fields.entity(place.key, text, place.siblings) if place.key else None
            if entity is not None:
                whole.setdefault(text, []).append(Finding(0, len(text), entity, 1.0))
            elif place.key and self.fields.names_a_thing(place.key, place.siblings):
                things.add(text)
            if not place.number or len(text) >= MIN_NUMBER_DIGITS or entity is not None:
                texts[text] = None
            if place.turn_text and place.role is not None:
                turns.append(TurnText(place.role, text))
            return text

        self.walker.map(session, collect)
        analysed = self.analyzer.analyze(texts, deadline, stats)
        findings: dict[str, Findings] = {text: analysed.get(text, ()) for text in texts}
        for text in things.intersection(findings):
            findings[text] = tuple(item for item in findings[text] if item.entity not in NER_TYPES)
        canonical = self.pseudonymizer.canonical
        for extra in (
            whole,
            answers(turns),
            split_values(turns, self._split_recognizers, canonical),
        ):
            for text, items in extra.items():
                kept = tuple(item for item in items if item.entity in self._entities)
                findings[text] = findings.get(text, ()) + kept
        findings = propagate(propagate_people(findings), canonical)
        return self._resolve(findings)

    def _resolve(self, findings: dict[str, Findings]) -> SessionFindings:
        regions: dict[str, list[Finding]] = {}
        keys: dict[tuple[str, int, int], str] = {}
        best: dict[str, tuple[tuple[bool, float], str]] = {}
        for text, found in findings.items():
            if not found:
                continue
            merged = merge(found, self._preferred)
            regions[text] = merged
            for region in merged:
                key = region.key or self.pseudonymizer.canonical(text[region.start : region.end])
                keys[(text, region.start, region.end)] = key
                rank = (region.entity in self._preferred, region.score)
                if key not in best or rank > best[key][0]:
                    best[key] = (rank, region.entity)
        return SessionFindings(regions, {key: entity for key, (_, entity) in best.items()}, keys)
