"""Confidence intervals: Wilson and Newcombe for proportions, percentile bootstrap otherwise.

>>> lo, hi = wilson_interval(45, 50)
>>> round(float(lo), 3), round(float(hi), 3)
(0.786, 0.957)
"""
from __future__ import annotations

from statistics import NormalDist
from typing import Callable

import numpy as np

from detectors.base import check_fraction, renamed_parameters

__all__ = ["wilson_interval", "newcombe_interval", "bootstrap_interval", "z_value"]


def z_value(confidence: float) -> float:
    check_fraction("confidence", confidence)
    # the standard library's quantile (Wichura's AS241, ~1e-16): no scipy import on a cron run's start-up
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes, n, *, confidence: float = 0.95):
    """Wilson score interval for a proportion; vectorised, NaN where ``n == 0``.

    Parameters
    ----------
    successes, n : array-like of shape (m,) or scalars
    Returns
    -------
    (low, high) : arrays (or floats) of the same shape
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    z = z_value(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    low, high = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
    low = np.where(n > 0, low, np.nan)
    high = np.where(n > 0, high, np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def newcombe_interval(k1, n1, k2, n2, *, confidence: float = 0.95):
    """Newcombe hybrid score interval for the difference ``k2/n2 - k1/n1`` (method 10)."""
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in (k1, n1, k2, n2))
    l1, u1 = (np.asarray(v) for v in wilson_interval(k1, n1, confidence=confidence))
    l2, u2 = (np.asarray(v) for v in wilson_interval(k2, n2, confidence=confidence))
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = k1 / n1, k2 / n2
        d = p2 - p1
        low = d - np.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
        high = d + np.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


@renamed_parameters(n_boot="n_bootstrap", seed="random_state")
def bootstrap_interval(
    statistic: Callable[[np.ndarray], float],
    data: np.ndarray,
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over rows of ``data``.

    ``statistic`` receives an index array (shape ``(n,)``) drawn with replacement so that
    several aligned arrays can be resampled together by the caller's closure.
    """
    n = len(data)
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(random_state)
    values = np.array([statistic(rng.integers(0, n, n)) for _ in range(n_bootstrap)], dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    alpha = (1 - confidence) / 2
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))
