"""The failure signature: what makes two incidents the same regression case.

A signature is (service, check, transition). `check` is the failing check that matters most
(the critical ones, else the first broken transition's, else the first failed check, else the
flag reason); `transition` is the first broken transition described by what happened at that
turn (its check and the tools called, or the turn's role), not by its index, so the same failure
recurring at turn 3 of one conversation and turn 9 of another is one case.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from turnwatch.schema import Session
from turnwatch.scores import ScoreRecord, Status


class Signature(NamedTuple):
    service: str
    check: str
    transition: str

    @property
    def case_id(self) -> str:
        digest = hashlib.sha256("\x1f".join(self).encode()).hexdigest()
        return f"rc-{digest[:16]}"


def signature(session: Session, record: ScoreRecord, reasons: list[str]) -> Signature:
    critical = sorted({finding.check for finding in record.critical_failures})
    broken = record.first_broken_transition
    failed = [result.check for result in record.results() if result.status is Status.FAILED]
    if critical:
        check = "+".join(critical)
    elif broken is not None:
        check = broken.check
    elif failed:
        check = failed[0]
    else:
        check = reasons[0] if reasons else "unknown"
    transition = "none"
    if broken is not None:
        transition = f"{broken.check}@{_what_happened(session, broken.turn_index)}"
    return Signature(record.service, check, transition)


def _what_happened(session: Session, turn_index: int) -> str:
    turn = next((turn for turn in session.turns if turn.index == turn_index), None)
    if turn is None:
        return "session"
    if turn.tool_calls:
        return "tool:" + "+".join(sorted({call.name for call in turn.tool_calls}))
    return turn.role.value
