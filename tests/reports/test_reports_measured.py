"""A covariate shift's severity is the loss measured on labelled production when there is one
(real case: carData/Arrests, benchmark 1997-2000 against production 2001-2002)."""
from __future__ import annotations

import pytest

from detectors.intervals import newcombe_interval, wilson_interval
from reports import rank_limitations
from reports.measured import measured_overall
from reports.result import as_evidence


def _label(audit, b, nb, p, np_):
    """Overall sensitivity on both sides from counts, with Wilson CIs (as the pipeline reports it)."""
    audit["overall"].update({"metric": "sensitivity", "benchmark_value": b / nb, "n": nb,
                             "benchmark_ci": list(wilson_interval(b, nb)), "production_value": p / np_,
                             "production_ci": list(wilson_interval(p, np_)), "n_production": np_})


def _covariate(audit):
    return next(lim for lim in rank_limitations(audit) if lim.kind == "covariate_shift")


def test_the_loss_interval_is_newcombes_for_two_proportions(audit):
    _label(audit, 26, 306, 11, 260)  # Arrests: sensitivity 0.085 -> 0.042
    change = measured_overall(as_evidence(audit))
    low, high = newcombe_interval(11, 260, 26, 306)  # benchmark minus production
    assert change.loss == pytest.approx(26 / 306 - 11 / 260)
    assert change.loss_ci == pytest.approx((low, high))


def test_unlabelled_production_keeps_the_assumed_gap_and_says_so(audit):
    audit["overall"].update({"production_value": None, "production_ci": None})
    lim = _covariate(audit)
    assert "Nothing here measures the model's loss" in lim.statement and "assumed gap" in lim.evidence["severity_basis"]
    assert lim.evidence["measured"] is None


def test_a_large_measured_loss_is_stated_but_not_claimed_by_the_shift(audit):
    """The overall loss has every cause of the audit in it (weak slices, untested contexts), so a shift
    keeps its assumed loss when the measured one is larger; the statement gives both."""
    effect = min(max(t["effect_size"] for t in audit["covariate"]["features"] if t["drifted"]), 1.0)
    _label(audit, 250, 300, 180, 300)
    lim = _covariate(audit)
    assert lim.score == pytest.approx(effect * 0.05, abs=1e-6)
    assert "Measured on the labelled production rows" in lim.statement and "a loss of 0.23" in lim.statement
    assert "Nothing here measures" not in lim.statement and "The shift itself is scored" in lim.statement


def test_a_measured_loss_within_sampling_error_caps_the_shift(audit):
    """Measured beats assumed: production labelled, loss 0.00 → the shift is stated, with a low severity
    that rests on the measurement (it failed before: the assumed loss made it medium or high); a loss
    within sampling error is not a decided loss, and the statement says its cost cannot be told."""
    _label(audit, 25_000, 30_000, 25_010, 30_000)
    lim = _covariate(audit)
    assert lim.score == 0.0 and lim.severity == "low" and lim.claim == "change"
    assert "within sampling error" in lim.statement and "cannot be told" in lim.statement
    assert "measured loss" in lim.evidence["severity_basis"] and "assumed" not in lim.evidence["severity_basis"]


def test_a_feature_without_common_values_gets_the_time_index_hint(audit):
    drifted = next(t for t in audit["covariate"]["features"] if t["drifted"])
    assert "no value in common" not in _covariate(audit).statement
    drifted["details"]["ks_statistic"] = 1.0  # disjoint ranges, as a year column has between two periods
    assert f"The column {drifted['name']} has no value in common with the benchmark" in _covariate(audit).statement


def test_a_credible_gain_is_not_read_as_sampling_error(audit):
    """Real case (DAAG/nassCDS, 1997-1999 against 2001-2002): balanced accuracy rose 0.71 -> 0.78 with an
    interval clear of zero, and the shift's statement called the loss "-0.07 [-0.12, -0.02] within sampling error"."""
    _label(audit, 700, 1000, 790, 1000)
    sentence = measured_overall(as_evidence(audit)).sentence()
    assert "production is better by 0.09" in sentence and "within sampling error" not in sentence
