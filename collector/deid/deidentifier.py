"""Session in, de-identified Session out, or Quarantined with a reason: never anything else.

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
from turnwatch.collector.deid.propagate import propagate
from turnwatch.collector.deid.pseudonym import Pseudonymizer
from turnwatch.collector.deid.replace import replace
from turnwatch.collector.deid.walker import InvalidInput, SessionWalker

from turnwatch.schema import Session


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


class Deidentifier:
    def __init__(
        self, config: DeidConfig, analyzer: TextAnalyzer, pseudonymizer: Pseudonymizer
    ) -> None:
        self.config = config
        self.analyzer = analyzer
        self.pseudonymizer = pseudonymizer
        self.walker = SessionWalker(
            config.raw_fields, config.field_entities, config.max_text_chars, config.max_json_depth
        )

    def deidentify(self, session: Session) -> Deidentified:
        deadline = time.monotonic() + self.config.session_time_limit_seconds
        stats = AnalysisStats()
        try:
            findings = self.find(session, deadline, stats)
            entities: Counter[str] = Counter()

            def substitute(text: str) -> str:
                replaced, found = replace(text, findings[text], self.pseudonymizer.token)
                entities.update(found)
                return replaced

            out = self.walker.map(session, substitute, lambda text, _entity: substitute(text))
        except InvalidInput:
            raise Quarantined(QuarantineReason.INVALID_INPUT) from None
        except TimeLimitExceeded:
            raise Quarantined(QuarantineReason.TIME_LIMIT) from None
        except Exception:
            # `from None`: an analyzer exception's message may quote the text it failed on.
            raise Quarantined(QuarantineReason.ANALYZER_ERROR) from None
        token = self.pseudonymizer.token
        out.conversation_key = token("CONVERSATION_KEY", session.conversation_key)
        if session.user_id is not None:
            out.user_id = token("USER_ID", session.user_id)
            entities["USER_ID"] += 1
        out.deidentified = True
        return Deidentified(out, entities, stats)

    def find(self, session: Session, deadline: float, stats: AnalysisStats) -> dict[str, Findings]:
        """The findings for every text in the session (raises InvalidInput, TimeLimitExceeded)."""
        texts: list[str] = []
        fields: dict[str, str] = {}
        self.walker.map(
            session,
            lambda text: texts.append(text) or text,
            lambda text, entity: fields.setdefault(text, entity),
        )
        findings = self.analyzer.analyze([*texts, *fields], deadline, stats)
        for text, entity in fields.items():
            # A known field is PII whole; added before propagation so its value is also found
            # where it recurs in free text.
            findings[text] += (Finding(0, len(text), entity, 1.0),)
        return propagate(findings)
