"""What the audit concludes: the ranked limitations with the decision behind each, the verdict and the
next round's labelling plan."""
from __future__ import annotations

import warnings
from typing import Annotated, Any, Literal, Optional

from pydantic import BeforeValidator, Field, model_validator

from detectors.base import to_jsonable
from reports.result.base import Closed, Interval, Number, Record

__all__ = ["Severity", "LimitationKind", "Level", "Claim", "Decision", "LimitationRecord", "Verdict", "Allocation",
           "LabelRequest", "NextRound", "Note",
           "SignalCheck", "ScenarioMatch"]

Severity = Literal["none", "low", "medium", "high"]
Level = Literal["low", "medium", "high"]  # a limitation's severity
Claim = Literal["change", "standing"]
LimitationKind = Literal["underperforming_slice", "untested_context", "context_mix_shift", "covariate_shift",
                         "label_shift", "concept_shift", "label_quality", "benchmark_saturation"]
STANDING_KINDS = frozenset({"benchmark_saturation", "label_quality"})  # standing whatever the audit shows


class Decision(Closed):
    """What made a finding a claim: the statistic, its test or interval, the rows and the rule applied."""

    statistic: str
    value: Number = None
    test: Optional[str] = None
    p_value_adjusted: Number = None
    interval: Interval = None
    n: Optional[int] = None
    rule: str


# what a finding's evidence holds is the JSON it is stored as: NaN as None, tuples and arrays as lists
Plain = BeforeValidator(to_jsonable)


class LimitationRecord(Closed):
    """One fact about where the model should not be trusted; ``key`` is stable across audits.

    The one limitation type: the ranking builds it, the claim layer groups and re-tests it, the
    AuditResult stores it and the renderings read it. ``severity`` is the label of ``score``
    (expected loss of the overall production metric); ``title`` is a short lower-case clause used
    in the verdict sentence and report headings. Change it with :meth:`replaced`, which validates.
    """

    rank: int
    key: str = Field(description='"<kind>:<canonical rows definition or subject>", the same across audits '
                                 "for the same kind of finding about the same rows")
    kind: LimitationKind
    slice: Optional[str] = None
    definition: Optional[str] = Field(default=None,
                                      description="Slice expression selecting the production rows concerned.")
    severity: Level
    score: float = Field(description="Expected loss of the overall production metric, in metric units.")
    title: str
    statement: str
    evidence: Annotated[dict[str, Any], Plain] = Field(default_factory=dict)
    related: Annotated[list[dict[str, Any]], Plain] = Field(
        default_factory=list, description="Findings folded into this one: same or nested rows, or explained by them.")
    claim: Claim = Field(
        default="change", description='"change": rests on a benchmark → production change test of this audit (monitors '
                              'alert on it, --fail-on counts it); "standing": a property the benchmark shows as well '
                              "(a slice weak on the benchmark too, a saturated benchmark, label quality).")
    decision: Optional[Decision] = Field(default=None,
                                         description="The statistic, test or interval and rule behind the claim.")

    @model_validator(mode="before")
    @classmethod
    def _claim_of_older_results(cls, data: Any) -> Any:
        """Results stored before ``claim`` existed: the kinds that are properties of the benchmark are standing."""
        if isinstance(data, dict) and "claim" not in data:
            data = {**data, "claim": "standing" if data.get("kind") in STANDING_KINDS else "change"}
        return data

    def replaced(self, **changes: Any) -> "LimitationRecord":
        """A validated copy with ``changes`` (``dataclasses.replace`` for this record)."""
        return type(self).model_validate({**dict(self), **changes})


class Verdict(Closed):
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

    def __getitem__(self, name: str) -> Any:
        """Deprecated: the verdict was a dict; read its attributes (``verdict.summary``) or ``to_dict()``."""
        warnings.warn("Verdict is a typed record: read verdict.summary (or verdict.to_dict()[...]); indexing it "
                      "like a dict is deprecated", DeprecationWarning, stacklevel=2)
        if name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)


class Allocation(Record):
    """Rows of one target the next round asks to label, and why."""

    slice: str
    kind: str
    definition: Optional[str] = None
    reason: str = ""
    n_benchmark: Optional[int] = None
    n_production: Optional[int] = None
    production_share: Number = None
    gap: Number = None
    ci_width: Number = None
    weight: Number = None
    n_to_label: int = 0
    n_selected: int = 0
    key: str = ""


class LabelRequest(Record):
    """One production row to label: why (``slice``), how uncertain, and every planned slice it is in."""

    rank: int
    id: Any
    slice: str
    uncertainty: Number = None
    group: Optional[str] = None
    tags: list[str] = Field(default_factory=list)
    image: Optional[str] = Field(None, description="The row's image (path or archive member) when the data came "
                                                   "as images.")


class NextRound(Record):
    """The next benchmark round (what ``reports.plan_next_round`` returns): the budget split, and the rows to label."""

    audit_id: Optional[str] = None
    budget: int
    min_slice_size: int
    allocations: list[Allocation] = Field(default_factory=list)
    rows: list[LabelRequest] = Field(default_factory=list)
    n_allocated: int = 0
    n_unallocated: int = 0
    diversity_rule: str = ""
    notes: list[str] = Field(default_factory=list)


class Note(Closed):
    part: str
    reason: str


class SignalCheck(Closed):
    """One prediction of an expert scenario against the audit's evidence."""

    signal: str = Field(description="The prediction in words (\"the share of illumination = dim goes up\").")
    status: Literal["supported", "contradicted", "untested"]
    evidence: str = Field(description="What the audit measured about it.")


class ScenarioMatch(Closed):
    """How well one of the pack's expert scenarios explains the audit's change claims."""

    name: str
    title: str
    cause: str
    action: str
    reference: Optional[str] = None
    score: float = Field(description="(supported − contradicted) / signals, in [−1, 1].")
    fits: bool = Field(description="The best-fitting scenario: score ≥ 0.5, at least one change claim explained, "
                                   "none of its signals contradicted.")
    signals: list[SignalCheck] = Field(default_factory=list)
    explains: list[str] = Field(default_factory=list, description="Keys of the change claims its signals concern.")
