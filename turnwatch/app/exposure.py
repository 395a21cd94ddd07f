"""Private by default: what `mode: production` refuses to serve without a token.

De-identified transcripts are still conversations: `/api/incidents` serves them, so in
production it needs `regressions.api_token`; OTLP receivers accept raw conversations, so in
production they may listen beyond loopback only with `otlp.auth_token`. Embedded mode binds to
loopback by default and is left to the developer.
"""

from __future__ import annotations

import ipaddress

from turnwatch.app.settings import Settings


class ExposureError(Exception):
    """Start-up refused: a listener would expose data without a token. Names the setting."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_collector(settings: Settings) -> None:
    otlp = settings.otlp
    if settings.mode == "production" and not is_loopback(otlp.host) and otlp.auth_token is None:
        raise ExposureError(
            f"otlp.host is {otlp.host!r} (not loopback) in production mode: set otlp.auth_token "
            "(or otlp.auth_token_file), or bind the receivers to 127.0.0.1"
        )


def check_exporter(settings: Settings) -> None:
    if settings.mode == "production" and settings.regressions.api_token is None:
        raise ExposureError(
            "regressions.api_token (or regressions.api_token_file) is required in production "
            "mode: /api/incidents serves de-identified transcripts"
        )
