"""Importance weights that reweight the benchmark to production's distribution of some inputs.

A probabilistic classifier tells benchmark rows from production rows on the given columns; its odds,
rescaled by the sample sizes, estimate the density ratio ``w(x) = p_production(x) / p_benchmark(x)``
(Bickel, Brückner and Scheffer 2009). The classifier is a logistic regression on standardised
numeric columns and their squares (a shift of mean or spread) and one-hot codes of the most frequent
categories, so the weights are smooth and cheap. Weights are clipped at ``clip`` times their mean:
a handful of benchmark rows must not stand for most of production.

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> bench = pd.DataFrame({"age": rng.normal(0, 1, 4000)})
>>> prod = pd.DataFrame({"age": rng.normal(0.5, 1, 4000)})
>>> w = density_ratio_weights(bench, prod, random_state=0)
>>> w.shape, round(float(np.average(bench["age"], weights=w)), 1)
((4000,), 0.5)
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from detectors.base import renamed_parameters

__all__ = ["density_ratio_weights", "domain_scores", "effective_size"]

MAX_LEVELS = 20  # one-hot codes for the most frequent categories of a column; the rest share one code
MAX_FIT_ROWS = 20_000  # rows per side the classifier is fitted on (a sample; the weights cover every row)


def _design(bench: pd.DataFrame, prod: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    parts_b, parts_p = [], []
    for col in bench.columns:
        b, p = bench[col], prod[col]
        if pd.api.types.is_numeric_dtype(b) and pd.api.types.is_numeric_dtype(p) and not pd.api.types.is_bool_dtype(b):
            xb, xp = b.to_numpy(float), p.to_numpy(float)
            both = np.concatenate([xb, xp])
            mu, sd = np.nanmean(both), np.nanstd(both)
            sd = sd if np.isfinite(sd) and sd > 0 else 1.0
            zb, zp = np.nan_to_num((xb - mu) / sd), np.nan_to_num((xp - mu) / sd)
            parts_b += [zb, zb ** 2, np.isnan(xb).astype(float)]
            parts_p += [zp, zp ** 2, np.isnan(xp).astype(float)]
        else:
            sb, sp = b.astype(str).to_numpy(), p.astype(str).to_numpy()
            levels = pd.Series(np.concatenate([sb, sp])).value_counts().index[:MAX_LEVELS]
            for level in levels:
                parts_b.append((sb == level).astype(float))
                parts_p.append((sp == level).astype(float))
    if not parts_b:
        return np.zeros((len(bench), 0)), np.zeros((len(prod), 0))
    return np.column_stack(parts_b), np.column_stack(parts_p)


@renamed_parameters(benchmark="reference", production="current")
def domain_scores(reference: pd.DataFrame, current: pd.DataFrame, *,
                  random_state: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """The log-odds that a row is a production row, from a classifier of benchmark against production
    rows on these columns, for every row of both sides (the fitting sample's size ratio taken out).

    Parameters
    ----------
    reference : DataFrame of shape (n_b, k)
        The benchmark rows (``benchmark=`` is the deprecated name).
    current : DataFrame of shape (n_p, k), the same columns
        The production rows (``production=`` is the deprecated name).
    random_state : int, seeds the fitting sample

    Returns
    -------
    (scores_b, scores_p) : arrays of shape (n_b,) and (n_p,), or None when the columns give nothing to
    fit on. Their difference of distributions is the joint shift of the columns seen along one direction.
    """
    from sklearn.linear_model import LogisticRegression  # scikit-learn (~0.5 s to import) only when weights are fitted

    if list(reference.columns) != list(current.columns):
        raise ValueError("reference and current must have the same columns.")
    xb, xp = _design(reference, current)
    if xb.shape[1] == 0 or len(xb) == 0 or len(xp) == 0:
        return None
    rng = np.random.default_rng(random_state)
    fit_b = xb[rng.choice(len(xb), MAX_FIT_ROWS, replace=False)] if len(xb) > MAX_FIT_ROWS else xb
    fit_p = xp[rng.choice(len(xp), MAX_FIT_ROWS, replace=False)] if len(xp) > MAX_FIT_ROWS else xp
    model = LogisticRegression(C=1.0, max_iter=500)
    model.fit(np.vstack([fit_b, fit_p]), np.r_[np.zeros(len(fit_b)), np.ones(len(fit_p))])
    offset = np.log(len(fit_b) / len(fit_p))
    return model.decision_function(xb) + offset, model.decision_function(xp) + offset


@renamed_parameters(benchmark="reference", production="current")
def density_ratio_weights(reference: pd.DataFrame, current: pd.DataFrame, *, clip: float = 20.0,
                          random_state: int = 0) -> np.ndarray | None:
    """Weights of the benchmark rows that give them production's distribution of these columns.

    Parameters
    ----------
    reference : DataFrame of shape (n_b, k)
        The benchmark rows (``benchmark=`` is the deprecated name).
    current : DataFrame of shape (n_p, k), the same columns
        The production rows (``production=`` is the deprecated name).
    clip : float, largest weight as a multiple of the mean weight
    random_state : int, seeds the fitting sample

    Returns
    -------
    weights : array of shape (n_b,), mean 1, or None when the columns give nothing to fit on.
    """
    scores = domain_scores(reference, current, random_state=random_state)
    if scores is None:
        return None
    w = np.exp(np.clip(scores[0], -30, 30))
    w = w / w.mean()
    w = np.minimum(w, clip)
    return w / w.mean()


def effective_size(weights: np.ndarray) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of weighted rows."""
    w = np.asarray(weights, float)
    return float(w.sum() ** 2 / (w ** 2).sum()) if w.size and (w ** 2).sum() > 0 else 0.0
