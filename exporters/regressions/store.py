"""Regression cases on disk: one JSON file per failure signature under `<data_dir>/regressions/`.

A file is named by its case id (`rc-<16 hex>.json`, a digest of the signature), so the same
failure always lands in the same file: a recurrence appends an occurrence and bumps the count
instead of adding a file. Each session revision is taken once (at-least-once delivery repeats
them); a later revision of a session already listed updates its occurrence without counting it
again, and refreshes the case's transcript when that session is the case's exemplar (a later
revision holds more of the conversation). Files are replaced atomically (write, then rename), so
a reader never sees half a case. Retention is bounded: past `max_cases` the least recently seen
case is deleted and counted.

Several exporter replicas may share the directory (a volume each mounts): every read-merge-write
holds the directory's `.lock` file (flock), so no replica overwrites an occurrence another just
added, and whether a revision is already listed is read from the case file itself, so a
redelivery that reaches another replica after a partition move is still a duplicate (as long as
the case still lists that session: past `max_occurrences` the oldest are dropped, and a
redelivery of one of those counts again, as it does after a restart).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from turnwatch.exporters.regressions.case import NotDeidentified, build_case, occurrence
from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.exporters.regressions.metrics import Outcome, RegressionMetrics
from turnwatch.exporters.regressions.model import Case, CaseSummary
from turnwatch.exporters.regressions.schema import CaseInvalid, validate_case
from turnwatch.exporters.regressions.signature import signature
from turnwatch.scorers.contract import Contract

from turnwatch.incidents import Incident
from turnwatch.ownership import locked
from turnwatch.private import private_directory
from turnwatch.revisions import SeenRevisions
from turnwatch.schema import Session

log = logging.getLogger("turnwatch.regressions")

SEEN_REVISIONS = 100_000
"""(session, revision) digests remembered across all cases so a redelivery is a no-op."""

ContractLookup = Callable[[str], Contract | None]

EXEMPLAR_FIELDS = (
    "scenario",
    "slice",
    "initial_state",
    "turns",
    "required_facts",
    "forbidden_actions",
    "success",
    "critical_failures",
    "rubric_version",
    "chatbot_role",
    "provenance",
    "findings",
)


def regressions_dir(data_dir: Path) -> Path:
    return data_dir / "regressions"


class CaseStore:
    def __init__(
        self,
        directory: Path,
        config: RegressionConfig | None = None,
        metrics: RegressionMetrics | None = None,
        contracts: ContractLookup | None = None,
    ) -> None:
        self.directory = directory
        self.config = config or RegressionConfig()
        self.metrics = metrics
        self.contracts = contracts or (lambda service: None)
        self._lock = threading.Lock()
        self._summaries: dict[str, CaseSummary] = {}
        self._revisions = SeenRevisions(SEEN_REVISIONS)
        self._mtime: int | None = None
        self._scan()

    # -- reading ------------------------------------------------------------------------------

    def path(self, case_id: str) -> Path:
        return self.directory / f"{case_id}.json"

    def summaries(self) -> list[CaseSummary]:
        with self._lock:
            if self._changed_on_disk():
                self._scan()
            return list(self._summaries.values())

    def get(self, case_id: str) -> Case | None:
        # Ids come from URLs and the command line: only a well-formed id touches the disk.
        if not _valid_id(case_id):
            return None
        return _read(self.path(case_id))

    def cases(self) -> Iterator[Case]:
        for item in sorted(self.summaries(), key=lambda s: s.id):
            case = self.get(item.id)
            if case is not None:
                yield case

    def _changed_on_disk(self) -> bool:
        try:
            return self.directory.stat().st_mtime_ns != self._mtime
        except FileNotFoundError:
            return self._mtime is not None

    def _scan(self) -> None:
        self._summaries.clear()
        try:
            self._mtime = self.directory.stat().st_mtime_ns
        except FileNotFoundError:
            self._mtime = None
            return
        for file in sorted(self.directory.glob("rc-*.json")):
            case = _read(file)
            if case is None:
                continue
            self._summaries[case.case_id] = case.summary()
            for item in case.occurrences:
                self._revisions.add(item.session_id, item.revision)

    # -- writing ------------------------------------------------------------------------------

    def record(self, incident: Incident, now: datetime | None = None) -> Outcome:
        """Turn one incident into a new case or an occurrence of an existing one."""
        outcome = self._record(incident, now or datetime.now(UTC))
        if self.metrics is not None:
            self.metrics.count(outcome)
            self.metrics.cases.set(len(self._summaries))
        return outcome

    def _record(self, incident: Incident, now: datetime) -> Outcome:
        session, record, reasons = incident.session, incident.score, incident.reasons
        sig = signature(session, record, reasons)
        contract = self.contracts(session.service)
        try:
            fresh = build_case(
                session, record, reasons, sig, self.config.dataset_version, contract, now
            )
        except NotDeidentified:
            return "not_deidentified"
        with self._lock, locked(self.directory):
            if self._changed_on_disk():
                self._scan()
            # Read from disk, not from the summaries: another replica sharing the directory
            # may have written this case within the directory's timestamp resolution.
            existing = self.get(sig.case_id)
            if self._revisions.seen(session.session_id, session.revision) or (
                existing is not None and _listed(existing, session)
            ):
                return "duplicate"
            if existing is None:
                case, outcome = fresh, "new_case"
            else:
                case, outcome = self._merge(existing, fresh, session, reasons, now)
            data = case.to_json()
            try:
                validate_case(data)
            except CaseInvalid as exc:
                log.error("regression case invalid", extra={"case_id": sig.case_id, "error": exc})
                return "schema_invalid"
            if outcome == "new_case":
                self._make_room()
            try:
                self._write(case, data)
            except OSError as exc:
                log.error(
                    "regression case write failed",
                    extra={"case_id": sig.case_id, "error": exc.strerror},
                )
                return "write_error"
            self._revisions.add(session.session_id, session.revision)
            return outcome

    def _merge(
        self, case: Case, fresh: Case, session: Session, reasons: list[str], now: datetime
    ) -> tuple[Case, Outcome]:
        entry = occurrence(session, reasons, now)
        listed = [item for item in case.occurrences if item.session_id != session.session_id]
        known = len(listed) < len(case.occurrences)
        update: dict[str, Any] = {
            "occurrences": [*listed, entry][-self.config.max_occurrences :],
            "last_seen": fresh.last_seen,
        }
        exemplar = case.provenance
        if exemplar.session_id == session.session_id and session.revision > exemplar.revision:
            update.update({field: getattr(fresh, field) for field in EXEMPLAR_FIELDS})
        if not known:
            update["occurrence_count"] = case.occurrence_count + 1
        merged = case.model_copy(update=update)
        return merged, "new_revision" if known else "recurrence"

    def _make_room(self) -> None:
        while len(self._summaries) >= self.config.max_cases:
            oldest = min(self._summaries.values(), key=lambda s: (s.last_seen, s.id))
            self.path(oldest.id).unlink(missing_ok=True)
            del self._summaries[oldest.id]
            if self.metrics is not None:
                self.metrics.evicted.inc()

    def _write(self, case: Case, data: dict[str, Any]) -> None:
        private_directory(self.directory)
        target = self.path(case.case_id)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        encoded = json.dumps(data, indent=2, ensure_ascii=False).encode()
        # Case files hold production conversations (de-identified): owner-only by default.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(encoded)
            os.replace(temporary, target)
        except OSError:
            temporary.unlink(missing_ok=True)
            raise
        self._summaries[case.case_id] = case.summary()
        self._mtime = self.directory.stat().st_mtime_ns


def _listed(case: Case, session: Session) -> bool:
    """Whether the case already holds this revision of the session, or a later one."""
    return any(
        item.session_id == session.session_id and item.revision >= session.revision
        for item in case.occurrences
    )


def _valid_id(case_id: str) -> bool:
    return (
        len(case_id) == 19
        and case_id.startswith("rc-")
        and all(c in "0123456789abcdef" for c in case_id[3:])
    )


def _read(file: Path) -> Case | None:
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        log.warning("unreadable regression case skipped", extra={"file": file.name})
        return None
    try:
        return Case.model_validate_json(raw)
    except ValidationError as exc:
        # A hand-edited or foreign file must not stop the store: skipped, named, never quoted.
        where = _first_error(exc)
        log.warning("malformed regression case skipped", extra={"file": file.name, "error": where})
        return None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_input=False)[0]
    return f"{'/'.join(str(part) for part in error['loc']) or '(root)'}: {error['type']}"
