"""The label sections: the class mix (observed or estimated), the metric estimated without labels and
measured with them, concept shift, and the agreement of the annotators."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Optional

from pydantic import Field

from reports.result.base import Interval, Number, Record
from reports.result.inputs import ShiftTest

__all__ = ["PriorEstimate", "MetricEstimate", "MethodEstimate", "EstimatedPerformance", "ObservedPerformance",
           "EstimateCheck", "ConceptSection", "LabelSection", "Annotator", "SourceDisagreement", "LabelQuality"]


class PriorEstimate(Record):
    estimate: Number = None
    ci_low: Number = None
    ci_high: Number = None


class MetricEstimate(Record):
    """One metric of a label-free estimate of production performance."""

    name: Optional[str] = None
    value: Number = None
    ci_low: Number = None
    ci_high: Number = None
    n: Optional[int] = None
    status: str = "ok"


class MethodEstimate(Record):
    """One label-free estimator's figures; ``estimate``/``ci_*`` repeat its figure for ``metric``."""

    method: Optional[str] = None
    status: str = "ok"
    metric: Optional[str] = None
    estimate: Number = None
    ci_low: Number = None
    ci_high: Number = None
    metrics: dict[str, MetricEstimate] = Field(default_factory=dict)


class EstimatedPerformance(Record):
    """The primary metric on production estimated without labels, by each estimator."""

    metric: Optional[str] = None
    benchmark_value: Number = None
    methods: dict[str, MethodEstimate] = Field(default_factory=dict)


class ObservedPerformance(Record):
    """The primary metric measured on labelled production rows against the benchmark's."""

    metric: Optional[str] = None
    benchmark_value: Number = None
    benchmark_ci: Interval = None
    production_value: Number = None
    production_ci: Interval = None
    n_benchmark: Optional[int] = None
    n_production: Optional[int] = None
    p_value_adjusted: Number = None
    is_shift: bool = False
    excluded_contexts: list[str] = Field(default_factory=list)


class EstimateCheck(Record):
    """A label-free estimate held against the observed production metric."""

    method: str
    metric: Optional[str] = None
    estimate: Number = None
    ci: Interval = None
    observed: Number = None
    contradicts: bool = False


class ConceptSection(Record):
    """Concept shift: what the model gets right changed (needs labelled production rows)."""

    is_shift: bool = False
    label_shift_observed: bool = False
    benchmark_prior: dict[str, Number] = Field(default_factory=dict)
    production_prior: dict[str, Number] = Field(default_factory=dict)
    label_test: Optional[ShiftTest] = None
    per_class: list[dict[str, Any]] = Field(default_factory=list)
    departures: list[dict[str, Any]] = Field(default_factory=list)
    basis: Optional[str] = None


class LabelSection(Record):
    """Label (prior) shift: decided by the observed labels when production is labelled, else BBSE."""

    is_shift: bool = False
    decided_by: Optional[Literal["observed_labels", "bbse"]] = None
    status: str = "ok"
    p_value: Number = None
    p_value_adjusted: Number = None
    method: Optional[str] = None
    reliable: Optional[bool] = None
    reliability_reason: Optional[str] = None
    benchmark_prior: dict[str, Number] = Field(default_factory=dict)
    production_prior_estimate: dict[str, PriorEstimate] = Field(default_factory=dict)
    observed_prior: Optional[dict[str, Number]] = None
    observed_test: Optional[ShiftTest] = None
    estimated_performance: Optional[EstimatedPerformance] = None
    observed_performance: Optional[ObservedPerformance] = None
    estimate_checks: list[EstimateCheck] = Field(default_factory=list)
    concept: Optional[ConceptSection] = None


class Annotator(Record):
    id: str
    share: Number = None
    n_labels: Optional[int] = None
    over_cap: Optional[bool] = None
    agreement: Number = None
    near_chance: Optional[bool] = None
    p_value: Number = None


class SourceDisagreement(Record):
    rate: Number = None
    ci: Interval = None
    n: Optional[int] = None
    sources: list[str] = Field(default_factory=list)


class LabelQuality(Record):
    """Agreement between annotators (Krippendorff's α) and each annotator's share and agreement."""

    krippendorff_alpha: Number = None
    alpha_ci: Interval = None
    n_items: Optional[int] = None
    n_items_agreement: Optional[int] = Field(None, description="Items with two or more labels.")
    n_annotators: Optional[int] = None
    annotator_cap: Number = None
    annotators: list[Annotator] = Field(default_factory=list)
    source_disagreement: Optional[SourceDisagreement] = None

    @classmethod
    def from_detector(cls, record: Mapping[str, Any]) -> "LabelQuality":
        """From ``LabelQualityResult.to_dict()``: the agreement lifted to the top, each annotator's share and
        agreement merged into one record, the sources' agreement stated as a disagreement rate."""
        out = dict(record)  # the detector's own fields (agreement, shares, slices...) stay beside the lifted ones
        agreement = record.get("agreement") or {}
        if agreement:
            out.update(krippendorff_alpha=agreement.get("alpha"), alpha_ci=[agreement.get("ci_low"),
                       agreement.get("ci_high")], n_items=record.get("n_items", agreement.get("n_items")),
                       n_items_agreement=agreement.get("n_items"), n_annotators=agreement.get("n_annotators"))
        out["annotator_cap"] = record.get("annotator_cap", record.get("cap"))
        merged: dict[str, dict] = {}
        for share in record.get("shares") or ():
            key = str(share.get("annotator", share.get("id")))
            merged.setdefault(key, {"id": key}).update(
                {k: share[k] for k in ("share", "n_labels", "over_cap") if k in share})
        for rel in record.get("annotators") or ():
            key = str(rel.get("annotator", rel.get("id")))
            merged.setdefault(key, {"id": key}).update(
                {k: rel[k] for k in ("agreement", "near_chance", "share", "n_labels", "over_cap") if k in rel})
        out["annotators"] = list(merged.values())
        source = record.get("source_agreement")
        if source and source.get("agreement") is not None:
            lo, hi = source.get("agreement_ci") or (None, None)
            out["source_disagreement"] = {"rate": 1 - source["agreement"], "n": source.get("n"),
                                          "sources": source.get("sources") or [],
                                          "ci": [None if hi is None else 1 - hi, None if lo is None else 1 - lo]}
        return cls.model_validate(out)
