"""The support domains of the corpus, each with its contract."""

from __future__ import annotations

from benchmarks.corpus.domain import Domain
from benchmarks.corpus.domains import banking, retail, saas, telecom, travel

DOMAINS: dict[str, Domain] = {
    domain.name: domain
    for domain in (retail.DOMAIN, telecom.DOMAIN, banking.DOMAIN, travel.DOMAIN, saas.DOMAIN)
}
