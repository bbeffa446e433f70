"""The limitation ranking and the verdict: order, evidence, statistical support, robustness."""
from __future__ import annotations

import json
import math

import pytest

from domains import PLANTED
from reports import AuditResult, Limitation, SeverityPriors, rank_limitations, verdict
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
    """The planted weak slice (common in production, rare in the benchmark) is the worst data finding:
    it outranks every other slice, untested context and shift; its score is production share × gap."""
    ranked = rank_limitations(audit)
    # production is unlabelled: the slice is weak on the benchmark, a standing limitation, first of them
    data = [lim for lim in ranked if lim.kind != "label_quality" and lim.claim == "standing"]
    top = data[0]
    weak = _slice(audit, PLANTED_SHIFT.weak_slice)
    assert (top.kind, top.slice, top.definition) == ("underperforming_slice", weak["name"], PLANTED_SHIFT.weak_expression)
    assert weak["production_share"] > weak["benchmark_share"]  # the benchmark hides it
    assert top.score == pytest.approx(weak["production_share"] * weak["gap"], abs=1e-6)
    assert top.severity == _label(top.score) != "low"
    assert top.score > max(lim.score for lim in ranked if lim.kind != "label_quality" and lim is not top)


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
    assert weak.evidence["context_tests"] == (weak_column, PLANTED_SHIFT.weak_slice)
    assert f"The mix of {weak_column} changed significantly" in weak.statement
    untested = next(lim for lim in ranked if lim.kind == "untested_context"
                    and lim.evidence["column"] == PLANTED_SHIFT.untested_column)
    assert untested.evidence["context_tests"] == (PLANTED_SHIFT.untested_column,)


def test_untested_contexts_are_limitations_without_any_test():
    audit = {"semantic": {"untested_contexts": [
        {"column": "device", "value": "phone", "n_benchmark": 0, "n_production": 300, "production_share": 0.3}]}}
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
        f.update(drifted=None, p_value_adjusted=None)
    for t in audit["covariate"]["outputs"]["tests"]:
        t.update(drifted=None)
    audit["covariate"]["multivariate"].update(is_shift=None, drifted=None, p_value_adjusted=1e-9)  # flat test record
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
        assert list(d) == ["rank", "key", "kind", "slice", "definition", "severity", "score", "claim", "decision",
                           "title", "statement", "evidence", "related"]
        assert d["claim"] in ("change", "standing") and d["decision"]["rule"]
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
    changes = [lim for lim in ranked if lim.claim == "change"]
    standing = [lim for lim in ranked if lim.claim == "standing"]
    assert changes and standing and ranked[:len(changes)] == changes  # change claims rank first
    assert {k: v[k] for k in ("shift_detected", "status")} == {"shift_detected": True, "status": "shift"}
    assert v["severity"] == max((lim.severity for lim in changes), key=SEVERITY_ORDER.get)
    assert ranked[0].title in v["summary"] and f"{len(changes) - 1} more changes" in v["summary"]
    worst = max(standing, key=lambda lim: (SEVERITY_ORDER[lim.severity], -lim.rank))
    assert v["standing_severity"] == worst.severity
    # A standing weakness more severe than every change is named after the changes, as not new.
    assert SEVERITY_ORDER[worst.severity] > SEVERITY_ORDER[v["severity"]]
    assert v["summary"].index("More severe than any change, though not new") > v["summary"].index(ranked[0].title)
    assert worst.title in v["summary"]
    assert v["changes"] == [lim.key for lim in changes] and v["standing"] == [lim.key for lim in standing]
    assert v["summary"].count(".") >= 1 and "\n" not in v["summary"]


def test_severity_describes_changes_only():
    """Null audits on real tables read "high" severity because standing weak slices (as weak on
    the benchmark) were counted: the verdict's severity is the changes', the standing one apart."""
    standing = Limitation(rank=1, kind="underperforming_slice", slice="x", severity="high", score=0.1,
                          title="weak on x", statement="", claim="standing")
    v = verdict({"covariate": {"features": [{"name": "x", "status": "ok", "p_value": 0.5}]}}, [standing])
    assert (v["severity"], v["standing_severity"], v["status"]) == ("none", "high", "no_shift")
    assert "More severe" not in v["summary"] and "weak on x" in v["summary"]


def test_saturation_threshold_argument_overrides_parameters(audit):
    assert _by_kind(rank_limitations(audit), "benchmark_saturation")
    assert not _by_kind(rank_limitations(audit, saturation_threshold=0.9), "benchmark_saturation")
    audit["parameters"]["saturation_threshold"] = 0.95
    assert not _by_kind(rank_limitations(audit), "benchmark_saturation")


def test_accuracy_that_only_matches_the_majority_class_is_not_saturation(audit):
    """Real case (survival/nwtco, relapse 16 %): accuracy 0.82 [0.79, 0.84] is what always predicting
    "no relapse" scores (0.84); calling that benchmark saturated would be wrong, so a note says why not."""
    from reports.findings_labels import saturation_note
    from reports.records import RankingContext

    audit["parameters"]["primary_metric"] = "accuracy"
    audit["overall"].update({"metric": "accuracy", "benchmark_value": 0.82, "benchmark_ci": [0.79, 0.84]})
    audit["label"]["benchmark_prior"] = {"0": 0.84, "1": 0.16}

    def note():
        return saturation_note(audit, RankingContext.from_audit(audit, saturation_threshold=None, alpha=None,
                                                                priors=None))

    assert not _by_kind(rank_limitations(audit), "benchmark_saturation")
    assert "0.84" in note()["reason"] and "'0'" in note()["reason"]
    audit["label"]["benchmark_prior"] = {"0": 0.6, "1": 0.4}  # the same accuracy, credibly above 0.6 ...
    assert not _by_kind(rank_limitations(audit), "benchmark_saturation")  # ... but its interval reaches 0.79
    assert "interval reaches below it" in note()["reason"]
    audit["overall"]["benchmark_ci"] = [0.81, 0.84]  # decided by the interval, not the point value
    assert _by_kind(rank_limitations(audit), "benchmark_saturation") and note() is None


def test_reports_never_re_decide(audit):
    """The detectors decide; reports read ``underperforming`` / ``drifted`` / ``changed`` only:
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
    fell, rose, unflagged = audit["slices"][:3]
    fell.update(production_value=fell["benchmark_value"] - 0.2, production_ci=[0.35, 0.55], p_value_adjusted=0.001,
                changed=True)
    rose.update(production_value=rose["benchmark_value"] + 0.05, production_ci=[0.80, 0.90], p_value_adjusted=0.001,
                changed=True)  # flagged, but the metric did not fall
    unflagged.update(production_value=unflagged["benchmark_value"] - 0.3, production_ci=[0.30, 0.50],
                     p_value_adjusted=0.001, changed=False)
    concept = _by_kind(rank_limitations(audit), "concept_shift")
    overall = next(lim for lim in concept if lim.slice is None)
    assert overall.score == pytest.approx(0.12) and overall.severity == "high"
    assert "0.74 [0.70, 0.78]" in overall.statement and "n=800" in overall.statement
    assert {lim.slice for lim in concept} == {None, fell["name"]}
    within = next(lim for lim in concept if lim.slice == fell["name"])
    assert within.score == pytest.approx(fell["production_share"] * 0.2, abs=1e-6)
    assert f"Within {fell['title']}" in within.statement and within.definition == fell["definition"]


def test_lower_is_better_metric_flips_the_gap():
    audit = {"overall": {"metric": "fpr", "benchmark_value": 0.05},
             "slices": [{"name": "heavy compression", "metric": "fpr", "benchmark_value": 0.20,
                         "benchmark_ci": [0.15, 0.26], "gap_p_value_adjusted": 0.001, "production_share": 0.4,
                         "underperforming": True}]}
    (lim,) = rank_limitations(audit)
    assert lim.kind == "underperforming_slice" and lim.score == pytest.approx(0.4 * 0.15)


def test_label_quality_findings(audit):
    lq = audit["label_quality"]
    heavy = next(a for a in lq["annotators"] if a["over_cap"] is True)
    spam = next(a for a in lq["annotators"] if a["near_chance"] is True)
    quality = _by_kind(rank_limitations(audit), "label_quality")
    assert {lim.key for lim in quality} == {"label_quality:agreement", f"label_quality:annotator {heavy['id']}",
                                            "label_quality:near_chance_annotators"}
    text = " ".join(lim.statement for lim in quality)
    lo, hi = lq["alpha_ci"]
    assert f"{lq['krippendorff_alpha']:.2f} [{lo:.2f}, {hi:.2f}]" in text and f"n={lq['agreement']['n_items']:,}" in text  # the items behind α
    assert f"Annotator {heavy['id']} gave {_pct(heavy['share'])}" in text and f"Annotators {spam['id']} (" in text
    # the flat fields are read: change them and the statements follow; a second near-chance annotator is named
    lq.update(krippendorff_alpha=0.41, alpha_ci=[0.35, 0.47])
    other = next(a for a in lq["annotators"] if a is not heavy and a is not spam)
    other.update(near_chance=True, agreement=0.52)
    lq["source_disagreement"] = {"rate": 0.05, "ci": [0.04, 0.06], "n": 4028, "sources": ["local", "central"]}
    text = " ".join(lim.statement for lim in _by_kind(rank_limitations(audit), "label_quality"))
    assert "0.41 [0.35, 0.47]" in text and f"Annotators {spam['id']}, {other['id']} (" in text
    assert "local and central disagree on 5 % [4 %, 6 %]" in text


def test_ranking_is_deterministic(audit, copy_of):
    assert rank_limitations(audit) == rank_limitations(copy_of(audit))


def test_nan_floats_and_none_are_equivalent(audit, copy_of):
    with_nan = copy_of(audit)
    with_nan["overall"]["production_value"] = math.nan
    with_nan["label"]["estimated_performance"]["methods"]["prior_reweighted"]["metrics"]["sensitivity"]["ci_low"] = math.nan
    audit["label"]["estimated_performance"]["methods"]["prior_reweighted"]["metrics"]["sensitivity"]["ci_low"] = None
    assert rank_limitations(with_nan) == rank_limitations(audit)


def test_fixture_is_an_audit_result_whose_limitations_the_ranking_reproduces(audit):
    """The fixture is the one typed shape; ranking it gives the keys stored in it (each stored
    limitation, plus the findings the pipeline folded into it), and folding as stored gives back
    the stored limitations and verdict exactly."""
    from reports.grouping import Relation, fold

    model = AuditResult.model_validate(audit)
    assert model.model_dump(mode="json")["limitations"] == audit["limitations"]
    stored = audit["limitations"]
    related = [(r, lim) for lim in stored for r in lim["related"]]
    ranked = rank_limitations(audit)
    assert sorted(lim.key for lim in ranked) == sorted([lim["key"] for lim in stored] + [r["key"] for r, _ in related])
    folded = fold(ranked, [Relation(r["key"], lim["key"], r["reason"], r.get("note", "")) for r, lim in related])
    again = json.loads(json.dumps([lim.to_dict() for lim in folded]))
    # Everything but the wording is identical; statements may only have grown since the fixture was
    # written (the stored covariate statement predates the sentence stating its assumed loss).
    assert [{**lim, "statement": ""} for lim in again] == [{**lim, "statement": ""} for lim in stored]
    assert all(a["statement"].startswith(b["statement"].rstrip(".")) for a, b in zip(again, stored))
    assert verdict(audit, folded) == audit["verdict"]
    with pytest.raises(ValueError):  # the contract is closed where it is ours
        AuditResult.model_validate(dict(audit, verdict=dict(audit["verdict"], extra_field=1)))


def test_hostile_and_huge_fixtures_keep_the_typed_shape(hostile_audit, huge_audit):
    for derived in (hostile_audit, huge_audit):
        AuditResult.model_validate(derived)


@pytest.mark.slow
def test_regenerating_the_fixture_gives_the_same_findings(audit):
    """make_audit_example.py is deterministic enough: the same limitation keys (in order) and verdict."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).parent / "fixtures" / "make_audit_example.py"
    spec = importlib.util.spec_from_file_location("make_audit_example", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fresh = json.loads(json.dumps(module.make()))
    assert [lim["key"] for lim in fresh["limitations"]] == [lim["key"] for lim in audit["limitations"]]
    assert fresh["verdict"] == audit["verdict"]
