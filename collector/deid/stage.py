"""Assemble the de-identification stage from its configuration."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry
from turnwatch.collector.deid.analysis import TextAnalyzer
from turnwatch.collector.deid.cache import AnalysisCache
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.deidentifier import Deidentifier
from turnwatch.collector.deid.engine import ModelMissingError, build_analyzer, load_nlp_engine
from turnwatch.collector.deid.metrics import DeidMetrics
from turnwatch.collector.deid.pseudonym import Pseudonymizer
from turnwatch.collector.deid.quarantine import QuarantineStore
from turnwatch.collector.deid.secret import load_secret
from turnwatch.collector.deid.sink import DeidentifyingSink
from turnwatch.collector.deid.workers import ProcessWorkers, ThreadWorker, Workers, container_cores
from turnwatch.collector.pipeline import SessionSink


def build_deidentifier(config: DeidConfig, secret: bytes) -> Deidentifier:
    analyzer = build_analyzer(
        config, load_nlp_engine(config.model, config.ner_scope == "whole_text")
    )
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
    size = config.workers or container_cores()
    workers: Workers
    if size == 1:
        workers = ThreadWorker(build_deidentifier(config, secret))
    else:
        workers = ProcessWorkers(config, secret, size)
        try:
            workers.start()
        except Exception as exc:
            workers.close()
            # A worker's own error (a missing model) is in its traceback, not here.
            raise ModelMissingError(
                f"de-identification workers failed to start ({type(exc).__name__}); "
                "run with deid.workers: 1 to see the error"
            ) from None
    metrics = DeidMetrics(registry, config.all_entities())
    return DeidentifyingSink(workers, config, downstream, metrics, quarantine)
