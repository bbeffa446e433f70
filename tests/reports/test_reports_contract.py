"""The ranked limitations as a contract: their record shape, the verdict built on them, saturation,
stable keys, determinism, and the typed fixtures (the ranking itself: test_reports_limitations.py)."""
from __future__ import annotations

import json
import math

import pytest

import reports
from reports import AuditResult, LimitationRecord, rank_limitations, verdict
from reports.records import SEVERITY_ORDER
from reports.result import Verdict
from tests.reports.test_reports_limitations import _by_kind, _pct


def test_rejects_non_mapping():
    with pytest.raises(TypeError):
        rank_limitations([1, 2])


def test_to_dict_is_json_ready_and_has_spec_keys(audit):
    audit["slices"][0]["benchmark_ci"] = [0.52, float("nan")]
    for lim in rank_limitations(audit):
        d = lim.to_dict()
        # the order the AuditResult stores them in
        assert list(d) == ["rank", "key", "kind", "slice", "definition", "severity", "score", "title", "statement",
                           "evidence", "related", "claim", "decision"]
        assert d["claim"] in ("change", "standing") and d["decision"]["rule"]
        assert d["key"].startswith(d["kind"] + ":")
        json.dumps(d, allow_nan=False)
        assert d["severity"] in ("low", "medium", "high") and isinstance(d["score"], float)


def test_limitations_are_frozen(audit):
    lim = rank_limitations(audit)[0]
    assert isinstance(lim, LimitationRecord)
    with pytest.raises(ValueError):  # frozen
        lim.rank = 5


def test_one_limitation_type_from_ranking_to_storage(audit):
    """What the ranking builds is what the AuditResult stores: the same record, unchanged by storing."""
    ranked = rank_limitations(audit)
    stored = AuditResult.model_validate_json(json.dumps({**audit, "limitations": [lim.to_dict() for lim in ranked]}))
    assert stored.limitations == ranked
    with pytest.warns(DeprecationWarning, match="LimitationRecord"):
        assert reports.Limitation is LimitationRecord


def test_the_verdict_is_the_record_the_result_stores(audit):
    """``verdict()`` returns the typed Verdict the AuditResult holds, not a dict to be validated again;
    indexing it like the former dict still works, with a DeprecationWarning."""
    ranked = rank_limitations(audit)
    v = verdict(audit, ranked)
    assert isinstance(v, Verdict)
    stored = AuditResult.model_validate_json(json.dumps({**audit, "verdict": v.to_dict()}))
    assert stored.verdict == v
    with pytest.warns(DeprecationWarning, match="verdict.summary"):
        assert v["summary"] == v.summary
    with pytest.warns(DeprecationWarning), pytest.raises(KeyError):
        v["no_such_field"]


def test_verdict_names_the_top_limitation(audit):
    ranked = rank_limitations(audit)
    v = verdict(audit, ranked).to_dict()
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
    standing = LimitationRecord(rank=1, key="underperforming_slice:x", kind="underperforming_slice", slice="x",
                                severity="high", score=0.1, title="weak on x", statement="", claim="standing")
    v = verdict({"covariate": {"features": [{"name": "x", "status": "ok", "p_value": 0.5}]}}, [standing]).to_dict()
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
    from reports.result import as_evidence

    audit["parameters"]["primary_metric"] = "accuracy"
    audit["overall"].update({"metric": "accuracy", "benchmark_value": 0.82, "benchmark_ci": [0.79, 0.84]})
    audit["label"]["benchmark_prior"] = {"0": 0.84, "1": 0.16}

    def note():
        context = RankingContext.from_audit(audit, saturation_threshold=None, alpha=None, priors=None)
        return saturation_note(as_evidence(audit), context)

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
    assert f"{lq['krippendorff_alpha']:.2f} [{lo:.2f}, {hi:.2f}]" in text
    assert f"n={lq['agreement']['n_items']:,}" in text  # the items behind α
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
    def sensitivity(result):
        return result["label"]["estimated_performance"]["methods"]["prior_reweighted"]["metrics"]["sensitivity"]

    sensitivity(with_nan)["ci_low"] = math.nan
    sensitivity(audit)["ci_low"] = None
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
    assert verdict(audit, folded).to_dict() == audit["verdict"]
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
