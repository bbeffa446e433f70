"""Does a reweighted benchmark reproduce production's mix of a context (or of the classes)?

Several one-fact rules ask the same question with different weights: the class-mix change
(benchmark rows weighted ``q_y / p_y``), the covariate shift (a density ratio on the shifted inputs),
and a new population (weight 0 on its benchmark rows, its production rows left out). A mix is
*explained* when production's share, categorical mix or numeric distribution is what the weighted
benchmark predicts: the test is not significant at ``alpha`` **and** the effect is below the
context's practical floor. The weighted side counts as Kish's effective sample size
``(sum w)^2 / sum w^2`` where an effect size needs a count, and shares get the linearised variance
of a weighted ratio, so unequal weights make the tests wider, never narrower.

These re-tests decide only how findings are grouped; they never claim anything.

>>> rng = np.random.default_rng(0)
>>> bench, prod = rng.normal(0, 1, 3000), rng.normal(0.5, 1, 3000)
>>> numeric_explained(np.ones(3000), bench, prod, 0.05, 0.1)
False
>>> w = np.exp(0.5 * bench - 0.125)       # the exact density ratio N(0.5, 1) / N(0, 1)
>>> numeric_explained(w, bench, prod, 0.05, 0.1)
True
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from detectors.context import CONTEXT_EFFECT_FLOORS

__all__ = ["share_explained", "column_explained", "numeric_explained", "limitation_mix_explained"]


def _effective(w: np.ndarray) -> float:
    total = float(w.sum())
    return total * total / float((w * w).sum()) if total > 0 else 0.0


def share_explained(w: np.ndarray, mb: np.ndarray, mp: np.ndarray, alpha: float, floor: float) -> bool:
    """Is production's share of the rows ``mp`` what the weighted benchmark's share of ``mb`` predicts?"""
    total = float(w.sum())
    if total <= 0 or len(mp) == 0:
        return False
    s_w, s_p = float((w * mb).sum() / total), float(mp.mean())
    # linearised variance of a ratio estimate: rows with large weights count for more
    var_w = float((w * w * (mb - s_w) ** 2).sum()) / total ** 2
    se = np.sqrt(max(var_w + s_p * (1 - s_p) / len(mp), 1e-12))
    p = 2 * stats.norm.sf(abs(s_p - s_w) / se)
    return bool(p >= alpha and abs(s_p - s_w) < floor)


def column_explained(w: np.ndarray, bench: Any, prod: Any, alpha: float, floor: float) -> bool:
    """Is production's mix of a categorical column what the weighted benchmark predicts?

    A Wald test of the difference of the two share vectors with the weighted side's linearised
    covariance (chi-square on the categories less one), and Cramér's V of the table with the weighted
    side counted at its effective size below the floor."""
    b, p = np.asarray(bench).astype(str), np.asarray(prod).astype(str)
    total = float(w.sum())
    if total <= 0 or len(p) == 0:
        return False
    cats, codes = np.unique(np.concatenate([b, p]), return_inverse=True)
    cb, cp = codes[:len(b)], codes[len(b):]
    s_w = np.bincount(cb, weights=w, minlength=len(cats)) / total
    s_p = np.bincount(cp, minlength=len(cats)) / len(p)
    if len(cats) < 2:
        return True
    onehot = np.zeros((len(b), len(cats)))
    onehot[np.arange(len(b)), cb] = 1.0
    resid = (onehot - s_w) * (w / total)[:, None]
    cov = resid.T @ resid + (np.diag(s_p) - np.outer(s_p, s_p)) / len(p)
    d = s_w - s_p
    stat = float(d @ np.linalg.pinv(cov, hermitian=True) @ d)
    pval = float(stats.chi2.sf(stat, len(cats) - 1))
    table = np.vstack([s_w * _effective(w), s_p * len(p)])
    table = table[:, table.sum(0) > 0]
    chi2 = stats.chi2_contingency(table, correction=False)[0] if table.shape[1] > 1 else 0.0
    v = np.sqrt(chi2 / table.sum() / (min(table.shape) - 1))
    return bool(pval >= alpha and v < floor)


def numeric_explained(w: np.ndarray, bench: Any, prod: Any, alpha: float, floor: float) -> bool:
    """Is production's distribution of a numeric column what the weighted benchmark predicts?

    Weighted Kolmogorov–Smirnov distance (asymptotic p-value at the effective sizes) and the
    Wasserstein-1 distance between the weighted benchmark and production, normed by the benchmark's
    own standard deviation as the context test norms it. Ties make the KS p-value conservative;
    the effect floor still has to hold.
    """
    xb = np.asarray(bench, dtype=float)
    xp = np.asarray(prod, dtype=float)
    keep = np.isfinite(xb) & (w > 0)
    sd = float(np.nanstd(xb))
    xb, wb, xp = xb[keep], w[keep], xp[np.isfinite(xp)]
    if len(xb) < 2 or len(xp) < 2 or not np.isfinite(sd) or sd <= 0:
        return False
    order = np.argsort(xb, kind="stable")
    xb, wb = xb[order], wb[order]
    xp = np.sort(xp)
    grid = np.union1d(xb, xp)
    cum_b = np.concatenate([[0.0], np.cumsum(wb)])
    f_b = cum_b[np.searchsorted(xb, grid, side="right")] / cum_b[-1]
    f_p = np.searchsorted(xp, grid, side="right") / len(xp)
    gap = np.abs(f_b - f_p)
    d = float(gap.max())
    w1 = float(np.sum(gap[:-1] * np.diff(grid)))
    n_eff, m = _effective(wb), float(len(xp))
    en = np.sqrt(n_eff * m / (n_eff + m))
    p = float(stats.kstwobign.sf((en + 0.12 + 0.11 / en) * d))  # Stephens' small-sample correction
    return bool(p >= alpha and w1 / sd < floor)


def limitation_mix_explained(lim: Any, w: np.ndarray, masks: dict, bench_masks: dict, ctx: Any,
                             keep_p: np.ndarray | None = None) -> bool | None:
    """Is the context-mix (or untested-context) limitation ``lim`` explained by benchmark weights ``w``?

    Parameters
    ----------
    lim : reports.records.Limitation
        A ``context_mix_shift`` of a slice or a column, or an ``untested_context`` with row masks.
    w : array of shape (n_benchmark,)
        Non-negative benchmark weights.
    masks, bench_masks : dict of key -> bool array of shape (n_production,) / (n_benchmark,)
    ctx : the audit's stage context (``benchmark``, ``production``, ``alpha``).
    keep_p : bool array of shape (n_production,), optional
        Production rows compared (default: all).

    Returns
    -------
    bool, or None when the limitation has nothing the weights can be tested on.
    """
    effect = lim.evidence.get("effect_name")
    floor = float(lim.evidence.get("effect_floor") or CONTEXT_EFFECT_FLOORS.get(effect, 0.02))
    keep = np.ones(len(ctx.production), bool) if keep_p is None else keep_p
    column = lim.evidence.get("name") if lim.evidence.get("kind") == "context" else None
    if lim.key in masks and lim.key in bench_masks:
        if lim.kind == "untested_context":
            floor = CONTEXT_EFFECT_FLOORS["share_difference"]
        return share_explained(w, bench_masks[lim.key], masks[lim.key][keep], ctx.alpha, floor)
    if column is None or column not in ctx.benchmark.columns or column not in ctx.production.columns:
        return None
    bench, prod = ctx.benchmark[column], ctx.production[column].to_numpy()[keep]
    if effect == "cramers_v":
        return column_explained(w, bench, prod, ctx.alpha, floor)
    if effect == "wasserstein_normed" and pd.api.types.is_numeric_dtype(bench):
        return numeric_explained(w, bench, prod, ctx.alpha, floor)
    return None
