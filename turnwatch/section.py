"""The base of every configuration block; its own module so stages can define their blocks
without importing the settings that compose them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
