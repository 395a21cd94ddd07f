"""The review form of the session page: its field names, and the review a submission makes.

Field names: `reviewer`; `finding:<check>@<turn|session>` = confirmed | false_positive (left
empty: unmarked); `missed` = `<check>@<turn|session>` for defects kept from an earlier review,
plus `missed_check` / `missed_turn` for a new one; `metric:<name>@<turn|session>` = pass | fail;
`slice` (repeated); `note`. A reviewer id in the `X-Turnwatch-Reviewer` header (set by an
authenticating proxy) wins over the form field.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs

from pydantic import ValidationError
from turnwatch.exporters.sessions.reviews import (
    REVIEW_SLICES,
    FindingLabel,
    MetricLabel,
    MissedDefect,
    Review,
    Verdict,
)

MAX_FORM_BYTES = 256 * 1024
REVIEWER_HEADER = "x-turnwatch-reviewer"


class FormError(ValueError):
    """A submission that cannot become a review; the message says which field."""


def _place(value: str) -> tuple[str, int | None]:
    name, sep, where = value.rpartition("@")
    if not sep or not name:
        raise FormError(f"{value!r} is not <name>@<turn|session>")
    if where == "session":
        return name, None
    if not where.isdigit():
        raise FormError(f"{value!r}: the turn is a number or 'session'")
    return name, int(where)


def parse_review(
    body: bytes, session_id: str, revision: int, header_reviewer: str | None
) -> Review:
    if len(body) > MAX_FORM_BYTES:
        raise FormError("the form is too large")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise FormError("the form is not UTF-8") from None
    first = {key: values[0].strip() for key, values in fields.items()}
    reviewer = (header_reviewer or first.get("reviewer", "")).strip()
    if not reviewer:
        raise FormError("reviewer: say who reviews (your name or id)")
    findings, metrics = [], []
    for key, value in first.items():
        kind, _, place = key.partition(":")
        if not value or kind not in ("finding", "metric"):
            continue
        name, turn = _place(place)
        if kind == "finding":
            if value not in ("confirmed", "false_positive"):
                raise FormError(f"{key}: confirmed or false_positive")
            findings.append(FindingLabel(check=name, turn_index=turn, verdict=Verdict(value)))
        else:
            if value not in ("pass", "fail"):
                raise FormError(f"{key}: pass or fail")
            metrics.append(MetricLabel(metric=name, turn_index=turn, label=value))
    missed = [MissedDefect(check=n, turn_index=t) for n, t in map(_place, fields.get("missed", []))]
    if first.get("missed_check"):
        turn_text = first.get("missed_turn", "")
        if turn_text and not turn_text.isdigit():
            raise FormError("missed_turn: a turn number, or empty for the whole session")
        missed.append(
            MissedDefect(
                check=first["missed_check"], turn_index=int(turn_text) if turn_text else None
            )
        )
    slices = [name for name in fields.get("slice", []) if name in REVIEW_SLICES]
    try:
        return Review(
            session_id=session_id,
            revision=revision,
            reviewer=reviewer,
            reviewed_at=datetime.now(UTC),
            findings=findings,
            missed=missed,
            metrics=metrics,
            slices=slices,
            note=first.get("note") or None,
        )
    except ValidationError as exc:
        error = exc.errors(include_input=False)[0]
        raise FormError(f"{'/'.join(map(str, error['loc']))}: {error['msg']}") from None
