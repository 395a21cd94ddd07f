"""The session store on both of its databases: SQLite in a temporary directory and a real
PostgreSQL server the tests start. The join of sessions and scores in either order, later score
records as updates, every filter, paging, retention by age, count and bytes, reviews, the review
queue, the service overview, selection by resource attribute, an older store's schema and a
failing database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.collector.revision_clock import RevisionClock
from turnwatch.exporters.sessions.config import RetentionConfig
from turnwatch.exporters.sessions.database import PostgresDatabase, SqliteDatabase
from turnwatch.exporters.sessions.metrics import SessionStoreMetrics
from turnwatch.exporters.sessions.model import SessionFilters
from turnwatch.exporters.sessions.reviews import FindingLabel, Review, Verdict
from turnwatch.exporters.sessions.store import SessionStore

from tests.postgres_server import PostgresServer
from tests.session_records import START, failing, healthy, incident, relevancy, scored
from turnwatch.scores import Part

NOW = START.timestamp()


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def database(request, tmp_path):
    if request.param == "sqlite":
        db = SqliteDatabase(tmp_path / "sessions.db")
    else:
        server = request.getfixturevalue("postgres")
        db = PostgresDatabase(server.dsn)
        tables = ("sessions", "session_tags", "session_attributes", "judge_scores", "reviews")
        for table in (*tables, "curated_dataset"):
            db.execute(f"DELETE FROM {table}")
    yield db
    db.close()


def make_store(database, **retention: object) -> tuple[SessionStore, CollectorRegistry]:
    registry = CollectorRegistry()
    config = RetentionConfig.model_validate(retention)
    return SessionStore(database, config, SessionStoreMetrics(registry)), registry


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def writes(registry: CollectorRegistry, record: str, outcome: str) -> float:
    return value(registry, "turnwatch_session_store_writes_total", record=record, outcome=outcome)


def test_session_and_score_join_in_either_order(database):
    store, registry = make_store(database)
    first, second = failing("a"), healthy("b")
    assert store.put_session(first, NOW) == "stored"
    assert store.get("a").score is None
    assert store.put_score(scored(first), NOW) == "stored"
    assert store.put_score(scored(second), NOW) == "stored"
    assert store.get("b").session is None
    assert store.put_session(second, NOW) == "stored"
    joined = store.get("a")
    assert joined.session.turns == first.turns
    assert joined.score.critical_failures[0].check == "forbidden_action"
    summary = joined.summary
    assert (summary.service_version, summary.turns, summary.critical) == ("1.4.2", 3, 2)
    assert summary.failed_checks == ["approval", "forbidden_action", "outcome"]
    assert summary.joint_success is False and summary.flagged and summary.scored
    assert store.get("b").summary.joint_success is True
    assert (
        value(registry, "turnwatch_session_store_writes_total", record="score", outcome="stored")
        == 2
    )
    assert value(registry, "turnwatch_session_store_sessions", state="scored") == 2


def test_a_later_score_record_for_the_same_revision_is_an_update(database):
    store, registry = make_store(database)
    session = healthy("a")
    store.put_session(session, NOW)
    checks_only = scored(session)
    with_judge = scored(session, [relevancy(0.5, turns=(2,))], seconds=5)
    other_judge = scored(session, [relevancy(1.0, judge="endpoint")], seconds=1)
    assert store.put_score(checks_only, NOW) == "stored"
    assert store.put_score(checks_only, NOW) == "duplicate"
    assert store.put_score(with_judge, NOW) == "updated"
    assert store.put_score(other_judge, NOW) == "stale"
    stored = store.get("a")
    assert [m.value for m in stored.score.metrics] == [0.5]
    judges = {(j.judge, j.value, tuple(j.turns)) for j in stored.judges}
    assert judges == {("heuristic", 0.5, (2,)), ("endpoint", 1.0, ())}
    assert (
        value(registry, "turnwatch_session_store_writes_total", record="score", outcome="stale")
        == 1
    )


def test_the_judged_part_fills_in_the_checks_part_and_never_goes_back(database):
    # The scorer publishes a revision's checks first and the same checks with the judge's
    # metrics later (ScoreRecord.part); the row must end with the metrics whatever the order.
    store, _registry = make_store(database)
    session = healthy("a")
    store.put_session(session, NOW)
    checks = scored(session).model_copy(update={"part": Part.CHECKS})
    judged = scored(session, [relevancy(0.25, turns=(2,))], seconds=3).model_copy(
        update={"part": Part.JUDGED}
    )
    assert store.put_score(checks, NOW) == "stored"
    assert store.get("a").score.metrics == []
    assert store.put_score(judged, NOW) == "updated"
    assert store.put_score(checks, NOW) == "stale"  # a redelivered checks part
    stored = store.get("a")
    assert stored.score.part is Part.JUDGED
    assert [m.value for m in stored.score.metrics] == [0.25]
    assert {(j.judge, j.value) for j in stored.judges} == {("heuristic", 0.25)}

    reordered, _ = make_store(database)
    other = healthy("b")
    assert reordered.put_score(judged.model_copy(update={"session_id": "b"}), NOW) == "stored"
    assert reordered.put_score(checks.model_copy(update={"session_id": "b"}), NOW) == "stale"
    reordered.put_session(other, NOW)
    assert [m.value for m in reordered.get("b").score.metrics] == [0.25]


def test_a_session_that_is_not_deidentified_is_refused(database):
    store, registry = make_store(database)
    raw = healthy("raw")
    raw.deidentified = False
    assert store.put_session(raw, NOW) == "not_deidentified"
    assert store.get("raw") is None
    assert store.put_incident(incident(raw, scored(raw)), NOW) == "not_deidentified"
    assert store.get("raw") is None
    assert writes(registry, "incident", "not_deidentified") == 1


def test_an_incident_marks_the_session_flagged_with_its_reasons(database):
    store, _ = make_store(database)
    session = failing("a")
    assert store.put_incident(incident(session, scored(session)), NOW) == "stored"
    summary = store.get("a").summary
    assert summary.reasons == ["critical_failure", "joint_failure"] and summary.flagged


def fill(store: SessionStore) -> None:
    for index in range(4):
        bad = failing(f"bad-{index}", minutes=index)
        store.put_session(bad, NOW)
        store.put_score(scored(bad), NOW)
    for index in range(3):
        good = healthy(f"good-{index}", "billing-bot" if index == 0 else "support-bot", 10 + index)
        store.put_session(good, NOW)
        store.put_score(scored(good), NOW)


def ids(page) -> list[str]:
    return [item.session_id for item in page.items]


def test_every_filter_narrows_the_list_and_pages_cover_it(database):
    store, _ = make_store(database)
    fill(store)
    everything = store.list(SessionFilters())
    assert everything.total == 7 and ids(everything)[0] == "good-2"  # newest first
    assert ids(store.list(SessionFilters(service="billing-bot"))) == ["good-0"]
    assert ids(store.list(SessionFilters(version="1.5.0"))) == ["good-2", "good-1", "good-0"]
    assert store.list(SessionFilters(check="forbidden_action")).total == 4
    assert store.list(SessionFilters(check="tool_loop")).total == 0
    assert store.list(SessionFilters(joint="success")).total == 2
    assert ids(store.list(SessionFilters(joint="unscored"))) == ["good-0"]  # no contract
    assert store.list(SessionFilters(joint="failure")).total == 4
    assert store.list(SessionFilters(critical=True)).total == 4
    assert store.list(SessionFilters(critical=False)).total == 3
    window = SessionFilters(since=START + timedelta(minutes=1), until=START + timedelta(minutes=10))
    assert ids(store.list(window)) == ["good-0", "bad-3", "bad-2", "bad-1"]
    pages = [store.list(SessionFilters(), limit=3, offset=offset) for offset in (0, 3, 6)]
    assert [page.next_offset for page in pages] == [3, 6, None]
    assert [key for page in pages for key in ids(page)] == ids(everything)


def test_retention_deletes_the_oldest_by_age_count_and_bytes_and_keeps_reviewed(database):
    store, registry = make_store(database, max_sessions=3, max_age_days=1)
    for index in range(5):
        session = healthy(f"s-{index}")
        store.put_session(session, NOW + index)
        store.put_score(scored(session), NOW + index)
    assert ids(store.list(SessionFilters())) and store.list(SessionFilters()).total == 3
    assert store.get("s-0") is None and store.get("s-1") is None
    assert value(registry, "turnwatch_session_store_evicted_total", reason="count") == 2
    store.put_review(review("s-2", "ana"))
    store.enforce_retention(NOW + 2 * 86_400)
    assert [item.session_id for item in store.list(SessionFilters()).items] == ["s-2"]
    assert value(registry, "turnwatch_session_store_evicted_total", reason="age") == 2
    kept_bytes = value(registry, "turnwatch_session_store_bytes")
    assert (
        kept_bytes > 0
        and value(registry, "turnwatch_session_store_sessions", state="reviewed") == 1
    )

    small, small_registry = make_store(database, max_bytes=int(kept_bytes) * 2)
    for index in range(6):
        session = failing(f"b-{index}")
        small.put_session(session, NOW + 10 + index)
        small.put_score(scored(session), NOW + 10 + index)
    left = [item.session_id for item in small.list(SessionFilters()).items]
    assert "s-2" in left and "b-5" in left and "b-0" not in left
    assert value(small_registry, "turnwatch_session_store_evicted_total", reason="bytes") >= 3


def review(session_id: str, reviewer: str, verdict: Verdict = Verdict.CONFIRMED) -> Review:
    return Review(
        session_id=session_id,
        revision=1,
        reviewer=reviewer,
        reviewed_at=START,
        findings=[FindingLabel(check="forbidden_action", turn_index=1, verdict=verdict)],
        note="checked",
    )


def test_reviews_are_kept_per_reviewer_and_mark_the_session_reviewed(database):
    store, _ = make_store(database)
    store.put_review(review("later", "ana"))  # before the session arrives
    session = failing("later")
    store.put_session(session, NOW)
    assert store.get("later").summary.reviews == 1
    store.put_review(review("later", "ana", Verdict.FALSE_POSITIVE))
    store.put_review(review("later", "bo"))
    reviews = store.reviews("later", 1)
    assert [(r.reviewer, r.findings[0].verdict) for r in reviews] == [
        ("ana", Verdict.FALSE_POSITIVE),
        ("bo", Verdict.CONFIRMED),
    ]
    assert store.list(SessionFilters()).items[0].reviews == 2


def test_revisions_from_the_close_time_are_stored_and_found_again(database):
    # The collector's revisions are the close time in ms times 1024 (about 1.8e15): past a
    # 32-bit column, so every revision column is 64-bit on both databases.
    store, _ = make_store(database)
    revision = RevisionClock(lambda: START.timestamp()).next()
    session = failing("late").model_copy(update={"revision": revision})
    record = scored(session)
    assert store.put_session(session, NOW) == "stored"
    assert store.put_score(record, NOW) == "stored"
    store.put_review(review("late", "ana").model_copy(update={"revision": revision}))
    found = store.get("late", revision)
    assert found.session.revision == found.score.revision == revision
    assert found.summary.reviews == 1
    assert [r.revision for r in store.reviews("late", revision)] == [revision]


def test_the_review_queue_puts_flagged_first_then_samples_each_service_and_slice(database):
    store, _ = make_store(database)
    fill(store)
    other = healthy("other-service", service="billing-bot")
    store.put_session(other, NOW)
    store.put_score(scored(other), NOW)
    queue = store.review_queue(per_group=2)
    reasons = [item.reason for item in queue]
    assert reasons[:4] == ["flagged"] * 4
    assert (
        sorted(reasons[4:]) == ["sample billing-bot / none"] * 2 + ["sample support-bot / none"] * 2
    )
    store.put_review(review(queue[0].summary.session_id, "ana"))
    assert queue[0].summary.key not in {item.summary.key for item in store.review_queue(2)}


def test_the_service_overview_counts_volume_success_critical_and_top_checks(database):
    store, _ = make_store(database)
    fill(store)
    overview = {item.service: item for item in store.overview()}
    support = overview["support-bot"]
    assert (support.sessions, support.scored, support.critical_sessions) == (6, 6, 4)
    assert support.joint_success_rate == pytest.approx(2 / 6)
    assert support.top_failing_checks[:2] == [("approval", 4), ("forbidden_action", 4)]
    assert overview["billing-bot"].sessions == 1


def test_a_failing_database_is_counted_and_raises_nothing(tmp_path):
    store, registry = make_store(SqliteDatabase(tmp_path / "s.db"))
    store.db.close()
    assert store.put_session(healthy("x"), NOW) == "write_error"
    assert writes(registry, "session", "write_error") == 1


def deployed(session_id: str, minutes: int, **attributes: str):
    session = healthy(session_id, minutes=minutes)
    session.provenance.resource_attributes = attributes
    return session


def test_sessions_are_selected_by_any_resource_attribute_and_time(database):
    store, _ = make_store(database)
    plan = [
        ("prod-0", 0, {"deployment.environment": "prod", "service.namespace": "shop"}),
        ("prod-1", 5, {"deployment.environment": "prod", "service.namespace": "travel"}),
        ("prod-2", 9, {"deployment.environment": "prod"}),
        ("canary-0", 6, {"deployment.environment": "canary", "service.namespace": "shop"}),
        ("bare-0", 7, {}),
    ]
    for session_id, minutes, attributes in plan:
        session = deployed(session_id, minutes, **attributes)
        store.put_session(session, NOW)
        store.put_score(scored(session), NOW)
    # The score record arriving first opens the row; the session fills in its attributes.
    late = deployed("canary-1", 8, **{"deployment.environment": "canary"})
    store.put_score(scored(late), NOW)
    store.put_session(late, NOW)

    def select(**attributes: str) -> list[str]:
        return ids(store.list(SessionFilters(attributes=attributes)))

    assert select(**{"deployment.environment": "prod"}) == ["prod-2", "prod-1", "prod-0"]
    assert select(**{"deployment.environment": "canary"}) == ["canary-1", "canary-0"]
    assert select(**{"deployment.environment": "prod", "service.namespace": "shop"}) == ["prod-0"]
    assert select(**{"service.namespace": "shop"}) == ["canary-0", "prod-0"]
    assert select(**{"deployment.environment": "Prod"}) == []  # values match exactly
    assert store.list(SessionFilters()).total == 6
    window = SessionFilters(
        attributes={"deployment.environment": "prod"}, since=START + timedelta(minutes=1)
    )
    assert ids(store.list(window)) == ["prod-2", "prod-1"]
    assert store.attribute_names() == ["deployment.environment", "service.namespace"]
    assert store.get("prod-1").summary.attributes == {
        "deployment.environment": "prod",
        "service.namespace": "travel",
    }
    assert store.get("bare-0").summary.attributes == {}
    # A redelivered session writes nothing twice.
    again = deployed("prod-0", 0, **{"deployment.environment": "x"})
    assert store.put_session(again, NOW) == "duplicate"
    assert store.get("prod-0").summary.attributes["deployment.environment"] == "prod"


def test_evicted_sessions_take_their_attributes_with_them(database):
    store, _ = make_store(database, max_sessions=2)
    for index in range(4):
        session = deployed(f"s-{index}", index, **{"deployment.environment": "prod"})
        store.put_session(session, NOW + index)
    assert ids(store.list(SessionFilters(attributes={"deployment.environment": "prod"}))) == [
        "s-3",
        "s-2",
    ]
    left = database.execute("SELECT session_id FROM session_attributes ORDER BY session_id")
    assert [row[0] for row in left] == ["s-2", "s-3"]


def test_a_store_from_before_resource_attributes_opens_and_gains_the_table(tmp_path):
    path = tmp_path / "sessions.db"
    old = SqliteDatabase(path)
    old.execute("DROP TABLE session_attributes")  # the schema as turnwatch wrote it before
    SessionStore(old).put_session(healthy("before"), NOW)
    old.close()
    reopened = SqliteDatabase(path)
    store = SessionStore(reopened)
    assert ids(store.list(SessionFilters())) == ["before"]
    assert store.attribute_names() == []
    store.put_session(deployed("after", 1, **{"deployment.environment": "prod"}), NOW)
    selected = store.list(SessionFilters(attributes={"deployment.environment": "prod"}))
    assert ids(selected) == ["after"]
    reopened.close()


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"environment": "prod"}, "is not a resource attribute key"),
        ({"deployment environment": "prod"}, "is not a resource attribute key"),
        ({"deployment.environment": ""}, "empty value"),
        ({"a." + "b" * 200: "x"}, "over 128 characters"),
    ],
)
def test_a_filter_on_a_malformed_attribute_is_refused(attributes, message):
    with pytest.raises(ValueError, match=message):
        SessionFilters(attributes=attributes)
