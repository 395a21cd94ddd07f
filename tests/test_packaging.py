"""What a wheel carries: setup.py finds packages by their `__init__.py`, so a source folder
without one would install without its modules (the editable install used in development maps
folders and would not notice)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = ("turnwatch", "collector", "scorers", "exporters")


def test_every_source_folder_is_a_package():
    missing = sorted(
        str(folder.relative_to(ROOT))
        for top in SOURCE_FOLDERS
        for folder in {path.parent for path in (ROOT / top).rglob("*.py")}
        if "__pycache__" not in folder.parts and not (folder / "__init__.py").exists()
    )
    assert missing == []
