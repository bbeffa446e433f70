"""Pure statistics for shift detection: no I/O, no HTTP, no HTML.

Registration is explicit: every public detector is imported here and listed in ``__all__``.
"""
from detectors.base import DetectorInputError, NotFittedError
from detectors.correction import CORRECTIONS, adjust_pvalues, benjamini_hochberg, bonferroni, holm, is_shift
from detectors.intervals import bootstrap_interval, newcombe_interval, wilson_interval

__all__ = [
    "DetectorInputError",
    "NotFittedError",
    "CORRECTIONS",
    "adjust_pvalues",
    "benjamini_hochberg",
    "bonferroni",
    "holm",
    "is_shift",
    "bootstrap_interval",
    "newcombe_interval",
    "wilson_interval",
]

# --- covariate (issue 3) ---
from detectors.bbsd import OutputShiftDetector, OutputShiftResult
from detectors.classifier_test import ClassifierTestResult, ClassifierTwoSampleDetector
from detectors.covariate import DEFAULT_EFFECT_FLOORS, CovariateResult, CovariateShiftDetector
from detectors.mmd import MMDDetector, MMDResult

__all__ += [
    "CovariateShiftDetector",
    "CovariateResult",
    "DEFAULT_EFFECT_FLOORS",
    "ClassifierTwoSampleDetector",
    "ClassifierTestResult",
    "MMDDetector",
    "MMDResult",
    "OutputShiftDetector",
    "OutputShiftResult",
]
# --- label (issue 4) ---
from detectors.concept import (ConceptShiftDetector, ConceptShiftResult, GroupChange, group_performance_change,
                               proportion_change)
from detectors.label_quality import (AgreementResult, AnnotatorReliability, AnnotatorShare, LabelQualityResult,
                                     SliceDisagreement, SourceAgreement, annotator_reliability, annotator_shares,
                                     assess_label_quality, disagreement_by_slice, krippendorff_alpha,
                                     source_agreement)
from detectors.label_shift import LabelShiftEstimator, LabelShiftResult
from detectors.metric_ci import MetricEstimate, ObservedPerformance, metric_with_ci, observed_performance
from detectors.confidence_based import ConfidenceBasedEstimator
from detectors.performance import (MetricComparison, PerformanceComparison, PerformanceEstimate,
                                   PriorReweightedEstimator, compare_performance)

__all__ += [
    "LabelShiftEstimator",
    "LabelShiftResult",
    "ConfidenceBasedEstimator",
    "PriorReweightedEstimator",
    "PerformanceEstimate",
    "PerformanceComparison",
    "MetricComparison",
    "compare_performance",
    "MetricEstimate",
    "ObservedPerformance",
    "metric_with_ci",
    "observed_performance",
    "ConceptShiftDetector",
    "ConceptShiftResult",
    "GroupChange",
    "group_performance_change",
    "proportion_change",
    "krippendorff_alpha",
    "annotator_shares",
    "annotator_reliability",
    "disagreement_by_slice",
    "source_agreement",
    "assess_label_quality",
    "AgreementResult",
    "AnnotatorShare",
    "AnnotatorReliability",
    "SliceDisagreement",
    "SourceAgreement",
    "LabelQualityResult",
]
# --- context (issue 5) ---
from detectors.attribution import CellAttribution, PerformanceAttribution, attribute_performance, context_cells
from detectors.conditional import ConditionalShiftDetector, ConditionalShiftResult
from detectors.context import ContextShiftDetector, ContextShiftResult, SliceShare, UntestedContext
from detectors.discovery import Condition, DiscoveredSlice, DiscoveryResult, discover_weak_slices
from detectors.embedding import (ContextDescription, EmbeddingShiftDetector, EmbeddingShiftResult, NovelRegion,
                                 embedding_matrix)
from detectors.slices import Outcomes, SliceEvaluation, SliceEvaluator, SliceResult

__all__ += [
    "ContextShiftDetector",
    "ContextShiftResult",
    "SliceShare",
    "UntestedContext",
    "SliceEvaluator",
    "SliceEvaluation",
    "SliceResult",
    "Outcomes",
    "attribute_performance",
    "context_cells",
    "PerformanceAttribution",
    "CellAttribution",
    "ConditionalShiftDetector",
    "ConditionalShiftResult",
    "EmbeddingShiftDetector",
    "EmbeddingShiftResult",
    "NovelRegion",
    "ContextDescription",
    "embedding_matrix",
    "discover_weak_slices",
    "DiscoveryResult",
    "DiscoveredSlice",
    "Condition",
]
# --- soundness of conclusions (issue 9) ---
from detectors.assumptions import UnexplainedFeature, label_shift_unexplained
from detectors.concept import PerformanceDeparture, performance_departures
from detectors.context import exceedance_pvalue
from detectors.decision import SingleTestMixin, TestedResult, decide
from detectors.label_shift import PRIOR_RATIO_FLOOR, prior_shift_effect
from detectors.pruning import prune_discoveries
from detectors.univariate import balanced_cramers_v, ks_tied_test
from detectors.within_context import (Strata, WithinContextChange, context_strata_cells, make_strata,
                                      covered_rows, rank_context_columns, stratified_expected,
                                      within_context_change)

__all__ += [
    "decide",
    "TestedResult",
    "SingleTestMixin",
    "balanced_cramers_v",
    "ks_tied_test",
    "exceedance_pvalue",
    "prior_shift_effect",
    "PRIOR_RATIO_FLOOR",
    "label_shift_unexplained",
    "UnexplainedFeature",
    "performance_departures",
    "PerformanceDeparture",
    "within_context_change",
    "WithinContextChange",
    "make_strata",
    "Strata",
    "context_strata_cells",
    "rank_context_columns",
    "stratified_expected",
    "covered_rows",
    "prune_discoveries",
]
# --- mergeable summaries for data beyond memory (issue 13) ---
from detectors.outcome_summaries import ConfusionSummary, PredictionSummary
from detectors.sketch_tests import (bootstrap_metric_interval, sketch_gap_statistics, sketch_ks_test,
                                    summary_covariate, summary_label_shift, summary_slice_metric)
from detectors.summaries import CategorySummary, DatasetSummary, NumericSummary

__all__ += [
    "NumericSummary",
    "CategorySummary",
    "ConfusionSummary",
    "PredictionSummary",
    "DatasetSummary",
    "sketch_gap_statistics",
    "sketch_ks_test",
    "summary_covariate",
    "summary_slice_metric",
    "bootstrap_metric_interval",
    "summary_label_shift",
]
