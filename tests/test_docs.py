"""README is the front door: its config reference and metric catalogue must match the code."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from tests.metric_catalogue import full_registry
from turnwatch.app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.extend(_config_keys(annotation, f"{prefix}{name}."))
        else:
            keys.append(f"{prefix}{name}")
    return keys


def test_every_config_key_is_documented():
    documented = set(re.findall(r"^\| `([a-z_.]+)` \|", README, flags=re.MULTILINE))
    assert set(_config_keys(Settings)) <= documented, set(_config_keys(Settings)) - documented


def test_every_metric_is_documented():
    names = {metric.name for metric in full_registry().collect()}
    documented = set(re.findall(r"^\| `(turnwatch_[a-z_]+)` \|", README, flags=re.MULTILINE))
    # prometheus_client reports counters without their `_total` suffix.
    missing = {
        name for name in names if name not in documented and f"{name}_total" not in documented
    }
    assert not missing, missing


def test_ci_runs_the_readme_test_command():
    command = re.search(r"```sh\n(python -m pip install -e '\.\[test\]'.*)\n```", README)
    assert command is not None
    assert command.group(1) in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
