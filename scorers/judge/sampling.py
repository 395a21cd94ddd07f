"""Which scored sessions are judged: a fraction, by the sampler's consistent hash.

The collector sampled rate-selected sessions with `hash_fraction < rate`, so `hash_fraction / rate`
is again uniform in [0, 1) over them; judging when that is below `sample_rate` picks the same
sessions every time (a revision is judged iff its first revision was), and the sessions judged at
a lower rate are a subset of those judged at a higher one. Force-sampled sessions were not chosen
by the hash, so their raw hash is used.
"""

from __future__ import annotations

from turnwatch.schema import SamplingReason, Session


def judged(session: Session, sample_rate: float) -> bool:
    if sample_rate >= 1.0:
        return True
    if sample_rate <= 0.0:
        return False
    decision = session.sampling
    position = decision.hash_fraction
    if decision.reason is SamplingReason.RATE and decision.rate > 0:
        position = min(position / decision.rate, 0.999_999)
    return position < sample_rate
