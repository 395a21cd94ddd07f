"""The incidents API on the ops port: `GET /api/incidents` and `GET /api/incidents/{id}`.

An incident here is a regression case (a failure signature with its occurrences). When a token
is configured every request needs `Authorization: Bearer <token>`, compared in constant time;
answers never echo the presented token. Handlers are plain functions, so FastAPI runs the file
reads in its thread pool instead of on the event loop.
"""

from __future__ import annotations

import hmac
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Query
from pydantic import SecretStr
from turnwatch.exporters.regressions.query import BadCursor, Filters, paginate
from turnwatch.exporters.regressions.store import CaseStore

MAX_PAGE = 200


def bearer_auth(token: SecretStr | str | None):
    expected = token.get_secret_value() if isinstance(token, SecretStr) else token

    def check(authorization: Annotated[str | None, Header()] = None) -> None:
        if not expected:
            return
        scheme, _, presented = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            presented.strip().encode(), expected.encode()
        ):
            raise HTTPException(
                status_code=401,
                detail="missing or invalid bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return check


def incidents_router(store: CaseStore, token: SecretStr | str | None = None) -> APIRouter:
    router = APIRouter(prefix="/api/incidents", dependencies=[Depends(bearer_auth(token))])

    @router.get("")
    def list_incidents(
        service: str | None = None,
        check: str | None = None,
        slice: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        filters = Filters(service, check, slice, since, until)
        try:
            page = paginate(store.summaries(), filters, limit, cursor)
        except BadCursor:
            raise HTTPException(status_code=400, detail="invalid cursor") from None
        except TypeError:
            # since/until without a UTC offset cannot be compared with stored times.
            raise HTTPException(
                status_code=400, detail="since and until need a time zone offset"
            ) from None
        items = [item.to_json() for item in page.items]
        return {"items": items, "total": page.total, "next_cursor": page.next_cursor}

    @router.get("/{case_id}")
    def get_incident(case_id: str) -> dict[str, Any]:
        case = store.get(case_id)
        if case is None:
            raise HTTPException(status_code=404, detail="no such incident")
        return case.to_json()

    return router


def include_incidents_api(
    app: FastAPI, store: CaseStore, token: SecretStr | str | None = None
) -> None:
    """What the ops server calls to serve the incidents API beside /metrics."""
    app.include_router(incidents_router(store, token))
