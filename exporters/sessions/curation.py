"""Promoting reviewed sessions to the curated regression dataset.

A session whose review confirmed at least one finding (or named a missed defect) becomes a case
in `<data_dir>/regressions/curated/`, in the same format as the cases turnwatch writes by
itself. Every promotion bumps the curated dataset's version (`<curated_dataset>-<n>`, counted
in the store), and the new case carries it: a team pins a release gate to one version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.exporters.regressions.signature import signature
from turnwatch.exporters.regressions.store import CaseStore, ContractLookup, regressions_dir
from turnwatch.exporters.sessions.model import StoredSession
from turnwatch.exporters.sessions.reviews import Verdict
from turnwatch.exporters.sessions.store import SessionStore

from turnwatch.incidents import Incident

REASON = "review_confirmed"


def curated_dir(data_dir: Path) -> Path:
    return regressions_dir(data_dir) / "curated"


@dataclass
class Promotion:
    case_id: str | None
    dataset_version: str | None
    message: str


def next_version(store: SessionStore, name: str) -> int:
    with store.db.transaction():
        rows = store.db.execute(
            "SELECT version FROM curated_dataset WHERE name = :name", {"name": name}
        )
        version = (rows[0][0] if rows else 0) + 1
        store.db.execute(
            "INSERT INTO curated_dataset (name, version) VALUES (:name, :version) "
            "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
            {"name": name, "version": version},
        )
    return version


def promote(
    store: SessionStore,
    stored: StoredSession,
    data_dir: Path,
    dataset: str,
    regressions: RegressionConfig,
    contracts: ContractLookup | None = None,
) -> Promotion:
    if stored.session is None or stored.score is None:
        return Promotion(None, None, "not promoted: the session or its score has not arrived")
    summary = stored.summary
    reviews = store.reviews(summary.session_id, summary.revision)
    confirmed = [
        review
        for review in reviews
        if review.missed or any(f.verdict is Verdict.CONFIRMED for f in review.findings)
    ]
    if not confirmed:
        return Promotion(None, None, "not promoted: no review confirmed a finding of this session")
    version = f"{dataset}-{next_version(store, dataset)}"
    config = regressions.model_copy(update={"dataset_version": version})
    cases = CaseStore(curated_dir(data_dir), config, contracts=contracts)
    reasons = [REASON]
    outcome = cases.record(Incident.of(stored.session, stored.score, reasons))
    case_id = signature(stored.session, stored.score, reasons).case_id
    if outcome in ("new_case", "recurrence", "new_revision", "duplicate"):
        return Promotion(case_id, version, f"promoted to {case_id} ({version}, {outcome})")
    return Promotion(None, None, f"not promoted: {outcome}")
