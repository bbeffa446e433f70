"""What a monitor source hands one run: its new rows, what to remember once they are taken, notes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a cron run with nothing new never loads pandas
    import pandas as pd


@dataclass(frozen=True)
class Batch:
    """New rows for one run, and what to remember once the run has taken them.

    ``notes`` say what the run left out and why (files skipped or left for the next run, a full
    run, an unsafe database user); they hold no row values.
    """

    frame: pd.DataFrame | None
    files: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256)
    watermark: str | None = None  # JSON-encoded, for SQL sources
    description: str = ""
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.frame is None or len(self.frame) == 0
