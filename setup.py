"""Lays out the one import package and compiles the collector's per-span code with mypyc;
everything else is in pyproject.toml.

Layout: the card's top-level folders `collector/`, `scorers/` and `exporters/` install as
`turnwatch.collector`, `turnwatch.scorers` and `turnwatch.exporters` (package_dir below), so
turnwatch installs exactly one top-level package and no generic name such as `collector`.

Why: at OTLP rates the collector runs a few dozen Python statements per span, and their
interpreter overhead is most of its CPU. mypyc compiles the same typed Python source into C
extensions that spend about a fifth less CPU per span (benchmarks/README.md has the figures).
The source stays the source: nothing here changes what the code does, and `mypy` type-checks
these modules as part of compiling them.

Compilation is optional. Without a C compiler, when mypy finds a type error in these modules, or
with TURNWATCH_COMPILE=0, turnwatch installs as pure Python, slower but identical in behaviour.
`turnwatch --version` says which one runs.

In an editable install (`pip install -e .`) the extensions are built next to their sources and
Python imports them in preference to the .py files, so an edited module must be rebuilt:
`collector/__init__.py` refuses to import a compiled module older than its source. mypyc names a
module after its path, so it compiles from a tree laid out like the import package
(`build/mypyc-src/turnwatch/...`), made of links to the sources.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

COMPILED_MODULES = [
    "collector/records.py",
    "collector/identity.py",
    "collector/sessionizer.py",
    "collector/resent_history.py",
    "collector/run_bytes.py",
    "collector/sampler.py",
    "collector/assembler.py",
    "collector/otlp_wire.py",
    "collector/otlp_values.py",
    "collector/otlp_proto.py",
    "collector/pipeline.py",
    "collector/dialects/__init__.py",
    "collector/dialects/base.py",
    "collector/dialects/flattened.py",
    "collector/dialects/genai.py",
    "collector/dialects/genai_events.py",
    "collector/dialects/openinference.py",
    "collector/dialects/openllmetry.py",
    "collector/dialects/vercel_ai.py",
]
STAGES = {
    "turnwatch.collector": "collector",
    "turnwatch.scorers": "scorers",
    "turnwatch.exporters": "exporters",
}
PACKAGE_DIR = {"turnwatch": "turnwatch", **STAGES}
STAGING = Path("build") / "mypyc-src"
MYPY_OPTIONS = ["--ignore-missing-imports", "--disable-error-code", "import-untyped"]


class OptionalBuildExt(build_ext):
    """A failed compile leaves no extension behind: turnwatch then installs as pure Python."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any compiler or linker failure, whatever its class
            for path in self.get_outputs():
                if os.path.exists(path):
                    os.remove(path)
            self.extensions = []
            print(f"turnwatch: not compiled ({exc}); installing as pure Python", file=sys.stderr)


def packages() -> list[str]:
    """Every package of the import namespace, found from the folders PACKAGE_DIR maps."""
    found = []
    for name, folder in PACKAGE_DIR.items():
        for init in sorted(Path(folder).rglob("__init__.py")):
            relative = init.parent.relative_to(folder).parts
            if "__pycache__" not in relative:
                found.append(".".join((name, *relative)))
    return found


def staged_sources() -> list[str]:
    """COMPILED_MODULES as paths in a links-only tree shaped like the import package."""
    if STAGING.exists():
        shutil.rmtree(STAGING)
    package = STAGING / "turnwatch"
    package.mkdir(parents=True)
    for entry in Path("turnwatch").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry.resolve())
    for name, folder in STAGES.items():
        (package / name.rpartition(".")[2]).symlink_to(Path(folder).resolve())
    return [str(package / module) for module in COMPILED_MODULES]


def compiled_extensions() -> list:
    if os.environ.get("TURNWATCH_COMPILE", "1") == "0":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("turnwatch: mypyc not available; installing as pure Python", file=sys.stderr)
        return []
    try:
        extensions = mypycify([*MYPY_OPTIONS, *staged_sources()], opt_level="3")
    except SystemExit:
        # mypyc exits on type errors (printed above), e.g. if a newer dependency changes its
        # types. Users still get a working install; tests/test_compiled.py fails on it in CI.
        print("turnwatch: type check failed; installing as pure Python", file=sys.stderr)
        return []
    leaks = leaking_primitives(extensions)
    if leaks:
        print(f"turnwatch: {'; '.join(leaks)}; installing as pure Python", file=sys.stderr)
        return []
    return extensions


LEAKING_PRIMITIVES = {
    # mypyc before the fix for mypyc/mypyc#1192 never releases the left operand of a
    # `bytes + bytes` (one object lost per call); write b"".join((left, right)) instead.
    "CPyBytes_Concat(": "bytes + bytes in a compiled module leaks its left operand",
}


def leaking_primitives(extensions: list) -> list[str]:
    """What the generated C calls that this mypyc leaks memory with: a compiled collector that
    grows by a little every span is worse than pure Python, so it is not installed."""
    generated = "".join(
        Path(source).read_text()
        for extension in extensions
        for source in extension.sources
        if source.endswith(".c")
    )
    return [problem for call, problem in LEAKING_PRIMITIVES.items() if call in generated]


setup(
    packages=packages(),
    package_dir=PACKAGE_DIR,
    ext_modules=compiled_extensions(),
    cmdclass={"build_ext": OptionalBuildExt},
)
