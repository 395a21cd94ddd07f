"""A real `turnwatch serve` for the detection benchmark: a subprocess on free ports with its own
data directory, the corpus's contracts, a known pseudonym key and the JSON-lines record sink."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from benchmarks.detection_sink import RECORDS_ENV

ROOT = Path(__file__).resolve().parent.parent
SCORES = "turnwatch.scores"


class Server:
    def __init__(self, workdir: Path, contracts_dir: Path, secret: str) -> None:
        self.records_path = workdir / "records.jsonl"
        self.records_path.touch()
        config = {
            "sessions": {"idle_timeout_seconds": 20, "sweep_interval_seconds": 0.2},
            "deid": {"secret": secret},
            "scorers": {"contracts_dir": str(contracts_dir)},
            "bus": {"exporter_handler": "benchmarks.detection_sink:record"},
            "log": {"level": "WARNING"},
        }
        config_path = workdir / "turnwatch.yaml"
        config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
        command = [
            *(sys.executable, "-m", "turnwatch", "serve", "--config", str(config_path)),
            *("--otlp-port", "0", "--grpc-port", "0", "--ops-port", "0"),
            *("--data-dir", str(workdir / "data")),
        ]
        env = {
            **os.environ,
            RECORDS_ENV: str(self.records_path),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.stderr_path = workdir / "server.log"
        stdout_path = workdir / "server.out"
        self._outputs = [stdout_path.open("w"), self.stderr_path.open("w")]
        self.process = subprocess.Popen(
            command, stdout=self._outputs[0], stderr=self._outputs[1], env=env, cwd=workdir
        )
        ports = self._ports(stdout_path, timeout=120)
        self.otlp_url = f"http://127.0.0.1:{ports[0]}"
        self.ops_url = f"http://127.0.0.1:{ports[2]}"

    def _ports(self, stdout_path: Path, timeout: float) -> list[str]:
        """The ports of the start-up banner (OTLP/HTTP, OTLP/gRPC, ops)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            ports = re.findall(r":(\d+)", stdout_path.read_text(encoding="utf-8"))
            if len(ports) >= 3:
                return ports
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"turnwatch serve did not start: {self.stderr_path.read_text()}")

    def providers(self, services: list[str]) -> dict[str, TracerProvider]:
        """One SDK tracer provider per service, exporting OTLP/HTTP protobuf to this server."""
        providers = {}
        for service in services:
            provider = TracerProvider(
                resource=Resource.create({"service.name": service, "service.version": "2026.3"})
            )
            exporter = OTLPSpanExporter(endpoint=f"{self.otlp_url}/v1/traces")
            provider.add_span_processor(
                BatchSpanProcessor(exporter, max_export_batch_size=512, schedule_delay_millis=200)
            )
            providers[service] = provider
        return providers

    def scores(self) -> list[dict[str, Any]]:
        text = self.records_path.read_text(encoding="utf-8")
        # The server may be writing the last line right now: read only finished lines.
        lines = text[: text.rfind("\n") + 1].splitlines()
        entries = [json.loads(line) for line in lines if line.strip()]
        return [entry["record"] for entry in entries if entry["topic"] == SCORES]

    def wait_for(self, count: int, timeout: float, progress: Any = None) -> list[dict[str, Any]]:
        """Score records until `count` distinct sessions are scored or the time is up."""
        deadline = time.monotonic() + timeout
        while True:
            records = self.scores()
            scored = len({record["session_id"] for record in records})
            if progress is not None:
                progress(scored)
            if scored >= count or time.monotonic() > deadline:
                return records
            if self.process.poll() is not None:
                raise RuntimeError(f"turnwatch serve exited: {self.stderr_path.read_text()}")
            time.sleep(1.0)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for output in self._outputs:
            output.close()
        return self.process.returncode
