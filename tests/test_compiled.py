"""The collector's per-span modules compiled with mypyc (setup.py) run, and match pure Python."""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.otlp_requests import chat_span, trace_request
from turnwatch import collector

ROOT = Path(__file__).resolve().parents[1]
EXTENSION_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def compiled_module_names() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    paths = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and node.targets[0].id == "COMPILED_MODULES"
    )
    return [path.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for path in paths]


def test_every_listed_module_runs_as_installed():
    # The tests check what ships: a compile that silently fell back to pure Python fails here.
    # Only an install made with TURNWATCH_COMPILE=0 is pure Python on purpose, and then wholly.
    compiled = os.environ.get("TURNWATCH_COMPILE") != "0"
    assert collector.COMPILED is compiled
    for name in compiled_module_names():
        module = importlib.import_module(name)
        assert module.__file__.endswith(EXTENSION_SUFFIX) is compiled, module.__file__


def test_an_extension_older_than_its_source_is_refused(tmp_path):
    source = tmp_path / "assembler.py"
    extension = tmp_path / f"assembler{EXTENSION_SUFFIX}"
    source.write_text("")
    extension.write_bytes(b"")
    now = time.time()
    os.utime(source, (now - 10, now - 10))
    collector._refuse_stale_extensions([(extension, source)])  # compiled after the edit: fine
    os.utime(source, (now + 10, now + 10))
    with pytest.raises(ImportError, match="changed after it was compiled"):
        collector._refuse_stale_extensions([(extension, source)])


REBUILD = """
import json, sys
from pathlib import Path
from prometheus_client import CollectorRegistry
from turnwatch import collector
from turnwatch.collector import otlp_json, otlp_proto
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.pipeline import CollectorPipeline, SessionBuilder
from turnwatch.app.settings import load_settings


class Built(list):
    # The pipeline's next stage here: each sampled session assembled at once and kept.
    def __init__(self, build):
        super().__init__()
        self.build = build

    def offer(self, pending):
        self.append(self.build(pending))

    def overloaded(self):
        return False


settings = load_settings(None, {})
metrics = CollectorMetrics(CollectorRegistry())
built = Built(SessionBuilder(settings.collector.service_fallback, metrics, b"k" * 32))
pipeline = CollectorPipeline(settings.collector, metrics, built)
# A wall clock stuck at the epoch: revisions are then the counter alone (1, 2, ...), the same in
# both runs.
pipeline.sessionizer.revisions.clock.wall_clock = lambda: 0.0
limits = DecodeLimits(max_attribute_bytes=settings.otlp.max_attribute_bytes)
rejected = {}
for path in sorted(Path(sys.argv[1]).iterdir()):
    body = path.read_bytes()
    if path.suffix == ".bin":
        result = otlp_proto.decode_traces(body, limits)
        pipeline.accept_spans(result.items)
    elif "logs" in path.name and "spans" not in path.name:
        result = otlp_json.decode_logs(body, limits)
        pipeline.accept_logs(result.items)
    else:
        result = otlp_json.decode_traces(body, limits)
        pipeline.accept_spans(result.items)
    rejected[path.name] = result.rejection_reasons
pipeline.close_all()
sessions = [session.model_dump(mode="json") for session in built]
print(json.dumps({"compiled": collector.COMPILED, "rejected": rejected, "sessions": sessions}))
"""


def rebuild(source_root: Path, inputs: Path) -> dict:
    completed = subprocess.run(
        [sys.executable, "-c", REBUILD, str(inputs)],
        capture_output=True,
        text=True,
        cwd=source_root,
        env={**os.environ, "PYTHONPATH": str(source_root)},
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


@pytest.mark.slow  # two collector subprocesses
def test_compiled_and_pure_python_rebuild_the_same_sessions(tmp_path):
    inputs = tmp_path / "inputs"
    shutil.copytree(ROOT / "collector" / "testdata", inputs, ignore=shutil.ignore_patterns("*.md"))
    long_text = "where is my parcel, it was due on monday " * 8
    long_messages = {
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": long_text}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": long_text[::-1]}]}]
        ),
    }
    spans = [chat_span("conv-short", number) for number in range(3)]
    spans += [chat_span("conv-long", number, extra=long_messages) for number in range(3)]
    spans.append(chat_span("conv-bad", 0, span_id=b"\x00" * 8))  # rejected: all-zero span id
    (inputs / "protobuf.bin").write_bytes(trace_request(spans).SerializeToString())

    # The source laid out as the import package (turnwatch/, with collector/, scorers/ and
    # exporters/ inside it), minus the extensions; first on PYTHONPATH, it shadows the install.
    pure_root = tmp_path / "pure"
    skip = shutil.ignore_patterns(f"*{EXTENSION_SUFFIX}", "__pycache__")
    shutil.copytree(ROOT / "turnwatch", pure_root / "turnwatch", ignore=skip)
    for stage in ("collector", "scorers", "exporters"):
        shutil.copytree(ROOT / stage, pure_root / "turnwatch" / stage, ignore=skip)
    pure = rebuild(pure_root, inputs)
    installed = rebuild(ROOT, inputs)

    assert pure["compiled"] is False
    assert installed["compiled"] is collector.COMPILED
    assert len(pure["sessions"]) >= 10
    assert pure["rejected"]["protobuf.bin"] == {"invalid_id": 1}
    assert installed["rejected"] == pure["rejected"]
    assert installed["sessions"] == pure["sessions"]
