"""Benchmark scripts are run by hand, so nothing else notices when one stops importing."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

SCRIPTS = sorted(
    path.stem
    for path in (Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py")
    if re.search(r'if __name__ == "__main__":\n.*\bmain\(\)', path.read_text())
)


def test_the_benchmarks_folder_has_its_scripts():
    assert {"ingest", "routing", "steady", "resent", "deid", "pipeline"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_script_imports_and_has_a_main(script):
    module = importlib.import_module(f"benchmarks.{script}")
    assert callable(module.main)
