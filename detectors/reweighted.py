"""Re-tests of a benchmark → production difference after the benchmark is reweighted.

An audit often sees one change several times: a class-mix change moves every label-dependent input,
a new population moves the columns its rows bring, a tilted input moves every context cut from it.
To tell a cause from its side effects the audit re-asks each question with the benchmark adjusted to
production on a candidate cause (weights ``w`` on benchmark rows, rows removed on either side) and
sees whether the difference is still there. These functions are that second question, one per kind
of difference:

* :func:`share_retest` — the share of some rows (a slice, a new population);
* :func:`mix_retest` — the mix of a categorical column (a Wald test with the linearised covariance of
  a weighted ratio; effect: sample-balanced Cramér's V);
* :func:`numeric_retest` — the distribution of a numeric column (weighted Kolmogorov–Smirnov at Kish's
  effective size; effect: Wasserstein-1 normed by the benchmark's spread);
* :func:`metric_retest` — a metric computed from the confusion matrix (delta method on the weighted
  cell shares) or the AUC (weighted Mann–Whitney, DeLong error scaled to the effective size).

The weighted side counts as Kish's effective sample size ``(Σw)² / Σw²`` and shares carry the
linearised variance of a weighted ratio, so unequal weights make a re-test wider, never narrower.
Each returns a :class:`Retest`, whose :meth:`Retest.changed` applies the audit's one decision rule
(significant **and** at least the practical floor). Scoring stays apart from deciding: a re-test only
says how large the difference still is and how sure that is.

:func:`rake` combines several adjustments into one set of weights (iterative proportional fitting of
the benchmark's weighted margins to production's).

>>> rng = np.random.default_rng(0)
>>> bench, prod = rng.normal(0, 1, 3000), rng.normal(0.5, 1, 3000)
>>> numeric_retest(np.ones(3000), bench, prod, floor=0.1).changed(alpha=0.05)
True
>>> w = np.exp(0.5 * bench - 0.125)       # the exact density ratio N(0.5, 1) / N(0, 1)
>>> numeric_retest(w, bench, prod, floor=0.1).changed(alpha=0.05)
False
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from detectors.base import Result, renamed_parameters
from detectors.metric_ci import delong_auc, metric_from_confusion
from detectors.prior_effect import prior_shift_effect

__all__ = ["Retest", "effective_size", "share_retest", "mix_retest", "numeric_retest", "metric_retest", "rake",
           "category_codes"]

MIN_ROWS = 10  # fewer rows on a side: the re-test cannot tell (status "insufficient_data")


@dataclass(frozen=True)
class Retest(Result):
    """One re-tested difference between the reweighted benchmark and production.

    ``effect_size`` is on the scale of the original finding's effect (share difference, balanced
    Cramér's V, normed Wasserstein, metric difference ``production − benchmark``); ``n_reference`` is
    the weighted benchmark's effective size.
    """

    method: str
    statistic: float
    p_value: float
    effect_size: float
    effect_floor: float
    n_reference: float
    n_current: int
    status: str = "ok"

    def changed(self, *, alpha: float, multiplier: float = 1.0, direction: int = 0) -> bool:
        """Is it still a change: ``p × multiplier < alpha`` and ``|effect| ≥ floor`` (with ``direction``
        +1 / −1 the effect must also keep that sign)? A re-test that could not run is not a change: the
        difference cannot be told apart from the adjustment."""
        if self.status != "ok" or not np.isfinite(self.p_value) or not np.isfinite(self.effect_size):
            return False
        if direction and np.sign(self.effect_size) != np.sign(direction):
            return False
        return bool(self.p_value * max(1.0, multiplier) < alpha and abs(self.effect_size) >= self.effect_floor)


def _insufficient(method: str, floor: float, n_ref: float, n_cur: int) -> Retest:
    nan = float("nan")
    return Retest(method, nan, nan, nan, float(floor), float(n_ref), int(n_cur), "insufficient_data")


def effective_size(w: np.ndarray) -> float:
    """Kish's effective sample size ``(Σw)² / Σw²`` of non-negative weights (0 when they sum to 0)."""
    w = np.asarray(w, float)
    total = float(w.sum())
    return total * total / float((w * w).sum()) if total > 0 else 0.0


@renamed_parameters(in_benchmark="in_reference", in_production="in_current")
def share_retest(w: np.ndarray, in_reference: np.ndarray, in_current: np.ndarray, *, floor: float) -> Retest:
    """Production's share of some rows against the weighted benchmark's.

    Parameters
    ----------
    w : array of shape (n_b,), non-negative benchmark weights (0 drops a row)
    in_reference : bool array of shape (n_b,)
        The benchmark rows that hold the share (``in_benchmark=`` is the deprecated name).
    in_current : bool array of shape (n_p,)
        The production rows that hold the share (``in_production=`` is the deprecated name).
    floor : the practical floor of the share difference
    """
    w = np.asarray(w, float)
    mb, mp = np.asarray(in_reference, float), np.asarray(in_current, bool)
    total, n_eff, n_p = float(w.sum()), effective_size(w), len(mp)
    if n_eff < MIN_ROWS or n_p < MIN_ROWS:
        return _insufficient("weighted_share_z", floor, n_eff, n_p)
    s_w, s_p = float((w * mb).sum() / total), float(mp.mean())
    # a score test: the linearised variance of the weighted ratio and production's binomial variance,
    # both at the pooled share (at the plug-in shares a share the benchmark rarely holds looks exact)
    s0 = (n_eff * s_w + n_p * s_p) / (n_eff + n_p)
    var_w = float((w * w * (mb - s0) ** 2).sum()) / total ** 2
    se = float(np.sqrt(max(var_w + s0 * (1 - s0) / n_p, 1e-12)))
    z = (s_p - s_w) / se
    return Retest("weighted_share_z", float(z), float(2 * stats.norm.sf(abs(z))), s_p - s_w, float(floor), n_eff, n_p)


@renamed_parameters(benchmark="reference", production="current")
def category_codes(reference: np.ndarray, current: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer codes of two arrays of categories over their union (missing values are one category).

    ``reference`` and ``current`` are the benchmark's and production's categories (``benchmark=`` and
    ``production=`` are the deprecated names); returns their codes and the number of categories.
    """
    b = np.asarray(reference, dtype=object).astype(str)
    p = np.asarray(current, dtype=object).astype(str)
    _, codes = np.unique(np.concatenate([b, p]), return_inverse=True)
    return codes[:len(b)], codes[len(b):], int(codes.max()) + 1 if len(codes) else 0


@renamed_parameters(benchmark="reference", production="current")
def mix_retest(w: np.ndarray, reference: np.ndarray, current: np.ndarray, *, floor: float,
               effect: str = "cramers_v") -> Retest:
    """Production's mix of a categorical column against the weighted benchmark's.

    A Wald test of the difference of the two share vectors with the weighted side's linearised
    covariance (chi-square on the categories less one); the effect is the sample-balanced Cramér's V
    of the two share vectors (independent of the two sample sizes, as the covariate tests' is), or
    with ``effect="total_variation"`` half the sum of the absolute share differences, or with
    ``effect="prior_shift"`` the class-mix effect of the label tests
    (:func:`detectors.prior_effect.prior_shift_effect`: total variation or a class's share ratio against
    their floors; 1 is the floor).

    ``w`` weighs the rows of ``reference`` (the benchmark's categories, shape (n_b,)); ``current`` holds
    production's (shape (n_p,)). ``benchmark=`` and ``production=`` are the deprecated names.
    """
    w = np.asarray(w, float)
    cb, cp, k = category_codes(reference, current)
    keep = w > 0
    n_eff, n_p = effective_size(w), len(cp)
    if n_eff < MIN_ROWS or n_p < MIN_ROWS:
        return _insufficient("weighted_wald_chi2", floor, n_eff, n_p)
    if k < 2:
        return Retest("weighted_wald_chi2", 0.0, 1.0, 0.0, float(floor), n_eff, n_p)
    total = float(w.sum())
    s_w = np.bincount(cb[keep], weights=w[keep], minlength=k) / total
    s_p = np.bincount(cp, minlength=k) / n_p
    s0 = (n_eff * s_w + n_p * s_p) / (n_eff + n_p)  # the pooled shares: a score test, as in share_retest
    # covariance of the weighted shares: sum over rows of (onehot - s0)(onehot - s0)' (w / total)^2,
    # accumulated per category without building the (n, k) one-hot matrix
    scaled = (w[keep] / total) ** 2
    per_cat = np.bincount(cb[keep], weights=scaled, minlength=k)
    total_sq = float(scaled.sum())
    cov_w = np.diag(per_cat) - np.outer(per_cat, s0) - np.outer(s0, per_cat) + total_sq * np.outer(s0, s0)
    cov = cov_w + (np.diag(s0) - np.outer(s0, s0)) / n_p
    d = s_p - s_w
    stat = float(d @ np.linalg.pinv(cov, hermitian=True) @ d)
    dof = max(1, int(np.count_nonzero((s_w + s_p) > 0)) - 1)
    both = s_w + s_p
    nz = both > 0
    if effect == "total_variation":
        v = 0.5 * float(np.abs(d).sum())
    elif effect == "prior_shift":  # a class mix: the label tests' effect, >= 1 passes (floor 1)
        v, _ = prior_shift_effect(s_w, s_p)
    else:
        v = float(np.sqrt(((d[nz]) ** 2 / (2 * both[nz])).sum()))
    return Retest("weighted_wald_chi2", stat, float(stats.chi2.sf(stat, dof)), v, float(floor), n_eff, n_p)


@renamed_parameters(benchmark="reference", production="current")
def numeric_retest(w: np.ndarray, reference: np.ndarray, current: np.ndarray, *, floor: float,
                   scale: float | None = None) -> Retest:
    """Production's distribution of a numeric column against the weighted benchmark's.

    Weighted Kolmogorov–Smirnov distance with the asymptotic p-value at the effective sizes
    (Stephens' small-sample correction; ties make it conservative), and the Wasserstein-1 distance
    normed by ``scale`` (default: the unweighted benchmark's standard deviation, as the covariate
    tests norm it). The effect is signed by the direction of the mean's move.

    ``w`` weighs the rows of ``reference`` (the benchmark's values, shape (n_b,)); ``current`` holds
    production's (shape (n_p,)). ``benchmark=`` and ``production=`` are the deprecated names.
    """
    xb, xp = np.asarray(reference, float), np.asarray(current, float)
    w = np.asarray(w, float)
    keep = np.isfinite(xb) & (w > 0)
    sd = float(np.nanstd(xb)) if scale is None else float(scale)
    xb, wb, xp = xb[keep], w[keep], xp[np.isfinite(xp)]
    n_eff, m = effective_size(wb), len(xp)
    if n_eff < MIN_ROWS or m < MIN_ROWS:
        return _insufficient("weighted_ks", floor, n_eff, m)
    order = np.argsort(xb, kind="stable")
    xb, wb = xb[order], wb[order]
    xp = np.sort(xp)
    grid = np.union1d(xb, xp)
    cum_b = np.concatenate([[0.0], np.cumsum(wb)])
    f_b = cum_b[np.searchsorted(xb, grid, side="right")] / cum_b[-1]
    f_p = np.searchsorted(xp, grid, side="right") / m
    gap = f_b - f_p
    d = float(np.abs(gap).max())
    w1 = float(np.sum(np.abs(gap[:-1]) * np.diff(grid)))
    en = np.sqrt(n_eff * m / (n_eff + m))
    p = float(stats.kstwobign.sf((en + 0.12 + 0.11 / en) * d))
    effect = w1 / sd if np.isfinite(sd) and sd > 0 else 0.0
    sign = 1.0 if float(xp.mean()) >= float(np.average(xb, weights=wb)) else -1.0
    return Retest("weighted_ks", d, p, sign * effect, float(floor), n_eff, m)


def _cell_shares_cov(w: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    total = float(w.sum())
    s = np.bincount(codes, weights=w, minlength=k) / total
    scaled = (w / total) ** 2
    per = np.bincount(codes, weights=scaled, minlength=k)
    cov = np.diag(per) - np.outer(per, s) - np.outer(s, per) + float(scaled.sum()) * np.outer(s, s)
    return s, cov


def _delta_variance(f: Callable[[np.ndarray], float], s: np.ndarray, cov: np.ndarray) -> float:
    """Variance of ``f(shares)`` by the delta method (central differences on the non-empty cells)."""
    grad = np.zeros_like(s)
    base = float(f(s))
    for i in np.flatnonzero(s > 0):
        h = max(1e-6, 1e-4 * s[i])
        up, down = s.copy(), s.copy()
        up[i] += h
        down[i] = max(0.0, down[i] - h)
        hi, lo = float(f(up)), float(f(down))
        if np.isfinite(hi) and np.isfinite(lo):
            grad[i] = (hi - lo) / (up[i] - down[i])
        elif np.isfinite(hi) and np.isfinite(base):
            grad[i] = (hi - base) / h
    return float(max(grad @ cov @ grad, 0.0))


def metric_retest(metric: str, w: np.ndarray, y_true_b: np.ndarray, y_pred_b: np.ndarray, y_true_p: np.ndarray,
                  y_pred_p: np.ndarray, *, classes: Sequence, positive=None, floor: float,
                  scores_b: np.ndarray | None = None, scores_p: np.ndarray | None = None) -> Retest:
    """Production's ``metric`` against the weighted benchmark's; the effect is ``production − benchmark``.

    Metrics of the confusion matrix (accuracy, sensitivity, balanced accuracy, macro-F1, ...) are
    compared through the cell shares: the weighted benchmark's with their linearised covariance,
    production's multinomial; the metric's variance by the delta method. The AUC is a weighted
    Mann–Whitney statistic on each side, its standard error DeLong's scaled to the effective size.
    """
    classes = [str(c) for c in classes]
    k = len(classes)
    index = {c: i for i, c in enumerate(classes)}
    pos = index.get(str(positive)) if positive is not None else (1 if k == 2 else None)
    w = np.asarray(w, float)
    n_eff, n_p = effective_size(w), len(y_true_p)
    if n_eff < MIN_ROWS or n_p < MIN_ROWS or k < 2:
        return _insufficient("weighted_delta", floor, n_eff, n_p)
    if metric == "auc":
        return _auc_retest(w, y_true_b, scores_b, y_true_p, scores_p, classes, pos, floor, n_eff, n_p)

    def codes(y_true, y_pred):
        t = np.array([index.get(str(v), -1) for v in y_true])
        q = np.array([index.get(str(v), -1) for v in y_pred])
        ok = (t >= 0) & (q >= 0)
        return t * k + q, ok

    cb, ok_b = codes(y_true_b, y_pred_b)
    cp, ok_p = codes(y_true_p, y_pred_p)
    wb = np.where(ok_b, w, 0.0)
    if wb.sum() <= 0 or not ok_p.any():
        return _insufficient("weighted_delta", floor, n_eff, n_p)
    s_b, cov_b = _cell_shares_cov(wb, np.where(ok_b, cb, 0), k * k)
    s_p = np.bincount(cp[ok_p], minlength=k * k) / int(ok_p.sum())
    cov_p = (np.diag(s_p) - np.outer(s_p, s_p)) / int(ok_p.sum())

    def f(s):
        return float(metric_from_confusion(metric, s.reshape(k, k), pos))

    vb, vp = f(s_b), f(s_p)
    if not (np.isfinite(vb) and np.isfinite(vp)):
        return _insufficient("weighted_delta", floor, n_eff, n_p)
    se = np.sqrt(_delta_variance(f, s_b, cov_b) + _delta_variance(f, s_p, cov_p))
    d = vp - vb
    z = d / se if se > 0 else (0.0 if d == 0 else np.inf * np.sign(d))
    p = float(2 * stats.norm.sf(abs(z))) if np.isfinite(z) else 0.0
    return Retest("weighted_delta", float(z), p, float(d), float(floor), n_eff, int(ok_p.sum()))


def _weighted_auc(scores: np.ndarray, positive: np.ndarray, w: np.ndarray) -> float:
    """P(score of a positive > score of a negative) with row weights (ties count one half)."""
    order = np.argsort(scores, kind="stable")
    s, pos, w = scores[order], positive[order], w[order]
    w_neg = np.where(pos, 0.0, w)
    # weight of negatives strictly below each score, plus half of those tied with it
    uniq, first, counts = np.unique(s, return_index=True, return_counts=True)
    neg_per = np.add.reduceat(w_neg, first)
    below = np.concatenate([[0.0], np.cumsum(neg_per)[:-1]])
    group = np.repeat(np.arange(len(uniq)), counts)
    credit = below[group] + 0.5 * neg_per[group]
    w_pos = np.where(pos, w, 0.0)
    total = float(w_pos.sum()) * float(w_neg.sum())
    return float((w_pos * credit).sum() / total) if total > 0 else float("nan")


def _auc_retest(w, y_true_b, scores_b, y_true_p, scores_p, classes, pos, floor, n_eff, n_p) -> Retest:
    if scores_b is None or scores_p is None or pos is None:
        return _insufficient("weighted_auc_z", floor, n_eff, n_p)
    label = classes[pos]
    pb = np.asarray(y_true_b).astype(str) == label
    pp = np.asarray(y_true_p).astype(str) == label
    sb, sp = np.asarray(scores_b, float), np.asarray(scores_p, float)
    keep = w > 0
    if min(pb[keep].sum(), (~pb[keep]).sum(), pp.sum(), (~pp).sum()) < MIN_ROWS:
        return _insufficient("weighted_auc_z", floor, n_eff, n_p)
    a_b = _weighted_auc(sb[keep], pb[keep], w[keep])
    a_p = _weighted_auc(sp, pp, np.ones(len(sp)))
    z_c = stats.norm.isf(0.025)
    se_b = (a_b - delong_auc(sb[keep][pb[keep]], sb[keep][~pb[keep]], confidence=0.95)[1]) / z_c
    se_b *= np.sqrt(int(keep.sum()) / max(n_eff, 1.0))  # fewer effective rows than rows: a wider error
    se_p = (a_p - delong_auc(sp[pp], sp[~pp], confidence=0.95)[1]) / z_c
    se = float(np.hypot(abs(se_b), abs(se_p)))
    d = a_p - a_b
    z = d / se if se > 0 else 0.0
    return Retest("weighted_auc_z", float(z), float(2 * stats.norm.sf(abs(z))), float(d), float(floor), n_eff, n_p)


def rake(w: np.ndarray, margins: Sequence[tuple[np.ndarray, np.ndarray]], *, iterations: int = 25,
         clip: float = 20.0, tolerance: float = 1e-4) -> np.ndarray:
    """Benchmark weights whose weighted margins match production's (iterative proportional fitting).

    Parameters
    ----------
    w : array of shape (n_b,)
        Starting weights (1 for every row, or a density ratio); 0 keeps a row out.
    margins : sequence of (codes, shares)
        For each margin, integer category codes of the benchmark rows (shape (n_b,)) and the
        shares production has of each code (shape (k,), summing to 1).
    clip : largest weight as a multiple of the mean weight (a handful of rows must not stand for
        most of production).

    Returns
    -------
    array of shape (n_b,), mean 1 over the rows kept. A category production holds and the benchmark
    lacks cannot be matched; its share is spread over the others.

    >>> codes = np.array([0, 0, 0, 1])
    >>> w = rake(np.ones(4), [(codes, np.array([0.5, 0.5]))])
    >>> [round(float(x), 3) for x in w]
    [0.667, 0.667, 0.667, 2.0]
    """
    w = np.asarray(w, float).copy()
    if not margins or w.sum() <= 0:
        return w
    for _ in range(iterations):
        worst = 0.0
        for codes, shares in margins:
            k = max(int(codes.max(initial=0)) + 1, len(shares))
            have = np.bincount(codes, weights=w, minlength=k)
            want = np.zeros(k)
            want[:len(shares)] = shares
            covered = have > 0
            want = np.where(covered, want, 0.0)
            if want.sum() <= 0:
                continue
            want /= want.sum()
            have_share = have / have.sum()
            factor = np.divide(want, have_share, out=np.ones(k), where=have_share > 0)
            worst = max(worst, float(np.abs(have_share - want)[covered].max()))
            w *= factor[codes]
        kept = w > 0
        if kept.any():
            w = np.minimum(w, clip * w[kept].mean())
        if worst < tolerance:
            break
    kept = w > 0
    return w / w[kept].mean() if kept.any() else w
