"""The web view on the ops port (`/ui/`): server-rendered pages over the session store and the
regression cases, with review forms. No script, no CDN: the pages and their one stylesheet are
served from here and work offline.

Access is that of `/api/incidents`: with `regressions.api_token` set, a request needs
`Authorization: Bearer <token>` or the `turnwatch_ui` cookie that `/ui/login` sets from the same
token (HttpOnly, SameSite=Strict, so another site cannot submit a review through a visitor's
browser; a form post whose Origin names another host is refused as well). The ops port binds to
loopback by default. Handlers are plain functions: FastAPI runs the database reads in its
thread pool, off the event loop.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import SecretStr, ValidationError
from turnwatch.exporters.regressions.config import RegressionConfig
from turnwatch.exporters.regressions.query import Filters, paginate
from turnwatch.exporters.regressions.store import CaseStore, ContractLookup
from turnwatch.exporters.sessions.curation import promote
from turnwatch.exporters.sessions.metrics import SessionStoreMetrics
from turnwatch.exporters.sessions.model import SessionFilters, key_value_pairs
from turnwatch.exporters.sessions.reviews import (
    PER_SESSION_METRICS,
    PER_TURN_METRICS,
    REVIEW_SLICES,
)
from turnwatch.exporters.sessions.store import SessionStore
from turnwatch.exporters.sessions.transcript import transcript
from turnwatch.exporters.web.forms import REVIEWER_HEADER, FormError, parse_review

HERE = Path(__file__).resolve().parent
COOKIE = "turnwatch_ui"
PAGE_SIZES = (25, 50, 100)
FILTER_FIELDS = ("service", "version", "check", "slice", "joint", "critical", "flagged",
                 "since", "until", "attribute")  # fmt: skip

templates = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _optional_bool(value: str | None) -> bool | None:
    return {"yes": True, "no": False}.get(value or "")


class WebView:
    def __init__(
        self,
        sessions: SessionStore,
        cases: CaseStore,
        token: SecretStr | None,
        data_dir: Path,
        curated_dataset: str,
        regressions: RegressionConfig,
        contracts: ContractLookup | None = None,
        metrics: SessionStoreMetrics | None = None,
    ) -> None:
        self.sessions = sessions
        self.cases = cases
        self.token = token.get_secret_value() if token is not None else None
        self.data_dir = data_dir
        self.curated_dataset = curated_dataset
        self.regressions = regressions
        self.contracts = contracts
        self.metrics = metrics

    # -- access -------------------------------------------------------------------------------

    def allowed(self, request: Request) -> bool:
        if not self.token:
            return True
        expected = self.token.encode()
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), expected):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return hmac.compare_digest(cookie.encode(), expected)

    def guard(self, request: Request, form: bool = False) -> None:
        if not self.allowed(request):
            if form or request.method != "GET":
                raise HTTPException(status_code=401, detail="missing or invalid token")
            target = f"/ui/login?{urlencode({'next': request.url.path})}"
            raise HTTPException(status_code=303, headers={"Location": target})
        origin = request.headers.get("origin")
        if request.method == "POST" and origin and urlsplit(origin).netloc != request.url.netloc:
            raise HTTPException(status_code=403, detail="form posted from another site")

    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        html = templates.get_template(name).render(**values)
        return HTMLResponse(html, status_code=status)

    # -- pages --------------------------------------------------------------------------------

    def filters(self, query: dict[str, str]) -> SessionFilters:
        values: dict[str, Any] = {k: query.get(k) or None for k in FILTER_FIELDS}
        values["critical"] = _optional_bool(values["critical"])
        values["flagged"] = _optional_bool(values["flagged"])
        try:
            values["attributes"] = dict(key_value_pairs(values.pop("attribute") or ""))
            return SessionFilters(**values)
        except ValidationError as exc:
            field = exc.errors(include_input=False)[0]["loc"][0]
            raise HTTPException(status_code=400, detail=f"invalid filter {field}") from None
        except ValueError:
            raise HTTPException(status_code=400, detail="invalid filter attribute") from None

    def session_list(self, request: Request) -> HTMLResponse:
        query = dict(request.query_params)
        filters = self.filters(query)
        limit = int(query["limit"]) if query.get("limit", "").isdigit() else PAGE_SIZES[0]
        limit = min(max(limit, 1), PAGE_SIZES[-1])
        offset = int(query["offset"]) if query.get("offset", "").isdigit() else 0
        page = self.sessions.list(filters, limit, offset)
        kept = {k: v for k, v in query.items() if k in FILTER_FIELDS and v}

        def link(to: int) -> str:
            return "/ui/sessions?" + urlencode({**kept, "limit": limit, "offset": to})

        return self.page(
            "sessions.html",
            page=page,
            query=query,
            services=sorted(self.sessions.services()),
            slices=REVIEW_SLICES,
            previous=link(max(offset - limit, 0)) if offset > 0 else None,
            next=link(page.next_offset) if page.next_offset is not None else None,
            sizes=PAGE_SIZES,
            limit=limit,
        )

    def session_page(
        self, request: Request, session_id: str, revision: int | None, **extra: Any
    ) -> HTMLResponse:
        stored = self.sessions.get(session_id, revision)
        if stored is None:
            return self.page("missing.html", 404, what=f"session {session_id}")
        summary = stored.summary
        reviews = self.sessions.reviews(summary.session_id, summary.revision)
        reviewer = request.headers.get(REVIEWER_HEADER)
        mine = next((r for r in reviews if r.reviewer == reviewer), None) if reviewer else None
        return self.page(
            "session.html",
            status=extra.pop("status", 200),
            view=transcript(stored),
            reviews=reviews,
            mine=mine,
            reviewer=reviewer,
            per_turn_metrics=PER_TURN_METRICS,
            per_session_metrics=PER_SESSION_METRICS,
            slices=REVIEW_SLICES,
            **extra,
        )

    async def save_review(self, request: Request, session_id: str, revision: int) -> Response:
        body = await request.body()
        stored = self.sessions.get(session_id, revision)
        if stored is None:
            return self.page("missing.html", 404, what=f"session {session_id}")
        try:
            review = parse_review(body, session_id, revision, request.headers.get(REVIEWER_HEADER))
        except FormError as exc:
            return self.session_page(request, session_id, revision, error=str(exc), status=400)
        self.sessions.put_review(review)
        if self.metrics is not None:
            self.metrics.reviews.labels("web").inc()
        target = f"/ui/sessions/{session_id}?revision={revision}&saved=1#review"
        return RedirectResponse(target, status_code=303)

    def promote(self, request: Request, session_id: str, revision: int) -> Response:
        stored = self.sessions.get(session_id, revision)
        if stored is None:
            return self.page("missing.html", 404, what=f"session {session_id}")
        result = promote(self.sessions, stored, self.data_dir, self.curated_dataset,
                         self.regressions, self.contracts)  # fmt: skip
        status = 200 if result.case_id else 409
        return self.session_page(request, session_id, revision, promoted=result, status=status)


def web_router(view: WebView) -> APIRouter:
    router = APIRouter(prefix="/ui")

    @router.get("/static/style.css", include_in_schema=False)
    def stylesheet() -> FileResponse:
        return FileResponse(HERE / "static" / "style.css", media_type="text/css")

    @router.get("/login", response_class=HTMLResponse)
    def login_form(next: str = "/ui/") -> HTMLResponse:
        return view.page("login.html", next=next if next.startswith("/ui/") else "/ui/")

    @router.post("/login")
    async def login(request: Request) -> Response:
        from urllib.parse import parse_qs

        fields = parse_qs((await request.body())[:4096].decode("utf-8", "replace"))
        token = fields.get("token", [""])[0]
        target = fields.get("next", ["/ui/"])[0]
        target = target if target.startswith("/ui/") else "/ui/"
        if not view.token or not hmac.compare_digest(token.encode(), view.token.encode()):
            return view.page("login.html", 401, next=target, error="That token is not right.")
        answer = RedirectResponse(target, status_code=303)
        answer.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/ui")
        return answer

    @router.get("/", response_class=HTMLResponse)
    def overview(request: Request) -> HTMLResponse:
        view.guard(request)
        recent = view.sessions.list(SessionFilters(flagged=True), limit=10)
        return view.page("overview.html", services=view.sessions.overview(), recent=recent)

    @router.get("/sessions", response_class=HTMLResponse)
    def sessions(request: Request) -> HTMLResponse:
        view.guard(request)
        return view.session_list(request)

    @router.get("/sessions/{session_id}", response_class=HTMLResponse)
    def session(request: Request, session_id: str, revision: int | None = None) -> HTMLResponse:
        view.guard(request)
        saved = request.query_params.get("saved") == "1"
        return view.session_page(request, session_id, revision, saved=saved)

    @router.post("/sessions/{session_id}/{revision}/review")
    async def review(request: Request, session_id: str, revision: int) -> Response:
        view.guard(request, form=True)
        return await view.save_review(request, session_id, revision)

    @router.post("/sessions/{session_id}/{revision}/promote")
    def promote_session(request: Request, session_id: str, revision: int) -> Response:
        view.guard(request, form=True)
        return view.promote(request, session_id, revision)

    @router.get("/queue", response_class=HTMLResponse)
    def queue(request: Request) -> HTMLResponse:
        view.guard(request)
        return view.page("queue.html", queue=view.sessions.review_queue(5))

    @router.get("/incidents", response_class=HTMLResponse)
    def incidents(request: Request, service: str | None = None, check: str | None = None,
                  slice: str | None = None) -> HTMLResponse:  # fmt: skip
        view.guard(request)
        filters = Filters(service or None, check or None, slice or None)
        page = paginate(view.cases.summaries(), filters, limit=200)
        return view.page("incidents.html", page=page, query=dict(request.query_params))

    @router.get("/incidents/{case_id}", response_class=HTMLResponse)
    def incident(request: Request, case_id: str) -> HTMLResponse:
        view.guard(request)
        case = view.cases.get(case_id)
        if case is None:
            return view.page("missing.html", 404, what=f"regression case {case_id}")
        stored = {o.session_id: view.sessions.get(o.session_id, o.revision) is not None
                  for o in case.occurrences}  # fmt: skip
        return view.page("incident.html", case=case, stored=stored)

    return router


def include_web_ui(app: FastAPI, view: WebView) -> None:
    app.include_router(web_router(view))
