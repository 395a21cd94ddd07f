"""README documents every exporter metric and every `exporter.*` configuration key."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry
from pydantic import BaseModel
from turnwatch.exporters.config import ExporterConfig
from turnwatch.exporters.score_metrics import ScoreMetrics

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def keys(model: type[BaseModel], prefix: str) -> set[str]:
    found: set[str] = set()
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found |= keys(annotation, f"{prefix}{name}.")
        else:
            found.add(f"{prefix}{name}")
    return found


def test_every_exporter_metric_has_a_readme_row():
    registry = CollectorRegistry()
    ScoreMetrics(registry)
    documented = set(re.findall(r"^\| `(turnwatch_[a-z_]+)` \|", README, flags=re.MULTILINE))
    names = {family.name for family in registry.collect()}
    missing = {n for n in names if n not in documented and f"{n}_total" not in documented}
    assert not missing, missing


def test_every_exporter_config_key_has_a_readme_row():
    documented = set(re.findall(r"^\| `([a-z_.]+)` \|", README, flags=re.MULTILINE))
    missing = keys(ExporterConfig, "exporter.") - documented
    assert not missing, missing
