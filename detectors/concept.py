"""Concept shift when production labels exist: observed label shift and performance change
per class (or per slice: the per-group functions take any boolean group mask).

**Concept shift** is observed production performance departing from what the label-free
estimator predicts under the observed covariate shift. Given that estimate
(``expected=``, e.g. :class:`detectors.ConfidenceBasedEstimator` on production scores, valid
under covariate shift), :meth:`ConceptShiftDetector.test` pairs each estimated metric
(accuracy and per-class recall) with the observed one (:func:`detectors.compare_performance`)
and tests the departure: ``z = (observed - estimated) / se`` with ``se`` the estimate's
bootstrap standard error (its interval is for the metric these very rows achieve, so the
observed value falls inside at the nominal rate when nothing but covariates moved). Those
tests decide ``is_shift`` (``basis="label_free_estimate"``).

Per-class recall changes benchmark -> production are still measured and tested, but alone
they are not concept shift: under covariate shift within a class (harder cases of the same
class) recall moves while ``P(y | x)`` does not. Only without an estimate (no scores) do they
decide, and ``basis="recall_change"`` says that covariate shift could not be separated.

>>> import numpy as np
>>> c = proportion_change(80, 100, 60, 100, name="recall[cat]", metric="recall", group="cat")
>>> round(c.difference, 2), c.test.drifted, c.test.kind
(-0.2, True, 'concept')
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from detectors.base import (
    DetectorInputError,
    Result,
    ShiftTest,
    check_alpha,
    check_correction,
    check_fitted,
    check_fraction,
    check_int,
    check_number,
    check_random_state,
)
from detectors.confusion import as_label_array, chi2_two_sample, encode, sorted_classes
from detectors.correction import readjust
from detectors.decision import check_tests, decide
from detectors.intervals import newcombe_interval, wilson_interval, z_value
from detectors.label_shift import prior_shift_effect
from detectors.metric_ci import observed_performance
from detectors.performance import compare_performance
from detectors.univariate import chi2_two_sample as pooled_chi2
from detectors.validation import as_mask

__all__ = ["GroupChange", "ConceptShiftResult", "ConceptShiftDetector", "proportion_change",
           "group_performance_change", "two_proportion_pvalue", "observed_label_shift", "PerformanceDeparture",
           "performance_departures"]


@dataclass(frozen=True)
class GroupChange(Result):
    """Change of one proportion metric in one group (a class or a slice), production minus benchmark."""

    name: str
    metric: str
    group: Any
    benchmark_value: float
    benchmark_ci: tuple
    production_value: float
    production_ci: tuple
    difference: float
    difference_ci: tuple
    p_value: float
    n_benchmark: int
    n_production: int
    test: ShiftTest


@dataclass(frozen=True)
class ConceptShiftResult(Result):
    """Observed label shift plus per-class recall changes (p-values BH-corrected among classes)."""

    is_shift: bool
    label_shift_observed: bool
    benchmark_prior: dict
    production_prior: dict
    label_test: ShiftTest
    per_class: tuple
    departures: tuple = ()  # PerformanceDeparture: observed vs label-free estimate under covariate shift
    basis: str = "recall_change"  # what decides is_shift: "label_free_estimate" or "recall_change"

    @property
    def tests(self) -> tuple:
        """Every hypothesis tested here, for an audit-wide correction."""
        return (self.label_test,) + tuple(c.test for c in self.per_class) + tuple(d.test for d in self.departures)

    def with_tests(self, tests) -> "ConceptShiftResult":
        """A copy holding re-corrected ``tests`` (order of :attr:`tests`), flags re-derived."""
        tests = check_tests(self, tests)
        k = len(self.per_class)
        per_class = tuple(dataclasses.replace(c, test=t) for c, t in zip(self.per_class, tests[1:1 + k]))
        departures = tuple(dataclasses.replace(d, test=t) for d, t in zip(self.departures, tests[1 + k:]))
        return dataclasses.replace(self, label_test=tests[0], per_class=per_class, departures=departures,
                                   label_shift_observed=bool(tests[0].drifted),
                                   is_shift=_concept_flag(per_class, departures, self.basis))


@dataclass(frozen=True)
class PerformanceDeparture(Result):
    """One metric: observed production value against the label-free estimate, and its test."""

    comparison: Any  # detectors.performance.MetricComparison
    test: ShiftTest


def _concept_flag(per_class, departures, basis: str) -> bool:
    if basis == "label_free_estimate":
        return any(d.test.drifted for d in departures)
    return any(c.test.drifted for c in per_class)


def performance_departures(expected, y_true, y_pred, *, alpha=0.05, effect_floor=0.05, confidence=0.95,
                           keys: tuple | None = None) -> tuple:
    """Test observed production metrics against a label-free estimate (``expected``: PerformanceEstimate).

    Accuracy and per-class recall are tested (``keys`` overrides). Returns PerformanceDeparture records.
    """
    observed = observed_performance(y_true, y_pred, metrics=["accuracy"], confidence=confidence)
    z_ci = z_value(expected.confidence)
    out = []
    for row in compare_performance(expected, observed).rows:
        if keys is not None and row.name not in keys:
            continue
        if keys is None and not (row.name == "accuracy" or row.name.startswith("recall[")):
            continue
        lo, hi = row.estimated_ci
        se = (hi - lo) / (2 * z_ci) if np.isfinite(lo) and np.isfinite(hi) else float("nan")
        diff = row.difference
        if not (np.isfinite(se) and np.isfinite(diff)) or row.n < 1:
            nan = float("nan")
            test = ShiftTest(f"departure[{row.name}]", "z_vs_label_free_estimate", nan, nan, nan, nan,
                             "observed_minus_estimated", effect_floor, 0, int(row.n), False, kind="concept",
                             status="insufficient_data", details={"metric": row.name})
        else:
            z = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
            p = float(2 * stats.norm.sf(abs(z)))
            test = ShiftTest(f"departure[{row.name}]", "z_vs_label_free_estimate", float(z), p, p, float(diff),
                             "observed_minus_estimated", effect_floor, 0, int(row.n),
                             decide(p, diff, alpha=alpha, effect_floor=effect_floor), kind="concept",
                             details={"metric": row.name, "estimated": row.estimated, "estimated_ci": row.estimated_ci,
                                      "observed": row.observed, "observed_ci": row.observed_ci,
                                      "estimator": expected.method})
        out.append(PerformanceDeparture(row, test))
    return tuple(out)


def two_proportion_pvalue(k1, n1, k2, n2) -> tuple[float, float]:
    """Two-sided test of ``p1 == p2``: pooled z-test, or Fisher's exact test when an expected cell is < 5.

    Returns ``(statistic, p_value)``; the statistic is z (NaN for Fisher).
    """
    # The audit's one chi-square on the 2 x 2 table (z^2 = chi2); Fisher's exact p when sparse.
    outcome = pooled_chi2(np.array([k1, n1 - k1]), np.array([k2, n2 - k2]))
    if outcome.p_method == "fisher_exact":
        return float("nan"), float(outcome.p_value)
    if outcome.dof == 0:
        return 0.0, 1.0
    z = float(np.sign(k2 / n2 - k1 / n1) * np.sqrt(outcome.statistic))
    return z, float(outcome.p_value)


def proportion_change(k_ref, n_ref, k_cur, n_cur, *, name: str, metric: str = "accuracy", group: Any = None,
                      alpha: float = 0.05, effect_floor: float = 0.05, confidence: float = 0.95,
                      min_samples: int = 30, kind: str = "concept") -> GroupChange:
    """Compare a proportion (successes ``k`` of ``n``) between benchmark and production.

    Wilson CIs for each side, Newcombe CI for the difference (production - benchmark), a
    two-proportion p-value, and a ShiftTest whose effect is ``|difference|`` against
    ``effect_floor``. Below ``min_samples`` rows on either side: ``status="insufficient_data"``.
    """
    k_ref, n_ref, k_cur, n_cur = int(k_ref), int(n_ref), int(k_cur), int(n_cur)
    nan = float("nan")
    ref_ci = wilson_interval(k_ref, n_ref, confidence=confidence) if n_ref else (nan, nan)
    cur_ci = wilson_interval(k_cur, n_cur, confidence=confidence) if n_cur else (nan, nan)
    v_ref = k_ref / n_ref if n_ref else nan
    v_cur = k_cur / n_cur if n_cur else nan
    if min(n_ref, n_cur) < max(min_samples, 1):
        test = ShiftTest(name, "two_proportion", nan, nan, nan, nan, "abs_diff", effect_floor, n_ref, n_cur,
                         False, kind=kind, status="insufficient_data", details={"metric": metric})
        return GroupChange(name, metric, group, v_ref, ref_ci, v_cur, cur_ci, v_cur - v_ref, (nan, nan), nan,
                           n_ref, n_cur, test)
    diff_ci = newcombe_interval(k_ref, n_ref, k_cur, n_cur, confidence=confidence)
    stat, p = two_proportion_pvalue(k_ref, n_ref, k_cur, n_cur)
    diff = v_cur - v_ref
    drifted = decide(p, diff, alpha=alpha, effect_floor=effect_floor)
    method = "fisher_exact" if np.isnan(stat) else "z_two_proportion"
    test = ShiftTest(name, method, stat, p, p, abs(diff), "abs_diff", effect_floor, n_ref, n_cur, drifted,
                     kind=kind, details={"metric": metric, "benchmark": v_ref, "production": v_cur})
    return GroupChange(name, metric, group, v_ref, ref_ci, v_cur, cur_ci, diff, diff_ci, p, n_ref, n_cur, test)


def group_performance_change(success_ref, success_cur, *, group_ref=None, group_cur=None, name: str,
                             metric: str = "accuracy", group: Any = None, **kwargs) -> GroupChange:
    """Proportion of ``success`` rows within a group, benchmark vs production.

    ``success_*`` are boolean arrays (e.g. ``y_pred == y_true``); ``group_*`` boolean masks of
    the same length (e.g. a slice, or ``y_true == c`` for per-class recall; all rows if None).
    Keyword arguments go to :func:`proportion_change`.
    """
    s_ref, s_cur = as_mask("success_ref", success_ref), as_mask("success_cur", success_cur)
    g_ref = np.ones(len(s_ref), bool) if group_ref is None else as_mask("group_ref", group_ref)
    g_cur = np.ones(len(s_cur), bool) if group_cur is None else as_mask("group_cur", group_cur)
    if len(g_ref) != len(s_ref) or len(g_cur) != len(s_cur):
        raise DetectorInputError("group masks must have the same length as the success arrays.")
    return proportion_change(s_ref[g_ref].sum(), g_ref.sum(), s_cur[g_cur].sum(), g_cur.sum(),
                             name=name, metric=metric, group=group, **kwargs)


def observed_label_shift(y_ref, y_cur, classes, *, alpha=0.05, effect_floor=0.05, min_samples=30,
                         ratio_floor: float = 1.25) -> ShiftTest:
    """Chi-square test of equal true-label distributions (the pooled / Fisher-fallback one).

    Effect: the prior change relative to its floors (:func:`detectors.label_shift.prior_shift_effect`:
    total variation against ``effect_floor`` or a class ratio against ``ratio_floor``; ``>= 1`` passes).
    """
    k = len(classes)
    c_ref = np.bincount(encode(y_ref, classes, "y_true"), minlength=k)
    c_cur = np.bincount(encode(y_cur, classes, "y_true_production"), minlength=k)
    n_ref, n_cur = int(c_ref.sum()), int(c_cur.sum())
    if min(n_ref, n_cur) < min_samples:
        nan = float("nan")
        return ShiftTest("label_observed", "chi2", nan, nan, nan, nan, "prior_shift_relative", 1.0, n_ref, n_cur,
                         False, kind="label", status="insufficient_data")
    stat, p, dof = chi2_two_sample(c_ref, c_cur)
    effect, details = prior_shift_effect(c_ref / n_ref, c_cur / n_cur, tv_floor=effect_floor, ratio_floor=ratio_floor)
    details["max_ratio_class"] = np.asarray(classes).tolist()[details.pop("max_ratio_class_index")]
    return ShiftTest("label_observed", "chi2", stat, p, p, effect, "prior_shift_relative", 1.0, n_ref, n_cur,
                     decide(p, effect, alpha=alpha, effect_floor=1.0), kind="label", details={"dof": dof, **details})


class ConceptShiftDetector:
    """Observed label shift and per-class recall change between labelled benchmark and production.

    Parameters
    ----------
    alpha : float
    effect_floor : float
        Floor on ``|recall change|`` (default 0.05, i.e. 5 points).
    label_effect_floor : float
        Floor on the total variation distance of the label distributions (default 0.05).
    correction : {"bh", "holm", "bonferroni"}
        Correction across classes inside this result (an audit re-corrects globally).
    min_samples : int
        Minimum rows of a class on each side for its recall to be tested.
    confidence : float
    random_state : int, default 0
        Unused (closed-form tests); kept for the common detector signature.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y_b = rng.integers(0, 3, 3000); y_p = rng.integers(0, 3, 3000)
    >>> keep = rng.random(3000) < 0.85                      # synthetic: 85 % correct
    >>> p_b = np.where(keep, y_b, (y_b + 1) % 3)
    >>> keep_p = rng.random(3000) < np.where(y_p == 2, 0.6, 0.85)   # class 2 degrades
    >>> p_p = np.where(keep_p, y_p, (y_p + 1) % 3)
    >>> r = ConceptShiftDetector().fit(y_b, p_b).test(y_p, p_p)
    >>> r.is_shift, [c.group for c in r.per_class if c.test.drifted]
    (True, [2])
    """

    def __init__(self, *, alpha=0.05, effect_floor=0.05, label_effect_floor=0.05, correction="bh",
                 min_samples=30, confidence=0.95, random_state=0):
        self.alpha = alpha
        self.effect_floor = effect_floor
        self.label_effect_floor = label_effect_floor
        self.correction = correction
        self.min_samples = min_samples
        self.confidence = confidence
        self.random_state = random_state

    def _check_params(self) -> None:
        check_alpha(self.alpha)
        check_correction(self.correction)
        check_number("effect_floor", self.effect_floor, minimum=0, maximum=1)
        check_number("label_effect_floor", self.label_effect_floor, minimum=0, maximum=1)
        check_int("min_samples", self.min_samples, minimum=1)
        check_fraction("confidence", self.confidence)
        check_random_state(self.random_state)

    def fit(self, y_true, y_pred) -> "ConceptShiftDetector":
        """Remember the labelled benchmark: ``y_true``, ``y_pred`` of shape (n,)."""
        self._check_params()
        self.y_true_, self.y_pred_ = _pair(y_true, y_pred, "benchmark")
        self.classes_ = sorted_classes(self.y_true_)
        if len(self.classes_) < 2:
            raise DetectorInputError("Benchmark labels hold a single class; need at least two.")
        return self

    def test(self, y_true, y_pred, *, expected=None, expected_rows=None) -> ConceptShiftResult:
        """Compare labelled production rows ``y_true``, ``y_pred`` (shape (m,)) with the benchmark.

        ``expected``: a :class:`~detectors.PerformanceEstimate` of these production rows that
        holds under the non-concept shifts (covariate, label, context mix); when given, concept
        shift is decided by the observed metrics departing from it (module docstring).
        ``expected_rows``: boolean mask (m,) of the rows the estimate speaks for (default all).
        """
        check_fitted(self, "y_true_")
        self._check_params()
        y_cur, p_cur = _pair(y_true, y_pred, "production")
        label_test = observed_label_shift(self.y_true_, y_cur, self.classes_, alpha=self.alpha,
                                          effect_floor=self.label_effect_floor, min_samples=self.min_samples)
        kw = dict(alpha=self.alpha, effect_floor=self.effect_floor, confidence=self.confidence,
                  min_samples=self.min_samples)
        changes = [group_performance_change(self.y_pred_ == self.y_true_, p_cur == y_cur,
                                            group_ref=self.y_true_ == c, group_cur=y_cur == c,
                                            name=f"recall[{c}]", metric="recall", group=c, **kw)
                   for c in self.classes_.tolist()]
        changes = _correct(changes, alpha=self.alpha, correction=self.correction)
        k = len(self.classes_)
        prior_ref = np.bincount(encode(self.y_true_, self.classes_, "y_true"), minlength=k) / len(self.y_true_)
        prior_cur = np.bincount(encode(y_cur, self.classes_, "y_true"), minlength=k) / len(y_cur)
        cls = self.classes_.tolist()
        rows = np.ones(len(y_cur), bool) if expected_rows is None else as_mask("expected_rows", expected_rows)
        if len(rows) != len(y_cur):
            raise DetectorInputError("expected_rows must have one entry per production row.")
        departures = () if expected is None or not rows.any() else performance_departures(
            expected, y_cur[rows], p_cur[rows], alpha=self.alpha, effect_floor=self.effect_floor,
            confidence=self.confidence)
        if departures:
            fixed = readjust([d.test for d in departures], alpha=self.alpha, correction=self.correction)
            departures = tuple(dataclasses.replace(d, test=t) for d, t in zip(departures, fixed))
        basis = "label_free_estimate" if departures else "recall_change"
        return ConceptShiftResult(
            is_shift=_concept_flag(changes, departures, basis), label_shift_observed=label_test.drifted,
            benchmark_prior=dict(zip(cls, prior_ref.tolist())), production_prior=dict(zip(cls, prior_cur.tolist())),
            label_test=label_test, per_class=tuple(changes), departures=departures, basis=basis)


def _correct(changes: list[GroupChange], *, alpha: float, correction: str) -> list[GroupChange]:
    tested = [i for i, c in enumerate(changes) if c.test.status == "ok"]
    fixed = readjust([changes[i].test for i in tested], alpha=alpha, correction=correction)
    out = list(changes)
    for i, t in zip(tested, fixed):
        out[i] = dataclasses.replace(changes[i], test=t)
    return out


def _pair(y_true, y_pred, name: str) -> tuple[np.ndarray, np.ndarray]:
    t = as_label_array(y_true, f"y_true ({name})")
    p = as_label_array(y_pred, f"y_pred ({name})")
    if len(t) != len(p):
        raise DetectorInputError(f"{name}: y_true has {len(t)} rows but y_pred has {len(p)}.")
    if len(t) == 0:
        raise DetectorInputError(f"{name} has no rows.")
    return t, p
