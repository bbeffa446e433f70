"""The monitors' e-detectors: their false-alarm guarantee under no change, their power after one.

The guarantee is Doob's inequality on the Shiryaev–Roberts statistic: under no change
``E[R_n] = n``, so the chance that it reaches ``A`` within ``N`` runs is at most ``N / A``. The
tests simulate many monitors at a small ``A`` (so the bound is not vacuous) and hold the alarm rate
to it, plus a Monte-Carlo tolerance.
"""
from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from detectors import accuracy_drop, e_detector, rank_shift
from detectors.accuracy_drop import drop_start, drop_update
from detectors.e_detector import arl_threshold, log_mixture, sr_start, sr_update
from detectors.rank_shift import normal_scores, shift_start, shift_update


@pytest.mark.parametrize("module", [e_detector, accuracy_drop, rank_shift])
def test_docstring_examples_run(module):
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0 and outcome.failed == 0


def _mc_bound(bound, n):
    return bound + 3 * math.sqrt(bound * (1 - bound) / n)


def test_drop_detector_alarm_rate_under_no_drop_is_within_doobs_bound():
    """Random benchmarks: the bound holds with the benchmark's own sampling error in it."""
    rng, runs, threshold, monitors = np.random.default_rng(1), 20, 100.0, 400
    alarms = 0
    for _ in range(monitors):
        state = drop_start(rng.binomial(1000, 0.76), 1000)
        for _ in range(runs):
            state, ev = drop_update(state, rng.binomial(70, 0.76), 70)
            if ev.log_statistic >= math.log(threshold):
                alarms += 1
                break
    assert alarms / monitors <= _mc_bound(runs / threshold, monitors)


def test_drop_detector_never_alarms_on_a_rise():
    state = drop_start(700, 1000)
    for _ in range(50):
        state, ev = drop_update(state, 60, 70)  # 0.86 against 0.70
    assert ev.log_statistic < 0 and ev.n_since == 0


def test_drop_detector_accumulates_evidence_since_the_change():
    """A 10-point drop in a slice of 70 rows a run is found at the monitor's full threshold within
    a dozen runs in most monitors, and its statistic keeps growing (it forgets nothing since the change)."""
    rng, threshold = np.random.default_rng(2), arl_threshold(0.05, horizon=52, weight=0.5 / 6)
    delays = []
    for _ in range(100):
        state = drop_start(rng.binomial(2000, 0.76), 2000)
        for run in range(1, 31):
            state, ev = drop_update(state, rng.binomial(70, 0.66), 70)
            if ev.log_statistic >= math.log(threshold):
                delays.append(run)
                break
    assert len(delays) >= 90 and float(np.median(delays)) <= 12


def test_drop_detector_resumes_from_its_json_state():
    import json

    rng = np.random.default_rng(3)
    counts = rng.binomial(70, 0.7, size=10)
    state = drop_start(760, 1000)
    for c in counts[:5]:
        state, _ = drop_update(state, c, 70)
    state = json.loads(json.dumps(state))
    resumed, straight = state, drop_start(760, 1000)
    for c in counts[5:]:
        resumed, a = drop_update(resumed, c, 70)
    for c in counts:
        straight, b = drop_update(straight, c, 70)
    assert a == b


@pytest.mark.slow
def test_drop_detector_alarm_rate_in_a_small_slice_near_one_is_within_doobs_bound():
    """50 benchmark rows at 0.92, 12 a run: a proportion near 1 over a few rows is skewed low, and a
    normal model of the proportions themselves read that skew as drops (23 % of these monitors
    alarmed against Doob's 10 %); the arcsine scale is nearly symmetric."""
    rng, runs, threshold, monitors = np.random.default_rng(7), 30, 300.0, 600
    alarms = 0
    for _ in range(monitors):
        state = drop_start(rng.binomial(50, 0.92), 50)
        for _ in range(runs):
            state, ev = drop_update(state, rng.binomial(12, 0.92), 12)
            if ev.log_statistic >= math.log(threshold):
                alarms += 1
                break
    assert alarms / monitors <= _mc_bound(runs / threshold, monitors)


def test_drop_evidence_grows_no_faster_than_the_kullback_leibler_divergence():
    """No e-process for a simple null grows faster, on average, than the divergence of the truth from
    it: a rate above it bets on a variance smaller than the drop's own (the proportions' normal model
    grew at 0.031 a row against 0.028 here). A benchmark of a million rows leaves no benchmark error."""
    p, q, rng, rates = 0.8, 0.7, np.random.default_rng(8), []
    divergence = q * math.log(q / p) + (1 - q) * math.log((1 - q) / (1 - p))
    for _ in range(20):
        state = drop_start(800_000, 1_000_000)
        for _ in range(100):
            state, ev = drop_update(state, rng.binomial(100, q), 100)
        rates.append(ev.log_statistic / 10_000)
    assert 0.85 * divergence <= np.mean(rates) <= divergence  # near the best any e-process can do, not above


def test_a_state_from_the_proportions_scale_starts_over():
    old = {"p_benchmark": 0.76, "counts": [760, 1000], "pq": 0.1824, "drops": [0.05, 0.1, 0.2],
           "total": [-400.0, 2000.0], "suffix": [[-400.0, 2000.0, 200, 280]]}
    state, ev = drop_update(old, 53, 70)
    assert state["scale"] == accuracy_drop.SCALE and len(state["suffix"]) == 1 and ev.log_statistic < 1


def test_drop_detector_refuses_bad_counts():
    with pytest.raises(ValueError, match="successes"):
        drop_start(12, 10)
    with pytest.raises(ValueError, match="drops"):
        drop_start(5, 10, drops=(1.5,))
    with pytest.raises(ValueError, match=r"successes must be a finite number in \[0, 7\], got 8"):
        drop_update(drop_start(5, 10), 8, 7)


@pytest.mark.slow
def test_shift_detector_alarm_rate_under_no_shift_is_within_doobs_bound():
    """Random benchmarks too: the margin covers the benchmark's own sampling error."""
    rng, runs, threshold, monitors = np.random.default_rng(4), 20, 100.0, 300
    alarms = 0
    for _ in range(monitors):
        reference = rng.exponential(size=2000)  # skewed: the scores do not care
        state = shift_start(len(reference))
        for _ in range(runs):
            state, ev = shift_update(state, normal_scores(reference, rng.exponential(size=500)))
            if ev.log_statistic >= math.log(threshold):
                alarms += 1
                break
    assert alarms / monitors <= _mc_bound(runs / threshold, monitors)


def test_shift_detector_catches_a_third_of_a_standard_deviation_within_two_runs():
    """At the threshold of one of 20 features holding an eighth of the monitor's budget."""
    rng, threshold = np.random.default_rng(5), arl_threshold(0.05, horizon=52, weight=0.125 / 20)
    caught = 0
    for _ in range(100):
        reference, state = rng.normal(size=2000), shift_start(2000)
        for _ in range(2):
            state, ev = shift_update(state, normal_scores(reference, rng.normal(0.3, 1, size=500)))
        caught += ev.log_statistic >= math.log(threshold) and ev.direction == "up"
    assert caught >= 90


def test_a_benchmark_that_reads_high_is_not_harm_run_after_run():
    """A benchmark 2.5 standard errors above the truth (about 1 in 160 benchmarks): a detector taking
    its value as the truth alarms in every monitor within 40 runs; counting its error, in a few."""
    rng, runs, threshold, monitors = np.random.default_rng(6), 40, 1000.0, 200
    p, n_bench = 0.76, 300
    high = (p + 2.5 * math.sqrt(p * (1 - p) / n_bench)) * n_bench

    def alarm_rate(successes, n):
        alarms = 0
        for _ in range(monitors):
            state = drop_start(successes, n)
            for _ in range(runs):
                state, ev = drop_update(state, rng.binomial(90, p), 90)
                if ev.log_statistic >= math.log(threshold):
                    alarms += 1
                    break
        return alarms / monitors

    assert alarm_rate(high * 10**6, n_bench * 10**6) >= 0.9  # the benchmark's value taken as the truth
    assert alarm_rate(round(high), n_bench) <= 0.3


def test_normal_scores_of_ties_shrink_not_grow():
    reference = np.repeat([0.0, 1.0, 2.0], 300)
    scores = normal_scores(reference, np.repeat([0.0, 1.0, 2.0], 100))
    assert abs(scores.mean()) < 1e-9 and scores.std() < 1


def test_sr_core_mixture_and_threshold():
    log_r = sr_update(sr_start(2), [math.log(4.0), -50.0])
    assert math.isclose(math.exp(log_mixture(log_r)), (4.0 + math.exp(-50.0)) / 2, rel_tol=1e-9)
    assert arl_threshold(0.05, horizon=52) == pytest.approx(1040.0)
    with pytest.raises(ValueError, match="weight"):
        arl_threshold(0.05, horizon=52, weight=0)
    with pytest.raises(ValueError, match="weights"):
        log_mixture([0.0, 0.0], [0.8, 0.8])
