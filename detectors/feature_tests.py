"""The single-column tests of a covariate audit, shared by :class:`~detectors.covariate.CovariateShiftDetector`
(on rows) and :mod:`detectors.sketch_tests` (on summaries): a categorical column's two-sample chi-square,
the missing-value-rate tests, and the effect sizes and untested records both report the same way.
"""
from __future__ import annotations

import math

import pandas as pd

from detectors.base import ShiftTest
from detectors.intervals import newcombe_interval, z_value
from detectors.univariate import (
    balanced_cramers_v,
    chi2_two_sample,
    cramers_v,
    jensen_shannon_distance,
    missing_rate_test,
    population_stability_index,
)

__all__ = ["DEFAULT_EFFECT_FLOORS", "categorical_feature_test", "categorical_shift_test", "effect_floor",
           "insufficient_test", "mean_difference", "missing_rate_tests", "missing_rates", "wasserstein_effect"]

DEFAULT_EFFECT_FLOORS = {
    "wasserstein_normed": 0.1,
    "cramers_v": 0.1,
    "missing_rate_difference": 0.02,
}
_LISTED = 20  # at most this many category names are listed in details


def insufficient_test(name, method, effect_name, floor, n_ref, n_cur, kind, details) -> ShiftTest:
    """An untested :class:`ShiftTest` (``status="insufficient_data"``, p-values and effect NaN)."""
    nan = float("nan")
    return ShiftTest(name, method, nan, nan, nan, nan, effect_name, floor, int(n_ref), int(n_cur),
                     False, kind=kind, status="insufficient_data", details=details)


def effect_floor(effect_name: str, overrides=None) -> float:
    """The practical floor of ``effect_name``: ``overrides`` over :data:`DEFAULT_EFFECT_FLOORS`."""
    return float({**DEFAULT_EFFECT_FLOORS, **(overrides or {})}[effect_name])


def missing_rates(missing_reference: int, n_reference: int, missing_current: int, n_current: int) -> dict:
    """The two missing-value rates every feature test reports in its ``details``."""
    return {"missing_rate_reference": missing_reference / n_reference,
            "missing_rate_current": missing_current / n_current}


def wasserstein_effect(wasserstein: float, n: int, m: int, std_ref: float, std_cur: float) -> float:
    """Wasserstein-1 normed by the reference spread (population std); a constant reference falls
    back to the pooled spread, two constant samples give 0."""
    scale = std_ref if std_ref > 0 else math.sqrt((n * std_ref ** 2 + m * std_cur ** 2) / (n + m))
    return wasserstein / scale if scale > 0 else 0.0


def mean_difference(mean_ref: float, std_ref: float, n: int, mean_cur: float, std_cur: float,
                    m: int) -> tuple[float, tuple[float, float]]:
    """``mean_cur - mean_ref`` with its 95 % normal (Welch) interval."""
    half = z_value(0.95) * math.sqrt(std_ref ** 2 / n + std_cur ** 2 / m)
    diff = mean_cur - mean_ref
    return diff, (diff - half, diff + half)


def categorical_feature_test(name: str, reference_counts: pd.Series, current_counts: pd.Series, *, floor: float,
                             min_samples: int, min_expected: float, details: dict) -> ShiftTest:
    """:func:`categorical_shift_test` of one column, or ``insufficient_data`` below ``min_samples``."""
    n_ref, m = int(reference_counts.sum()), int(current_counts.sum())
    if min(n_ref, m) < min_samples:
        return insufficient_test(name, "chi2", "cramers_v", floor, n_ref, m, "feature", details)
    return categorical_shift_test(name, reference_counts, current_counts, floor=floor, min_expected=min_expected,
                                  details=details)


def missing_rate_tests(names, reference_missing, current_missing, n_reference: int, n_current: int, *,
                       floor: float, min_samples: int) -> list[ShiftTest]:
    """One two-proportion test per column of ``names`` with a missing value in either sample.

    ``reference_missing`` / ``current_missing`` map column -> missing count; rates are over all rows.
    """
    tests = []
    n1 = n_reference
    for name in names:
        k1, k2 = reference_missing[name], current_missing[name]
        if k1 + k2 == 0:
            continue  # nothing missing anywhere: no hypothesis to test
        lo, hi = newcombe_interval(k1, n1, k2, n_current)
        details = {"missing_reference": k1, "missing_current": k2, "rate_difference": k2 / n_current - k1 / n1,
                   "rate_difference_ci": (lo, hi)}
        if min(n1, n_current) < min_samples:
            tests.append(insufficient_test(name, "z_two_proportions", "missing_rate_difference", floor, n1,
                                           n_current, "missing_rate", details))
            continue
        z, p, method = missing_rate_test(k1, n1, k2, n_current)
        tests.append(ShiftTest(name, method, z, p, p, abs(k2 / n_current - k1 / n1), "missing_rate_difference",
                               floor, n1, n_current, False, kind="missing_rate", details=details))
    return tests


def categorical_shift_test(name: str, reference_counts: pd.Series, current_counts: pd.Series, *,
                           floor: float, min_expected: float = 5.0, kind: str = "feature",
                           details: dict | None = None) -> ShiftTest:
    """Two-sample chi-square :class:`ShiftTest` of two category-count Series (index = category).

    Unseen categories (in current, not in reference) are kept in the table and named in
    ``details`` with their share of the current sample; vanished ones likewise.
    """
    labels = list(reference_counts.index) + [c for c in current_counts.index if c not in reference_counts.index]
    ref = reference_counts.reindex(labels, fill_value=0).to_numpy(float)
    cur = current_counts.reindex(labels, fill_value=0).to_numpy(float)
    outcome = chi2_two_sample(ref, cur, labels, min_expected=min_expected)
    unseen = [c for c in labels if c not in reference_counts.index]
    vanished = [c for c, k in zip(labels, cur) if k == 0 and c in reference_counts.index]
    details = dict(details or {})
    details.update(
        dof=outcome.dof, p_method=outcome.p_method, n_categories=len(labels),
        jensen_shannon=jensen_shannon_distance(ref, cur), psi=population_stability_index(ref, cur),
        unseen_categories=[str(c) for c in unseen[:_LISTED]], n_unseen_categories=len(unseen),
        unseen_share=float(current_counts.reindex(unseen).sum() / cur.sum()) if unseen else 0.0,
        vanished_categories=[str(c) for c in vanished[:_LISTED]],
        vanished_share=float(reference_counts.reindex(vanished).sum() / ref.sum()) if vanished else 0.0,
        merged_categories=[str(c) for c in outcome.merged[:_LISTED]], n_merged_categories=len(outcome.merged),
    )
    # the floor needs an effect that does not shrink when one sample is much larger
    effect = balanced_cramers_v(outcome.table)
    details["cramers_v_unbalanced"] = cramers_v(outcome.statistic, outcome.table)
    return ShiftTest(name, "chi2", outcome.statistic, outcome.p_value, outcome.p_value, effect, "cramers_v",
                     floor, int(ref.sum()), int(cur.sum()), False, kind=kind, details=details)
