"""Assemble the de-identification stage from its configuration."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry
from turnwatch.collector.deid.analysis import TextAnalyzer
from turnwatch.collector.deid.cache import AnalysisCache
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import Deidentifier
from turnwatch.collector.deid.engine import build_analyzer, load_nlp_engine
from turnwatch.collector.deid.metrics import DeidMetrics
from turnwatch.collector.deid.pseudonym import Pseudonymizer
from turnwatch.collector.deid.quarantine import QuarantineStore
from turnwatch.collector.deid.secret import load_secret
from turnwatch.collector.deid.sink import DeidentifyingSink
from turnwatch.collector.pipeline import SessionSink


def build_deidentifier(config: DeidConfig, secret: bytes) -> Deidentifier:
    analyzer = build_analyzer(config, load_nlp_engine(config.model))
    cache = AnalysisCache(secret, config.cache_size)
    return Deidentifier(
        config, TextAnalyzer(analyzer, config, cache), Pseudonymizer(secret, config.phone_regions)
    )


def build_deidentifying_sink(
    config: DeidConfig,
    mode: str,
    data_dir: Path,
    registry: CollectorRegistry,
    downstream: SessionSink,
) -> DeidentifyingSink:
    """Raise SecretError (production without a secret) or ModelMissingError before serving."""
    secret = load_secret(config, mode, data_dir)
    quarantine = None
    if config.quarantine.enabled:
        directory = config.quarantine.directory or data_dir / "quarantine"
        quarantine = QuarantineStore(directory, secret, config.quarantine.max_files)
    return DeidentifyingSink(
        build_deidentifier(config, secret),
        downstream,
        DeidMetrics(registry, config.all_entities()),
        quarantine,
    )
