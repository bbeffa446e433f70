"""Who is in production: the context tests, the untested contexts, the embedding's novel regions, the
performance attribution, the context-conditional tests, and every slice's metric on both sides."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Optional

from pydantic import Field

from reports.result.base import Interval, Number, Record
from reports.result.inputs import ShiftTest, TestGroup, flat_record

__all__ = ["UntestedContextRecord", "EmbeddingRegion", "EmbeddingTest", "AttributionCell", "Attribution",
           "SemanticSection", "SliceRecord", "Discovery"]


class UntestedContextRecord(Record):
    name: str
    kind: str
    column: Optional[str] = None
    value: Any = None
    definition: Optional[str] = Field(None, description="Slice expression selecting exactly these rows.")
    measured_by: Optional[str] = Field(None, description="The slice whose metrics describe these rows.")
    n_benchmark: int = 0
    n_production: int = 0
    production_share: Number = None
    production_share_ci: Interval = None
    min_slice_size: Optional[int] = None
    claimed: bool = True
    p_value: Number = None
    p_value_adjusted: Number = None
    reason: Optional[str] = None
    n_values: int = 1
    other_values: list[Any] = Field(default_factory=list)


class EmbeddingRegion(Record):
    """A cluster of the embedding space and its share on each side; novel when production fills it alone."""

    cluster: Optional[int] = None
    n_benchmark: int = 0
    n_production: int = 0
    benchmark_share: Number = None
    benchmark_share_ci: Interval = None
    production_share: Number = None
    production_share_ci: Interval = None
    novel_fraction: Number = None
    is_novel: bool = False
    test: Optional[ShiftTest] = None
    contexts: list[dict[str, Any]] = Field(default_factory=list)
    top_contexts: list[str] = Field(default_factory=list)


class EmbeddingTest(ShiftTest):
    """The embedding-space two-sample test (MMD) and the regions production fills without the benchmark."""

    is_shift: bool = False
    regions: list[EmbeddingRegion] = Field(default_factory=list)
    novel_regions: list[EmbeddingRegion] = Field(default_factory=list)

    @classmethod
    def from_detector(cls, record: Mapping[str, Any]) -> "EmbeddingTest":
        """From ``EmbeddingShiftResult.to_dict()``: its test flattened; the novel regions with the context
        conditions that describe them best."""
        flat = flat_record(record)
        regions = list(flat.get("regions") or [])
        if any("is_novel" in r for r in regions):
            regions = [r for r in regions if r.get("is_novel") is True]
        flat["novel_regions"] = [{**r, "top_contexts": r.get("top_contexts") or [
            c["condition"] for c in r.get("contexts") or () if c.get("condition")]} for r in regions]
        return cls.model_validate(flat)


class AttributionCell(Record):
    cell: str
    n_benchmark: int = 0
    n_production: int = 0
    benchmark_share: Number = None
    production_share: Number = None
    benchmark_value: Number = None
    production_value: Number = None
    covered: bool = False
    mix_contribution: Number = None
    within_contribution: Number = None


class Attribution(Record):
    """The change of the primary metric split into the context mix and the change within contexts."""

    metric: Optional[str] = None
    benchmark_value: Number = None
    benchmark_ci: Interval = None
    expected_production_value: Number = None
    expected_ci: Interval = None
    observed_production_value: Number = None
    observed_ci: Interval = None
    mix_effect: Number = None
    mix_ci: Interval = None
    within_effect: Number = None
    within_ci: Interval = None
    total_change: Number = None
    total_ci: Interval = None
    uncovered_share: Number = None
    n_benchmark: Optional[int] = None
    n_production: Optional[int] = None
    cells: list[AttributionCell] = Field(default_factory=list)


class SemanticSection(Record):
    """Context shift: each context column's test, slice shares (``kind`` ``slice_share`` among the
    ``contexts``), untested contexts, the embedding, the attribution and the context-conditional tests."""

    is_shift: bool = False
    contexts: list[ShiftTest] = Field(default_factory=list)
    untested_contexts: list[UntestedContextRecord] = Field(default_factory=list)
    not_claimed_contexts: list[UntestedContextRecord] = Field(default_factory=list)
    embedding: Optional[EmbeddingTest] = None
    attribution: Optional[Attribution] = None
    conditional: Optional[TestGroup] = None
    contexts_only_in_production: list[str] = Field(default_factory=list)
    slice_shares: list[dict[str, Any]] = Field(
        default_factory=list, description="Always empty since 1.0: slice-share tests are among the contexts (kind "
                                          "slice_share); kept so that the contract only grows.")


class SliceRecord(Record):
    """One expert, discovered or untested slice, its metric with CIs on both sides and its tests."""

    name: str
    title: Optional[str] = None
    definition: Optional[str] = None
    source: str = "expert"
    status: str = "ok"
    metric: Optional[str] = None
    n_benchmark: Optional[int] = None
    n_production: Optional[int] = None
    benchmark_share: Number = None
    production_share: Number = None
    benchmark_value: Number = None
    benchmark_ci: Interval = None
    production_value: Number = None
    production_ci: Interval = None
    p_value: Number = None
    p_value_adjusted: Number = None
    p_value_test: Optional[Literal["change", "gap"]] = Field(
        None, description="What p_value tests: the benchmark→production change, or (when that was not run, e.g. "
                          "for slices discovered on the production rows) the slice's gap to the rest.")
    gap: Number = None
    gap_vs_overall: Number = None
    gap_p_value: Number = None
    gap_p_value_adjusted: Number = None
    gap_dataset: Optional[str] = None
    gap_ci: Interval = Field(None, description="Slice minus overall: the interval of the slice's gap.")
    underperforming: Optional[bool] = None
    changed: Optional[bool] = None
    metric_n_benchmark: Optional[int] = Field(
        None, description="Rows behind the benchmark metric (e.g. the positives for sensitivity); else n_benchmark.")
    metric_n_production: Optional[int] = Field(
        None, description="Rows behind the production metric (e.g. the positives for sensitivity); else n_production.")


class Discovery(Record):
    """Weak-slice discovery on the benchmark: how many candidates were searched and found significant."""

    n_candidates: Optional[int] = None
    n_significant: Optional[int] = None
    n_rows: Optional[int] = None
    error_rate: Number = None
    alpha: Number = None
