"""`turnwatch regressions` takes its location options before or after the action."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow  # `turnwatch` subprocesses
@pytest.mark.parametrize(
    "arguments",
    [["--data-dir", "{dir}", "list"], ["list", "--data-dir", "{dir}"]],
    ids=["before", "after"],
)
def test_data_dir_is_accepted_before_and_after_the_action(tmp_path, arguments):
    command = [part.format(dir=tmp_path) for part in arguments]
    result = subprocess.run(
        [sys.executable, "-m", "turnwatch", "regressions", *command],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "0 of 0 case(s)" in result.stdout
