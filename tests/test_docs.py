"""README is the front door: each fact it states about the code is checked here, once.

Its tables name every configuration key and every metric; every `turnwatch` command it shows
parses with the real CLI; its YAML examples load; CI runs its test command. (Each command is also
run for real: serve in test_cli_serve, demo in test_demo, the roles in test_reliability_pipeline,
regressions in test_regressions_*.)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from tests.metric_catalogue import full_registry
from turnwatch.app.cli import _parser
from turnwatch.app.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The first cell of a table row, when it is code: a config key or a metric name.
DOCUMENTED = set(re.findall(r"^\| `([a-z0-9_.]+)` \|", README, flags=re.MULTILINE))


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
    keys = set(_config_keys(Settings))
    assert "scorers.judge.relevancy.window" in keys  # nested blocks are walked
    assert keys - DOCUMENTED == set()


def test_every_metric_is_documented():
    names = {metric.name for metric in full_registry().collect()}
    assert {"turnwatch_sessions_scored", "turnwatch_bus_queue_depth"} <= names
    # prometheus_client reports counters without their `_total` suffix.
    missing = {name for name in names if not {name, f"{name}_total"} & DOCUMENTED}
    assert missing == set()


def test_ci_runs_the_readme_test_command_and_nothing_else():
    """`.ci/run` runs the README's test block line for line: no step the README does not show."""
    [block] = [
        block
        for block in re.findall(r"```sh\n(.*?)```", README, flags=re.DOTALL)
        if "pip install -e '.[test]'" in block
    ]
    readme_lines = block.strip().splitlines()
    # The shell set-up around the commands is no step of its own: strict mode, the clone's
    # root, apt without questions.
    set_up = ("#", "set -euo pipefail", 'cd "$(dirname "$0")/.."', "export DEBIAN_FRONTEND=")
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ci_lines = [line for line in script if line.strip() and not line.startswith(set_up)]
    assert ci_lines == readme_lines
    assert readme_lines[-1] == "python -m pip install -e '.[test]' && python -m pytest"


def _readme_commands() -> list[str]:
    commands = []
    for block in re.findall(r"```\w*\n(.*?)```", README, flags=re.DOTALL):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("turnwatch ") or "&& turnwatch " in line:
                commands.append(line[line.index("turnwatch ") :])
    return commands


def _concrete(command: str) -> list[str]:
    """README writes optional parts as `[--flag V]` and choices as `a|b`: take them all, first."""
    command = re.sub(r"\[([^\]]+)\]", r"\1", command)
    command = re.sub(r"(\S+?)\|\S+", r"\1", command)
    return shlex.split(command)[1:]


COMMANDS = _readme_commands()


def test_readme_shows_the_commands_users_rely_on():
    subcommands = {tuple(_concrete(command)[:2]) for command in COMMANDS}
    for expected in [("serve",), ("demo",), ("regressions", "list"), ("regressions", "replay")]:
        assert any(found[: len(expected)] == expected for found in subcommands), expected


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_parses(command):
    try:
        _parser().parse_args(_concrete(command))
    except SystemExit as exc:
        pytest.fail(f"README command does not parse ({exc.code}): {command}")


def _config_examples() -> list[str]:
    blocks = re.findall(r"```yaml\n(.*?)```", README, flags=re.DOTALL)
    settings_keys = set(Settings.model_fields)
    return [block for block in blocks if set(yaml.safe_load(block) or {}) <= settings_keys]


def test_readme_has_config_examples():
    assert len(_config_examples()) >= 2


@pytest.mark.parametrize("block", _config_examples())
def test_readme_config_example_is_valid(tmp_path, block):
    path = tmp_path / "turnwatch.yaml"
    path.write_text(block, encoding="utf-8")
    load_settings(path)


def test_help_says_what_turnwatch_is_and_where_to_start(capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_args(["--help"])
    shown = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "rebuilds each conversation" in shown and "4318" in shown and "9464" in shown
    for command in ("serve", "demo", "regressions"):
        assert re.search(rf"^\s+turnwatch {command}\b|^\s+{command}\b", shown, re.MULTILINE), (
            command
        )
