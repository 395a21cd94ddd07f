"""The collector: OTLP receivers, dialect decoders, sessionizer, sampler and session assembly.

Its per-span modules are compiled with mypyc when turnwatch is installed (setup.py says why and
how); `COMPILED` tells whether this process runs them compiled, `BUILD` says it in words.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

_PACKAGE = Path(__file__).parent
_EXTENSION_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _compiled_modules() -> list[tuple[Path, Path]]:
    """(extension, source) for every module of this package that has a compiled extension."""
    return [
        (extension, extension.with_name(extension.name[: -len(_EXTENSION_SUFFIX)] + ".py"))
        for extension in _PACKAGE.rglob("*" + _EXTENSION_SUFFIX)
    ]


def _refuse_stale_extensions(modules: list[tuple[Path, Path]]) -> None:
    """In a source checkout, an extension older than its source would run the old code.

    Python imports an extension in preference to the .py beside it, so after an edit the change
    would silently not run. Only checked in a checkout (setup.py beside the package): installed
    copies get their files' times from the installer.
    """
    if not (_PACKAGE.parent / "setup.py").exists():
        return
    for extension, source in modules:
        if source.exists() and source.stat().st_mtime > extension.stat().st_mtime:
            raise ImportError(
                f"{source} changed after it was compiled: rebuild with `pip install -e .`, or "
                f"delete {extension.name} (and the other {_EXTENSION_SUFFIX} files) to run "
                "pure Python; TURNWATCH_COMPILE=0 installs without compiling"
            )


_modules = _compiled_modules()
_refuse_stale_extensions(_modules)
COMPILED = bool(_modules)
BUILD = "collector compiled with mypyc" if COMPILED else "pure Python"
