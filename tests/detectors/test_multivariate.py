"""Classifier two-sample test and MMD: validity of the p-values, power, bookkeeping."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from detectors import ClassifierTwoSampleDetector, CovariateShiftDetector, DetectorInputError, MMDDetector
from detectors.classifier_test import mann_whitney_auc
from detectors.mmd import mmd_permutation_test


def correlated(rng, n, rho):
    """Two standard normal columns with correlation ``rho`` (same marginals for every rho)."""
    a, b = rng.normal(size=(2, n))
    return pd.DataFrame({"a": a, "b": rho * a + np.sqrt(1 - rho ** 2) * b})


def test_mann_whitney_auc_matches_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=80), np.round(rng.normal(0.4, 1, size=60), 1)  # ties
    auc, z, se = mann_whitney_auc(x, y)
    expected = stats.mannwhitneyu(y, x, alternative="greater", method="asymptotic", use_continuity=False)
    assert auc == pytest.approx(expected.statistic / (80 * 60))
    assert stats.norm.sf(z) == pytest.approx(expected.pvalue, rel=1e-9)
    assert 0 < se < 0.1


@pytest.mark.slow
def test_classifier_pvalue_is_valid_where_pooled_cross_validation_is_not():
    """One feature, logistic model: the folds' statistics are strongly correlated under no
    shift. The mean-z combination must still hold its level."""
    rng = np.random.default_rng(1)
    reps, alpha = 200, 0.05
    rejections = 0
    for rep in range(reps):
        ref, cur = pd.DataFrame({"a": rng.normal(size=120)}), pd.DataFrame({"a": rng.normal(size=120)})
        det = ClassifierTwoSampleDetector(classifier="logistic", random_state=rep).fit(ref)
        p = det.test(cur).test.p_value
        assert 0 < p <= 1
        rejections += p < alpha
    assert rejections <= stats.binom.ppf(0.999, reps, alpha)


def test_classifier_finds_a_joint_shift_the_marginal_tests_cannot_see():
    rng = np.random.default_rng(2)
    ref, cur = correlated(rng, 1500, 0.0), correlated(rng, 1500, 0.8)  # synthetic: new correlation
    assert not CovariateShiftDetector().fit(ref).test(cur).is_shift
    res = ClassifierTwoSampleDetector().fit(ref).test(cur)
    assert res.is_shift and res.test.p_value < 1e-6
    assert res.auc_ci[0] <= res.auc <= res.auc_ci[1] and res.auc_ci[0] > 0.55
    assert len(res.fold_aucs) == 2 and res.test.kind == "multivariate"


def test_classifier_subsamples_handles_categories_and_missing_values():
    rng = np.random.default_rng(3)
    def frame(n, p_new):
        out = pd.DataFrame({"x": rng.normal(size=n), "site": rng.choice(["a", "b", "c"], n)})
        out.loc[rng.random(n) < 0.1, "x"] = np.nan
        out.loc[rng.random(n) < p_new, "site"] = "new"
        return out
    res = ClassifierTwoSampleDetector(classifier="logistic", max_samples=800).fit(frame(3000, 0)).test(frame(2000, 0.3))
    assert (res.n_reference, res.n_current) == (800, 800) and res.is_shift
    tiny = ClassifierTwoSampleDetector().fit(frame(300, 0)).test(frame(10, 0))
    assert tiny.test.status == "insufficient_data" and not tiny.is_shift
    with pytest.raises(DetectorInputError, match=r"No column can be encoded: when \(datetime\)"):
        MMDDetector().fit(pd.DataFrame({"when": pd.date_range("2024-01-01", periods=50)}))


def test_mmd_statistic_equals_brute_force():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(15, 3)), rng.normal(0.5, 1, size=(12, 3))
    mmd2, p, bandwidth = mmd_permutation_test(x, y, n_permutations=50, bandwidth=1.3)
    def k(a, b):
        return np.exp(-((a[:, None] - b[None]) ** 2).sum(-1) / (2 * 1.3 ** 2))

    kxx, kyy = k(x, x), k(y, y)
    expected = ((kxx.sum() - np.trace(kxx)) / (15 * 14) + (kyy.sum() - np.trace(kyy)) / (12 * 11)
                - 2 * k(x, y).mean())
    assert mmd2 == pytest.approx(expected, rel=1e-10) and bandwidth == 1.3
    assert 1 / 51 <= p <= 1


@pytest.mark.slow
def test_mmd_permutation_pvalue_is_valid():
    rng = np.random.default_rng(5)
    reps, alpha, permutations = 200, 0.05, 99
    p_values = np.array([mmd_permutation_test(rng.normal(size=(40, 5)), rng.normal(size=(40, 5)),
                                              n_permutations=permutations, random_state=r)[1] for r in range(reps)])
    assert p_values.min() >= 1 / (permutations + 1)
    assert np.mean(p_values <= alpha) <= stats.binom.ppf(0.999, reps, alpha) / reps


def test_mmd_detects_a_variance_shift_and_is_deterministic():
    rng = np.random.default_rng(6)
    ref = pd.DataFrame(rng.normal(size=(400, 4)), columns=list("abcd"))
    cur = pd.DataFrame(rng.normal(size=(400, 4)) * [1, 1.8, 1.8, 1], columns=list("abcd"))  # synthetic
    det = MMDDetector(n_permutations=99, max_samples=300).fit(ref)
    res = det.test(cur)
    assert res.is_shift and res.test.p_value == 0.01 and res.n_reference == res.n_current == 300
    assert res.to_dict() == MMDDetector(n_permutations=99, max_samples=300).fit(ref).test(cur).to_dict()
    quiet = MMDDetector(n_permutations=99).fit(ref).test(pd.DataFrame(rng.normal(size=(400, 4)), columns=list("abcd")))
    assert not quiet.is_shift and quiet.bandwidth > 0
