"""The web view over HTTP on the real ops server: the token guards every page (bearer header or
the login cookie), bad input is a clear 4xx, reviews saved from the form land in the store, the
incidents pages link occurrences to their sessions, pages are self-contained (no CDN)."""

from __future__ import annotations

import re

import pytest
from turnwatch.exporters.sessions.database import SqliteDatabase
from turnwatch.exporters.sessions.reviews import Verdict
from turnwatch.exporters.sessions.store import SessionStore

from tests.otlp_requests import LOOPBACK
from tests.web_service import FAILED, fill, start

TOKEN = "web-view-token-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
FORM = {"content-type": "application/x-www-form-urlencoded", **BEARER}


def post_review(base: str, body: str, **headers: str):
    url = f"{base}/ui/sessions/{FAILED}/1/review"
    return LOOPBACK.post(url, content=body, headers={**FORM, **headers})


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data = tmp_path_factory.mktemp("web")
    fill(data, healthy_count=3)
    background, _service, base = start(data, **{"regressions.api_token": TOKEN})
    yield base, data
    background.stop()


def test_every_page_needs_the_token_and_the_login_cookie_carries_it(site):
    base, _ = site
    answer = LOOPBACK.get(f"{base}/ui/sessions")
    assert (
        answer.status_code == 303
        and answer.headers["location"] == "/ui/login?next=%2Fui%2Fsessions"
    )
    assert (
        LOOPBACK.post(
            f"{base}/ui/sessions/{FAILED}/1/review",
            content="reviewer=x",
            headers={"content-type": FORM["content-type"]},
        ).status_code
        == 401
    )
    wrong = LOOPBACK.post(f"{base}/ui/login", content="token=nope&next=/ui/sessions",
                          headers={"content-type": FORM["content-type"]})  # fmt: skip
    assert wrong.status_code == 401 and "That token is not right." in wrong.text
    right = LOOPBACK.post(f"{base}/ui/login", content=f"token={TOKEN}&next=/ui/sessions",
                          headers={"content-type": FORM["content-type"]})  # fmt: skip
    assert right.status_code == 303 and right.headers["location"] == "/ui/sessions"
    cookie = right.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    token = re.search(r"turnwatch_ui=([^;]+)", cookie).group(1)
    page = LOOPBACK.get(f"{base}/ui/sessions", cookies={"turnwatch_ui": token})
    assert page.status_code == 200 and FAILED in page.text
    assert LOOPBACK.get(f"{base}/ui/sessions", headers=BEARER).status_code == 200


def test_pages_are_self_contained(site):
    base, _ = site
    for path in ("/ui/", "/ui/sessions", f"/ui/sessions/{FAILED}", "/ui/queue", "/ui/incidents"):
        html = LOOPBACK.get(f"{base}{path}", headers=BEARER).text
        assert "<script" not in html
        assert re.findall(r'(?:href|src)="(https?:)?//', html) == []  # nothing from elsewhere
    css = LOOPBACK.get(f"{base}/ui/static/style.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


def test_bad_input_is_a_clear_client_error(site):
    base, _ = site
    local = LOOPBACK.get(f"{base}/ui/sessions?since=2026-11-01T13:29", headers=BEARER)
    assert FAILED in local.text and "sess-ok-00" not in local.text  # no offset: UTC
    bad_time = LOOPBACK.get(f"{base}/ui/sessions?since=yesterday", headers=BEARER)
    assert bad_time.status_code == 400 and "invalid filter since" in bad_time.text
    missing = LOOPBACK.get(f"{base}/ui/sessions/no-such-session", headers=BEARER)
    assert missing.status_code == 404 and "There is no session no-such-session" in missing.text
    no_reviewer = post_review(base, "finding%3Aapproval%401=confirmed")
    assert no_reviewer.status_code == 400
    assert "Review not saved: reviewer: say who reviews" in no_reviewer.text
    bad_verdict = post_review(base, "reviewer=a&finding%3Aapproval%401=maybe")
    assert bad_verdict.status_code == 400 and "confirmed or false_positive" in bad_verdict.text
    elsewhere = post_review(base, "reviewer=a", Origin="http://evil.example")
    assert elsewhere.status_code == 403


def test_sessions_are_filtered_by_a_resource_attribute_the_session_page_links(site):
    base, _ = site
    page = LOOPBACK.get(f"{base}/ui/sessions/{FAILED}", headers=BEARER).text
    link = "/ui/sessions?attribute=deployment.environment%3Dcanary"
    assert f'href="{link}"' in page and "deployment.environment=canary" in page
    listed = LOOPBACK.get(f"{base}{link}", headers=BEARER).text
    assert listed.count('href="/ui/sessions/') == 1 and FAILED in listed
    nowhere = LOOPBACK.get(
        f"{base}/ui/sessions?attribute=deployment.environment%3Dprod", headers=BEARER
    )
    assert nowhere.status_code == 200 and FAILED not in nowhere.text
    for bad in ("environment%3Dcanary", "deployment.environment", "deployment.environment%3D"):
        refused = LOOPBACK.get(f"{base}/ui/sessions?attribute={bad}", headers=BEARER)
        assert refused.status_code == 400 and "invalid filter attribute" in refused.text

    base, data = site
    body = ("reviewer=ana&finding%3Aforbidden_action%401=confirmed"
            "&finding%3Aapproval%401=false_positive&metric%3Aturn_relevancy%402=fail"
            "&metric%3Aconversation_completeness%40session=fail&missed_check=knowledge_attrition"
            "&missed_turn=2&slice=tool-failure&slice=not-a-slice&note=over+the+limit")  # fmt: skip
    saved = post_review(base, body)
    assert saved.status_code == 303
    post_review(base, "reviewer=ignored&note=x", **{"X-Turnwatch-Reviewer": "bo@example.org"})
    store = SessionStore(SqliteDatabase(data / "sessions.db"))
    ana, bo = store.reviews(FAILED, 1)
    assert ana.reviewer == "ana" and bo.reviewer == "bo@example.org"
    assert ana.verdict("forbidden_action", 1) is Verdict.CONFIRMED
    assert ana.verdict("approval", 1) is Verdict.FALSE_POSITIVE
    assert ana.metric_label("turn_relevancy", 2) == "fail"
    assert ana.metric_label("conversation_completeness", None) == "fail"
    assert [(m.check, m.turn_index) for m in ana.missed] == [("knowledge_attrition", 2)]
    assert (ana.slices, ana.note) == (["tool-failure"], "over the limit")
    page = LOOPBACK.get(
        f"{base}/ui/sessions/{FAILED}", headers={**BEARER, "X-Turnwatch-Reviewer": "ana"}
    )
    assert 'value="confirmed" checked' in page.text  # the reviewer's own review, prefilled
    promoted = LOOPBACK.post(f"{base}/ui/sessions/{FAILED}/1/promote", headers=BEARER)
    assert promoted.status_code == 200 and "promoted to rc-" in promoted.text


def test_incidents_link_their_occurrences_to_the_stored_sessions(site):
    base, _ = site
    listing = LOOPBACK.get(f"{base}/ui/incidents", headers=BEARER).text
    case_id = re.search(r"rc-[0-9a-f]{16}", listing).group(0)
    case = LOOPBACK.get(f"{base}/ui/incidents/{case_id}", headers=BEARER).text
    assert f'href="/ui/sessions/{FAILED}?revision=1"' in case
    assert (
        LOOPBACK.get(f"{base}/ui/incidents/rc-0000000000000000", headers=BEARER).status_code == 404
    )
    queue = LOOPBACK.get(f"{base}/ui/queue", headers=BEARER).text
    assert "sample support-bot / none" in queue
