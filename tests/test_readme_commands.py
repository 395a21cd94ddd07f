"""Every `turnwatch` command shown in README parses with the real CLI, so the docs cannot drift
from it. (Each command is also run for real: serve in test_cli_serve, demo in test_demo, the roles
in test_reliability_pipeline, regressions in test_regressions_*.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from turnwatch.app.cli import _parser
from turnwatch.app.settings import Settings, load_settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


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
