"""A running exporter role over a filled session store and case store, for the web view tests
(HTTP and the headless browser): the pages are served by the real ops server on loopback."""

from __future__ import annotations

from pathlib import Path

from turnwatch.exporters.regressions.store import CaseStore, regressions_dir
from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.store import SessionStore

from tests.conftest import make_settings
from tests.session_records import failing, healthy, incident, relevancy, scored
from turnwatch.app.context import ServiceContext
from turnwatch.app.roles import Roles, build_exporter
from turnwatch.app.serve import BackgroundService, Service

FAILED = "sess-refund-over-limit"


def fill(data_dir: Path, healthy_count: int = 30) -> None:
    store = SessionStore(SqliteDatabase(data_dir / "sessions.db"))
    bad = failing(FAILED, minutes=90)
    bad.provenance.resource_attributes = {"deployment.environment": "canary"}
    record = scored(bad, [relevancy(0.5, turns=(2,))])
    store.put_incident(incident(bad, record))
    CaseStore(regressions_dir(data_dir)).record(incident(bad, record))
    other = failing("sess-billing-refund", service="billing-bot", minutes=80)
    store.put_session(other)
    store.put_score(scored(other))
    for number in range(healthy_count):
        good = healthy(f"sess-ok-{number:02d}", minutes=number)
        store.put_session(good)
        store.put_score(scored(good, [relevancy(1.0)]))
    store.db.close()


def start(data_dir: Path, **overrides: object) -> tuple[BackgroundService, Service, str]:
    settings = make_settings(data_dir=str(data_dir), **overrides)

    def compose(context: ServiceContext) -> Roles:
        return Roles("exporter", consumers=[build_exporter(context)])

    background = BackgroundService(settings, compose)
    service = background.start()
    return background, service, f"http://127.0.0.1:{service.ports.ops}"
