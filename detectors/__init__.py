"""Pure statistics for shift detection: no I/O, no HTTP, no HTML.

Registration is explicit: every public name is listed in :data:`_EXPORTS` with the module that
defines it. Imports are lazy (PEP 562): ``from detectors.metric_registry import ...`` or a monitor's
budget must not pay for loading every detector (and scipy, scikit-learn) at a cron run's start-up.
"""
from importlib import import_module

_MODULES = {
    "detectors.base": ("DetectorInputError", "NotFittedError"),
    "detectors.correction": ("CORRECTIONS", "adjust_pvalues", "benjamini_hochberg", "bonferroni", "holm", "is_shift"),
    "detectors.intervals": ("bootstrap_interval", "newcombe_interval", "wilson_interval"),
    "detectors.covariate": ("CovariateShiftDetector", "CovariateResult", "DEFAULT_EFFECT_FLOORS"),
    "detectors.classifier_test": ("ClassifierTwoSampleDetector", "ClassifierTestResult"),
    "detectors.mmd": ("MMDDetector", "MMDResult"),
    "detectors.bbsd": ("OutputShiftDetector", "OutputShiftResult"),
    "detectors.label_shift": ("LabelShiftEstimator", "LabelShiftResult", "prior_shift_effect", "PRIOR_RATIO_FLOOR"),
    "detectors.confidence_based": ("ConfidenceBasedEstimator",),
    "detectors.performance": ("PriorReweightedEstimator", "PerformanceEstimate", "PerformanceComparison",
                              "MetricComparison", "compare_performance"),
    "detectors.metric_ci": ("MetricEstimate", "ObservedPerformance", "metric_with_ci", "observed_performance"),
    "detectors.concept": ("ConceptShiftDetector", "ConceptShiftResult", "GroupChange", "group_performance_change",
                          "proportion_change", "performance_departures", "PerformanceDeparture"),
    "detectors.label_quality": ("krippendorff_alpha", "annotator_shares", "annotator_reliability",
                                "disagreement_by_slice", "source_agreement", "assess_label_quality",
                                "AgreementResult", "AnnotatorShare", "AnnotatorReliability", "SliceDisagreement",
                                "SourceAgreement", "LabelQualityResult"),
    "detectors.context": ("ContextShiftDetector", "ContextShiftResult", "SliceShare", "UntestedContext"),
    "detectors.context_tests": ("exceedance_pvalue",),
    "detectors.slices": ("SliceEvaluator", "SliceEvaluation", "SliceResult", "Outcomes"),
    "detectors.attribution": ("attribute_performance", "context_cells", "PerformanceAttribution", "CellAttribution"),
    "detectors.conditional": ("ConditionalShiftDetector", "ConditionalShiftResult"),
    "detectors.embedding": ("EmbeddingShiftDetector", "EmbeddingShiftResult", "NovelRegion", "ContextDescription",
                            "embedding_matrix"),
    "detectors.discovery": ("discover_weak_slices", "DiscoveryResult", "DiscoveredSlice", "Condition"),
    "detectors.decision": ("decide", "TestedResult", "SingleTestMixin"),
    "detectors.univariate": ("balanced_cramers_v", "ks_tied_test"),
    "detectors.assumptions": ("label_shift_unexplained", "UnexplainedFeature"),
    "detectors.within_context": ("within_context_change", "WithinContextChange", "make_strata", "Strata",
                                 "context_strata_cells", "rank_context_columns", "stratified_expected", "covered_rows"),
    "detectors.pruning": ("prune_discoveries",),
    "detectors.summaries": ("NumericSummary", "CategorySummary", "DatasetSummary"),
    "detectors.outcome_summaries": ("ConfusionSummary", "PredictionSummary"),
    "detectors.sketch_tests": ("sketch_gap_statistics", "sketch_ks_test", "summary_covariate", "summary_slice_metric",
                               "bootstrap_metric_interval", "summary_label_shift"),
    "detectors.metric_registry": ("MetricInfo", "METRIC_REGISTRY", "metric_info", "lower_is_better", "is_proportion"),
    "detectors.sequential": ("horizon_level", "WindowDrop", "window_drop_test", "confidence_sequence"),
    "detectors.e_detector": ("sr_start", "sr_update", "log_mixture", "arl_threshold"),
    "detectors.accuracy_drop": ("DropEvidence", "drop_start", "drop_update", "drop_restart"),
    "detectors.rank_shift": ("ShiftEvidence", "normal_scores", "shift_start", "shift_update", "shift_restart"),
    "detectors.online_testing": ("lord_plus_plus", "proportion_gain", "gamma_sequence", "OnlineDecisions",
                                 "ProportionGain"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'detectors' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

