"""Compiles the collector's per-span code with mypyc; everything else is in pyproject.toml.

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
`collector/__init__.py` refuses to import a compiled module older than its source.
"""

from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

COMPILED_MODULES = [
    "collector/records.py",
    "collector/identity.py",
    "collector/sessionizer.py",
    "collector/sampler.py",
    "collector/assembler.py",
    "collector/otlp_proto.py",
    "collector/pipeline.py",
    "collector/dialects/__init__.py",
    "collector/dialects/base.py",
    "collector/dialects/flattened.py",
    "collector/dialects/genai.py",
    "collector/dialects/genai_events.py",
    "collector/dialects/openinference.py",
    "collector/dialects/openllmetry.py",
]
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


def compiled_extensions() -> list:
    if os.environ.get("TURNWATCH_COMPILE", "1") == "0":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("turnwatch: mypyc not available; installing as pure Python", file=sys.stderr)
        return []
    try:
        return mypycify([*MYPY_OPTIONS, *COMPILED_MODULES], opt_level="3")
    except SystemExit:
        # mypyc exits on type errors (printed above), e.g. if a newer dependency changes its
        # types. Users still get a working install; tests/test_compiled.py fails on it in CI.
        print("turnwatch: type check failed; installing as pure Python", file=sys.stderr)
        return []


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": OptionalBuildExt})
