"""The AuditResult: the one typed contract between the audit pipeline, the API and the reports.

The pipeline builds it, ``GET /v1/audits/{id}`` returns it (so ``/openapi.json`` documents it)
and ``reports`` renders from it alone. Sections name the fields that users and the reports rely
on; records that come straight from a detector (a test's ``details``, a limitation's
``evidence``) are open mappings because their content depends on the test, and the detector
records themselves accept fields added by newer detectors (``extra="allow"``) so that the
contract only ever grows (changes are additive).
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SCHEMA_VERSION", "AuditResult", "ShiftTest", "CovariateSection", "LabelSection", "SemanticSection", "SliceRecord",
    "LimitationRecord", "Decision", "Verdict", "NextRound", "Overall", "UntestedContextRecord", "DatasetRef",
]

SCHEMA_VERSION = "1.1"  # 1.0: the first typed result; 1.1: schema_version itself
Number = Optional[float]
Interval = Optional[list[Optional[float]]]
Severity = Literal["none", "low", "medium", "high"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Record(BaseModel):
    """A detector's record: the named fields are guaranteed, newer detectors may add more."""

    model_config = ConfigDict(extra="allow", frozen=True)


class ShiftTest(_Record):
    """One hypothesis test: its statistic, p-values (raw and adjusted audit-wide), effect size and the
    practical floor it was held to; ``drifted`` is the decision (adjusted p < alpha and |effect| ≥ floor)."""

    name: str
    method: str
    statistic: Number = None
    p_value: Number = None
    p_value_adjusted: Number = None
    effect_size: Number = None
    effect_name: Optional[str] = None
    effect_floor: Number = None
    n_reference: Optional[int] = None
    n_current: Optional[int] = None
    drifted: bool = False
    kind: str = "feature"
    status: str = "ok"
    details: dict[str, Any] = Field(default_factory=dict)


class DatasetRef(_Record):
    id: Optional[str] = None
    name: Optional[str] = None
    n_rows: int
    labelled: Optional[bool] = None


class Overall(_Record):
    """The primary metric on all rows, on both sides, and the test of its change."""

    metric: str
    benchmark_value: Number = None
    benchmark_ci: Interval = None
    n: Optional[int] = None
    production_value: Number = None
    production_ci: Interval = None
    n_production: Optional[int] = None
    change_p_value: Number = None
    change_p_value_adjusted: Number = None
    changed: Optional[bool] = None
    change_excluded_contexts: list[str] = Field(default_factory=list)


class OutputShift(_Record):
    is_shift: bool = False
    tests: list[ShiftTest] = Field(default_factory=list)


class CovariateSection(_Record):
    is_shift: bool = False
    features: list[ShiftTest] = Field(default_factory=list)
    missing: list[ShiftTest] = Field(default_factory=list)
    excluded: list[Any] = Field(default_factory=list)
    multivariate: Optional[dict[str, Any]] = None
    outputs: Optional[OutputShift] = None
    distributions: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Histogram aggregates of drifted features (no raw rows).")


class PriorEstimate(_Record):
    estimate: Number = None
    ci_low: Number = None
    ci_high: Number = None


class LabelSection(_Record):
    """Label (prior) shift: decided by the observed labels when production is labelled, else BBSE."""

    is_shift: bool = False
    decided_by: Optional[Literal["observed_labels", "bbse"]] = None
    p_value: Number = None
    p_value_adjusted: Number = None
    method: Optional[str] = None
    benchmark_prior: dict[str, Number] = Field(default_factory=dict)
    production_prior_estimate: dict[str, PriorEstimate] = Field(default_factory=dict)
    observed_prior: Optional[dict[str, Number]] = None
    observed_test: Optional[ShiftTest] = None
    estimated_performance: Optional[dict[str, Any]] = None
    observed_performance: Optional[dict[str, Any]] = None
    concept: Optional[dict[str, Any]] = None


class UntestedContextRecord(_Record):
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


class SemanticSection(_Record):
    is_shift: bool = False
    contexts: list[ShiftTest] = Field(default_factory=list)
    slice_shares: list[dict[str, Any]] = Field(default_factory=list)
    untested_contexts: list[UntestedContextRecord] = Field(default_factory=list)
    embedding: Optional[dict[str, Any]] = None
    attribution: Optional[dict[str, Any]] = None
    conditional: Optional[dict[str, Any]] = None
    contexts_only_in_production: list[str] = Field(default_factory=list)


class SliceRecord(_Record):
    """One expert, discovered or untested slice, its metric with CIs on both sides and its tests."""

    name: str
    title: Optional[str] = None
    definition: Optional[str] = None
    source: str = "expert"
    status: str = "ok"
    metric: Optional[str] = None
    n_benchmark: Optional[int] = None
    n_production: Optional[int] = None
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
    gap_p_value_adjusted: Number = None
    underperforming: Optional[bool] = None
    changed: Optional[bool] = None


class Decision(_Closed):
    """What made a finding a claim: the statistic, its test or interval, the rows and the rule applied."""

    statistic: str
    value: Number = None
    test: Optional[str] = None
    p_value_adjusted: Number = None
    interval: Interval = None
    n: Optional[int] = None
    rule: str


class LimitationRecord(_Closed):
    """One fact about where the model should not be trusted; ``key`` is stable across audits."""

    rank: int
    key: str = Field(description='"<kind>:<canonical rows definition or subject>", the same across audits '
                                 "for the same kind of finding about the same rows")
    kind: Literal["underperforming_slice", "untested_context", "context_mix_shift", "covariate_shift",
                  "label_shift", "concept_shift", "label_quality", "benchmark_saturation"]
    slice: Optional[str] = None
    definition: Optional[str] = Field(None, description="Slice expression selecting the production rows concerned.")
    severity: Literal["low", "medium", "high"]
    score: float = Field(description="Expected loss of the overall production metric, in metric units.")
    title: str
    statement: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    related: list[dict[str, Any]] = Field(
        default_factory=list, description="Findings folded into this one: same or nested rows, or explained by them.")
    claim: Literal["change", "standing"] = Field(
        "change", description='"change": rests on a benchmark → production change test of this audit (monitors '
                              'alert on it, --fail-on counts it); "standing": a property the benchmark shows as well '
                              "(a slice weak on the benchmark too, a saturated benchmark, label quality).")
    decision: Optional[Decision] = Field(None, description="The statistic, test or interval and rule behind the claim.")


class Verdict(_Closed):
    shift_detected: bool
    severity: Severity = Field(description="The highest severity among the change claims; \"none\" without one.")
    standing_severity: Severity = Field(
        "none", description="The highest severity among the standing limitations (weak on the benchmark as well).")
    summary: str
    status: Literal["shift", "no_shift", "inconclusive"] = Field(
        "no_shift", description='"inconclusive" when the tests that matter could not run: the audit cannot tell.')
    reasons: list[str] = Field(default_factory=list, description="Why the audit is inconclusive.")
    sample_size: Optional[dict[str, Any]] = Field(
        None, description="The smallest detectable effect at these sample sizes and the rows needed for the floor.")
    changes: list[str] = Field(default_factory=list, description="Keys of the change claims, ranked.")
    standing: list[str] = Field(default_factory=list, description="Keys of the standing limitations (model card).")


class NextRound(_Record):
    audit_id: Optional[str] = None
    budget: int
    min_slice_size: int
    allocations: list[dict[str, Any]] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    n_allocated: int = 0
    n_unallocated: int = 0
    diversity_rule: str = ""
    notes: list[str] = Field(default_factory=list)


class Note(_Closed):
    part: str
    reason: str


class AuditResult(_Closed):
    """GET /v1/audits/{id} of a succeeded audit."""

    schema_version: str = Field(SCHEMA_VERSION, description=(
        "The AuditResult's version: the minor part grows when fields are added (changes are additive), the major "
        "part would change only if a field's meaning did."))
    id: str
    status: Literal["succeeded"] = "succeeded"
    created_at: str
    title: str
    domain: str
    domain_title: str
    synthetic: bool = False
    benchmark: DatasetRef
    production: DatasetRef
    verdict: Verdict
    limitations: list[LimitationRecord]
    overall: Optional[Overall] = None
    covariate: CovariateSection
    label: LabelSection
    semantic: SemanticSection
    slices: list[SliceRecord] = Field(default_factory=list)
    label_quality: Optional[dict[str, Any]] = None
    discovery: Optional[dict[str, Any]] = None
    next_round: NextRound
    columns: dict[str, Any] = Field(default_factory=dict)
    parameters: dict[str, Any] = Field(default_factory=dict)
    notes: list[Note] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    benchmark_series: Optional[dict[str, Any]] = Field(
        None, description="When audited against a benchmark series: its name, the round numbers used and the dataset.")
