"""Per-feature statistics against scipy, on continuous data, ties, and both p-value regimes."""
from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy import stats

from detectors.univariate import (
    chi2_two_sample,
    cramers_v,
    cvm_pvalue,
    ecdf_gap_statistics,
    jensen_shannon_distance,
    ks_test,
    missing_rate_test,
    population_stability_index,
)

SAMPLES = {
    "equal_small": lambda rng: (rng.normal(size=200), rng.normal(0.2, 1, size=200)),
    "unequal_exact": lambda rng: (rng.normal(size=700), rng.standard_t(3, size=1300)),
    "asymptotic": lambda rng: (rng.normal(size=30_000), rng.normal(0.01, 1, size=12_000)),
    "ties": lambda rng: (rng.poisson(3, 900).astype(float), rng.poisson(3.3, 800).astype(float)),
    "heavy_ties_asymp": lambda rng: (rng.integers(0, 7, 15_000).astype(float),
                                     rng.integers(0, 7, 11_000).astype(float)),
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_ks_statistic_and_pvalue_equal_scipy(kind):
    ref, cur = SAMPLES[kind](np.random.default_rng(0))
    raw, _, _ = ecdf_gap_statistics(np.sort(ref), np.sort(cur))
    expected = stats.ks_2samp(ref, cur)
    d, p, method = ks_test(raw, ref.size, cur.size)
    assert d == expected.statistic  # same arithmetic: equal to the last bit
    assert p == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-300)
    assert method == ("asymp" if max(ref.size, cur.size) > 10_000 else "exact")


@pytest.mark.parametrize("n, nd2", [(10_001, 2.3), (20_000, 3.0), (100_000, 5.0), (300_000, 10.0),
                                    (50_000, 300.0)])
def test_ks_limit_region_is_conservative_and_close_to_scipy(n, nd2):
    """Where scipy's exact Smirnov sum costs O(n), the Kolmogorov limit replaces it."""
    d = np.sqrt(nd2 / n)
    _, p, method = ks_test(d, 2 * n, 2 * n)  # round(n1 n2 / (n1 + n2)) == n
    expected = stats.kstwo.sf(d, n)
    assert method == "asymp_limit"
    assert expected <= p, "conservative"
    if expected >= 1e-9:
        assert p <= expected * 1.03


def test_ks_pvalue_at_large_n_is_fast():
    import time

    start = time.perf_counter()
    for nd2 in np.linspace(2.3, 300, 20):
        ks_test(np.sqrt(nd2 / 500_000), 1_000_000, 1_000_000)
    assert time.perf_counter() - start < 0.5  # scipy's exact sum: about 2 s for each of these


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_wasserstein_equals_scipy(kind):
    ref, cur = SAMPLES[kind](np.random.default_rng(1))
    _, _, w = ecdf_gap_statistics(np.sort(ref), np.sort(cur))
    assert w == pytest.approx(stats.wasserstein_distance(ref, cur), rel=1e-9)


@pytest.mark.parametrize("kind", ["equal_small", "unequal_exact", "asymptotic"])
def test_cvm_equals_scipy_without_ties(kind):
    ref, cur = SAMPLES[kind](np.random.default_rng(2))
    _, t, _ = ecdf_gap_statistics(np.sort(ref), np.sort(cur))
    expected = stats.cramervonmises_2samp(ref, cur, method="asymptotic")
    assert t == pytest.approx(expected.statistic, rel=1e-9)
    assert cvm_pvalue(t, ref.size, cur.size) == pytest.approx(expected.pvalue, rel=1e-6, abs=1e-12)


def test_statistics_are_zero_for_identical_samples_and_symmetric():
    x = np.sort(np.random.default_rng(3).normal(size=300))
    assert ecdf_gap_statistics(x, x)[0] == 0.0 and ecdf_gap_statistics(x, x)[2] == 0.0
    y = np.sort(np.random.default_rng(4).normal(1, 2, size=200))
    d1, t1, w1 = ecdf_gap_statistics(x, y)
    d2, t2, w2 = ecdf_gap_statistics(y, x)
    assert (d1, w1) == pytest.approx((d2, w2)) and t1 == pytest.approx(t2)


def test_chi2_equals_scipy_contingency_when_no_merging_is_needed():
    ref, cur = np.array([120, 80, 45, 30]), np.array([100, 95, 60, 20])
    outcome = chi2_two_sample(ref, cur, list("abcd"))
    expected = stats.chi2_contingency(np.vstack([ref, cur]), correction=False)
    assert outcome.merged == ()
    assert outcome.statistic == pytest.approx(expected.statistic, rel=1e-12)
    assert outcome.p_value == pytest.approx(expected.pvalue, rel=1e-12)
    assert outcome.dof == expected.dof == 3


def test_sparse_categories_are_pooled_and_statistic_matches_scipy_on_pooled_table():
    ref = np.array([400, 300, 3, 1, 0, 150])
    cur = np.array([380, 320, 2, 4, 3, 140])
    outcome = chi2_two_sample(ref, cur, ["a", "b", "rare1", "rare2", "new", "c"])
    assert set(outcome.merged) == {"rare1", "rare2", "new"}
    assert outcome.labels == ("a", "b", "c", "<other>")
    assert outcome.table.sum() == ref.sum() + cur.sum(), "pooling keeps every observation"
    expected = stats.chi2_contingency(outcome.table, correction=False)
    assert outcome.statistic == pytest.approx(expected.statistic, rel=1e-12)
    expected_counts = np.outer(outcome.table.sum(1), outcome.table.sum(0)) / outcome.table.sum()
    assert expected_counts.min() >= 5


def test_still_sparse_pooled_bin_is_folded_into_smallest_category():
    ref = np.array([500, 40, 1])
    cur = np.array([480, 45, 2])
    outcome = chi2_two_sample(ref, cur, ["big", "mid", "rare"])
    assert outcome.labels == ("big", "<other>") and set(outcome.merged) == {"rare", "mid"}


def test_sparse_two_by_two_uses_fisher_exact():
    outcome = chi2_two_sample([29, 1], [25, 5], [True, False])
    assert outcome.p_method == "fisher_exact"
    assert outcome.p_value == pytest.approx(stats.fisher_exact([[29, 1], [25, 5]]).pvalue)


def test_single_category_has_no_evidence():
    outcome = chi2_two_sample([50], [70], ["only"])
    assert (outcome.statistic, outcome.p_value, outcome.dof) == (0.0, 1.0, 0)
    assert cramers_v(outcome.statistic, outcome.table) == 0.0


def test_chi2_pvalues_are_calibrated_with_rare_levels():
    """Homogeneous samples of 200 with levels at 3 % and 1 %: pooling must keep the level."""
    rng = np.random.default_rng(5)
    shares = [0.5, 0.3, 0.16, 0.03, 0.01]
    ref, cur = rng.multinomial(200, shares, 3000), rng.multinomial(200, shares, 3000)
    p = np.array([chi2_two_sample(a, b).p_value for a, b in zip(ref, cur)])
    assert np.mean(p < 0.05) <= 0.05 + 0.012  # binomial sd 0.004


def test_cramers_v_known_value():
    # 2 x 2 with equal rows, 50 % vs 60 %: phi = 0.1 / (2 * sqrt(0.55 * 0.45))
    outcome = chi2_two_sample([500, 500], [600, 400])
    assert cramers_v(outcome.statistic, outcome.table) == pytest.approx(0.1 / (2 * np.sqrt(0.55 * 0.45)))


def test_jensen_shannon_and_psi():
    assert jensen_shannon_distance([10, 10], [10, 10]) == 0.0
    assert jensen_shannon_distance([10, 0], [0, 10]) == pytest.approx(1.0)
    from scipy.spatial.distance import jensenshannon
    assert jensen_shannon_distance([5, 3, 2], [2, 3, 5]) == pytest.approx(
        jensenshannon([.5, .3, .2], [.2, .3, .5], base=2))
    # PSI by hand: (0.6-0.5) ln(0.6/0.5) + (0.4-0.5) ln(0.4/0.5)
    assert population_stability_index([50, 50], [60, 40]) == pytest.approx(0.1 * np.log(1.2) - 0.1 * np.log(0.8))


def test_missing_rate_test_regimes():
    z, p, method = missing_rate_test(50, 1000, 90, 1000)
    pooled = 140 / 2000
    assert z == pytest.approx(0.04 / np.sqrt(pooled * (1 - pooled) * 2 / 1000))
    assert method == "z_two_proportions" and p == pytest.approx(2 * stats.norm.sf(z))
    _, p_small, method_small = missing_rate_test(0, 200, 3, 200)
    assert method_small == "fisher_exact" and p_small == pytest.approx(stats.fisher_exact([[0, 200], [3, 197]]).pvalue)
    assert missing_rate_test(0, 100, 0, 100) == (0.0, 1.0, "z_two_proportions")


@pytest.mark.parametrize("module_name", ["detectors.univariate", "detectors.column_types"])
def test_docstring_examples_run(module_name):
    import importlib

    outcome = doctest.testmod(importlib.import_module(module_name))
    assert outcome.attempted > 0 and outcome.failed == 0


def test_tied_ks_is_calibrated_where_continuous_ks_is_conservative():
    """Integer columns with ties; KS rejected ~1 % at alpha 0.05, costing power."""
    from detectors.univariate import ks_test, ks_tied_test

    rng = np.random.default_rng(12)
    runs, n = 400, 300
    tied_rej = cont_rej = 0
    for i in range(runs):
        a, b = np.sort(rng.poisson(3, n).astype(float)), np.sort(rng.poisson(3, n).astype(float))
        d, p, method = ks_tied_test(a, b, n_permutations=400, random_state=i)
        tied_rej += p < 0.05
        cont_rej += ks_test(d, n, n)[1] < 0.05
    rate, cont = tied_rej / runs, cont_rej / runs
    assert method == "ks_permutation_ties"
    assert rate <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / runs)  # valid
    assert rate >= 0.025 and cont < rate  # and closer to alpha than the continuous p-value


def test_tied_ks_has_more_power_and_skips_untied_data():
    from detectors.univariate import ks_test, ks_tied_test

    rng = np.random.default_rng(13)
    power = [0, 0]
    for i in range(100):
        a, b = np.sort(rng.poisson(3, 300).astype(float)), np.sort(rng.poisson(3.35, 300).astype(float))
        d, p, _ = ks_tied_test(a, b, n_permutations=400, random_state=i)
        power[0] += p < 0.05
        power[1] += ks_test(d, 300, 300)[1] < 0.05
    assert power[0] > power[1]
    assert ks_tied_test(np.sort(rng.normal(size=50)), np.sort(rng.normal(size=50))) is None
