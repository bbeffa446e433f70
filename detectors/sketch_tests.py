"""Tests computed from mergeable summaries (:mod:`detectors.summaries`), with the result types
of the in-memory detectors, so that the rest of an audit cannot tell which engine ran.

Exact where the summary is exact: category, missing-value, confusion and predicted-class counts
give the same chi-square, missing-rate, metric and BBSE numbers as the in-memory detectors.

Numeric columns: the KS test on KLL sketches (``method="ks_sketch"``). The sketch CDFs are step
functions that jump only at retained values, so ``D_hat = max |F_ref - F_cur|`` over the union
of both sketches' retained values is their exact sup distance. If each sketch's CDF is within
``eps`` of its sample's ECDF at every point (probability >= 99 % each, see
:mod:`detectors.summaries`), the triangle inequality gives ``|D_hat - D| <= eps_ref + eps_cur
= eps``, where ``D`` is the exact two-sample KS statistic. The p-value is computed with the same
:func:`detectors.univariate.ks_pvalue` as the in-memory detector, but at ``D_low = max(D_hat -
eps, 0) <= D``; the KS p-value falls as ``D`` grows, so the reported p-value is at least the exact
continuous-KS p-value whenever both sketches are within their bound. Hence the test is never more
significant than the exact KS test except with probability at most 2 % (both sketches' failure
probabilities) and its size stays at most ``alpha`` plus that (in practice far below
``alpha``: the shift by ``eps`` makes it conservative). A sketch that never compacted has
``eps = 0``, and then ``D_hat = D`` exactly. The price is power: a shift is found only when
``D > eps`` plus the usual critical value, about 0.0056 + 1.36 sqrt(2 / n) for two ``k = 1000``
sketches; far below the ``D`` of a shift at the 0.1 sigma practical floor (about 0.04).
``details`` hold ``D_hat``, ``(D_low, D_high)``, ``eps``, the p-value at ``D_hat`` (for reference
only) and each sketch's ``k``.

Numeric columns with at most :data:`detectors.summaries.MAX_LEVELS` distinct values (integer
columns: ages, counts, scores on a scale) also carry exact value counts; their test
(:func:`level_ks_test`) is the in-memory one, exactly: ``D``, Wasserstein and, with ties, the
tie-correct permutation p-value (``details["exact_value_counts"]`` is True).

The normed Wasserstein effect is the area between the two sketch CDFs (equal to the integral
over ``u`` of ``|Q_ref(u) - Q_cur(u)|`` of the sketched distributions) divided by the exact
reference standard deviation, with the floor semantics of :mod:`detectors.covariate`.

>>> import numpy as np
>>> from detectors.summaries import NumericSummary
>>> rng = np.random.default_rng(0)
>>> ref = NumericSummary.from_values(rng.normal(size=50_000))
>>> cur = NumericSummary.from_values(rng.normal(0.3, 1, size=50_000))
>>> t = sketch_ks_test("x", ref, cur)
>>> t.method, t.p_value < 1e-100, round(t.effect_size, 1), round(t.details["sketch_rank_error"], 4)
('ks_sketch', True, 0.3, 0.0056)
>>> lo, hi = t.details["ks_statistic_bounds"]; bool(lo <= 0.119 <= hi)
True
"""
from __future__ import annotations

from typing import Mapping, Sequence, cast

import numpy as np

from detectors.base import (
    DetectorInputError,
    ShiftTest,
    check_alpha,
    check_correction,
    check_effect_floors,
    check_fraction,
    check_int,
    check_number,
    check_random_state,
    renamed_parameters,
)
from detectors.column_types import ExcludedColumn
from detectors.covariate import CovariateResult, covariate_result
from detectors.feature_tests import (
    DEFAULT_EFFECT_FLOORS,
    categorical_feature_test,
    effect_floor,
    insufficient_test,
    mean_difference,
    missing_rate_tests,
    missing_rates,
    wasserstein_effect,
)
from detectors.label_shift import PRIOR_RATIO_FLOOR, LabelShiftEstimator, LabelShiftResult
from detectors.metric_ci import (
    METRICS,
    NEEDS_CLASS,
    NEEDS_POSITIVE,
    MetricEstimate,
    infer_positive,
    metric_from_confusion,
    metric_from_counts,
)
from detectors.summaries import CategorySummary, ConfusionSummary, NumericSummary, PredictionSummary
from detectors.univariate import ks_pvalue, ks_test, ks_tied_pvalue

__all__ = ["sketch_gap_statistics", "sketch_ks_test", "summary_covariate", "summary_slice_metric",
           "bootstrap_metric_interval", "summary_label_shift"]


def sketch_gap_statistics(reference: NumericSummary, current: NumericSummary) -> tuple[float, float]:
    """``(D_hat, W_hat)``: KS distance and Wasserstein-1 between the two sketch CDFs.

    Both CDFs are evaluated at the union of the sketches' retained values (shape (r,)), where
    they jump, so both numbers are exact for the sketched distributions (and for the data when
    neither sketch compacted).
    """
    points = np.union1d(reference.items(), current.items())
    if points.size == 0:
        return 0.0, 0.0
    gap = reference.cdf(points) - current.cdf(points)
    return float(np.abs(gap).max()), float((np.abs(gap[:-1]) * np.diff(points)).sum())


def sketch_ks_test(name: str, reference: NumericSummary, current: NumericSummary, *,
                   floor: float = DEFAULT_EFFECT_FLOORS["wasserstein_normed"], min_samples: int = 30,
                   kind: str = "feature", random_state: int = 0) -> ShiftTest:
    """Conservative two-sample KS :class:`ShiftTest` of two numeric summaries (see the module doc).

    ``statistic`` is ``D_hat``; ``p_value`` is the KS p-value at ``D_low = max(D_hat - eps, 0)``.
    When both summaries hold exact value counts (at most ``MAX_LEVELS`` distinct values) the test
    is exact instead: :func:`level_ks_test`. Fewer than ``min_samples`` non-missing values on
    either side give ``insufficient_data``.
    """
    check_number("floor", floor, minimum=0)
    check_int("min_samples", min_samples, minimum=1)
    check_random_state(random_state)
    n, m = reference.n, current.n
    details = missing_rates(reference.n_missing, n + reference.n_missing, current.n_missing, m + current.n_missing)
    if min(n, m) < min_samples:
        return insufficient_test(name, "ks_sketch", "wasserstein_normed", floor, n, m, kind, details)
    if reference.levels is not None and current.levels is not None:
        return level_ks_test(name, reference, current, details=details, floor=floor, kind=kind,
                             random_state=random_state)
    d_hat, wasserstein = sketch_gap_statistics(reference, current)
    errors = (reference.rank_error, current.rank_error)
    eps = errors[0] + errors[1]
    d_low, d_high = max(d_hat - eps, 0.0), min(d_hat + eps, 1.0)
    p_value, p_method = ks_pvalue(d_low, n, m)
    std_ref, std_cur = reference.std, current.std
    diff, ci = mean_difference(reference.mean, std_ref, n, current.mean, std_cur, m)
    details.update(ks_statistic=d_hat, ks_statistic_sketch=d_hat, ks_statistic_bounds=(d_low, d_high),
                   ks_p_value=p_value, ks_method=p_method, p_value_at_sketch_statistic=ks_pvalue(d_hat, n, m)[0],
                   sketch_rank_error=eps, sketch_rank_errors=errors, sketch_k=(reference.k, current.k),
                   sketch_exact=eps == 0.0, wasserstein=wasserstein, mean_reference=reference.mean,
                   mean_current=current.mean, std_reference=std_ref, std_current=std_cur, mean_difference=diff,
                   mean_difference_ci=ci)
    effect = wasserstein_effect(wasserstein, n, m, std_ref, std_cur)
    return ShiftTest(name, "ks_sketch", d_hat, p_value, p_value, effect, "wasserstein_normed", floor, n, m, False,
                     kind=kind, details=details)


def level_ks_test(name: str, reference: NumericSummary, current: NumericSummary, *, details: dict, floor: float,
                  kind: str = "feature", random_state: int = 0) -> ShiftTest:
    """The in-memory detector's KS test, computed from exact value counts merged over partitions.

    Both ECDFs are exact at the pooled distinct values (shape (levels,)), so ``D``, the
    Wasserstein distance and the p-value equal the pandas engine's: the KS p-value (``method
    "ks"``) without ties, the tie-correct permutation p-value (``"ks_permutation_ties"``, drawn
    from the same multivariate hypergeometric law) with ties.
    """
    ref_levels, cur_levels = reference.level_counts(), current.level_counts()
    if ref_levels is None or cur_levels is None:
        raise ValueError("level_ks_test needs the exact value counts of both summaries (levels).")
    (ref_values, ref_counts), (cur_values, cur_counts) = ref_levels, cur_levels
    values = np.union1d(ref_values, cur_values)
    cum_ref = np.cumsum(_aligned(values, ref_values, ref_counts))
    cum_cur = np.cumsum(_aligned(values, cur_values, cur_counts))
    n, m = int(cum_ref[-1]), int(cum_cur[-1])
    gap = cum_ref / n - cum_cur / m
    d = float(np.abs(gap).max())
    wasserstein = float((np.abs(gap[:-1]) * np.diff(values)).sum())
    d_lattice, p_value, p_method = ks_test(d, n, m)
    method = "ks"
    if 2 <= values.size < n + m:  # ties: the continuous p-value is conservative
        details["ks_p_value_continuous"] = p_value
        p_value = ks_tied_pvalue(cum_ref, cum_cur, d, random_state=random_state)
        method = p_method = "ks_permutation_ties"
    std_ref, std_cur = reference.std, current.std
    diff, ci = mean_difference(reference.mean, std_ref, n, current.mean, std_cur, m)
    details.update(ks_statistic=d_lattice, ks_p_value=p_value, ks_method=p_method, exact_value_counts=True,
                   n_levels=int(values.size), sketch_rank_error=0.0, sketch_exact=True, wasserstein=wasserstein,
                   mean_reference=reference.mean, mean_current=current.mean, std_reference=std_ref,
                   std_current=std_cur, mean_difference=diff, mean_difference_ci=ci)
    effect = wasserstein_effect(wasserstein, n, m, std_ref, std_cur)
    return ShiftTest(name, method, d_lattice, p_value, p_value, effect, "wasserstein_normed", floor, n, m, False,
                     kind=kind, details=details)


def _aligned(values: np.ndarray, at: np.ndarray, counts: np.ndarray) -> np.ndarray:
    out = np.zeros(values.size, dtype=np.int64)
    out[np.searchsorted(values, at)] = counts
    return out


def _check_summaries(reference: Mapping, current: Mapping, n_reference: int, n_current: int) -> None:
    missing = [c for c in reference if c not in current]
    extra = [c for c in current if c not in reference]
    if missing or extra:
        raise DetectorInputError(f"The current summaries do not match the reference: missing columns {missing}, "
                                 f"unexpected columns {extra}.")
    for name, ref in reference.items():
        cur = current[name]
        if not isinstance(ref, (NumericSummary, CategorySummary)) or type(cur) is not type(ref):
            raise DetectorInputError(f"Column {name!r}: summaries must both be NumericSummary or both "
                                     f"CategorySummary, got {type(ref).__name__} and {type(cur).__name__}.")
        for role, summary, rows in (("reference", ref, n_reference), ("current", cur, n_current)):
            if summary.n + summary.n_missing != rows:
                raise DetectorInputError(f"Column {name!r}: the {role} summary holds {summary.n + summary.n_missing} "
                                         f"values but the {role} has {rows} rows.")
    empty = [c for c, s in reference.items() if s.n == 0]
    if empty:
        raise DetectorInputError(f"Reference columns {empty} are entirely missing; drop them or provide values.")


def summary_covariate(reference: Mapping[str, NumericSummary | CategorySummary],
                      current: Mapping[str, NumericSummary | CategorySummary], *, n_reference: int, n_current: int,
                      alpha: float = 0.05, correction: str = "bh", effect_floors: Mapping | None = None,
                      min_samples: int = 30, min_expected: float = 5.0,
                      excluded: Sequence[ExcludedColumn] = (), random_state: int = 0) -> CovariateResult:
    """:meth:`CovariateShiftDetector.test` from per-column summaries.

    Numeric summaries get :func:`sketch_ks_test`, category summaries (categorical, boolean and
    few-valued numeric columns, as the engine typed them) the chi-square test on exact counts,
    every column a missing-rate test; all corrected together, reported in ``reference`` order.

    Parameters
    ----------
    reference, current : mapping column -> summary, the same columns
    n_reference, n_current : int
        Rows of each dataset (each column's ``n + n_missing``).
    excluded : sequence of ExcludedColumn
        Columns the caller did not summarise, reported as in the in-memory result.
    random_state : int
        Seed of the permutation p-values of tied numeric columns (as the in-memory detector's).
    """
    check_alpha(alpha)
    check_random_state(random_state)
    check_correction(correction)
    check_effect_floors("effect_floors", effect_floors, DEFAULT_EFFECT_FLOORS)
    check_int("min_samples", min_samples, minimum=1)
    check_number("min_expected", min_expected, minimum=0)
    _check_summaries(reference, current, n_reference, n_current)
    features, j = [], 0
    for name, ref in reference.items():
        cur = current[name]
        if isinstance(ref, NumericSummary) and isinstance(cur, NumericSummary):  # _check_summaries: both or neither
            floor = effect_floor("wasserstein_normed", effect_floors)
            # the seed of the in-memory detector's permutation test for its j-th numeric column
            features.append(sketch_ks_test(name, ref, cur, floor=floor, min_samples=min_samples,
                                           random_state=random_state + j))
            j += 1
            continue
        ref_c, cur_c = cast(CategorySummary, ref), cast(CategorySummary, cur)  # _check_summaries: the same kind
        details = missing_rates(ref_c.n_missing, n_reference, cur_c.n_missing, n_current)
        features.append(categorical_feature_test(name, ref_c.to_series(), cur_c.to_series(), details=details,
                                                 floor=effect_floor("cramers_v", effect_floors),
                                                 min_samples=min_samples, min_expected=min_expected))
    missing = missing_rate_tests(list(reference), {c: s.n_missing for c, s in reference.items()},
                                 {c: s.n_missing for c, s in current.items()}, n_reference, n_current,
                                 floor=effect_floor("missing_rate_difference", effect_floors),
                                 min_samples=min_samples)
    return covariate_result(features, missing, alpha=alpha, correction=correction, excluded=tuple(excluded),
                            n_reference=n_reference, n_current=n_current)


def _class_index(classes: list, cm: np.ndarray, label, metric: str, role: str) -> tuple[list, np.ndarray, int]:
    """Index of ``label`` in ``classes``; an absent class gets an empty row and column (as
    :func:`detectors.metric_ci.metric_with_ci` does), so its metric is undefined, not an error."""
    if label is None:
        raise DetectorInputError(f"Metric {metric!r} needs {role}=<class label> (classes: {classes[:10]}).")
    hits = [i for i, c in enumerate(classes) if c == label or str(c) == str(label)]
    if hits:
        return classes, cm, hits[0]
    return classes + [label], np.pad(cm, [(0, 0)] * (cm.ndim - 2) + [(0, 1), (0, 1)]), len(classes)


def _metric_setup(confusion: ConfusionSummary, metric: str, positive, cls, counts: np.ndarray):
    if metric not in METRICS or metric == "auc":
        raise DetectorInputError(f"Metric {metric!r} cannot come from counts; choose one of "
                                 f"{[m for m in METRICS if m != 'auc']}.")
    classes, pos, idx = list(confusion.classes), None, None
    if metric in NEEDS_POSITIVE:
        positive = infer_positive(classes) if positive is None else positive
        classes, counts, pos = _class_index(classes, counts, positive, metric, "positive")
    if metric in NEEDS_CLASS:
        classes, counts, idx = _class_index(classes, counts, cls, metric, "cls")
    return counts, pos, idx


def summary_slice_metric(confusion: ConfusionSummary, metric: str, *, positive=None, cls=None,
                         confidence: float = 0.95, min_samples: int = 1, n_bootstrap: int = 500,
                         random_state: int = 0) -> MetricEstimate:
    """The metric of a (slice's) confusion summary with its CI, exactly as
    :func:`detectors.metric_ci.metric_with_ci` computes it from the same rows: Wilson for
    proportions, the multinomial bootstrap of the ``k x k`` cells (seeded) otherwise."""
    check_fraction("confidence", confidence)
    check_int("n_bootstrap", n_bootstrap, minimum=1)
    check_int("min_samples", min_samples, minimum=0)
    check_random_state(random_state)
    counts, pos, idx = _metric_setup(confusion, metric, positive, cls, np.asarray(confusion.counts))
    return metric_from_counts(metric, counts, pos=pos, cls_index=idx, cls=cls, confidence=confidence,
                              n_bootstrap=n_bootstrap, rng=np.random.default_rng(random_state),
                              min_samples=min_samples)


def bootstrap_metric_interval(confusion: ConfusionSummary, metric: str, *, positive=None, cls=None,
                              confidence: float = 0.95) -> tuple[float, float]:
    """Percentile interval of ``metric`` over the summary's Poisson-bootstrap replicates (B, k, k)."""
    check_fraction("confidence", confidence)
    if confusion.replicates is None:
        raise DetectorInputError("The confusion summary has no bootstrap replicates (n_bootstrap=0).")
    reps, pos, idx = _metric_setup(confusion, metric, positive, cls, np.asarray(confusion.replicates))
    values = np.asarray(metric_from_confusion(metric, reps, pos, idx), dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    a = (1 - confidence) / 2
    lo, hi = np.quantile(values, [a, 1 - a])
    return float(lo), float(hi)


def _production_counts(production, pred_classes: list) -> tuple[np.ndarray, np.ndarray | None]:
    """Production counts (and replicates) in ``pred_classes`` order; unseen classes are an error."""
    if not isinstance(production, PredictionSummary):
        return np.asarray(production, dtype=np.int64), None
    aligned = production.reindexed(pred_classes, what="y_pred_production")
    return np.asarray(aligned.counts), aligned.replicates


@renamed_parameters(benchmark="reference", production="current")
def summary_label_shift(reference: ConfusionSummary, current: PredictionSummary | np.ndarray, *,
                        alpha: float = 0.05, confidence: float = 0.95, regularization="auto",
                        effect_floor: float = 0.05, ratio_floor: float = PRIOR_RATIO_FLOOR,
                        max_condition: float = 20.0, min_samples: int = 50, n_bootstrap: int = 200,
                        random_state: int = 0) -> LabelShiftResult:
    """BBSE from a labelled benchmark's confusion summary and production predicted-class counts.

    The point estimate, test and effect are :class:`LabelShiftEstimator`'s on the same counts
    (equal to fitting it on the rows). Intervals come from the summaries' Poisson replicates,
    benchmark replicate ``b`` paired with production replicate ``b``; without replicates on both
    sides the estimator's own multinomial bootstrap of the counts (``n_bootstrap``) is used.

    Parameters
    ----------
    reference : ConfusionSummary, classes k
        The labelled benchmark's confusion summary.
    current : PredictionSummary or array of shape (k_pred,) in the benchmark's predicted-class order
        Production's predicted-class counts.
    """
    counts = np.asarray(reference.counts)
    seen = counts.sum(1) + counts.sum(0) > 0  # the classes the in-memory fit would know
    truth = counts.sum(1) > 0
    classes = np.array(reference.classes, dtype=object)
    pred_classes = classes[seen].tolist()
    estimator = LabelShiftEstimator(alpha=alpha, n_bootstrap=n_bootstrap, regularization=regularization,
                                    confidence=confidence, min_samples=min_samples, effect_floor=effect_floor,
                                    ratio_floor=ratio_floor, max_condition=max_condition, random_state=random_state)
    estimator.fit_counts(counts[truth][:, seen], classes=classes[truth].tolist(), pred_classes=pred_classes)
    prod_counts, prod_reps = _production_counts(current, pred_classes)
    joint_reps = None
    if reference.replicates is not None and prod_reps is not None:
        if reference.n_bootstrap != len(prod_reps):
            raise DetectorInputError(f"Benchmark has {reference.n_bootstrap} replicates, production {len(prod_reps)}.")
        joint_reps = np.asarray(reference.replicates)[:, truth][:, :, seen]
    return estimator.estimate_counts(prod_counts, joint_replicates=joint_reps,
                                     current_replicates=None if joint_reps is None else prod_reps)
