"""Presidio without network access.

Presidio's e-mail recognizer validates domains with tldextract's module-level extractor, which
downloads the public suffix list on first use. This extractor reads only the snapshot bundled with
the tldextract package and keeps no on-disk cache.
"""

from __future__ import annotations

import tldextract
from presidio_analyzer.predefined_recognizers import EmailRecognizer

OFFLINE_TLD_EXTRACT = tldextract.TLDExtract(
    cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True
)


class OfflineEmailRecognizer(EmailRecognizer):
    def validate_result(self, pattern_text: str) -> bool:
        return OFFLINE_TLD_EXTRACT(pattern_text).fqdn != ""
