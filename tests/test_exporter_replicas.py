"""Several exporter replicas: one consumer group on a real broker, Prometheus summing them.

Two `turnwatch serve --role exporter` members (in this process, as the role builders compose
them) share `turnwatch.scores` and `turnwatch.incidents` by partition (keyed by session id), and
the regression cases directory (as a volume every replica mounts). What users alert on must
not depend on how many members there are: counters summed over the members equal the score
records published; no member exports in-process drift gauges (each sees a part of the sessions,
so two would disagree); the drift recording rules, evaluated by Prometheus' rule engine
(promtool) on what the two members' /metrics showed, give the drift one process computes from
all the scores; and every incident is one occurrence of one case, also when it reaches a second
member after a partition move. A member joining and one leaving mid-stream (a rebalance each)
lose no score and count none twice. With the session store in PostgreSQL, both members write one
database, and a session redelivered to the other member is found there, not stored twice.
"""

from __future__ import annotations

import functools
import multiprocessing
import random
import subprocess
import threading
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml
from kafka import KafkaProducer
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from turnwatch.exporters.regressions.model import Case
from turnwatch.exporters.regressions.store import CaseStore, regressions_dir
from turnwatch.exporters.sessions.database import PostgresDatabase

from tests.kafka_broker import TansuBroker, with_bus
from tests.otlp_requests import LOOPBACK
from tests.postgres_server import PostgresServer
from tests.session_records import failing, healthy, incident, record_recurrences, scored
from tests.test_distributed import kafka_settings
from tests.test_exporter import score_record
from tests.test_prometheus_rules import RULE_FILES, promtool
from tests.waiting import eventually
from turnwatch.app.roles import build_roles, exporter_config
from turnwatch.app.serve import BackgroundService
from turnwatch.bus.records import INCIDENTS, SCORES, SESSIONS, encode
from turnwatch.drift import SCORE_BUCKETS, DriftConfig, DriftTracker

SERVICES = ("support-bot", "billing-bot", "returns-bot")
METRIC = "turn_relevancy"
BASELINE = 200  # per service: the drift rules' guards are 200 baseline and 50 recent scores
RECENT = 60
INCIDENTS_PUBLISHED = 12
STREAMED = 300  # rounds of one score per service in the rebalance test
MAX_RECORD_BYTES = 4 * 1024 * 1024
DRIFT = "service_metric:turnwatch_quality_drift"
COUNT = "service_metric:turnwatch_session_score_count"
SCORE_FAMILIES = ("turnwatch_session_score", "turnwatch_session_score_squares")


class Member:
    """One exporter replica: its own data directory, the shared regression cases inside it."""

    def __init__(
        self,
        bootstrap: str,
        workdir: Path,
        shared_cases: Path,
        name: str,
        **overrides: object,
    ) -> None:
        data_dir = workdir / name
        data_dir.mkdir(parents=True)
        shared_cases.mkdir(exist_ok=True)
        # The cases volume, mounted where this replica keeps its regression cases.
        regressions_dir(data_dir).symlink_to(shared_cases, target_is_directory=True)
        settings = kafka_settings(
            bootstrap,
            data_dir,
            **{"exporter.services": list(SERVICES), "session_store.enabled": False, **overrides},
        )
        self.name = name
        self.bootstrap = bootstrap
        self.group = settings.bus.kafka.exporter_group
        self.background = BackgroundService(
            settings, functools.partial(build_roles, role="exporter")
        )
        service = self.background.start(timeout=60)
        self.registry = service.registry
        self.ops = f"http://127.0.0.1:{service.ports.ops}"
        self.running = True

    def scrape(self) -> str:
        """/metrics as Prometheus reads it; after `stop`, what it last held."""
        if self.running:
            return LOOPBACK.get(f"{self.ops}/metrics", timeout=10).text
        return generate_latest(self.registry).decode()

    def value(self, name: str, **labels: str) -> float:
        return samples_of(self.scrape(), name, **labels)

    def exported(self) -> float:
        return self.value("turnwatch_exporter_records_total", outcome="exported")

    def stop(self) -> None:
        """SIGTERM's path: finish the record in hand, commit, leave the group."""
        if self.running:
            self.background.stop()
            self.running = False


def has_samples(text: str, name: str) -> bool:
    return any(
        sample.name == name
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    )


def samples_of(text: str, name: str, **labels: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    )


class Publisher:
    """Publishes score records and incidents as the scorer role does: keyed by session id."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        self.scores: dict[str, list[float]] = defaultdict(list)
        self.incidents = []
        self.stored = []
        self.sessions = 0

    def score(self, service: str, value: float) -> None:
        self.sessions += 1
        session_id = f"{service}-{self.sessions}"
        record = score_record(session_id, 1, service, scores={METRIC: value})
        self._send(SCORES, session_id, record)
        self.scores[service].append(value)

    def incident(self, number: int) -> None:
        session = failing(f"incident-{number}", service=SERVICES[number % len(SERVICES)])
        self.incidents.append(incident(session, scored(session)))
        self.redeliver_incident(len(self.incidents) - 1)

    def session(self, number: int) -> None:
        """A scored session: the session (for the store) and its score record."""
        service = SERVICES[number % len(SERVICES)]
        built = (failing if number % 4 == 0 else healthy)(f"stored-{number}", service=service)
        self.stored.append(built)
        self.redeliver_session(len(self.stored) - 1)
        self._send(SCORES, built.session_id, scored(built))

    def redeliver_session(self, index: int) -> None:
        built = self.stored[index]
        self._send(SESSIONS, built.session_id, built)

    def redeliver_incident(self, index: int) -> None:
        flagged = self.incidents[index]
        self._send(INCIDENTS, flagged.session_id, flagged)

    def _send(self, topic: str, key: str, record) -> None:
        self.producer.send(topic, key=key.encode(), value=encode(record, MAX_RECORD_BYTES))

    def flush(self) -> None:
        self.producer.flush(timeout=30)

    def close(self) -> None:
        self.producer.close(timeout=10)


def total(members: list[Member], name: str, **labels: str) -> float:
    return sum(member.value(name, **labels) for member in members)


def wait_exported(members: list[Member], count: int) -> None:
    eventually(
        lambda: sum(member.exported() for member in members),
        lambda exported: exported >= count,
        timeout=120,
        interval=0.3,
        what=f"{count} score records exported",
    )


def warm_up(publisher: Publisher, members: list[Member]) -> None:
    """Scores for the first service until every member has taken some: each owns partitions."""
    rng = random.Random(7)

    def everyone_took_some() -> bool:
        publisher.score(SERVICES[0], rng.uniform(0.7, 0.9))
        publisher.flush()
        return all(member.exported() > 0 for member in members)

    eventually(everyone_took_some, timeout=90, interval=0.2, what="every member owns partitions")


def assert_counted_once(members: list[Member], publisher: Publisher) -> None:
    published = sum(len(values) for values in publisher.scores.values())
    assert total(members, "turnwatch_exporter_records_total", outcome="exported") == published
    assert total(members, "turnwatch_exporter_records_total", outcome="duplicate") == 0
    for service in SERVICES:
        count = len(publisher.scores[service])
        assert total(members, "turnwatch_sessions_scored_total", service=service) == count
        labels = {"service": service, "metric": METRIC}
        assert total(members, "turnwatch_session_score_count", **labels) == count
        assert total(members, "turnwatch_session_score_sum", **labels) == pytest.approx(
            sum(publisher.scores[service])
        )


def incidents_taken(members: list[Member]) -> float:
    """Incidents the members' case stores turned into a case or an occurrence."""
    return sum(
        total(members, "turnwatch_regression_incidents_total", outcome=outcome)
        for outcome in ("new_case", "recurrence", "new_revision")
    )


def assert_cases_once(shared_cases: Path, members: list[Member], publisher: Publisher) -> None:
    expected = {(flagged.session_id, flagged.revision) for flagged in publisher.incidents}
    eventually(
        lambda: incidents_taken(members),
        lambda taken: taken >= len(expected),
        timeout=60,
        interval=0.3,
        what="every incident taken",
    )
    cases = [Case.model_validate_json(path.read_bytes()) for path in shared_cases.glob("rc-*.json")]
    occurrences = Counter(
        (item.session_id, item.revision) for case in cases for item in case.occurrences
    )
    assert set(occurrences) == expected
    assert set(occurrences.values()) == {1}
    assert sum(case.occurrence_count for case in cases) == len(expected)
    assert incidents_taken(members) == len(expected)


def series_values(phase1: float, phase2: float) -> str:
    """5-minute samples from 0 to 26 h: 0, then the first scrape's value from 100 min (inside
    the baseline day, which ends an hour before 26 h), the second's from 25.5 h (the last hour)."""
    return f"0x19 {phase1!r}x285 {phase2!r}x6"


def drift_series(scrapes: dict[str, tuple[str, str]]) -> list[dict[str, str]]:
    """promtool input series: each member's score histogram and squares, as scraped after each
    phase, under the member's `instance` label."""
    found: dict[str, list[float]] = {}
    for instance, (first, second) in scrapes.items():
        for phase, text in enumerate((first, second)):
            for family in text_string_to_metric_families(text):
                if family.name not in SCORE_FAMILIES:
                    continue
                for sample in family.samples:
                    if sample.name.endswith("_created"):
                        continue
                    labels = {**sample.labels, "instance": instance, "job": "turnwatch"}
                    selector = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                    key = f"{sample.name}{{{selector}}}"
                    found.setdefault(key, [0.0, 0.0])[phase] = sample.value
    return [
        {"series": key, "values": series_values(phase1, phase2)}
        for key, (phase1, phase2) in sorted(found.items())
    ]


def one_process_drift(values: list[float], recent: int) -> tuple[float, float]:
    """What a single exporter's in-process tracker reads: the last `recent` scores against all
    those before them."""
    config = DriftConfig(
        recent_window=recent,
        baseline_window=len(values) - recent,
        min_recent=50,
        min_baseline=200,
    )
    tracker = DriftTracker(config, SCORE_BUCKETS)
    for value in values:
        reading = tracker.add(value)
    return reading.mean_shift, reading.psi


def close_to(series: str, service: str, expected: float, scale: int = 1) -> dict:
    """A promtool check at 26 h: the recorded series, times `scale`, within 1e-6 of `expected`."""
    selected = f'{series}{{service="{service}"}} * {scale}'
    return {
        "eval_time": "1560m",
        "expr": f"abs({selected} - ({expected!r})) < bool 0.000001",
        "exp_samples": [{"labels": f'{{service="{service}", metric="{METRIC}"}}', "value": 1}],
    }


def run_promtool(tmp_path: Path, series: list[dict[str, str]], checks: list[dict]) -> None:
    test = {
        "rule_files": [str(path) for path in RULE_FILES],
        "evaluation_interval": "10m",
        "tests": [{"interval": "5m", "input_series": series, "promql_expr_test": checks}],
    }
    path = tmp_path / "replicas.test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    result = subprocess.run(
        [promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def broker():
    broker = TansuBroker()
    broker.start()
    yield broker.bootstrap
    broker.stop()


@pytest.mark.slow  # a broker, two exporter members and promtool
def test_two_exporter_members_count_once_and_the_rules_give_one_process_drift(tmp_path, broker):
    shared_cases = tmp_path / "cases-volume"
    members: list[Member] = []
    publisher = Publisher(broker)
    try:
        members += [Member(broker, tmp_path, shared_cases, name) for name in ("a", "b")]
        warm_up(publisher, members)
        rng = random.Random(19)
        for number in range(BASELINE):
            for service in SERVICES:
                publisher.score(service, min(max(rng.gauss(0.8, 0.08), 0.0), 1.0))
            if number < INCIDENTS_PUBLISHED:
                publisher.incident(number)
                publisher.redeliver_incident(number)  # a redelivery: the same partition
        publisher.flush()
        wait_exported(members, sum(len(values) for values in publisher.scores.values()))
        first = {member.name: member.scrape() for member in members}
        for _ in range(RECENT):
            for service in SERVICES:
                publisher.score(service, min(max(rng.gauss(0.6, 0.1), 0.0), 1.0))
        publisher.flush()
        wait_exported(members, sum(len(values) for values in publisher.scores.values()))
        second = {member.name: member.scrape() for member in members}

        assert_counted_once(members, publisher)
        assert_cases_once(shared_cases, members, publisher)
        # Each member took its share of every service, and none exports in-process drift.
        for member in members:
            assert member.value("turnwatch_exporter_records_total", outcome="exported") > 0
            for gauge in ("mean_shift", "psi", "window_scores"):
                assert not has_samples(second[member.name], f"turnwatch_quality_drift_{gauge}")

        series = drift_series({name: (first[name], second[name]) for name in first})
        checks = []
        for service in SERVICES:
            shift, psi = one_process_drift(publisher.scores[service], RECENT)
            baseline = len(publisher.scores[service]) - RECENT
            checks += [
                close_to(f"{DRIFT}:mean_shift", service, shift),
                close_to(f"{DRIFT}:psi", service, psi),
                close_to(f"{COUNT}:increase1d_before1h", service, baseline),
                close_to(f"{COUNT}:rate1h", service, RECENT, scale=3600),
            ]
        run_promtool(tmp_path, series, checks)
    finally:
        publisher.close()
        for member in members:
            member.stop()


@pytest.mark.slow  # a broker and two exporter members
def test_a_member_joining_and_one_leaving_mid_stream_lose_and_double_count_nothing(
    tmp_path, broker
):
    shared_cases = tmp_path / "cases-volume"
    publisher = Publisher(broker)
    first = Member(broker, tmp_path, shared_cases, "a")
    members = [first]
    done = threading.Event()
    rng = random.Random(23)

    def stream() -> None:
        for number in range(STREAMED):
            for service in SERVICES:
                publisher.score(service, rng.uniform(0.1, 0.95))
            if number % 10 == 0 and len(publisher.incidents) < INCIDENTS_PUBLISHED:
                publisher.incident(len(publisher.incidents))
            publisher.flush()
            if done.wait(0.04):
                return

    try:
        warm_up(publisher, members)
        streaming = threading.Thread(target=stream)
        streaming.start()
        wait_exported(members, 100)
        members.append(Member(broker, tmp_path, shared_cases, "b"))  # a rebalance
        eventually(members[1].exported, timeout=60, interval=0.2, what="b takes partitions")
        wait_exported(members, STREAMED * len(SERVICES) // 2)
        assert streaming.is_alive()
        first.stop()  # another: b takes a's partitions from its committed offsets
        streaming.join(timeout=120)
        assert not streaming.is_alive()
        publisher.flush()
        wait_exported(members, sum(len(values) for values in publisher.scores.values()))
        # The incidents again, now all on b's partitions: those a took are in the shared case
        # files, so b takes none of them twice though its own memory never saw them.
        for index in range(len(publisher.incidents)):
            publisher.redeliver_incident(index)
        publisher.flush()

        assert first.exported() > 0 and members[1].exported() > 0
        assert_counted_once(members, publisher)
        assert_cases_once(shared_cases, members, publisher)
        taken_by_a = incidents_taken([first])
        assert taken_by_a > 0
        eventually(
            lambda: members[1].value("turnwatch_regression_incidents_total", outcome="duplicate"),
            lambda duplicates: duplicates == taken_by_a,
            timeout=60,
            interval=0.3,
            what="b to take a's incidents again as duplicates",
        )
        assert_cases_once(shared_cases, members, publisher)
    finally:
        done.set()
        publisher.close()
        for member in members:
            member.stop()


STORED_SESSIONS = 40


def store_writes(members: list[Member], record: str, outcome: str) -> float:
    return total(members, "turnwatch_session_store_writes_total", record=record, outcome=outcome)


def postgres_store(server: PostgresServer, directory: Path) -> dict[str, object]:
    """Settings for a PostgreSQL session store on `server` (its DSN in a file, as deployed)."""
    dsn_file = directory / "session-store-dsn"
    dsn_file.write_text(server.dsn)
    store: dict[str, object] = {"session_store.enabled": True, "session_store.backend": "postgres"}
    store["session_store.postgres_dsn_file"] = str(dsn_file)
    return store


@pytest.mark.slow  # a broker, PostgreSQL and two exporter members
def test_exporter_members_share_one_session_store_and_a_moved_session_is_stored_once(
    tmp_path, broker
):
    postgres = PostgresServer()
    postgres.start()
    store = postgres_store(postgres, tmp_path)
    shared_cases = tmp_path / "cases-volume"
    members: list[Member] = []
    publisher = Publisher(broker)
    try:
        members += [Member(broker, tmp_path, shared_cases, name, **store) for name in ("a", "b")]
        warm_up(publisher, members)
        for number in range(STORED_SESSIONS):
            publisher.session(number)
        publisher.flush()
        eventually(
            lambda: store_writes(members, "session", "stored"),
            lambda stored: stored >= STORED_SESSIONS,
            timeout=90,
            interval=0.3,
            what="every session stored",
        )
        stored_by_a = members[0].value(
            "turnwatch_session_store_writes_total", record="session", outcome="stored"
        )
        assert 0 < stored_by_a < STORED_SESSIONS  # both members wrote their share
        members[0].stop()
        # The sessions again, now all b's: those a stored are in the database, so b finds them.
        for index in range(STORED_SESSIONS):
            publisher.redeliver_session(index)
        publisher.flush()
        eventually(
            lambda: members[1].value(
                "turnwatch_session_store_writes_total", record="session", outcome="duplicate"
            ),
            lambda duplicates: duplicates >= stored_by_a,
            timeout=90,
            interval=0.3,
            what="b to find a's sessions in the shared store",
        )
        assert store_writes(members, "session", "stored") == STORED_SESSIONS
        database = PostgresDatabase(postgres.dsn)
        try:
            rows = database.execute(
                "SELECT session_id, COUNT(*), MIN(CASE WHEN session_blob IS NOT NULL "
                "AND score_blob IS NOT NULL THEN 1 ELSE 0 END) FROM sessions "
                "WHERE session_id LIKE :stored GROUP BY session_id",
                {"stored": "stored-%"},
            )
        finally:
            database.close()
        assert len(rows) == STORED_SESSIONS
        assert {(count, joined) for _session, count, joined in rows} == {(1, 1)}
    finally:
        publisher.close()
        for member in members:
            member.stop()
        postgres.stop()


def test_in_process_drift_gauges_only_where_one_process_sees_every_score(tmp_path):
    embedded = kafka_settings("127.0.0.1:9", tmp_path)
    assert exporter_config(embedded).drift.enabled is False  # an exporter group member
    alone = with_bus(embedded, **{"kafka.bootstrap": None})
    assert exporter_config(alone).drift.enabled is True  # the embedded bus: one consumer
    off = alone.model_copy(
        update={"exporter": alone.exporter.model_copy(update={"drift": DriftConfig(enabled=False)})}
    )
    assert exporter_config(off).drift.enabled is False


def test_replicas_writing_one_case_at_once_lose_no_occurrence(tmp_path):
    directory = tmp_path / "regressions"
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=record_recurrences, args=(str(directory), start, 15))
        for start in (0, 100, 200)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
        assert writer.exitcode == 0
    [case] = [Case.model_validate_json(p.read_bytes()) for p in directory.glob("rc-*.json")]
    assert case.occurrence_count == 45
    # A redelivery to another replica, whose memory never saw it, is still one occurrence.
    late = CaseStore(directory)
    again = failing(case.occurrences[-1].session_id)
    assert late.record(incident(again, scored(again))) == "duplicate"
    assert CaseStore(directory).get(case.case_id).occurrence_count == 45
