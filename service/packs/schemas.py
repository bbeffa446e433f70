"""Response bodies of ``/v1/domains``."""
from __future__ import annotations

from pydantic import BaseModel, Field


class DomainSummary(BaseModel):
    name: str
    title: str
    task: str
    n_contexts: int
    n_slices: int
    builtin: bool
    aliases: list[str] = Field(default_factory=list, description="other names the pack is accepted under")


class DomainList(BaseModel):
    items: list[DomainSummary]
