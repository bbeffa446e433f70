"""What a monitor source hands one run (:class:`Batch`: its new rows, what to remember once they are
taken, notes), how much one run may take (:class:`SourceLimits`) and what every kind of source does
(:class:`Source`); :mod:`service.monitors.sources` picks the kind."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

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


@dataclass(frozen=True)
class SourceLimits:
    """How much one run may take from a source."""

    max_rows: int  # rows, either kind
    max_file_bytes: int  # file bytes a directory run reads
    max_sql_bytes: int  # value bytes a SQL run fetches
    max_value_bytes: int  # bytes of one SQL value
    query_timeout_s: float  # a SQL query is cancelled after this long

    @classmethod
    def of(cls, settings: Any) -> "SourceLimits":
        """The ``CONTEXTSHIFT_MONITOR_*`` limits of ``settings`` (:class:`service.settings.Settings`)."""
        return cls(max_rows=settings.monitor_max_rows_per_run, max_file_bytes=settings.monitor_max_bytes_per_run,
                   max_sql_bytes=settings.monitor_max_sql_bytes_per_run,
                   max_value_bytes=settings.monitor_max_value_bytes,
                   query_timeout_s=settings.monitor_query_timeout_s)


class Source(Protocol):
    """One monitor's source of new rows."""

    def ready(self) -> None:
        """Raise :class:`service.errors.ServiceError` when this process cannot read this kind of source."""

    def take(self, taken: set[tuple[str, str]], watermark: str | None) -> Batch:
        """The rows not taken before: files not in ``taken`` ``(path, sha256)``, rows newer than ``watermark``."""
