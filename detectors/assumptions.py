"""Checks of the assumptions behind an estimate, so a result can say when not to trust it.

BBSE (label shift) assumes ``P(x | y)`` is the same in benchmark and production. Then the
production feature distribution is the benchmark one reweighted by the class weights
``w(y) = q(y) / p(y)``: ``P_prod(x) = sum_y q(y) P(x | y)``. A feature whose production
distribution is far from that reweighted benchmark has moved in a way label shift cannot
explain - covariate shift within classes - and the BBSE priors are then unreliable (the
issue's flchain example: 0.14 [0.09, 0.19] estimated against a true 0.22).

:func:`label_shift_unexplained` measures, per feature, the KS distance (numeric) or total
variation (categorical) between production and the class-reweighted benchmark, and flags
a feature when that distance exceeds both a practical floor (0.05, five points of
either CDF) and the 5 % critical value of the two-sample KS distance at the
effective sample sizes (``1.36 sqrt(1/n_eff + 1/n_p)``, Kish's ``n_eff`` of the weights),
so that sampling noise alone does not flag small samples. It is a screening rule on the
features the audit already found drifted, not a test entering the audit's correction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from detectors.base import Result

__all__ = ["UnexplainedFeature", "label_shift_unexplained", "UNEXPLAINED_FLOOR"]

UNEXPLAINED_FLOOR = 0.05


@dataclass(frozen=True)
class UnexplainedFeature(Result):
    """A feature whose shift the estimated label shift does not explain."""

    name: str
    statistic: float  # weighted KS or TV distance, production vs class-reweighted benchmark
    threshold: float
    method: str


def _weighted_ks(xb: np.ndarray, wb: np.ndarray, xp: np.ndarray) -> float:
    grid = np.unique(np.concatenate([xb, xp]))
    order = np.argsort(xb, kind="stable")
    cum_w = np.concatenate([[0.0], np.cumsum(wb[order])]) / wb.sum()
    f_b = cum_w[np.searchsorted(xb[order], grid, side="right")]
    f_p = np.searchsorted(np.sort(xp), grid, side="right") / xp.size
    return float(np.abs(f_b - f_p).max())


def _weighted_tv(xb: pd.Series, wb: np.ndarray, xp: pd.Series) -> float:
    b = pd.Series(wb, index=xb.astype(str).to_numpy()).groupby(level=0).sum() / wb.sum()
    p = xp.astype(str).value_counts(normalize=True)
    labels = b.index.union(p.index)
    return float(0.5 * np.abs(b.reindex(labels, fill_value=0) - p.reindex(labels, fill_value=0)).sum())


def label_shift_unexplained(benchmark: pd.DataFrame, y_benchmark, production: pd.DataFrame, weights: dict,
                            columns, *, floor: float = UNEXPLAINED_FLOOR) -> tuple[UnexplainedFeature, ...]:
    """Features in ``columns`` whose production distribution the class reweighting does not explain.

    Parameters
    ----------
    benchmark : DataFrame of shape (n_b, d); production : DataFrame of shape (n_p, d)
    y_benchmark : array of shape (n_b,), benchmark labels
    weights : {class: production prior / benchmark prior} (e.g. ``LabelShiftResult.weights``)
    columns : the features to check (e.g. the drifted ones)
    """
    y = np.asarray(y_benchmark).astype(str)
    w_map = {str(k): float(v) for k, v in weights.items()}
    wb_all = np.array([w_map.get(c, np.nan) for c in y])
    out = []
    for name in columns:
        b, p = benchmark[name], production[name]
        keep_b = b.notna().to_numpy() & np.isfinite(wb_all)
        keep_p = p.notna().to_numpy()
        if keep_b.sum() < 30 or keep_p.sum() < 30:
            continue
        wb = wb_all[keep_b]
        if wb.sum() <= 0:
            continue
        n_eff = wb.sum() ** 2 / (wb ** 2).sum()
        threshold = max(floor, 1.36 * math.sqrt(1 / n_eff + 1 / keep_p.sum()))
        numeric = pd.api.types.is_numeric_dtype(b) and not pd.api.types.is_bool_dtype(b) and b.nunique() > 12
        if numeric:
            stat = _weighted_ks(b[keep_b].to_numpy(float), wb, p[keep_p].to_numpy(float))
            method = "weighted_ks"
        else:
            stat = _weighted_tv(b[keep_b], wb, p[keep_p])
            method = "weighted_tvd"
        if stat > threshold:
            out.append(UnexplainedFeature(str(name), stat, float(threshold), method))
    return tuple(out)
