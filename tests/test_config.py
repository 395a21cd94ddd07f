"""Configuration: defaults, YAML file, TURNWATCH_* environment, CLI flags, and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnwatch.app.settings import ConfigError, Settings, load_settings

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read the process environment: start every test from none of ours."""
    for name in list(os.environ):
        if name.upper().startswith("TURNWATCH_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str, name: str = "turnwatch.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path | None = None, overrides: dict | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(path, overrides)
    return str(caught.value)


# --- sources and precedence -----------------------------------------------------------------


def test_defaults_load_without_file_or_environment() -> None:
    settings = load_settings()
    assert settings == Settings()
    assert settings.otlp.http_port == 4318
    assert settings.otlp.grpc_port == 4317
    assert settings.ops.port == 9464
    assert settings.sampling.rate == 1.0
    assert settings.sessions.idle_timeout_seconds == 60.0
    assert settings.conversation_key.priority[0] == "gen_ai.conversation.id"
    assert settings.otlp.auth_token is None


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "")) == Settings()


def test_yaml_file_values_apply(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
otlp:
  http_port: 14318
  host: 0.0.0.0
  auth_token: s3cret
sampling:
  rate: 0.25
  force_attributes:
    app.escalated: ["yes"]
sessions:
  idle_timeout_seconds: 5
conversation_key:
  custom_attribute: app.chat_id
""",
    )
    settings = load_settings(path)
    assert settings.otlp.http_port == 14318
    assert settings.otlp.host == "0.0.0.0"
    assert settings.otlp.auth_token is not None
    assert settings.otlp.auth_token.get_secret_value() == "s3cret"
    assert settings.sampling.rate == 0.25
    assert settings.sampling.force_attributes == {"app.escalated": ["yes"]}
    assert settings.sessions.idle_timeout_seconds == 5.0
    assert settings.conversation_key.custom_attribute == "app.chat_id"
    # Fields the file leaves out keep their defaults, also inside a section it sets.
    assert settings.otlp.grpc_port == 4317
    assert settings.sessions.max_turns == Settings().sessions.max_turns


def test_environment_overrides_the_file_field_by_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "otlp:\n  http_port: 14318\n  host: 0.0.0.0\nsampling:\n  rate: 0.5\n")
    monkeypatch.setenv("TURNWATCH_OTLP__HTTP_PORT", "24318")
    monkeypatch.setenv("TURNWATCH_SAMPLING__RATE", "0.05")
    monkeypatch.setenv("TURNWATCH_SERVICE_FALLBACK", "bot")
    settings = load_settings(path)
    assert settings.otlp.http_port == 24318
    assert settings.sampling.rate == 0.05
    assert settings.service_fallback == "bot"
    # A nested variable replaces one field, not the file's whole section.
    assert settings.otlp.host == "0.0.0.0"


def test_environment_applies_without_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNWATCH_SESSIONS__MAX_OPEN_SESSIONS", "77")
    assert load_settings().sessions.max_open_sessions == 77


def test_cli_overrides_beat_environment_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "otlp:\n  http_port: 14318\nsampling:\n  rate: 0.5\n")
    monkeypatch.setenv("TURNWATCH_OTLP__HTTP_PORT", "24318")
    monkeypatch.setenv("TURNWATCH_SAMPLING__RATE", "0.05")
    settings = load_settings(path, {"otlp.http_port": 0, "sampling.rate": 0.75})
    assert settings.otlp.http_port == 0
    assert settings.sampling.rate == 0.75


def test_cli_override_keeps_everything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "otlp:\n  auth_token: s3cret\n  host: 0.0.0.0\n")
    monkeypatch.setenv("TURNWATCH_SAMPLING__RATE", "0.05")
    settings = load_settings(path, {"otlp.http_port": 1234})
    assert settings.otlp.host == "0.0.0.0"
    assert settings.otlp.auth_token is not None
    assert settings.otlp.auth_token.get_secret_value() == "s3cret"
    assert settings.sampling.rate == 0.05


# --- invalid configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("sampling:\n  rate: 1.5\n", "sampling.rate"),
        ("sampling:\n  rate: -0.1\n", "sampling.rate"),
        ("otlp:\n  http_port: abc\n", "otlp.http_port"),
        ("otlp:\n  http_port: 70000\n", "otlp.http_port"),
        ("otlp:\n  htp_port: 4318\n", "otlp.htp_port"),
        ("otlpp:\n  http_port: 4318\n", "otlpp"),
        ("sessions:\n  idle_timeout_seconds: 0\n", "sessions.idle_timeout_seconds"),
        ("decoders:\n  dialects: [genai, langchain]\n", "decoders.dialects.1"),
        ("otlp: 5\n", "otlp"),
        ("service_fallback: '  '\n", "service_fallback"),
    ],
)
def test_invalid_file_values_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    message = error_of(write(tmp_path, text))
    assert f"{field}:" in message
    assert str(tmp_path) in message


def test_every_invalid_field_is_reported(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "sampling:\n  rate: 2\nops:\n  port: -1\n"))
    assert "sampling.rate:" in message
    assert "ops.port:" in message


@pytest.mark.parametrize(
    ("variable", "value", "field"),
    [
        ("TURNWATCH_SAMPLING__RATE", "1.5", "sampling.rate"),
        ("TURNWATCH_OTLP__HTTP_PORT", "abc", "otlp.http_port"),
        ("TURNWATCH_OTLP__HTP_PORT", "4318", "otlp.htp_port"),
        ("TURNWATCH_SESSIONS", "{not json", "sessions"),
    ],
)
def test_invalid_environment_values_name_the_field(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, field: str
) -> None:
    monkeypatch.setenv(variable, value)
    message = error_of()
    assert field in message
    assert "environment" in message


def test_invalid_cli_override_names_the_field() -> None:
    message = error_of(overrides={"sampling.rate": 1.5})
    assert "sampling.rate:" in message
    assert "command line" in message


def test_cli_override_of_an_unknown_field_names_it() -> None:
    assert "otlp.htp_port:" in error_of(overrides={"otlp.htp_port": 1})
    assert "otlpp: not a section" in error_of(overrides={"otlpp.http_port": 1})


def test_non_mapping_yaml_is_refused(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "- otlp\n- sampling\n"))
    assert "mapping" in message


def test_non_string_top_level_key_is_refused(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "1: 2\n"))
    assert "1" in message and "not a field name" in message


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nope.yaml" if kind == "missing" else tmp_path
    message = error_of(path)
    assert "cannot read config file" in message and str(path) in message


def test_file_that_is_not_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00binary")
    assert "not UTF-8" in error_of(path)


def test_bad_yaml_syntax_is_refused_with_its_position(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "otlp:\n  http_port: [4318\nsampling: {\n"))
    assert "not valid YAML" in message
    assert "line" in message


# --- the command line -----------------------------------------------------------------------


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("TURNWATCH_")
    }
    environment["PYTHONPATH"] = str(REPO)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "turnwatch", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO,
        timeout=30,
    )


@pytest.mark.slow  # a `turnwatch serve` subprocess
def test_serve_with_an_invalid_config_exits_2_naming_the_field(tmp_path: Path) -> None:
    bad = write(tmp_path, "otlp:\n  htp_port: 4318\nsampling:\n  rate: 1.5\n", "bad.yaml")
    result = run_cli("serve", "--config", str(bad))
    assert result.returncode == 2
    assert "otlp.htp_port" in result.stderr
    assert "sampling.rate" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.slow  # `turnwatch serve` subprocesses
@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--config", "{missing}"], {}, "cannot read config file"),
        (["--sampling-rate", "1.5"], {}, "sampling.rate"),
        ([], {"TURNWATCH_OTLP__HTTP_PORT": "abc"}, "otlp.http_port"),
        ([], {"TURNWATCH_SESSIONS": "{not json"}, "sessions"),
    ],
    ids=["missing_file", "bad_flag_value", "bad_env_value", "bad_env_json"],
)
def test_serve_refuses_other_invalid_configuration_without_traceback(
    tmp_path: Path, args: list[str], env: dict[str, str], expected: str
) -> None:
    args = [arg.format(missing=tmp_path / "missing.yaml") for arg in args]
    result = run_cli("serve", *args, env=env)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
