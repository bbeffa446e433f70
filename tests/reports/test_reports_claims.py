"""Claims: each limitation states its statistic, test or interval and rule; "change" versus "standing"
is decided by a change test or an interval, never by point values; the verdict reads change first."""
from __future__ import annotations

import numpy as np
import pytest

from reports import conclude, rank_limitations, render_html, verdict
from reports.findings_base import make_limitation
from reports.findings_inputs import _feature_phrase
from reports.limitations import decided, sample_size, undecided_notes
from reports.records import make_decision
from reports.result import ShiftTest


def _weak_audit(**slice_fields):
    s = {"name": "weak", "definition": 'site == "x"', "benchmark_value": 0.60, "benchmark_ci": [0.50, 0.70],
         "n_benchmark": 300, "gap_p_value_adjusted": 0.001, "production_share": 0.2, "benchmark_share": 0.1,
         "underperforming": True, "status": "ok"}
    s.update(slice_fields)
    return {"overall": {"metric": "accuracy", "benchmark_value": 0.80, "benchmark_ci": [0.78, 0.82], "n": 3000},
            "benchmark": {"n_rows": 3000}, "production": {"n_rows": 3000}, "slices": [s]}


def _weak(audit):
    return next(lim for lim in rank_limitations(audit) if lim.kind == "underperforming_slice")


def test_a_slice_weak_on_the_benchmark_is_standing_by_its_interval():
    lim = _weak(_weak_audit())
    assert lim.claim == "standing" and "The benchmark shows the same weakness" in lim.statement
    assert list(lim.decision.interval) == [0.50, 0.70] and lim.decision.test == "gap test"


def test_a_point_value_below_overall_does_not_make_a_change():
    """Benchmark point 0.74 < 0.80 but its interval reaches 0.85, production point 0.6, no change test:
    nothing decides a change, so it is standing (not a change because a point dipped)."""
    lim = _weak(_weak_audit(benchmark_value=0.74, benchmark_ci=[0.63, 0.85], production_value=0.6,
                            production_ci=[0.55, 0.65], gap_dataset="production", gap=0.2))
    assert lim.claim == "standing" and "No benchmark → production change test" in lim.statement


def test_a_slice_whose_change_test_shows_a_drop_is_a_change():
    lim = _weak(_weak_audit(benchmark_value=0.78, benchmark_ci=[0.70, 0.86], production_value=0.55,
                            production_ci=[0.50, 0.60], p_value_adjusted=0.001, p_value_test="change", changed=True,
                            gap_dataset="production", gap=0.25))
    assert lim.claim == "change" and "It got worse in production" in lim.statement


def test_every_limitation_of_the_fixture_is_decided(audit):
    for lim in rank_limitations(audit):
        d = lim.decision
        assert d.rule and (d.test or d.interval), lim.key
        # a weak slice is standing unless more of production moved into it (its share test decides that)
        grew = lim.kind == "underperforming_slice" and lim.evidence.get("change_basis") == "share"
        assert lim.claim == ("standing" if lim.kind in ("benchmark_saturation", "label_quality")
                             or (lim.kind == "underperforming_slice" and not grew) else "change"), lim.key


def test_a_weak_slice_whose_share_grew_is_a_change_decided_by_its_share_test(audit):
    """The benchmark shows Fitzpatrick V–VI as weak, and production holds five times as much of it: the
    weakness is old, its weight is new. That is a change (it alerts), decided by the share test, and its
    statement no longer calls it "a standing limitation"."""
    lim = next(lim for lim in rank_limitations(audit) if lim.key == "underperforming_slice:fitzpatrick in [5, 6]")
    assert lim.claim == "change" and lim.decision.test and "share" in lim.decision.statistic
    assert "a standing limitation, not a change" not in lim.statement
    assert "More of production is here than on the benchmark (3 % → 15 %" in lim.statement


def test_a_finding_without_test_or_interval_is_a_note():
    lim = make_limitation("covariate_shift", None, "t", "S.", 0.02, {}, subject="inputs",
                          decision=make_decision("effect", 0.3, rule="a rule"))
    assert not decided(lim)
    assert decided(make_limitation("covariate_shift", None, "t", "S.", 0.02, {}, subject="inputs",
                                   decision=make_decision("effect", 0.3, test="ks", rule="a rule")))
    assert undecided_notes({}) == []


def test_a_standing_only_audit_does_not_say_do_not_rely(audit):
    ranked = [lim for lim in rank_limitations(audit) if lim.claim == "standing"]
    v = verdict({"covariate": {"features": [{"name": "x", "status": "ok", "p_value": 0.5}]}}, ranked).to_dict()
    assert v["status"] == "no_shift" and "Do not rely" not in v["summary"]
    assert v["summary"].startswith("No change from the benchmark was detected")
    assert "Standing limitations (model card" in v["summary"]


@pytest.mark.slow
def test_the_html_groups_standing_limitations_after_the_changes(audit):
    html = render_html(conclude(audit, rank_limitations(audit)))
    assert html.index('id="limitations"') < html.index('id="standing"') < html.index('id="covariate"')
    assert "Decided by:" in html and "Standing limitations (model card)" in html


@pytest.mark.parametrize("n_b, n_p", [(40, 28), (200, 150), (1000, 1000)])
def test_the_minimal_detectable_change_has_its_power(n_b, n_p):
    """At the reported minimal detectable change, a two-proportion z-test at α = 0.05 rejects in ≈ 80 %
    of simulated samples (the sample-size statement is right, not decorative)."""
    from scipy import stats

    size = sample_size({"benchmark": {"n_rows": n_b}, "production": {"n_rows": n_p},
                        "overall": {"benchmark_value": 0.8, "metric": "accuracy"}})
    delta = size["minimal_detectable_change"]
    rng = np.random.default_rng(0)
    k1 = rng.binomial(n_b, 0.8, 4000)
    k2 = rng.binomial(n_p, 0.8 - delta, 4000)
    pooled = (k1 + k2) / (n_b + n_p)
    z = (k1 / n_b - k2 / n_p) / np.sqrt(pooled * (1 - pooled) * (1 / n_b + 1 / n_p))
    power = np.mean(2 * stats.norm.sf(np.abs(z)) < 0.05)
    assert 0.7 < power < 0.9, power


def test_means_are_printed_as_people_write_them():
    t = ShiftTest(name="year", kind="feature", effect_name="wasserstein_normed", effect_size=1.0,
                  p_value_adjusted=1e-9, details={"mean_reference": 1998.4, "mean_current": 2001.6})
    phrase = _feature_phrase(t)
    assert "mean 1,998 → 2,002" in phrase and "e+03" not in phrase


def test_a_population_is_credibly_worse_only_when_the_difference_excludes_zero():
    """All of production in a new context read "Do not rely" (high) on 0.71 [0.68, 0.75] against a
    benchmark of 0.76 [0.71, 0.82]: the production interval lay below the benchmark's point value,
    but the benchmark's own interval was ignored, and the difference's interval reaches past 0."""
    from reports.findings_base import credibly_worse

    assert credibly_worse([0.68, 0.75], 0.76, "balanced_accuracy") is True  # against a known constant
    assert credibly_worse([0.68, 0.75], 0.76, "balanced_accuracy", value=0.71, reference_ci=[0.71, 0.82]) is False
    assert credibly_worse([0.57, 0.63], 0.76, "balanced_accuracy", value=0.60, reference_ci=[0.71, 0.82]) is True
    assert credibly_worse([0.30, 0.36], 0.20, "error_rate", value=0.33, reference_ci=[0.17, 0.23]) is True
    assert credibly_worse([0.18, 0.30], 0.20, "error_rate", value=0.24, reference_ci=[0.17, 0.23]) is False
