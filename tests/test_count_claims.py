"""Count claims and the canary's shared windows on the embedded default's SQLite session store.

Two exporters over one store stand for two members: a score record the first counted is a
duplicate for the second, part by part; a retried claim whose first commit went through still
counts (it finds its own attempt); claims older than their retention are deleted. The canary
gate reading its windows from the store gives the verdict the in-memory windows give.
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.gate.canary import CanaryConfig, CanaryGate
from turnwatch.exporters.score_exporter import ScoreExporter
from turnwatch.exporters.sessions.claims import PRUNE_EVERY_SECONDS, CountClaims
from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.store import SessionStore

from tests.test_exporter import score_record
from turnwatch.bus.records import SCORES
from turnwatch.scores import Part

CANARY = CanaryConfig(enabled=True, evaluate_every_seconds=3600)


def member(store: SessionStore, canary: CanaryConfig | None = None) -> ScoreExporter:
    config = ExporterConfig(services=["support-bot"], canary=canary or CanaryConfig())
    return ScoreExporter(CollectorRegistry(), config, store)


def outcomes(exporter: ScoreExporter) -> tuple[float, float]:
    return tuple(
        exporter.metrics.records.labels(outcome)._value.get()
        for outcome in ("exported", "duplicate")
    )


def take(exporter: ScoreExporter, record) -> None:
    asyncio.run(exporter.handle(SCORES, record))


def test_a_record_counted_by_one_member_is_a_duplicate_for_another(tmp_path):
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    first, second = member(store), member(store)
    checks = score_record("s-1").model_copy(update={"part": Part.CHECKS})
    take(first, checks)
    take(second, checks)  # redelivered to the partition's next owner
    assert outcomes(first) == (1, 0) and outcomes(second) == (0, 1)
    # The judged part is its own claim: the second member counts it, once.
    judged = checks.model_copy(update={"part": Part.JUDGED})
    take(second, judged)
    take(first, judged)
    assert outcomes(second) == (1, 1) and outcomes(first) == (1, 1)
    sessions = [
        exporter.metrics.sessions_scored.labels("support-bot")._value.get()
        for exporter in (first, second)
    ]
    scores = [
        exporter.metrics.score_squares.labels("support-bot", "turn_relevancy")._value.get()
        for exporter in (first, second)
    ]
    assert sessions == [1, 0] and scores == [0, 0.8 * 0.8]


def test_a_retried_claim_keeps_its_own_rows_and_old_claims_are_pruned(tmp_path):
    database = SqliteDatabase(tmp_path / "sessions.db")
    claims = CountClaims(database, retention_hours=1)
    now = 1_800_000_000.0
    assert claims.claim("s-1", 1, {"checks", "judged"}, "attempt-1", now) == {"checks", "judged"}
    # The answer to that commit was lost: the retry, same attempt, still holds both parts.
    assert claims.claim("s-1", 1, {"checks", "judged"}, "attempt-1", now) == {"checks", "judged"}
    assert claims.claim("s-1", 1, {"checks"}, "attempt-2", now) == frozenset()
    later = now + 3600 + PRUNE_EVERY_SECONDS
    assert claims.claim("s-2", 1, {"checks"}, "attempt-3", later) == {"checks"}
    kept = database.execute("SELECT session_id FROM counted_parts ORDER BY session_id")
    assert kept == [("s-2",)]
    # Pruned past its retention, an old revision would count again: the retention bounds it.
    assert claims.claim("s-1", 1, {"checks"}, "attempt-4", later) == {"checks"}


def versioned(number: int, version: str, joint: bool, at: datetime):
    record = score_record(f"c-{version}-{number}", joint=joint)
    return record.model_copy(update={"service_version": version, "scored_at": at})


def test_the_canary_reads_the_windows_in_memory_gives_from_the_store(tmp_path):
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    shared = member(store, CANARY)
    assert shared.canary is not None and shared.canary.shared is not None
    start = datetime.now(UTC) - timedelta(hours=1)
    records = [versioned(n, "1.3", True, start + timedelta(seconds=n)) for n in range(80)]
    records += [
        versioned(n, "1.4", n % 4 != 0, start + timedelta(seconds=100 + n)) for n in range(80)
    ]
    records.append(versioned(0, None, True, start))  # no version: compared nowhere
    in_memory = CanaryGate(CollectorRegistry(), CANARY)
    # Another arrival order within each version changes nothing (1.4 still appears last).
    for version in ("1.3", "1.4"):
        arrivals = [record for record in records if record.service_version == version]
        random.Random(5).shuffle(arrivals)
        for record in arrivals:
            in_memory.observe("support-bot", record)
    for record in records:
        take(shared, record)
        store.put_score(record)  # the session store handler's write, after the exporter's
    expected = in_memory.evaluate()["support-bot"]
    found = shared.canary.evaluate()["support-bot"]
    assert [rule.model_dump() for rule in found] == [rule.model_dump() for rule in expected]
    assert {rule.rule: rule.verdict.value for rule in found}["joint_success"] == "regression"


def test_the_shared_windows_evaluate_on_a_clock_and_a_failed_read_is_retried(tmp_path, caplog):
    store = SessionStore(SqliteDatabase(tmp_path / "sessions.db"))
    shared = member(store, CanaryConfig(enabled=True, evaluate_every_seconds=1))
    gate = shared.canary
    start = datetime.now(UTC) - timedelta(hours=1)
    for number in range(30):
        for version, at in (("1.3", number), ("1.4", 100 + number)):
            store.put_score(versioned(number, version, True, start + timedelta(seconds=at)))
    store.db.execute("ALTER TABLE sessions RENAME TO sessions_away")  # every read fails
    evaluated = gate.metrics.evaluations.labels("evaluated")._value

    def failed() -> bool:
        return any(record.getMessage() == "canary evaluation failed" for record in caplog.records)

    async def until(condition, timeout: float = 20.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not condition():
            assert asyncio.get_running_loop().time() < deadline, "timed out"
            await asyncio.sleep(0.05)

    async def run() -> None:
        clock = asyncio.create_task(gate.evaluate_periodically())
        await until(failed)
        assert evaluated.get() == 0
        store.db.execute("ALTER TABLE sessions_away RENAME TO sessions")
        await until(lambda: evaluated.get() == 1)  # the loop went on after the failure
        clock.cancel()

    asyncio.run(run())
    assert gate.metrics.sessions.labels("support-bot", "candidate")._value.get() == 30
