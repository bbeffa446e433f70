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
from scipy import stats

from detectors.base import Result, renamed_parameters
from detectors.univariate import ecdf_gap_statistics

__all__ = ["UnexplainedFeature", "label_shift_unexplained", "class_conditional_unexplained", "UNEXPLAINED_FLOOR",
           "UncoveredPopulation", "uncovered_populations", "POPULATION_SHARE_FLOOR"]

UNEXPLAINED_FLOOR = 0.05


@dataclass(frozen=True)
class UnexplainedFeature(Result):
    """A feature whose shift the estimated label shift does not explain."""

    name: str
    statistic: float  # weighted KS or TV distance, production vs class-reweighted benchmark
    threshold: float
    method: str


def _weighted_ks(xb: np.ndarray, wb: np.ndarray, xp: np.ndarray) -> float:
    order = np.argsort(xb, kind="stable")
    xb_sorted, xp_sorted = xb[order], np.sort(xp)
    # the largest gap over every point: the two sorted samples side by side (repeated points change
    # nothing, so no sort of the pooled values; sorted queries keep the searches cache-friendly)
    grid = np.concatenate([xb_sorted, xp_sorted])
    cum_w = np.concatenate([[0.0], np.cumsum(wb[order])]) / wb.sum()
    f_b = cum_w[np.searchsorted(xb_sorted, grid, side="right")]
    f_p = np.searchsorted(xp_sorted, grid, side="right") / xp.size
    return float(np.abs(f_b - f_p).max())


def _weighted_tv(xb: pd.Series, wb: np.ndarray, xp: pd.Series) -> float:
    b = pd.Series(wb, index=xb.astype(str).to_numpy()).groupby(level=0).sum() / wb.sum()
    p = xp.astype(str).value_counts(normalize=True)
    labels = b.index.union(p.index)
    return float(0.5 * np.abs(b.reindex(labels, fill_value=0) - p.reindex(labels, fill_value=0)).sum())


@renamed_parameters(benchmark="reference", y_benchmark="y_reference", production="current")
def label_shift_unexplained(reference: pd.DataFrame, y_reference, current: pd.DataFrame, weights: dict,
                            columns, *, floor: float = UNEXPLAINED_FLOOR) -> tuple[UnexplainedFeature, ...]:
    """Features in ``columns`` whose production distribution the class reweighting does not explain.

    Parameters
    ----------
    reference : DataFrame of shape (n_b, d), the benchmark; current : DataFrame of shape (n_p, d), production
    y_reference : array of shape (n_b,), benchmark labels
    weights : {class: production prior / benchmark prior} (e.g. ``LabelShiftResult.weights``)
    columns : the features to check (e.g. the drifted ones)
    """
    y = np.asarray(y_reference).astype(str)
    w_map = {str(k): float(v) for k, v in weights.items()}
    wb_all = np.array([w_map.get(c, np.nan) for c in y])
    out = []
    for name in columns:
        b, p = reference[name], current[name]
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


POPULATION_SHARE_FLOOR = 0.02  # a population the benchmark lacks, this large, can move BBSE's priors by its share


@dataclass(frozen=True)
class UncoveredPopulation(Result):
    """A part of production the benchmark does not cover (BBSE has no ``P(yhat | y)`` for it)."""

    name: str
    production_share: float
    source: str  # "untested_context" or "novel_region"


def uncovered_populations(candidates, *,
                          share_floor: float = POPULATION_SHARE_FLOOR) -> tuple[UncoveredPopulation, ...]:
    """Populations of production that break BBSE's premise, largest first.

    BBSE reads production predictions through the benchmark's confusion matrix ``P(yhat | y)``. A
    population the benchmark lacks (an untested context, a novel embedding region) has its own,
    unknown confusion matrix, and its predictions are read as if they were benchmark rows: a
    population of share ``s`` can move the predicted-class mix by up to ``s``, which the inversion
    of ``P(yhat | y)`` amplifies (a rare class estimated at twice its share, say). The estimate is
    then not trustworthy whatever its interval says.

    Parameters
    ----------
    candidates : iterable of (name, production share, source)
    share_floor : float
        Populations below this production share are ignored.
    """
    out = [UncoveredPopulation(str(name), float(share), str(source)) for name, share, source in candidates
           if share is not None and np.isfinite(share) and share >= share_floor]
    return tuple(sorted(out, key=lambda p: -p.production_share))


def _critical(alpha: float, n_tests: int) -> float:
    """The two-sample KS constant ``c`` of ``c sqrt(1/n + 1/m)`` at level ``alpha / n_tests``."""
    return math.sqrt(-math.log(alpha / (2 * max(1, n_tests))) / 2)


def _chi2_p(b: pd.Series, p: pd.Series) -> float:
    table = pd.crosstab(np.r_[np.zeros(len(b)), np.ones(len(p))],
                        np.r_[b.astype(str).to_numpy(), p.astype(str).to_numpy()])
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table.to_numpy(), correction=False)[1])


def _text_class_codes(y_benchmark, y_production) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The benchmark's distinct label texts (``str(label)``, sorted as ``np.unique`` sorts them) and
    each row's code among them; production labels the benchmark lacks get -1 (no class selects them).

    Labels as codes once, not compared as text once per class and feature (a million rows each);
    the rows are hashed as they are and only their distinct values turned into text.
    """
    yb, yp = np.asarray(y_benchmark, dtype=object), np.asarray(y_production, dtype=object)
    seen_b, distinct_b = pd.factorize(yb)
    seen_p, distinct_p = pd.factorize(yp)
    if (seen_b < 0).any() or (seen_p < 0).any():  # a missing label: its text ('None', 'nan') as numpy writes it
        tb, tp = yb.astype(str), yp.astype(str)
        labels, code_b = np.unique(tb, return_inverse=True)
        at = np.minimum(np.searchsorted(labels, tp), max(len(labels) - 1, 0))
        return labels, code_b, (np.where(labels[at] == tp, at, -1) if len(labels) else np.full(len(tp), -1))
    labels = np.unique(np.array([str(v) for v in distinct_b], dtype=str))
    index = {text: i for i, text in enumerate(labels.tolist())}
    to_b = np.array([index[str(v)] for v in distinct_b], dtype=np.int64)
    to_p = np.array([index.get(str(v), -1) for v in distinct_p], dtype=np.int64)
    return labels, to_b[seen_b], to_p[seen_p]


@renamed_parameters(benchmark="reference", y_benchmark="y_reference", production="current",
                    y_production="y_current")
def class_conditional_unexplained(reference: pd.DataFrame, y_reference, current: pd.DataFrame, y_current,
                                  columns, *, floor: float = UNEXPLAINED_FLOOR, alpha: float = 0.05,
                                  min_rows: int = 30) -> tuple[UnexplainedFeature, ...]:
    """Features in ``columns`` whose distribution *within a class* differs between the datasets.

    With production labels BBSE's assumption (``P(x | y)`` fixed) is tested directly, class by class,
    instead of through the marginal reweighted by estimated weights (whose estimation error alone
    makes a pure class-mix change look like covariate shift). A feature is flagged when, for some
    class with at least ``min_rows`` rows on each side, the KS distance (numeric) or total variation
    (categorical) exceeds both ``floor`` and the KS critical value at ``alpha`` Bonferroni-corrected
    over features × classes (categorical: total variation past ``floor`` and a chi-square test at
    the corrected level). The name of a flagged feature says which class moved (``"x | y=a"``).

    Parameters
    ----------
    reference : DataFrame of shape (n_b, d), the benchmark; current : DataFrame of shape (n_p, d), production
    y_reference : array of shape (n_b,); y_current : array of shape (n_p,)
    columns : the features to check (e.g. the drifted ones)
    """
    labels, code_b, code_p = _text_class_codes(y_reference, y_current)
    n_b, n_p = np.bincount(code_b, minlength=len(labels)), np.bincount(code_p[code_p >= 0], minlength=len(labels))
    classes = [(i, c) for i, c in enumerate(labels) if n_b[i] >= min_rows and n_p[i] >= min_rows]
    columns = list(columns)
    c_crit = _critical(alpha, len(columns) * max(1, len(classes)))
    out = []
    for name in columns:
        b_all, p_all = reference[name], current[name]
        numeric = pd.api.types.is_numeric_dtype(b_all) and not pd.api.types.is_bool_dtype(b_all)
        worst = None
        for i, c in classes:
            b, p = b_all[code_b == i].dropna(), p_all[code_p == i].dropna()
            if len(b) < min_rows or len(p) < min_rows:
                continue
            if numeric:  # ordered values, ties included: the KS critical value is conservative for them
                # unit weights: the two-sample KS distance, bit for bit _weighted_ks's (counts / n - counts / m
                # at every distinct value) from one merge of the sorted samples instead of two searches
                stat = ecdf_gap_statistics(np.sort(b.to_numpy(float)), np.sort(p.to_numpy(float)))[0]
                threshold = max(floor, c_crit * math.sqrt(1 / len(b) + 1 / len(p)))
                flagged = stat > threshold
            else:  # categories: total variation past the floor and a chi-square test past the corrected level
                stat, threshold = _weighted_tv(b, np.ones(len(b)), p), floor
                flagged = stat > floor and _chi2_p(b, p) < alpha / max(1, len(columns) * len(classes))
            if flagged and (worst is None or stat - threshold > worst[1] - worst[2]):
                worst = (c, stat, threshold)
        if worst is not None:
            out.append(UnexplainedFeature(f"{name} | y={worst[0]}", float(worst[1]), float(worst[2]),
                                          "class_ks" if numeric else "class_tvd"))
    return tuple(out)
