"""Prompt templates: text files under `prompts/`, versioned by their content.

Templates use `$name` placeholders (string.Template) so JSON examples need no brace escaping. The
version is a hash of the file, so editing a prompt invalidates exactly its cached verdicts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template

PROMPTS = Path(__file__).resolve().parent / "prompts"


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    version: str
    template: Template

    def render(self, **values: str) -> str:
        return self.template.substitute(values)

    @property
    def overhead_chars(self) -> int:
        """Characters of the template itself (what every call pays before its input)."""
        return len(self.template.template)


def load(name: str) -> Prompt:
    return load_from(PROMPTS, name)


@cache
def load_from(directory: Path, name: str) -> Prompt:
    """`directory/name.txt` as a prompt (other stages keep their prompts beside their code)."""
    text = (directory / f"{name}.txt").read_text(encoding="utf-8")
    version = hashlib.sha256(text.encode()).hexdigest()[:12]
    return Prompt(name, version, Template(text))


SYSTEM = "system"
