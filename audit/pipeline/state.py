"""What the stages of one audit have produced so far (:class:`AuditState`), and which of those
results enter the audit-wide correction (:data:`TESTED`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from audit.pipeline import stages
from audit.pipeline.labelled_rows import LabelledRows

if TYPE_CHECKING:  # the detectors' result types, for the state's fields; the stages import the detectors
    from detectors.attribution import PerformanceAttribution
    from detectors.bbsd import OutputShiftResult
    from detectors.classifier_test import ClassifierTestResult
    from detectors.concept import ConceptShiftResult
    from detectors.conditional import ConditionalShiftResult
    from detectors.context_results import ContextShiftResult
    from detectors.covariate import CovariateResult
    from detectors.discovery import DiscoveryResult
    from detectors.embedding import EmbeddingShiftResult
    from detectors.label_quality import LabelQualityResult
    from detectors.label_shift_result import LabelShiftResult
    from detectors.metric_change import MetricChange
    from detectors.performance import PerformanceEstimate
    from detectors.slice_results import SliceEvaluation

__all__ = ["TESTED", "AuditState"]

# Results whose tests enter the audit-wide correction, in a fixed order (the family's order).
TESTED = ("covariate", "multivariate", "outputs", "prior", "concept", "context", "evaluation", "overall_eval",
          "overall_change", "conditional", "embedding")


@dataclass
class AuditState:
    """What the stages have produced so far; each field is written by one stage."""

    ctx: stages.StageContext
    bench_out: stages.Outputs | None = None
    prod_out: stages.Outputs | None = None
    slices: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    measured_by: dict[str, str] = field(default_factory=dict)  # untested context → slice with the same rows
    # each None until its stage ran, and None again when the stage could not run (the guard's note says why)
    covariate: CovariateResult | None = None
    multivariate: ClassifierTestResult | None = None
    outputs: OutputShiftResult | None = None
    prior: LabelShiftResult | None = None
    concept: ConceptShiftResult | None = None
    estimates: list[PerformanceEstimate] = field(default_factory=list)
    discovered: DiscoveryResult | None = None
    context: ContextShiftResult | None = None
    evaluation: SliceEvaluation | None = None
    overall_eval: SliceEvaluation | None = None
    overall_change: MetricChange | None = None  # the plain benchmark → production test of the primary metric
    attribution: PerformanceAttribution | None = None
    cells: tuple[np.ndarray, np.ndarray] | None = None  # (benchmark cells, production cells) of the contexts
    conditional: ConditionalShiftResult | None = None
    embedding: EmbeddingShiftResult | None = None
    label_quality: LabelQualityResult | None = None
    n_tests: int = 0
    # production partly labelled: its labelled rows, their own stage context and model outputs; the
    # label stages (metrics, concept, discovery, attribution) run on them, the input and context tests on all rows
    labelled: LabelledRows | None = None
    labelled_ctx: stages.StageContext | None = None
    labelled_out: stages.Outputs | None = None

    def production_outputs(self) -> stages.Outputs:
        """The model's outputs on every production row (the label stage computes them)."""
        if self.prod_out is None:
            raise RuntimeError("the label stage has not run yet")
        return self.prod_out

    def label_view(self) -> tuple[stages.StageContext, stages.Outputs]:
        """The stage context and production outputs the label stages read."""
        if self.labelled_ctx is None or self.labelled_out is None:
            return self.ctx, self.production_outputs()
        return self.labelled_ctx, self.labelled_out

    def on_labelled(self, masks: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Slice masks with their production side restricted to the labelled rows."""
        if self.labelled is None:
            return masks
        keep = self.labelled.mask
        return {name: (b, p[keep]) for name, (b, p) in masks.items()}

    def tested(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in TESTED}

    def set_tested(self, corrected: dict[str, Any]) -> None:
        for name in TESTED:
            setattr(self, name, corrected[name])
