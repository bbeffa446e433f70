"""The whole audit: :class:`AuditEvidence` (every section the detectors fill) and :class:`AuditResult`
(the evidence with its conclusions: limitations, verdict, next round)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from pydantic import Field, ValidationError

from reports.result.base import Closed, Interval, Number, Record
from reports.result.claims import LimitationRecord, NextRound, Note, ScenarioMatch, Verdict
from reports.result.inputs import CovariateSection, ShiftTest
from reports.result.labels import LabelQuality, LabelSection
from reports.result.populations import Discovery, SemanticSection, SliceRecord

__all__ = ["SCHEMA_VERSION", "DatasetRef", "Overall", "Parameters", "Columns", "AuditEvidence", "AuditResult",
           "as_evidence", "as_result"]

# 1.0: the first typed result; 1.1: schema_version itself; 1.2: typed sub-sections (multivariate, embedding,
# attribution, label quality, estimates, parameters...), NaN and infinity stored as null
SCHEMA_VERSION = "1.3"


class DatasetRef(Record):
    id: Optional[str] = None
    name: Optional[str] = None
    n_rows: Optional[int] = None
    labelled: Optional[bool] = None
    n_labelled: Optional[int] = Field(
        default=None, description="Production: rows carrying a label; the measured metrics use these rows.")
    derived_context: Optional[dict[str, Any]] = Field(
        default=None, description="Contexts derived from the images: the extractor, its version and the columns.")


class Overall(Record):
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
    change_method: Optional[str] = None
    change_test: Optional[ShiftTest] = None
    change_difference: Number = None
    change_difference_ci: Interval = None
    change_effect_floor: Number = None
    within_context_p_value_adjusted: Number = Field(
        None, description="The change test within the contexts both datasets share (it decides concept shift).")
    within_context_changed: Optional[bool] = None


class Parameters(Record):
    """The options the audit ran with and what it resolved (pack, metric, classes, engine)."""

    alpha: float = 0.05
    correction: str = "bh"
    seed: Optional[int] = None
    budget: Optional[int] = None
    min_slice_size: int = 30
    saturation_threshold: Number = None
    evidently_companion: bool = False
    effect_floors: dict[str, Number] = Field(default_factory=dict)
    domain_pack: Optional[str] = None
    domain_pack_version: Optional[str] = None
    primary_metric: Optional[str] = None
    n_tests_corrected: Optional[int] = None
    classes: list[Any] = Field(default_factory=list)
    severity_priors: dict[str, Number] = Field(default_factory=dict)
    engine: dict[str, Any] = Field(default_factory=dict)


class Columns(Record):
    """The role of every column the audit used, and the columns only one side has."""

    features: list[str] = Field(default_factory=list)
    contexts: list[str] = Field(default_factory=list)
    label: Optional[str] = None
    production_label: Optional[str] = None
    prediction: Optional[str] = None
    scores: list[str] = Field(default_factory=list)
    embeddings: list[str] = Field(default_factory=list)
    id: Optional[str] = None
    only_in_benchmark: list[str] = Field(default_factory=list)
    only_in_production: list[str] = Field(default_factory=list)
    contexts_only_in_production: list[str] = Field(default_factory=list)


class AuditEvidence(Closed):
    """Every section the detectors fill: what the ranking, the verdict and the plan are computed from.

    Each field has a default, so that a partial audit (a section that could not run, a hand-built example)
    is still evidence: what is absent was not tested."""

    schema_version: str = Field(SCHEMA_VERSION, description=(
        "The AuditResult's version: the minor part grows when fields are added (changes are additive), the major "
        "part would change only if a field's meaning did."))
    id: str = ""
    status: str = "succeeded"
    created_at: str = ""
    title: str = ""
    domain: str = ""
    domain_title: str = ""
    synthetic: bool = False
    benchmark: DatasetRef = Field(default_factory=DatasetRef)
    production: DatasetRef = Field(default_factory=DatasetRef)
    overall: Optional[Overall] = None
    covariate: CovariateSection = Field(default_factory=CovariateSection)
    label: LabelSection = Field(default_factory=LabelSection)
    semantic: SemanticSection = Field(default_factory=SemanticSection)
    slices: list[SliceRecord] = Field(default_factory=list)
    label_quality: Optional[LabelQuality] = None
    discovery: Optional[Discovery] = None
    columns: Columns = Field(default_factory=Columns)
    parameters: Parameters = Field(default_factory=Parameters)
    notes: list[Note] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    benchmark_series: Optional[dict[str, Any]] = Field(
        None, description="When audited against a benchmark series: its name, the round numbers used and the dataset.")
    # the conclusions, when the evidence comes from a stored result
    verdict: Optional[Verdict] = None
    limitations: list[LimitationRecord] = Field(default_factory=list)
    next_round: Optional[NextRound] = None
    scenarios: list[ScenarioMatch] = Field(
        default_factory=list, description="The pack's expert scenarios, best fit first, each checked against the "
                                          "change claims (empty when the pack declares none or nothing changed).")

    @property
    def metric(self) -> str:
        """The primary metric's name: the overall section's, else the pack's, else ``"metric"``."""
        return (self.overall.metric if self.overall else None) or self.parameters.primary_metric or "metric"


class AuditResult(AuditEvidence):
    """GET /v1/audits/{id} of a succeeded audit."""

    id: str
    created_at: str
    title: str
    domain: str
    domain_title: str
    benchmark: DatasetRef
    production: DatasetRef
    verdict: Verdict
    limitations: list[LimitationRecord]
    next_round: NextRound


def _validated(model: type[AuditEvidence], value: Any, what: str) -> Any:
    """``value`` as ``model``: the model itself, or its JSON validated once (errors name the fields)."""
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be an AuditResult or its JSON (a mapping), got {type(value).__name__}.")
    try:
        return model.model_validate(dict(value))
    except ValidationError as exc:
        raise ValueError(f"{what} does not fit the AuditResult contract (reports/SCHEMA.md): {exc}") from None


def as_evidence(audit: Any) -> AuditEvidence:
    """The boundary of every public function of ``reports``: an AuditResult, AuditEvidence or its JSON.

    Raises
    ------
    TypeError
        ``audit`` is neither a model nor a mapping.
    ValueError
        The mapping does not fit the contract; the message names the fields (``reports/SCHEMA.md``).
    """
    return _validated(AuditEvidence, audit, "audit")


def as_result(result: Any) -> AuditResult:
    """A stored AuditResult (model or JSON) as the typed result, with the same errors as :func:`as_evidence`."""
    return _validated(AuditResult, result, "result")
