"""Online testing (LORD++) and the one-sided proportion gain: decisions fixed by the past only,
error rates over seeds, the docstring example."""
from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy import stats

import detectors
from detectors import online_testing
from detectors.base import DetectorInputError
from detectors.online_testing import lord_plus_plus, proportion_gain


def test_docstring_examples_run():
    outcome = doctest.testmod(online_testing, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0 and outcome.failed == 0


def test_exported_from_the_package():
    assert detectors.lord_plus_plus is lord_plus_plus and "proportion_gain" in detectors.__all__


def test_a_prefix_is_decided_the_same_whatever_follows():
    """The defining property: adding tests never changes the levels or decisions of earlier ones."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(2, 15))
        p = np.where(rng.random(m) < 0.4, rng.uniform(0, 0.01, m), rng.uniform(size=m))
        full = lord_plus_plus(p, alpha=0.05)
        for k in range(1, m):
            part = lord_plus_plus(p[:k], alpha=0.05)
            assert part.levels == full.levels[:k] and part.rejected == full.rejected[:k]


def test_levels_depend_on_past_rejections_only():
    a = lord_plus_plus([0.001, 0.9, 0.5])
    b = lord_plus_plus([0.001, 0.2, 0.0])
    assert a.levels[:2] == b.levels[:2]
    more = lord_plus_plus([0.001, 0.001, 0.5]).levels[2]
    assert more > a.levels[2]  # a rejection earns wealth back


def _consecutive_gain_pvalues(rng, rounds: int, sims: int) -> np.ndarray:
    """One-sided p-values of round k vs k-1 on unchanged rounds: consecutive tests share a round."""
    means = rng.normal(size=(sims, rounds))
    z = (means[:, 1:] - means[:, :-1]) / np.sqrt(2)
    return stats.norm.sf(z)


@pytest.mark.slow
def test_chance_of_any_false_claim_when_nothing_improves_is_at_most_half_alpha():
    """Global null, 8 rounds (7 dependent tests): the union bound gives <= w0 = alpha / 2."""
    rng = np.random.default_rng(1)
    p = _consecutive_gain_pvalues(rng, 8, 20000)
    hits = np.mean([any(lord_plus_plus(row, alpha=0.05).rejected) for row in p])
    assert hits <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / len(p))


@pytest.mark.slow
def test_false_discovery_rate_with_real_gains_then_none():
    """Two real gains (z = 3.5) then six unchanged rounds: FDR over seeds <= alpha."""
    rng = np.random.default_rng(2)
    sims, fdp, found = 5000, [], []
    for _ in range(sims):
        means = rng.normal(size=9) + np.r_[0, 3.5, 7.0, np.full(6, 7.0)] * np.sqrt(2)
        z = (means[1:] - means[:-1]) / np.sqrt(2)
        out = lord_plus_plus(stats.norm.sf(z), alpha=0.05)
        rejected = np.array(out.rejected)
        false = rejected[2:].sum()
        fdp.append(false / max(rejected.sum(), 1))
        found.append(rejected[:2].mean())
    assert np.mean(fdp) <= 0.05
    assert np.mean(found) >= 0.8  # the early levels leave real power for the first rounds


def test_proportion_gain_holds_its_level_and_sees_a_gain():
    rng = np.random.default_rng(3)
    k = rng.binomial(800, 0.7, size=(4000, 2))
    p = np.array([proportion_gain(a, 800, b, 800).p_value for a, b in k])
    assert np.mean(p <= 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / len(p))
    gain = proportion_gain(1400, 2000, 1500, 2000)
    assert gain.p_value < 1e-3 and gain.ci_low > 0 and gain.difference == pytest.approx(0.05)
    fall = proportion_gain(300, 1000, 200, 1000, lower_is_better=True)
    assert fall.p_value < 1e-6 and fall.difference < 0
    assert proportion_gain(10, 10, 10, 10).p_value == 1.0


@pytest.mark.parametrize("kwargs", [{"alpha": 0}, {"alpha": 1.5}, {"alpha": 0.05, "w0": 0.06}, {"w0": -1}])
def test_invalid_parameters_are_named(kwargs):
    with pytest.raises(DetectorInputError, match="alpha|w0"):
        lord_plus_plus([0.5], **kwargs)


def test_invalid_inputs():
    with pytest.raises(DetectorInputError, match="p_values"):
        lord_plus_plus([1.5])
    with pytest.raises(DetectorInputError, match=r"k1 must be a finite number in \[0, 4\], got 5"):
        proportion_gain(5, 4, 1, 2)
    assert lord_plus_plus([None, 0.0]).rejected == (False, True)
