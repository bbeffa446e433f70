"""Within-context performance change: the change that remains after reweighting the benchmark to
the production mix of contexts, model confidence and classes.

A slice's raw benchmark-to-production change mixes several kinds of shift: its context mix
moved (a harder context is now more common), its inputs moved (covariate shift: the model is
less confident in production), its class mix moved (label shift), or the model got worse at
the same kind of case (a within-context / concept change). Only the last is a *change within
context*. So rows are grouped into **strata** - context cell x confidence bin x true class -
and the benchmark is reweighted to the production stratum shares::

    O = sum_s v_s * mp_s   (observed production rate)
    E = sum_s v_s * mb_s   (benchmark rate under the production mix: the expected value)

``v_s`` are production weights, ``mp_s``/``mb_s`` the success rates of stratum ``s``. Under
"no change within any stratum" (``mp_s = mb_s``) ``O - E`` has mean 0 and variance
``sum v_s^2 m_s (1 - m_s) (1/nb_s + 1/np_s)`` with the pooled rate ``m_s``: a stratified
(Cochran-Mantel-Haenszel-like) z test. Strata with fewer than ``min_stratum`` benchmark rows
cannot be compared; their production rows are left out and reported as ``uncovered_share``
(they belong to the untested-context report). Dropping rows of mix-shifted contexts, as the
pipeline did before, never tested a real within-context drop in a context whose share also
moved; reweighting does.

Per-row metrics: accuracy and error rate (all rows), sensitivity (positives), specificity
and false-positive rate (negatives). Metrics that are not per-row means (balanced accuracy,
macro-F1, AUC) are tested through balanced accuracy, the mean per-class recall, whose
strata carry weight ``1 / K`` per class; ``details["metric_tested"]`` says so.

Continuous contexts are binned finely, at quantiles of the pooled values (15 bins), so that a
context's mix change inside a coarse bin is not mistaken for a within-context change; rows
beyond the benchmark's range are left out (untested contexts, reported elsewhere).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from detectors.base import DetectorInputError, Result, ShiftTest, renamed_parameters
from detectors.decision import decide
from detectors.metric_ci import MetricEstimate
from detectors.performance import PerformanceEstimate
from detectors.univariate import balanced_cramers_v

__all__ = ["Strata", "make_strata", "within_context_change", "WithinContextChange", "TESTED_METRIC",
           "context_strata_cells", "rank_context_columns", "stratified_expected", "covered_rows", "label_codes"]

_ROW_METRICS = ("accuracy", "error_rate", "sensitivity", "specificity", "fpr")
TESTED_METRIC = {m: m for m in _ROW_METRICS}  # others -> balanced_accuracy


@dataclass(frozen=True)
class Strata:
    """Stratum id of every row of both datasets (context cell x confidence bin)."""

    benchmark: np.ndarray  # (n_b,) int
    production: np.ndarray  # (n_p,) int
    n_confidence_bins: int


@dataclass(frozen=True)
class WithinContextChange(Result):
    """Observed production rate against the benchmark rate under the production mix."""

    metric: str
    observed: float
    expected: float
    difference: float  # observed - expected, in the metric's own direction
    difference_ci: tuple
    p_value: float
    uncovered_share: float
    n_strata: int


def _confidence_bins(conf_b: np.ndarray, conf_p: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    edges = np.unique(np.quantile(conf_b, np.linspace(0, 1, n_bins + 1)[1:-1]))
    return np.searchsorted(edges, conf_b, side="right"), np.searchsorted(edges, conf_p, side="right")


@renamed_parameters(cells_benchmark="cells_reference", cells_production="cells_current",
                    confidence_benchmark="confidence_reference", confidence_production="confidence_current",
                    n_benchmark="n_reference", n_production="n_current")
def make_strata(cells_reference=None, cells_current=None, *, confidence_reference=None,
                confidence_current=None, n_reference: int | None = None, n_current: int | None = None,
                n_confidence_bins: int = 5) -> Strata:
    """Combine context cells (see :func:`detectors.attribution.context_cells`) with confidence bins.

    Parameters
    ----------
    cells_reference, cells_current : int arrays of shape (n_b,), (n_p,), optional
        Benchmark and production cells.
    confidence_reference, confidence_current : float arrays of shape (n_b,), (n_p,), optional
        The model's confidence (e.g. its top score); binned at benchmark quantiles. Within a
        bin ``P(correct)`` is what the model's own scores predict, so a covariate shift that
        only moves rows between bins is not a within-context change.
    n_reference, n_current : row counts when neither cells nor confidences are given
    """
    parts_b, parts_p = [], []
    if cells_reference is not None:
        parts_b.append(np.asarray(cells_reference, np.int64))
        parts_p.append(np.asarray(cells_current, np.int64))
    bins = 0
    if confidence_reference is not None and confidence_current is not None:
        cb, cp = _confidence_bins(np.asarray(confidence_reference, float), np.asarray(confidence_current, float),
                                  n_confidence_bins)
        parts_b.append(cb)
        parts_p.append(cp)
        bins = n_confidence_bins
    if not parts_b:
        if n_reference is None or n_current is None:
            raise DetectorInputError("make_strata needs cells, confidences or both row counts.")
        return Strata(np.zeros(n_reference, np.int64), np.zeros(n_current, np.int64), 0)
    n_b = len(parts_b[0])
    combined = np.zeros(n_b + len(parts_p[0]), np.int64)
    for b, p in zip(parts_b, parts_p):  # mixed-radix code of the combination, then dense ids
        codes = dense_ids(np.concatenate([b, p]))
        combined = combined * (int(codes.max()) + 1) + codes
    ids = dense_ids(combined)
    return Strata(ids[:n_b], ids[n_b:], bins)


def dense_ids(codes: np.ndarray) -> np.ndarray:
    """``np.unique(codes, return_inverse=True)[1]`` for integer codes, in linear time when their
    range is small (a table of the values present instead of a sort of every row)."""
    codes = np.asarray(codes, np.int64)
    if codes.size == 0:
        return codes
    low, high = int(codes.min()), int(codes.max())
    if high - low > 4 * codes.size + 1024:
        return np.unique(codes, return_inverse=True)[1].ravel()
    present = np.zeros(high - low + 1, bool)
    present[codes - low] = True
    rank = np.cumsum(present) - 1
    return rank[codes - low]


def _rows(metric: str, y_true: np.ndarray, y_pred: np.ndarray, positive) -> list[tuple[np.ndarray, np.ndarray]]:
    """(row mask, success) per class-group whose rates are averaged (one group for per-row metrics)."""
    if metric in ("accuracy", "error_rate"):
        correct = y_true == y_pred
        return [(np.ones(len(y_true), bool), correct if metric == "accuracy" else ~correct)]
    if metric in ("sensitivity", "specificity", "fpr"):
        if positive is None:
            raise DetectorInputError(f"metric {metric!r} needs the positive class.")
        pos = y_true == positive
        if metric == "sensitivity":
            return [(pos, y_pred == positive)]
        return [(~pos, y_pred != positive if metric == "specificity" else y_pred == positive)]
    return [(y_true == c, y_pred == c) for c in np.unique(y_true)]  # balanced accuracy: per-class recall


def within_context_change(y_true_b, y_pred_b, y_true_p, y_pred_p, strata: Strata, *, mask_b=None, mask_p=None,
                          metric: str = "accuracy", positive=None, name: str = "overall", alpha: float = 0.05,
                          effect_floor: float = 0.05, min_stratum: int = 5, min_samples: int = 30,
                          confidence: float = 0.95, pool_thin: bool = False
                          ) -> tuple[WithinContextChange | None, ShiftTest]:
    """Stratified test of "no change within any stratum" for the rows in ``mask_b``/``mask_p``.

    Parameters
    ----------
    y_true_b, y_pred_b : arrays of shape (n_b,)
    y_true_p, y_pred_p : arrays of shape (n_p,)
    strata : :class:`Strata` of the same rows
    mask_b, mask_p : boolean arrays of shapes (n_b,), (n_p,), optional (a slice; all rows if None)
    pool_thin : bool, pool into one the strata with too few benchmark rows of a class when they hold
        most of its production rows (only where no context's mix moved)

    Returns
    -------
    (change, test) : the estimate (None when untestable) and a ShiftTest of kind
        ``"slice_performance"`` whose effect is ``observed - expected``.
    """
    (yb, pb, yp, pp), positive = _comparable(y_true_b, y_pred_b, y_true_p, y_pred_p, positive)
    mb_mask = np.ones(len(yb), bool) if mask_b is None else np.asarray(mask_b, bool)
    mp_mask = np.ones(len(yp), bool) if mask_p is None else np.asarray(mask_p, bool)
    tested = TESTED_METRIC.get(metric, "balanced_accuracy")
    groups_b, groups_p = _rows(tested, yb, pb, positive), _rows(tested, yp, pp, positive)
    classes = sorted(set(pd.unique(yb[mb_mask])))  # hashed, not sorted row by row (text labels sort slowly)
    if tested == "balanced_accuracy":  # align per-class groups by class
        groups_b = [(yb == c, pb == c) for c in classes]
        groups_p = [(yp == c, pp == c) for c in classes]
    n_strata = int(max(strata.benchmark.max(initial=0), strata.production.max(initial=0))) + 1
    obs = exp = var0 = var1 = 0.0
    covered_p = total_p = 0
    used = 0
    weight_total = 0.0
    pooled_classes = 0
    present_b = np.bincount(strata.benchmark[mb_mask], minlength=n_strata) > 0  # strata the benchmark has at all
    for (rb, sb), (rp, sp) in zip(groups_b, groups_p):
        rb, rp = rb & mb_mask, rp & mp_mask
        nb = np.bincount(strata.benchmark[rb], minlength=n_strata).astype(float)
        kb = np.bincount(strata.benchmark[rb], weights=sb[rb], minlength=n_strata)
        npr = np.bincount(strata.production[rp], minlength=n_strata).astype(float)
        kp = np.bincount(strata.production[rp], weights=sp[rp], minlength=n_strata)
        total_p += int(npr.sum())
        ok = (nb >= min_stratum) & (npr > 0)
        thin = ~ok & present_b & (npr > 0)
        if pool_thin and npr[thin].sum() > npr[ok].sum() and nb[thin].sum() >= min_stratum:
            # Most of this class's production rows sit in strata the benchmark has, but with fewer than
            # min_stratum rows of this class (a rare class spread over many cells): dropping them
            # tested the other classes only and missed a drop in this one (balanced accuracy 0.64 ->
            # 0.48 tested as p = 0.71). With ``pool_thin`` (the caller found no context whose mix
            # moved, so the context cells confound nothing) those strata are pooled into one for this
            # class; rows in strata the benchmark lacks altogether stay uncovered. Not by confidence
            # bin: labels flipped on confidently predicted rows move the class into other bins, and
            # that reweighting explained the drop away. Where a context's mix moved, pooling would
            # compare rows of different contexts (a weak pose grown 3 % -> 15 % read as a concept
            # shift inside "occluded"), so those rows are dropped as before.
            pooled = [a[thin].sum() for a in (nb, kb, npr, kp)]
            nb, kb, npr, kp = (np.append(a[ok], x) for a, x in zip((nb, kb, npr, kp), pooled))
            ok = np.ones(len(nb), bool)
            pooled_classes += 1
        covered_p += int(npr[ok].sum())
        if not ok.any():
            continue
        used += 1
        v = npr[ok] / npr[ok].sum()
        rate_b, rate_p = kb[ok] / nb[ok], kp[ok] / npr[ok]
        pooled = (kb[ok] + kp[ok]) / (nb[ok] + npr[ok])
        obs += (v * rate_p).sum()
        exp += (v * rate_b).sum()
        var0 += (v ** 2 * pooled * (1 - pooled) * (1 / nb[ok] + 1 / npr[ok])).sum()
        # smoothed rates so a stratum at 0 % or 100 % still carries sampling variance in the CI
        sm_b, sm_p = (kb[ok] + 0.5) / (nb[ok] + 1), (kp[ok] + 0.5) / (npr[ok] + 1)
        var1 += (v ** 2 * (sm_b * (1 - sm_b) / nb[ok] + sm_p * (1 - sm_p) / npr[ok])).sum()
        weight_total += 1.0
    n_b, n_p = int(mb_mask.sum()), int(mp_mask.sum())
    uncovered = 1.0 - covered_p / total_p if total_p else 1.0
    nan = float("nan")
    details = {"metric_tested": tested, "within_context": True, "reweighted": True, "uncovered_share": uncovered,
               "pooled_thin_strata_groups": pooled_classes}
    if used == 0 or covered_p < min_samples or n_b < min_samples:
        test = ShiftTest(name, "stratified_z", nan, nan, nan, nan, "within_context_difference", effect_floor,
                         n_b, n_p, False, kind="slice_performance", status="insufficient_data", details=details)
        return None, test
    obs, exp, var0, var1 = obs / used, exp / used, var0 / used ** 2, var1 / used ** 2
    diff = obs - exp
    z = diff / math.sqrt(var0) if var0 > 0 else 0.0
    p = float(2 * stats.norm.sf(abs(z))) if var0 > 0 else 1.0
    half = stats.norm.ppf(0.5 + confidence / 2) * math.sqrt(var1)
    change = WithinContextChange(tested, float(obs), float(exp), float(diff), (float(diff - half), float(diff + half)),
                                 p, float(uncovered), int(n_strata))
    details.update(observed=float(obs), expected=float(exp), difference=float(diff),
                   difference_ci=change.difference_ci)
    test = ShiftTest(name, "stratified_z", float(z), p, p, float(diff), "within_context_difference", effect_floor,
                     n_b, n_p, decide(p, diff, alpha=alpha, effect_floor=effect_floor), kind="slice_performance",
                     details=details)
    return change, test


def _comparable(y_true_b, y_pred_b, y_true_p, y_pred_p, positive):
    arrays = [np.asarray(a) for a in (y_true_b, y_pred_b, y_true_p, y_pred_p)]
    if len({a.dtype.kind for a in arrays}) > 1 or (positive is not None and not isinstance(positive, str)
                                                    and arrays[0].dtype.kind in "OUS"):
        arrays = [a.astype(str) for a in arrays]  # labels of mixed types compare as text
        positive = None if positive is None else str(positive)
    return arrays, positive


def label_codes(y_true_b, y_pred_b, y_true_p, y_pred_p, positive=None):
    """The four label arrays as integer codes in the sorted order of the labels, and the code of
    ``positive`` (-1 when no row has it): :func:`within_context_change` gives the same test on
    the codes as on the labels, and a caller testing many slices encodes the rows once instead of
    comparing text labels row by row in every test."""
    arrays, positive = _comparable(y_true_b, y_pred_b, y_true_p, y_pred_p, positive)
    codes, uniques = pd.factorize(np.concatenate([a.astype(object) for a in arrays]), sort=True)
    ends = np.cumsum([0, *(len(a) for a in arrays)])
    parts = [codes[ends[i]:ends[i + 1]].astype(np.int64) for i in range(4)]
    if positive is None:
        return parts, None
    found = np.flatnonzero(pd.Index(uniques) == positive)
    return parts, int(found[0]) if found.size else -1


@renamed_parameters(benchmark="reference", production="current")
def context_strata_cells(reference: pd.DataFrame, current: pd.DataFrame, columns, *, n_bins: int = 15):
    """Context cells for the within-context test, shapes (n_b,), (n_p,).

    Categorical columns: one cell per value. Continuous columns (more than 12 values): ``n_bins``
    bins at quantiles of the *pooled* values, so the bins are narrow where either dataset is
    dense - a context's mix moving inside a coarse benchmark bin would otherwise look like a
    change within context. Production rows beyond the benchmark's range get cells of their own,
    which the benchmark lacks (left out as uncovered: they are untested contexts).
    """
    n_b = len(reference)
    combined = np.zeros(n_b + len(current), np.int64)
    for c in columns:
        both = pd.concat([reference[c], current[c]], ignore_index=True)
        numeric = (pd.api.types.is_numeric_dtype(both) and not pd.api.types.is_bool_dtype(both)
                   and reference[c].nunique() > 12)
        if numeric:
            x = both.to_numpy(float)
            edges = np.unique(np.nanquantile(x, np.linspace(0, 1, n_bins + 1)[1:-1]))
            codes = np.where(np.isnan(x), len(edges) + 1, np.searchsorted(edges, np.nan_to_num(x), side="right"))
            xb = x[:n_b]
            lo, hi = np.nanmin(xb), np.nanmax(xb)
            with np.errstate(invalid="ignore"):
                codes = np.where(x < lo, len(edges) + 2, np.where(x > hi, len(edges) + 3, codes))
        else:
            codes = pd.factorize(both.astype(object).where(both.notna(), "<missing>"))[0]
        codes = np.asarray(codes, np.int64)
        combined = combined * (int(codes.max()) + 1) + codes
    ids = dense_ids(combined)
    return ids[:n_b], ids[n_b:]


@renamed_parameters(benchmark="reference", production="current")
def rank_context_columns(reference: pd.DataFrame, current: pd.DataFrame, columns, *, limit: int = 2) -> list:
    """The ``limit`` context columns whose distribution moved most (sample-balanced effects).

    Categorical: sample-balanced Cramér's V of the value shares; numeric: the KS distance.
    Crossing more columns makes strata too thin to compare, so only the most moved are used.
    """
    scores = []
    for c in columns:
        b, p = reference[c], current[c]
        numeric = pd.api.types.is_numeric_dtype(b) and not pd.api.types.is_bool_dtype(b) and b.nunique() > 12
        if numeric:
            xb, xp = np.sort(b.dropna().to_numpy(float)), np.sort(p.dropna().to_numpy(float))
            if not xb.size or not xp.size:
                continue
            grid = np.concatenate([xb, xp])
            score = float(np.abs(np.searchsorted(xb, grid, "right") / xb.size
                                 - np.searchsorted(xp, grid, "right") / xp.size).max())
        else:
            vb, vp = text_value_counts(b), text_value_counts(p)
            labels = sorted(set(vb.index) | set(vp.index))
            score = balanced_cramers_v(np.vstack([vb.reindex(labels, fill_value=0).to_numpy(float),
                                                  vp.reindex(labels, fill_value=0).to_numpy(float)]))
        scores.append((score, c))
    return [c for _, c in sorted(scores, key=lambda t: -t[0])[:limit]]


def text_value_counts(series: pd.Series) -> pd.Series:
    """``series.astype(str).value_counts()`` without converting every row to text.

    Counting the values first and converting only the distinct ones is exact when no two
    distinct values share a text (all text, or all integers / booleans); otherwise (1 and 1.0 in
    one object column, say) the rows are converted as before.
    """
    counts = series.value_counts(dropna=False)
    counts = counts[counts > 0]  # a categorical's unused categories are not values of the rows
    kind = series.dtype.kind
    exact = kind in "iub" or (kind == "O" and all(isinstance(v, str) or v is None or v != v for v in counts.index))
    if not exact:
        return series.astype(str).value_counts()
    texts = [str(v) for v in counts.index]
    if len(set(texts)) < len(texts):  # None and NaN both present, say: add up the rows of one text
        return pd.Series(counts.to_numpy(), index=texts).groupby(level=0, sort=False).sum().sort_values(
            ascending=False, kind="stable")
    return pd.Series(counts.to_numpy(), index=pd.Index(texts, dtype=object), name="count")


def stratified_expected(y_true_b, y_pred_b, y_true_p, strata: Strata, *, confidence: float = 0.95,
                        min_stratum: int = 5):
    """Expected production accuracy from the benchmark under the production mix of ``strata``.

    The benchmark accuracy of each stratum (context cell x confidence bin), weighted by the
    production rows in it: a moved context mix and covariate shift as the model sees it (its
    confidence) are accounted for; what remains when the observed accuracy departs from this is
    a change of the model's behaviour within context - concept shift. Per-class recall is not
    estimated this way: under covariate shift within a class recall legitimately moves. The
    interval covers the accuracy these production rows achieve (benchmark rate uncertainty plus
    the binomial spread of the production rows). Strata with fewer than ``min_stratum``
    benchmark rows are left out.

    Returns a :class:`detectors.performance.PerformanceEstimate` (method ``"stratified_reweighted"``)
    for :func:`detectors.performance.compare_performance`.
    """
    yb, pb, yp = (np.asarray(a).astype(str) for a in (y_true_b, y_pred_b, y_true_p))
    z = stats.norm.ppf(0.5 + confidence / 2)
    n_strata = int(max(strata.benchmark.max(initial=0), strata.production.max(initial=0))) + 1
    nb = np.bincount(strata.benchmark, minlength=n_strata).astype(float)
    kb = np.bincount(strata.benchmark, weights=(yb == pb), minlength=n_strata)
    npr = np.bincount(strata.production, minlength=n_strata).astype(float)
    ok = (nb >= min_stratum) & (npr > 0)
    metrics = []
    if ok.any():
        v = npr[ok] / npr[ok].sum()
        rate, smooth = kb[ok] / nb[ok], (kb[ok] + 0.5) / (nb[ok] + 1)
        value = float((v * rate).sum())
        half = float(z * np.sqrt((v ** 2 * smooth * (1 - smooth) * (1 / nb[ok] + 1 / npr[ok])).sum()))
        metrics.append(MetricEstimate("accuracy", value, max(0.0, value - half), min(1.0, value + half),
                                      int(npr[ok].sum()), "stratified"))
    return PerformanceEstimate("stratified_reweighted", tuple(metrics), int(len(yb)), int(npr[ok].sum()),
                               float(confidence))


def covered_rows(y_true_b, strata: Strata, *, min_stratum: int = 5) -> np.ndarray:
    """Production rows in strata with at least ``min_stratum`` benchmark rows (shape (n_p,)).

    :func:`stratified_expected` speaks for these rows only; compare observed values on them.
    """
    n_strata = int(max(strata.benchmark.max(initial=0), strata.production.max(initial=0))) + 1
    nb = np.bincount(strata.benchmark, minlength=n_strata)
    return nb[strata.production] >= min_stratum
