"""Per-slice performance with confidence intervals, in the benchmark and in production.

For every slice (a pair of boolean masks, expert or discovered) and one metric:

* the metric with its CI and sample size in each dataset (:func:`detectors.metric_ci.metric_with_ci`:
  Wilson for proportions, multinomial bootstrap of confusion cells for balanced accuracy /
  macro-F1, DeLong for AUC);
* **change**: production minus benchmark value of the slice, with a CI and a test
  (two-proportion z / Fisher with a Newcombe CI for proportions; a bootstrap standard error
  for confusion-matrix metrics; DeLong standard errors for AUC) -> ``p_value``;
* **gap**: the slice minus the rest of the same dataset (production when it is labelled,
  else the benchmark), same tests -> ``gap_p_value``.

Both families are :class:`~detectors.base.ShiftTest` records (``kind="slice_performance"``
and ``"slice_gap"``) corrected together (BH by default); an audit may re-correct them with
everything else through :meth:`SliceEvaluation.with_tests`. A slice is *underperforming*
when its adjusted gap p-value is below ``alpha`` and it is worse than the rest by at least
``effect_floor`` (default 0.05, five points of the metric); *changed* likewise for the
benchmark-to-production difference. Slices with fewer than ``min_slice_size`` rows in a
dataset keep their values and CIs there but are not tested (``status="insufficient_data"``).
"""
from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Mapping

import numpy as np
from scipy import stats

from detectors.base import (
    DetectorInputError,
    ShiftTest,
    check_alpha,
    check_correction,
    check_fitted,
    check_fraction,
    check_in,
    check_int,
    check_number,
    check_random_state,
    renamed_parameters,
)
from detectors.confusion import confusion_counts, encode, sorted_classes
from detectors.correction import readjust
from detectors.intervals import newcombe_interval, z_value
from detectors.metric_ci import (
    MetricEstimate,
    infer_positive,
    metric_from_confusion,
    metric_from_counts,
    metric_with_ci_of_codes,
)

# result types, metric names and count helpers live in detectors.slice_results and
# detectors.slice_counts; they stay importable from here
from detectors.slice_counts import _PROPORTIONS, _auc_summary, _proportion_counts
from detectors.slice_results import METRIC_ALIASES, SLICE_METRICS, Outcomes, SliceEvaluation, SliceResult
from detectors.univariate import missing_rate_test

__all__ = ["Outcomes", "SliceResult", "SliceEvaluation", "SliceEvaluator", "SLICE_METRICS", "METRIC_ALIASES"]


class SliceEvaluator:
    """Slice metrics with CIs in both datasets, and their tests.

    Parameters
    ----------
    metric : str, default "accuracy"
        One of :data:`SLICE_METRICS` (``false_positive_rate`` = ``fpr``).
    positive : label, optional
        Positive class for sensitivity/specificity/fpr/precision/auc (inferred for 0/1 labels).
    alpha, correction : decision level and multiple-testing correction
    effect_floor : float, default 0.05
        Smallest metric difference that counts as a practical gap or change.
    min_slice_size : int, default 30
    min_denominator : int, default 10
        Fewest rows behind the metric (e.g. positives for sensitivity) in each group to test.
    confidence, n_bootstrap, random_state : CI level, bootstrap replicates, seed

    ``fit(reference)`` remembers the labelled benchmark :class:`Outcomes`; ``test(current,
    slices=...)`` evaluates and tests every slice (masks on both datasets, as
    :meth:`detectors.ContextShiftDetector.test` takes them).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 4000); in_slice = rng.random(4000) < 0.2
    >>> pred = np.where(rng.random(4000) < np.where(in_slice, 0.7, 0.9), y, 1 - y)
    >>> half = np.arange(4000) < 2000
    >>> ev = SliceEvaluator(metric="accuracy").fit(Outcomes(pred[half], y[half])).test(
    ...     Outcomes(pred[~half], y[~half]), slices={"s": (in_slice[half], in_slice[~half])})
    >>> s = ev.get("s"); s.underperforming, s.changed, round(s.gap_vs_rest, 2)
    (True, False, -0.23)
    """

    def __init__(self, *, metric="accuracy", positive=None, alpha=0.05, correction="bh", effect_floor=0.05,
                 min_slice_size=30, min_denominator=10, confidence=0.95, n_bootstrap=500, random_state=0):
        self.metric = metric
        self.positive = positive
        self.alpha = alpha
        self.correction = correction
        self.effect_floor = effect_floor
        self.min_slice_size = min_slice_size
        self.min_denominator = min_denominator
        self.confidence = confidence
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    @property
    def n_boot(self):
        """Deprecated name of :attr:`n_bootstrap`."""
        return self.n_bootstrap

    def _check_params(self) -> None:
        check_in("metric", self.metric, SLICE_METRICS)
        check_alpha(self.alpha)
        check_correction(self.correction)
        check_number("effect_floor", self.effect_floor, minimum=0)
        check_int("min_slice_size", self.min_slice_size, minimum=1)
        check_int("min_denominator", self.min_denominator, minimum=2)
        check_fraction("confidence", self.confidence)
        check_int("n_bootstrap", self.n_bootstrap, minimum=1)
        check_random_state(self.random_state)

    def _check_scores(self, data: Outcomes, role: str) -> None:
        if self._name == "auc" and data.labelled and data.scores is None:
            raise DetectorInputError(f"metric 'auc' needs scores in every labelled dataset; the {role} has none.")

    @property
    def _name(self) -> str:
        return METRIC_ALIASES.get(self.metric, self.metric)

    @renamed_parameters(benchmark="reference")
    def fit(self, reference: Outcomes) -> "SliceEvaluator":
        """Remember the benchmark's :class:`Outcomes` (``reference``; ``benchmark=`` is the deprecated
        name); they need labels (``y_true``)."""
        self._check_params()
        if not isinstance(reference, Outcomes):
            raise DetectorInputError(f"reference must be an Outcomes(y_pred, y_true, scores), "
                                     f"got {type(reference).__name__}.")
        if not reference.labelled:
            raise DetectorInputError("the benchmark needs labels (y_true) to evaluate slices.")
        self._check_scores(reference, "benchmark")
        self.benchmark_ = reference
        return self

    @renamed_parameters(benchmark="reference", production="current")
    def evaluate(self, slices: Mapping[str, tuple], reference: Outcomes, current: Outcomes, *,
                 definitions: Mapping[str, str] | None = None,
                 sources: Mapping[str, str] | None = None) -> SliceEvaluation:
        """Deprecated: ``fit(reference).test(current, slices=slices, ...)`` (``benchmark=`` and
        ``production=`` are the deprecated names of ``reference`` and ``current``)."""
        # stacklevel 3: the caller, past the renamed_parameters wrapper
        warnings.warn("SliceEvaluator.evaluate(slices, reference, current) is deprecated; use "
                      "fit(reference).test(current, slices=slices)", DeprecationWarning, stacklevel=3)
        return self.fit(reference).test(current, slices=slices, definitions=definitions, sources=sources)

    @renamed_parameters(production="current")
    def test(self, current: Outcomes, *, slices: Mapping[str, tuple],
             definitions: Mapping[str, str] | None = None,
             sources: Mapping[str, str] | None = None) -> SliceEvaluation:
        """Evaluate every slice of production's :class:`Outcomes` (``current``, labelled or not;
        ``production=`` is the deprecated name) against the benchmark; ``slices`` maps name ->
        (benchmark_mask (n_b,), production_mask (n_p,))."""
        check_fitted(self, "benchmark_")
        self._check_params()
        if not isinstance(current, Outcomes):
            raise DetectorInputError(f"current must be an Outcomes(y_pred, y_true, scores), "
                                     f"got {type(current).__name__}.")
        self._check_scores(current, "production")
        benchmark, production = self.benchmark_, current
        ys = [benchmark.y_true, benchmark.y_pred, production.y_pred]
        ys += [production.y_true] if production.labelled else []
        self.classes_ = sorted_classes(*ys)
        positive = self.positive if self.positive is not None else infer_positive(self.classes_.tolist())
        self.positive_ = positive
        self._pos = self._positive_index()
        self._rng = np.random.default_rng(self.random_state)
        # labels become integer codes once, so that every slice costs a bincount, not a re-encoding
        benchmark, production = self._encoded(benchmark), self._encoded(production)
        everything_b, everything_p = np.ones(benchmark.n, bool), np.ones(production.n, bool)
        overall_b = self._estimate(benchmark, everything_b)
        overall_p = self._estimate(production, everything_p) if production.labelled else None
        results, tests = [], []
        for name, masks in slices.items():
            b, p = (np.asarray(m, dtype=bool) for m in masks)
            if b.shape != (benchmark.n,) or p.shape != (production.n,):
                raise DetectorInputError(f"slice {name!r}: masks must have shapes ({benchmark.n},) and "
                                         f"({production.n},).")
            result, perf, gap = self._one(name, b, p, benchmark, production, overall_b, overall_p)
            result = replace(result, definition=(definitions or {}).get(name, name),
                             source=(sources or {}).get(name, "expert"))
            results.append(result)
            tests += [perf, gap]
        adjusted = readjust(tests, alpha=self.alpha, correction=self.correction)
        evaluation = SliceEvaluation(self.metric, overall_b, overall_p, tuple(results), tuple(adjusted),
                                     float(self.alpha))
        return evaluation.with_tests(adjusted)

    # ------------------------------------------------------------------ one slice
    def _one(self, name, b, p, benchmark, production, overall_b, overall_p):
        est_b = self._estimate(benchmark, b)
        est_p = self._estimate(production, p) if production.labelled else None
        gap_data, gap_mask, overall = (production, p, overall_p) if production.labelled else (benchmark, b, overall_b)
        nb, np_ = int(b.sum()), int(p.sum())
        perf = self._test(name, "slice_performance", benchmark, b, production, p, nb, np_) if production.labelled \
            else self._untested(name, "slice_performance", nb, np_, "production has no labels")
        gap = self._test(name, "slice_gap", gap_data, ~gap_mask, gap_data, gap_mask,
                         int((~gap_mask).sum()), int(gap_mask.sum()))
        value = est_p if est_p is not None else est_b
        # "ok" only when the slice was big enough to be tested against the rest
        status = "ok" if gap.status == "ok" else "insufficient_data"
        nan = float("nan")
        result = SliceResult(
            name=name, definition=name, source="expert", n_benchmark=nb, n_production=np_, metric=self.metric,
            benchmark_value=est_b.value, benchmark_ci=(est_b.ci_low, est_b.ci_high),
            production_value=est_p.value if est_p else nan,
            production_ci=(est_p.ci_low, est_p.ci_high) if est_p else (nan, nan),
            p_value=perf.p_value, p_value_adjusted=perf.p_value_adjusted,
            benchmark_share=nb / benchmark.n, production_share=np_ / production.n,
            gap_dataset="production" if production.labelled else "benchmark",
            gap_vs_overall=value.value - overall.value, gap_vs_rest=gap.details.get("difference", nan),
            gap_ci=gap.details.get("difference_ci", (nan, nan)), gap_p_value=gap.p_value,
            gap_p_value_adjusted=gap.p_value_adjusted, underperforming=False, changed=False, status=status,
            metric_n_benchmark=int(est_b.n), metric_n_production=int(est_p.n) if est_p else 0)
        return result, perf, gap

    def _encoded(self, data: Outcomes) -> Outcomes:
        def codes(y, what):
            return None if y is None else encode(y, self.classes_, what)

        return Outcomes(codes(data.y_pred, "y_pred"), codes(data.y_true, "y_true"),
                        None if data.scores is None else np.asarray(data.scores, dtype=float))

    def _estimate(self, data: Outcomes, mask: np.ndarray) -> MetricEstimate:
        name = self._name
        base = "accuracy" if name == "error_rate" else name
        nan = float("nan")
        if not mask.any():
            return MetricEstimate(self.metric, nan, nan, nan, 0, "none", status="insufficient_data")
        if name == "auc":  # DeLong, as metric_with_ci does, without its per-row label comparison
            auc = _auc_summary(data.y_true[mask], data.scores[mask], self._pos)
            if not np.isfinite(auc["value"]):
                return MetricEstimate(self.metric, nan, nan, nan, auc["n"], "delong", status="insufficient_data")
            half = z_value(self.confidence) * auc["se"]
            return MetricEstimate(self.metric, auc["value"], max(0.0, auc["value"] - half),
                                  min(1.0, auc["value"] + half), int(mask.sum()), "delong")
        cls = self._pos if base == "precision" else None
        # the labels are codes (see _encoded): one count of the slice, not a sort and re-encoding of its rows
        est = metric_with_ci_of_codes(base, data.y_true[mask], data.y_pred[mask], len(self.classes_),
                                      positive=self._pos, cls=cls, confidence=self.confidence,
                                      n_bootstrap=self.n_bootstrap, random_state=self.random_state)
        if name == "error_rate":
            est = replace(est, name="error_rate", value=1 - est.value, ci_low=1 - est.ci_high, ci_high=1 - est.ci_low)
        return replace(est, name=self.metric)

    # ------------------------------------------------------------------ tests
    def _untested(self, name, kind, n1, n2, reason) -> ShiftTest:
        nan = float("nan")
        return ShiftTest(name, "none", nan, nan, nan, nan, f"{self.metric}_difference", float(self.effect_floor),
                         int(n1), int(n2), False, kind=kind, status="insufficient_data",
                         details={"reason": reason, "difference": nan, "difference_ci": (nan, nan)})

    def _test(self, name, kind, data_a, mask_a, data_b, mask_b, n_a, n_b) -> ShiftTest:
        """Test ``metric(b) - metric(a)``: b is the production slice or the slice, a the benchmark slice or the rest."""
        if min(n_a, n_b) < self.min_slice_size:
            return self._untested(name, kind, n_a, n_b, f"fewer than {self.min_slice_size} rows")
        return self._compare(name, kind, self._summary(data_a, mask_a), self._summary(data_b, mask_b), n_a, n_b)

    # ------------------------------------------------------------------ from counts
    def estimate_counts(self, cm) -> MetricEstimate:
        """The metric and its CI from a (k, k) confusion matrix in ``classes_`` order (after
        :meth:`test`): exact summaries of data that never fits in memory use this."""
        name = self._name
        if name == "auc":
            raise DetectorInputError("metric 'auc' needs scores; counts cannot give it.")
        base = "accuracy" if name == "error_rate" else name
        cls_index = self._pos if base == "precision" else None
        est = metric_from_counts(base, np.asarray(cm), pos=self._pos, cls_index=cls_index, confidence=self.confidence,
                                 n_bootstrap=self.n_bootstrap, rng=self._rng)
        if name == "error_rate":
            est = replace(est, name="error_rate", value=1 - est.value, ci_low=1 - est.ci_high, ci_high=1 - est.ci_low)
        return replace(est, name=self.metric)

    def test_counts(self, name: str, kind: str, cm_a, cm_b) -> ShiftTest:
        """:meth:`_test` on two confusion matrices (a = benchmark slice or the rest, b = the other)."""
        n_a, n_b = int(np.sum(cm_a)), int(np.sum(cm_b))
        if min(n_a, n_b) < self.min_slice_size:
            return self._untested(name, kind, n_a, n_b, f"fewer than {self.min_slice_size} rows")
        a, b = self._summary_counts(np.asarray(cm_a)), self._summary_counts(np.asarray(cm_b))
        return self._compare(name, kind, a, b, n_a, n_b)

    def _compare(self, name, kind, a: dict, b: dict, n_a: int, n_b: int) -> ShiftTest:
        if min(a["n"], b["n"]) < self.min_denominator:
            return self._untested(name, kind, n_a, n_b, f"fewer than {self.min_denominator} rows behind the metric")
        if self._name in _PROPORTIONS:
            diff = b["k"] / b["n"] - a["k"] / a["n"]
            lo, hi = newcombe_interval(a["k"], a["n"], b["k"], b["n"], confidence=self.confidence)
            stat, p, method = missing_rate_test(a["k"], a["n"], b["k"], b["n"])
        else:
            diff = b["value"] - a["value"]
            se = float(np.hypot(a["se"], b["se"]))
            stat = diff / se if se > 0 else 0.0
            p, method = float(2 * stats.norm.sf(abs(stat))), f"{b['method']}_z"
            half = z_value(self.confidence) * se
            lo, hi = diff - half, diff + half
        details = {"difference": float(diff), "difference_ci": (float(lo), float(hi)), "value_a": a["value"],
                   "value_b": b["value"], "n_metric_a": a["n"], "n_metric_b": b["n"],
                   "compared": "production - benchmark" if kind == "slice_performance" else "slice - rest"}
        return ShiftTest(name, method, float(stat), float(p), float(p), abs(float(diff)), f"{self.metric}_difference",
                         float(self.effect_floor), int(n_a), int(n_b), False, kind=kind, details=details)

    def _summary(self, data: Outcomes, mask: np.ndarray) -> dict:
        """Value, denominator and (k | standard error) of the metric on ``data[mask]``."""
        name = self._name
        y_true = data.y_true[mask]
        if name == "auc":
            return _auc_summary(y_true, data.scores[mask], self._pos)
        return self._summary_counts(confusion_counts(y_true, data.y_pred[mask], len(self.classes_)))

    def _summary_counts(self, cm: np.ndarray) -> dict:
        name, pos, k = self._name, self._pos, len(self.classes_)
        if name in _PROPORTIONS:
            return _proportion_counts(name, cm, pos)
        n = int(cm.sum())
        reps = self._rng.multinomial(n, cm.ravel() / n, size=self.n_bootstrap).reshape(self.n_bootstrap, k, k)
        values = metric_from_confusion(name, reps, pos)
        values = values[np.isfinite(values)]
        se = float(values.std(ddof=1)) if values.size > 1 else float("nan")
        return {"value": float(metric_from_confusion(name, cm, pos)), "n": n, "se": se, "method": "bootstrap"}

    def _positive_index(self) -> int | None:
        if self.positive_ is None:
            if self._name in ("sensitivity", "specificity", "fpr", "precision", "auc"):
                raise DetectorInputError(f"metric {self.metric!r} needs positive=<class label>.")
            return None
        hits = [i for i, c in enumerate(self.classes_.tolist()) if c == self.positive_ or str(c) == str(self.positive_)]
        if not hits:
            raise DetectorInputError(f"positive={self.positive_!r} is not one of the classes {self.classes_.tolist()}.")
        return hits[0]
