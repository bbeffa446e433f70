"""Multiple-testing corrections: hand-computed values and the properties every correction needs."""
from __future__ import annotations

import numpy as np
import pytest

from detectors.base import ShiftTest
from detectors.correction import adjust_pvalues, benjamini_hochberg, bonferroni, holm, is_shift, readjust

# Worked by hand: p * m / rank, then a running minimum from the largest p down.
BH_INPUT = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216]
BH_EXPECTED = [0.01, 0.04, 0.084, 0.084, 0.084, 0.1, 0.074 * 10 / 7, 0.216, 0.216, 0.216]


def test_bh_known_values():
    np.testing.assert_allclose(benjamini_hochberg(BH_INPUT), BH_EXPECTED, rtol=1e-12)
    np.testing.assert_allclose(benjamini_hochberg([0.01, 0.02, 0.03, 0.04, 0.05]), [0.05] * 5)


def test_holm_known_values():
    # sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1 -> running max 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])


def test_bonferroni_known_values_and_cap():
    np.testing.assert_allclose(bonferroni([0.01, 0.3, 0.5]), [0.03, 0.9, 1.0])


def test_nan_is_not_a_hypothesis():
    out = benjamini_hochberg([0.01, np.nan, 0.04])
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.04])


@pytest.mark.parametrize("method", ["bh", "holm", "bonferroni"])
def test_properties_on_random_pvalues(method):
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.random(rng.integers(1, 40)) ** 2
        adjusted = adjust_pvalues(p, method)
        assert np.all(adjusted >= p - 1e-15), "an adjusted p-value is never below the raw one"
        assert np.all((adjusted >= 0) & (adjusted <= 1))
        order = np.argsort(p)
        assert np.all(np.diff(adjusted[order]) >= -1e-15), "adjustment keeps the order of the p-values"


def test_bh_is_least_and_bonferroni_most_conservative():
    rng = np.random.default_rng(1)
    p = rng.random(30) ** 3
    assert np.all(benjamini_hochberg(p) <= holm(p) + 1e-15)
    assert np.all(holm(p) <= bonferroni(p) + 1e-15)


def test_bh_any_rejection_rate_under_global_null_is_alpha():
    """Under the global null, "any BH-adjusted p < alpha" is Simes' test: rate = alpha exactly
    for independent p-values. 4,000 families of 20: binomial sd 0.0034."""
    rng = np.random.default_rng(2)
    families = rng.random((4000, 20))
    rate = np.mean([benjamini_hochberg(row).min() < 0.05 for row in families])
    assert abs(rate - 0.05) < 0.013


def test_invalid_inputs():
    with pytest.raises(ValueError):
        benjamini_hochberg([0.5, 1.5])
    with pytest.raises(ValueError, match="correction must be one of"):
        adjust_pvalues([0.1], "sidak-ish")


def test_is_shift_needs_significance_and_effect():
    got = is_shift([0.01, 0.01, 0.2, np.nan], [0.5, 0.01, 0.5, 0.5], alpha=0.05, effect_floor=0.1)
    assert got.tolist() == [True, False, False, False]
    assert is_shift([0.01], [-0.3], alpha=0.05, effect_floor=0.1).tolist() == [True]  # |effect|


def _record(name, p, effect, floor):
    return ShiftTest(name, "ks", 0.0, p, p, effect, "wasserstein_normed", floor, 100, 100, False)


def test_readjust_corrects_a_family_with_per_test_floors():
    tests = [_record("a", 0.001, 0.5, 0.1), _record("b", 0.02, 0.5, 0.1), _record("c", 0.001, 0.05, 0.1)]
    out = readjust(tests, alpha=0.05, correction="bonferroni")
    assert [t.p_value_adjusted for t in out] == pytest.approx([0.003, 0.06, 0.003])
    assert [t.drifted for t in out] == [True, False, False]
    assert tests[0].drifted is False, "records are immutable: readjust returns new ones"


def test_parameter_validation_knows_every_correction():
    """``check_correction`` names the corrections without importing them (no import cycle): keep the lists equal."""
    from detectors.base import CORRECTION_NAMES
    from detectors.correction import CORRECTIONS

    assert sorted(CORRECTION_NAMES) == sorted(CORRECTIONS)
