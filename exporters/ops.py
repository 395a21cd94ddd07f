"""The ops server (port 9464): `/metrics`, `/healthz` (process alive), `/readyz` (can serve)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

ReadinessCheck = Callable[[], str | None]
"""Returns None when ready, else a short reason (never content)."""


def create_ops_app(registry: CollectorRegistry, checks: dict[str, ReadinessCheck]) -> FastAPI:
    app = FastAPI(title="turnwatch ops", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz(response: Response) -> dict[str, object]:
        failures = {name: reason for name, check in checks.items() if (reason := check())}
        if failures:
            response.status_code = 503
            return {"status": "not_ready", "checks": failures}
        return {"status": "ready"}

    return app
