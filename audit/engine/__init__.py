"""Stage results from exact, mergeable counts instead of rows: what an engine that scanned every
row (the service's Dask engine) hands the pipeline beside its samples.

The engine itself (reading partitions on a cluster) is the caller's; the pipeline reads what it
found through :class:`EngineSummaries`.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol

from audit.engine.counts import OutcomeCounts

__all__ = ["DatasetSummary", "EngineSummaries"]


class DatasetSummary(Protocol):
    """One dataset's pass: every row counted or sketched. Read-only (properties), so that a frozen
    dataclass such as the service's ``Scan`` is one."""

    @property
    def n_rows(self) -> int: ...

    @property
    def numeric(self) -> Mapping[str, Any]:
        """column -> detectors.summaries.NumericSummary"""

    @property
    def categories(self) -> Mapping[str, Any]:
        """categorical column -> detectors.summaries.CategorySummary"""

    @property
    def discrete(self) -> Mapping[str, Any]:
        """numeric column -> CategorySummary, None once it has too many values"""

    @property
    def outcomes(self) -> Mapping[str, OutcomeCounts]:
        """counts.ALL_ROWS and each slice name"""


class EngineSummaries(Protocol):
    """What the pipeline's stages read instead of rows when an engine scanned every row."""

    @property
    def benchmark(self) -> DatasetSummary: ...

    @property
    def production(self) -> DatasetSummary: ...

    @property
    def description(self) -> Mapping[str, Any]:
        """What ``parameters.engine`` says of the engine (name, partitions, sample, sketch)."""

    def outcomes(self, name: str = ...) -> tuple[OutcomeCounts | None, OutcomeCounts | None]:
        """(benchmark, production) outcome counts of a slice (default: every row)."""

    def count_slices(self, definitions: Mapping[str, str]) -> dict[str, tuple[Any, Any]]:
        """Outcome counts of slices found on the sample (name -> definition), counted over every row."""

    def label_counts(self) -> tuple[list[str], Any]:
        """Production's classes and rows per class, over every row."""
