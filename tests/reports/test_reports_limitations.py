"""The limitation ranking and the verdict: order, evidence, statistical support, robustness."""
from __future__ import annotations

import pytest

from domains import PLANTED
from reports import SeverityPriors, rank_limitations, verdict
from reports.records import SEVERITY_ORDER

PLANTED_SHIFT = PLANTED["medical"]  # what make_audit_example.py planted in the fixture's data


def _by_kind(limitations, kind):
    return [lim for lim in limitations if lim.kind == kind]


def _slice(audit, name):
    return next(s for s in audit["slices"] if s["name"] == name)


def _label(score):
    """The severity thresholds of reports/SCHEMA.md: high >= 0.03, medium >= 0.01, else low."""
    return "high" if score >= 0.03 else "medium" if score >= 0.01 else "low"


def _pct(share):
    return f"{100 * share:.0f} %"


def test_ranks_are_consecutive_and_scores_and_severity_monotone(audit):
    limitations = rank_limitations(audit)
    assert [lim.rank for lim in limitations] == list(range(1, len(limitations) + 1))
    assert [lim.kind for lim in limitations][-1] == "benchmark_saturation"  # always last (SCHEMA.md)
    assert any(lim.score < limitations[-1].score for lim in limitations[:-1])  # ... even above smaller scores
    ranked = limitations[:-1]
    claims = [lim.claim for lim in ranked]
    assert claims == sorted(claims)  # change claims first, then standing limitations (model card)
    for claim in ("change", "standing"):
        group = [lim for lim in ranked if lim.claim == claim]
        scores = [lim.score for lim in group]
        assert scores == sorted(scores, reverse=True)
        levels = [SEVERITY_ORDER[lim.severity] for lim in group]
        assert levels == sorted(levels, reverse=True)
    assert all(lim.severity == _label(lim.score) for lim in limitations)


def test_weak_common_slice_ranks_first_and_is_high(audit):
    """The planted weak slice (common in production, rare in the benchmark) is the worst data finding. The
    benchmark shows the weakness too, but production holds five times as much of it: a change; its score
    is production share × gap."""
    ranked = rank_limitations(audit)
    data = [lim for lim in ranked if lim.kind != "label_quality"]
    top = data[0]
    weak = _slice(audit, PLANTED_SHIFT.weak_slice)
    assert (top.kind, top.slice, top.definition) == ("underperforming_slice", weak["name"],
                                                     PLANTED_SHIFT.weak_expression)
    assert top.claim == "change" and top.evidence["change_basis"] == "share"
    assert weak["production_share"] > weak["benchmark_share"]  # the benchmark hides it
    assert top.score == pytest.approx(weak["production_share"] * weak["gap"], abs=1e-6)
    assert top.severity == _label(top.score) != "low"
    assert top.score > max(lim.score for lim in data if lim is not top)


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
    weak, shift = _by_kind(ranked, "underperforming_slice")[0], _by_kind(ranked, "covariate_shift")[0]
    assert weak.score > shift.score and shift.severity == "low"
    # weak on the benchmark (its interval lies below 0.7) and no change test: standing, listed after changes
    assert weak.claim == "standing" and shift.claim == "change" and shift.rank < weak.rank
    audit["slices"][0].update(production_value=0.45, production_ci=[0.40, 0.50], p_value_adjusted=0.001,
                              p_value_test="change", changed=True)  # and it got worse in production
    ranked = rank_limitations(audit)
    kinds = [lim.kind for lim in ranked]
    assert _by_kind(ranked, "underperforming_slice")[0].claim == "change"
    assert kinds.index("underperforming_slice") < kinds.index("covariate_shift")


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
    top = _by_kind(rank_limitations(audit), "underperforming_slice")[0]
    weak = _slice(audit, PLANTED_SHIFT.weak_slice)
    assert top.slice == weak["name"] and weak["gap_dataset"] == "benchmark"  # production is unlabelled
    lo, hi = weak["benchmark_ci"]
    p = weak["gap_p_value_adjusted"]
    fragments = (f"{audit['overall']['metric'].capitalize()} on {weak['title']}",
                 f"{weak['benchmark_value']:.2f} [{lo:.2f}, {hi:.2f}]",
                 f"(n={weak['metric_n_benchmark']:,})",  # the positives behind a sensitivity
                 f"against {audit['overall']['benchmark_value']:.2f} overall",
                 "adjusted p < 0.001" if p < 0.001 else f"adjusted p = {p:.3f}",
                 f"{_pct(weak['production_share'])} of production", f"{_pct(weak['benchmark_share'])} of the benchmark")
    for fragment in fragments:
        assert fragment in top.statement, (fragment, top.statement)


def test_every_statement_with_a_metric_quotes_interval_and_sample_size(audit):
    for lim in rank_limitations(audit):
        if lim.kind in ("underperforming_slice", "benchmark_saturation", "concept_shift"):
            assert "[" in lim.statement and "n=" in lim.statement, lim.statement
        if lim.kind == "label_shift":
            assert "27 % [23 %, 31 %]" in lim.statement and "malignant" in lim.statement


def test_only_supported_findings_become_limitations(audit):
    ranked = rank_limitations(audit)
    weak = {lim.definition for lim in _by_kind(ranked, "underperforming_slice")}
    # the two planted weaknesses, the expert slice and the hidden intersection, and nothing else
    assert weak == {PLANTED_SHIFT.weak_expression, PLANTED_SHIFT.hidden_expression}
    assert {lim.slice for lim in _by_kind(ranked, "underperforming_slice")} == {
        s["name"] for s in audit["slices"] if s["underperforming"] is True}
    unflagged = [s for s in audit["slices"] if s["underperforming"] is not True and (s.get("gap") or 0) > 0.05]
    assert unflagged  # weaker than overall but not significantly so (e.g. small slices): not limitations
    covariate = _by_kind(ranked, "covariate_shift")[0]
    names = {f["name"] for f in covariate.evidence["features"]}
    assert names == {f["name"] for f in audit["covariate"]["features"] if f["drifted"] is True} and names
    assert covariate.evidence["n_drifted"] == len(names) < len(audit["covariate"]["features"])
    mix = {lim.evidence["name"] for lim in _by_kind(ranked, "context_mix_shift")}
    unflagged_tests = {t["name"] for t in audit["semantic"]["contexts"] if t["drifted"] is not True}
    assert unflagged_tests and not mix & unflagged_tests


def test_context_tests_fold_into_the_limitation_they_explain(audit):
    ranked = rank_limitations(audit)
    weak_column = PLANTED_SHIFT.weak_expression.split()[0]
    flagged = {t["name"] for t in audit["semantic"]["contexts"] if t["drifted"] is True}
    assert {weak_column, PLANTED_SHIFT.weak_slice, PLANTED_SHIFT.untested_column} <= flagged
    mix = {lim.evidence["name"] for lim in _by_kind(ranked, "context_mix_shift")}
    assert {weak_column, PLANTED_SHIFT.weak_slice, PLANTED_SHIFT.untested_column}.isdisjoint(mix)
    weak = next(lim for lim in ranked if lim.kind == "underperforming_slice" and lim.slice == PLANTED_SHIFT.weak_slice)
    assert weak.evidence["context_tests"] == [weak_column, PLANTED_SHIFT.weak_slice]  # as stored
    assert f"The mix of {weak_column} changed significantly" in weak.statement
    untested = next(lim for lim in ranked if lim.kind == "untested_context"
                    and lim.evidence["column"] == PLANTED_SHIFT.untested_column)
    assert untested.evidence["context_tests"] == [PLANTED_SHIFT.untested_column]


def test_untested_contexts_are_limitations_without_any_test():
    audit = {"semantic": {"untested_contexts": [
        {"name": "device = phone", "kind": "unseen_value", "column": "device", "value": "phone", "n_benchmark": 0,
         "n_production": 300, "production_share": 0.3}]}}
    (lim,) = rank_limitations(audit)
    assert lim.kind == "untested_context" and lim.slice == "device = phone"
    assert lim.score == pytest.approx(0.3 * SeverityPriors().untested_gap)
    assert "30 % of production" in lim.statement and "n=300" in lim.statement


def test_a_pool_of_rare_values_is_stated_per_value_not_by_its_total():
    """A pool of 80 rare clinics read "the benchmark has only 430, fewer than the 30 needed": 430 was their total."""
    audit = {"semantic": {"untested_contexts": [
        {"column": "clinic", "kind": "pooled_values", "name": "rare or new values of clinic", "value": ["a", "b"],
         "n_values": 80, "n_benchmark": 430, "n_production": 900, "production_share": 0.3, "min_slice_size": 30,
         "p_value_adjusted": 1e-6}]}}
    (lim,) = rank_limitations(audit)
    assert "80 values are each too rare" in lim.statement and "fewer than 30 rows each; 430 in all" in lim.statement
    assert "has only 430" not in lim.statement


def test_insufficient_data_and_missing_values_never_count(audit):
    for s in audit["slices"]:
        s.update(gap_p_value_adjusted=float("nan"), underperforming=None)
    audit["slices"][1].update(status="insufficient_data", underperforming=True, gap_p_value_adjusted=0.0)
    for f in audit["covariate"]["features"]:
        f.update(drifted=False, p_value_adjusted=None)
    for t in audit["covariate"]["outputs"]["tests"]:
        t.update(drifted=False, status="insufficient_data")
    audit["covariate"]["multivariate"].update(is_shift=False, drifted=False, p_value_adjusted=1e-9)  # not flagged
    ranked = rank_limitations(audit)
    assert not _by_kind(ranked, "underperforming_slice") and not _by_kind(ranked, "covariate_shift")


@pytest.mark.parametrize("audit_dict", [{}, {"slices": [], "label_quality": None, "discovery": None},
                                        {"overall": {"metric": "accuracy", "benchmark_value": float("nan")},
                                         "slices": [{"name": "s"}]}])
def test_empty_or_degenerate_audits_give_no_limitations(audit_dict):
    assert rank_limitations(audit_dict) == []
    v = verdict(audit_dict, []).to_dict()
    assert v["severity"] == "none" and v["shift_detected"] is False and v["summary"].endswith(".")
