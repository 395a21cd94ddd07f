"""The house's layering, read from the code's own imports: foundation <- stages <- application.

A stage imports only the foundation and the stages upstream of it (exporters may import
scorers); the foundation imports no stage; nothing below the application imports it; and no
package-level cycle exists. Imports inside functions count too: a lazy import is still a tie.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "turnwatch.collector": ROOT / "collector",
    "turnwatch.scorers": ROOT / "scorers",
    "turnwatch.exporters": ROOT / "exporters",
    "turnwatch": ROOT / "turnwatch",
}
STAGES = ("turnwatch.collector", "turnwatch.scorers", "turnwatch.exporters")
ALLOWED = {
    "foundation": set(),
    "turnwatch.collector": set(),
    "turnwatch.scorers": set(),
    "turnwatch.exporters": {"turnwatch.scorers"},
    "turnwatch.app": {*STAGES},
}
MAX_LINES = 450


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def layer(module: str) -> str:
    if module == "turnwatch.__main__":
        return "turnwatch.app"  # `python -m turnwatch` is the CLI's entry point
    for name in ("turnwatch.app", *STAGES):
        if module == name or module.startswith(name + "."):
            return name
    return "foundation"


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {
        name
        for name in names
        if name.split(".")[0] in ("turnwatch", "collector", "scorers", "exporters")
    }


def test_each_layer_imports_only_the_layers_below_it():
    violations = []
    for module, path in modules().items():
        own = layer(module)
        for name in imported(path):
            assert name.split(".")[0] == "turnwatch", f"{module} imports {name}: not in turnwatch"
            other = layer(name)
            if other != own and other != "foundation" and other not in ALLOWED[own]:
                violations.append(f"{module} -> {name}")
    assert violations == []


def test_no_import_cycle_between_packages():
    known = modules()
    packages: dict[str, set[str]] = {}
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = packages.setdefault(package, set())
        for name in imported(path):
            while name and name not in known:
                name = name.rpartition(".")[0]
            if not name:
                continue
            target = name if known[name].name == "__init__.py" else name.rpartition(".")[0]
            # A package's own subpackages are beneath it, not beside it.
            if target != package and not target.startswith(package + "."):
                targets.add(target)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in packages.get(start, ()):
            if nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen)):
                return True
        return False

    cycles = [
        f"{package} -> {target}"
        for package, targets in packages.items()
        for target in targets
        if not package.startswith(target + ".") and reaches(target, package, set())
    ]
    assert cycles == []


def test_importing_the_sessionizer_loads_no_scorer_exporter_or_application_module():
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, turnwatch.collector.sessionizer; print(*sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.split()
    ours = [name for name in loaded if name.startswith("turnwatch")]
    assert "turnwatch.collector.sessionizer" in ours
    assert [
        name
        for name in ours
        if layer(name) != "turnwatch.collector"
        and name.startswith(("turnwatch.scorers", "turnwatch.exporters", "turnwatch.app"))
    ] == []


def test_turnwatch_installs_one_top_level_package():
    # The card's folders import only through turnwatch: `import collector` would find nothing
    # installed (and must never be needed).
    for path in modules().values():
        for name in imported(path):
            assert name.startswith("turnwatch"), f"{path}: imports {name}"


def test_no_source_file_is_over_the_limit():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in modules().values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_import_reader_sees_top_level_and_lazy_imports(tmp_path):
    # Control for the tests above, which pass when they find nothing: they do find imports.
    module = tmp_path / "module.py"
    module.write_text(
        "import json\n"
        "from turnwatch.app.settings import Settings\n"
        "def later():\n"
        "    import turnwatch.scorers.runner\n"
        "    from . import sibling\n",
        encoding="utf-8",
    )
    found = imported(module)
    assert found == {
        "turnwatch.app.settings",
        "turnwatch.app.settings.Settings",
        "turnwatch.scorers.runner",
    }
    assert [layer(name) for name in sorted(found)] == [
        "turnwatch.app",
        "turnwatch.app",
        "turnwatch.scorers",
    ]
    assert len(modules()) > 100 and "turnwatch.collector.sessionizer" in modules()


def test_the_public_surface_is_declared_once_and_resolves():
    import turnwatch

    for name in turnwatch.__all__:
        assert getattr(turnwatch, name) is not None, name
    assert turnwatch.Output._fields == ("topic", "key", "record")
    assert turnwatch.SCORES == "turnwatch.scores"
    with pytest.raises(AttributeError, match="no attribute 'Sessionizer'"):
        turnwatch.Sessionizer  # noqa: B018 - internal names are not part of the surface
