"""The limitation ranking and the verdict: order, evidence, statistical support, robustness."""
from __future__ import annotations

import json
import math

import pytest

from reports import Limitation, SeverityPriors, rank_limitations, verdict
from reports.records import SEVERITY_ORDER


def _by_kind(limitations, kind):
    return [lim for lim in limitations if lim.kind == kind]


def test_ranks_are_consecutive_and_scores_and_severity_monotone(audit):
    limitations = rank_limitations(audit)
    assert [lim.rank for lim in limitations] == list(range(1, len(limitations) + 1))
    scores = [lim.score for lim in limitations]
    assert scores == sorted(scores, reverse=True)
    levels = [SEVERITY_ORDER[lim.severity] for lim in limitations]
    assert levels == sorted(levels, reverse=True)


def test_weak_common_slice_ranks_first_and_is_high(audit):
    top = rank_limitations(audit)[0]
    assert (top.kind, top.slice, top.severity) == ("underperforming_slice", "Fitzpatrick V–VI", "high")
    assert top.score == pytest.approx(0.18 * 0.25)


def test_weak_slice_outranks_tiny_but_significant_shift():
    audit = {
        "overall": {"metric": "sensitivity", "benchmark_value": 0.7, "benchmark_ci": [0.68, 0.72]},
        "benchmark": {"n_rows": 10_000}, "production": {"n_rows": 10_000},
        "covariate": {"is_shift": True, "features": [
            {"name": "tiny", "method": "ks", "p_value_adjusted": 1e-30, "effect_size": 0.101, "effect_floor": 0.1,
             "drifted": True, "status": "ok"}]},
        "slices": [{"name": "weak", "benchmark_value": 0.55, "benchmark_ci": [0.45, 0.65], "n_benchmark": 300,
                    "gap_p_value_adjusted": 0.01, "production_share": 0.1, "benchmark_share": 0.03,
                    "underperforming": True}],
    }
    ranked = rank_limitations(audit)
    kinds = [lim.kind for lim in ranked]
    assert kinds.index("underperforming_slice") < kinds.index("covariate_shift")
    assert _by_kind(ranked, "covariate_shift")[0].severity == "low"


@pytest.mark.parametrize("field, values", [("production_share", [0.02, 0.1, 0.3]), ("gap", [0.06, 0.15, 0.3])])
def test_slice_score_grows_with_prevalence_and_gap(field, values):
    def score(value):
        s = {"name": "s", "benchmark_value": 0.6, "benchmark_ci": [0.5, 0.7], "gap_p_value_adjusted": 0.001,
             "production_share": 0.1, "gap": 0.2, "n_benchmark": 100, "underperforming": True}
        s[field] = value
        return rank_limitations({"overall": {"metric": "auc", "benchmark_value": 0.75}, "slices": [s]})[0].score
    scores = [score(v) for v in values]
    assert scores == sorted(scores) and len(set(scores)) == len(scores)


def test_slice_statement_has_value_ci_n_overall_and_shares(audit):
    statement = rank_limitations(audit)[0].statement
    for fragment in ("Sensitivity on Fitzpatrick V–VI", "0.61 [0.52, 0.70]", "(n=212)", "against 0.86 overall",
                     "adjusted p < 0.001", "18 % of production", "3 % of the benchmark"):
        assert fragment in statement


def test_every_statement_with_a_metric_quotes_interval_and_sample_size(audit):
    for lim in rank_limitations(audit):
        if lim.kind in ("underperforming_slice", "benchmark_saturation", "concept_shift"):
            assert "[" in lim.statement and "n=" in lim.statement, lim.statement
        if lim.kind == "label_shift":
            assert "27 % [23 %, 31 %]" in lim.statement and "malignant" in lim.statement


def test_only_supported_findings_become_limitations(audit):
    ranked = rank_limitations(audit)
    slices = {lim.slice for lim in _by_kind(ranked, "underperforming_slice")}
    # Acral sites: adjusted p = 0.12; skin markings: significant but better than overall.
    assert slices == {"Fitzpatrick V–VI", "Poor image quality", "Scalp, age ≥ 60"}
    covariate = _by_kind(ranked, "covariate_shift")[0]
    names = {f["name"] for f in covariate.evidence["features"]}
    assert names == {"age", "image_brightness"}  # lesion_diameter_mm: significant but below its floor
    mix = {lim.slice for lim in _by_kind(ranked, "context_mix_shift")}
    assert "body_site" not in mix and "Skin markings or rulers" not in mix


def test_context_tests_fold_into_the_limitation_they_explain(audit):
    ranked = rank_limitations(audit)
    mix = {lim.slice for lim in _by_kind(ranked, "context_mix_shift")}
    assert {"fitzpatrick", "imaging_modality", "Fitzpatrick V–VI", "Poor image quality"}.isdisjoint(mix)
    smartphone = next(lim for lim in ranked if lim.slice == 'imaging_modality == "smartphone"')
    assert smartphone.evidence["context_tests"] == ["imaging_modality"]


def test_untested_contexts_are_limitations_without_any_test():
    audit = {"semantic": {"untested_contexts": [
        {"column": "device", "value": "phone", "n_benchmark": 0, "n_production": 300, "production_share": 0.3}]}}
    (lim,) = rank_limitations(audit)
    assert lim.kind == "untested_context" and lim.slice == "device = phone"
    assert lim.score == pytest.approx(0.3 * SeverityPriors().untested_gap)
    assert "30 % of production" in lim.statement and "n=300" in lim.statement


def test_insufficient_data_and_missing_values_never_count(audit):
    for s in audit["slices"]:
        s.update(gap_p_value_adjusted=float("nan"), underperforming=None)
    audit["slices"][1].update(status="insufficient_data", underperforming=True, gap_p_value_adjusted=0.0)
    for f in audit["covariate"]["features"]:
        f.update(drifted=None, p_value_adjusted=None)
    audit["covariate"]["multivariate"]["is_shift"] = None
    audit["covariate"]["multivariate"]["test"]["drifted"] = None
    ranked = rank_limitations(audit)
    assert not _by_kind(ranked, "underperforming_slice") and not _by_kind(ranked, "covariate_shift")


@pytest.mark.parametrize("audit_dict", [{}, {"slices": None, "covariate": None, "label": None, "semantic": None},
                                        {"overall": {"benchmark_value": float("nan")}, "slices": [{}]}])
def test_empty_or_degenerate_audits_give_no_limitations(audit_dict):
    assert rank_limitations(audit_dict) == []
    v = verdict(audit_dict, [])
    assert v["severity"] == "none" and v["shift_detected"] is False and v["summary"].endswith(".")


def test_rejects_non_mapping():
    with pytest.raises(TypeError):
        rank_limitations([1, 2])


def test_to_dict_is_json_ready_and_has_spec_keys(audit):
    audit["slices"][0]["benchmark_ci"] = [0.52, float("nan")]
    for lim in rank_limitations(audit):
        d = lim.to_dict()
        assert list(d) == ["rank", "key", "kind", "slice", "definition", "severity", "score", "title", "statement",
                           "evidence", "related"]
        assert d["key"].startswith(d["kind"] + ":")
        json.dumps(d, allow_nan=False)
        assert d["severity"] in ("low", "medium", "high") and isinstance(d["score"], float)


def test_limitations_are_frozen(audit):
    lim = rank_limitations(audit)[0]
    assert isinstance(lim, Limitation)
    with pytest.raises(AttributeError):
        lim.rank = 5


def test_verdict_names_the_top_limitation(audit):
    ranked = rank_limitations(audit)
    v = verdict(audit, ranked)
    assert v == {"shift_detected": True, "severity": "high", "summary": v["summary"]}
    assert "Fitzpatrick V–VI" in v["summary"] and f"{len(ranked) - 1} more issues" in v["summary"]
    assert v["summary"].count(".") >= 1 and "\n" not in v["summary"]


def test_saturation_threshold_argument_overrides_parameters(audit):
    assert _by_kind(rank_limitations(audit), "benchmark_saturation")
    assert not _by_kind(rank_limitations(audit, saturation_threshold=0.9), "benchmark_saturation")
    audit["parameters"]["saturation_threshold"] = 0.95
    assert not _by_kind(rank_limitations(audit), "benchmark_saturation")


def test_reports_never_re_decide(audit):
    """The detectors decide (SPEC §5); reports read ``underperforming`` / ``drifted`` / ``changed`` only:
    a tiny p-value without the detector's flag is not a finding, whatever alpha is given."""
    flagged = {lim.slice for lim in _by_kind(rank_limitations(audit, alpha=0.01), "underperforming_slice")}
    assert flagged == {s["name"] for s in audit["slices"] if s.get("underperforming") is True}
    for s in audit["slices"]:
        s["underperforming"] = False
        s["gap_p_value_adjusted"] = 1e-12
    assert not _by_kind(rank_limitations(audit), "underperforming_slice")


def test_keys_are_stable_across_spelling_of_the_same_rows(audit, copy_of):
    """The same kind and rows give the same key, however the definition is spelled."""
    other = copy_of(audit)
    for s in other["slices"]:
        if s.get("definition"):
            s["definition"] = "(" + s["definition"].replace(" ", "  ") + ")"
    keys = {lim.key for lim in rank_limitations(audit)}
    assert keys == {lim.key for lim in rank_limitations(other)}
    assert len(keys) == len(rank_limitations(audit))


def test_concept_shift_from_observed_production_labels(audit):
    audit["label"]["observed_performance"] = {
        "metric": "sensitivity", "benchmark_value": 0.86, "benchmark_ci": [0.84, 0.88], "production_value": 0.74,
        "production_ci": [0.70, 0.78], "n_production": 800, "p_value_adjusted": 1e-6, "is_shift": True}
    audit["slices"][0].update(production_value=0.45, production_ci=[0.35, 0.55], p_value_adjusted=0.001, changed=True)
    audit["slices"][1].update(production_value=0.60, production_ci=[0.50, 0.70], p_value_adjusted=0.001,
                              changed=True)
    concept = _by_kind(rank_limitations(audit), "concept_shift")
    overall = next(lim for lim in concept if lim.slice is None)
    assert overall.score == pytest.approx(0.12) and overall.severity == "high"
    assert "0.74 [0.70, 0.78]" in overall.statement and "n=800" in overall.statement
    assert {lim.slice for lim in concept} == {None, "Fitzpatrick V–VI", "Poor image quality"}


def test_lower_is_better_metric_flips_the_gap():
    audit = {"overall": {"metric": "fpr", "benchmark_value": 0.05},
             "slices": [{"name": "heavy compression", "metric": "fpr", "benchmark_value": 0.20,
                         "benchmark_ci": [0.15, 0.26], "gap_p_value_adjusted": 0.001, "production_share": 0.4,
                         "underperforming": True}]}
    (lim,) = rank_limitations(audit)
    assert lim.kind == "underperforming_slice" and lim.score == pytest.approx(0.4 * 0.15)


def test_label_quality_findings(audit):
    audit["label_quality"]["agreement"].update(alpha=0.41, ci_low=0.35, ci_high=0.47)
    audit["label_quality"]["annotators"][3].update(near_chance=True, agreement=0.52)
    audit["label_quality"]["source_agreement"] = {"n": 4028, "agreement": 0.95, "agreement_ci": [0.94, 0.96],
                                                  "sources": ["local", "central"]}
    quality = _by_kind(rank_limitations(audit), "label_quality")
    text = " ".join(lim.statement for lim in quality)
    assert "0.41 [0.35, 0.47]" in text and "derm_01" in text and "derm_04" in text and "local and central" in text


def test_ranking_is_deterministic(audit, copy_of):
    assert rank_limitations(audit) == rank_limitations(copy_of(audit))


def test_nan_floats_and_none_are_equivalent(audit, copy_of):
    with_nan = copy_of(audit)
    with_nan["overall"]["production_value"] = math.nan
    with_nan["label"]["estimated_performance"]["methods"]["prior_reweighted"]["metrics"]["sensitivity"]["ci_low"] = math.nan
    audit["label"]["estimated_performance"]["methods"]["prior_reweighted"]["metrics"]["sensitivity"]["ci_low"] = None
    assert rank_limitations(with_nan) == rank_limitations(audit)


def test_flat_spec_shapes_give_the_same_ranking(audit):
    """The nested detector shapes (SliceShare, ClassifierTestResult, LabelQualityResult...) and
    the flat SPEC §9 shapes are read alike."""
    from reports.normalise import normalise_audit
    flat = normalise_audit(audit)
    assert "slice_shares" not in flat["semantic"] and "krippendorff_alpha" in flat["label_quality"]
    assert rank_limitations(flat) == rank_limitations(audit)
    assert normalise_audit(flat) == flat
