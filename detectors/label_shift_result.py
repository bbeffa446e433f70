"""The result of :class:`detectors.label_shift.LabelShiftEstimator`: estimated production
class priors with bootstrap intervals, the "no shift" test and the assumption check, and how an
estimate becomes one (:func:`prior_result`, :func:`insufficient_result`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from detectors.base import Result, ShiftTest
from detectors.bbse_solver import percentile_intervals
from detectors.decision import check_tests

__all__ = ["LabelShiftResult", "INTERVAL_NOTE", "prior_result", "insufficient_result"]

INTERVAL_NOTE = ("The regularised (RLLS) estimate is biased towards the benchmark priors and its bootstrap "
                 "interval does not cover; the unregularised BBSE estimate and its interval are reported, the "
                 "regularised one is in regularized_priors.")


@dataclass(frozen=True)
class LabelShiftResult(Result):
    """Estimated production class priors with bootstrap CIs and the "no shift" test.

    Dicts are keyed by class label. ``weights`` are importance weights
    ``production prior / benchmark prior``. ``effect_size`` is the total variation distance
    between ``benchmark_prior`` and ``priors``; ``is_shift`` is ``test.drifted``: ``p_value < alpha``
    and a TV of at least ``effect_floor`` or a class prior ratio of at least the ratio floor. With
    ``status == "insufficient_data"`` estimates are NaN.
    """

    priors: dict
    priors_ci: dict
    benchmark_prior: dict
    weights: dict
    weights_ci: dict
    predicted_prior: dict
    p_value: float
    effect_size: float
    effect_floor: float
    is_shift: bool
    method: str
    condition_number: float
    regularization: float
    n_benchmark: int
    n_production: int
    confidence: float
    status: str
    test: ShiftTest
    regularized_priors: dict | None = None  # RLLS point estimate when regularisation was needed
    interval_note: str | None = None
    reliable: bool = True  # False: the audit found evidence against BBSE's assumption
    reliability_reason: str | None = None
    observed_prior: dict | None = None  # production class shares, when production is labelled

    @property
    def tests(self) -> tuple:
        return (self.test,)

    def with_tests(self, tests) -> "LabelShiftResult":
        """A copy holding the re-corrected test, ``is_shift`` re-derived."""
        (test,) = check_tests(self, tests)
        return replace(self, test=test, is_shift=bool(test.drifted))

    def with_assumption_check(self, *, reliable: bool, reason: str | None = None) -> "LabelShiftResult":
        """A copy saying whether BBSE's assumption (``P(x | y)`` fixed) is credible here, and why not."""
        return replace(self, reliable=bool(reliable), reliability_reason=None if reliable else reason)

    def with_observed_prior(self, observed: dict | None) -> "LabelShiftResult":
        """A copy carrying the observed production class shares (labelled production)."""
        return replace(self, observed_prior=None if observed is None else {k: float(v) for k, v in observed.items()})

    def to_dict(self) -> dict[str, Any]:
        """The AuditResult's ``label`` block plus the estimation details."""
        base = super().to_dict()
        estimate = {str(c): {"estimate": base["priors"][str(c)], "ci_low": base["priors_ci"][str(c)][0],
                             "ci_high": base["priors_ci"][str(c)][1]} for c in self.priors}
        weights = {str(c): {"estimate": base["weights"][str(c)], "ci_low": base["weights_ci"][str(c)][0],
                            "ci_high": base["weights_ci"][str(c)][1]} for c in self.weights}
        return {"is_shift": base["is_shift"], "p_value": base["p_value"], "status": base["status"],
                "benchmark_prior": base["benchmark_prior"], "production_prior_estimate": estimate,
                "importance_weights": weights, "predicted_prior": base["predicted_prior"],
                "effect_size": base["effect_size"], "effect_name": "tvd_prior",
                "effect_floor": base["effect_floor"], "method": base["method"],
                "condition_number": base["condition_number"], "regularization": base["regularization"],
                "n_benchmark": base["n_benchmark"], "n_production": base["n_production"],
                "confidence": base["confidence"], "test": base["test"],
                "regularized_priors": base["regularized_priors"], "interval_note": base["interval_note"],
                "reliable": base["reliable"], "reliability_reason": base["reliability_reason"],
                "observed_prior": base["observed_prior"]}


def prior_result(estimator, q, q_boot, mu, p_value, effect, drifted, n_p, test, status) -> LabelShiftResult:
    """The :class:`LabelShiftResult` of a fitted ``estimator`` for production priors ``q``
    (bootstrap replicates ``q_boot`` (B, k) or None), predicted-class mix ``mu`` and ``test``."""
    lo_q, hi_q = (1 - estimator.confidence) / 2, 1 - (1 - estimator.confidence) / 2
    p = estimator.benchmark_prior_
    ci_q = percentile_intervals(q_boot, lo_q, hi_q, len(p))
    w_boot = None if q_boot is None else q_boot / p
    ci_w = percentile_intervals(w_boot, lo_q, hi_q, len(p))
    cls = [c for c in estimator.classes_.tolist()]
    return LabelShiftResult(
        priors={c: float(v) for c, v in zip(cls, q)}, priors_ci={c: ci for c, ci in zip(cls, ci_q)},
        benchmark_prior={c: float(v) for c, v in zip(cls, p)},
        weights={c: float(v) for c, v in zip(cls, q / p)}, weights_ci={c: ci for c, ci in zip(cls, ci_w)},
        predicted_prior={c: float(v) for c, v in zip(estimator.pred_classes_.tolist(), mu)},
        p_value=float(p_value), effect_size=float(effect), effect_floor=float(estimator.effect_floor),
        is_shift=bool(drifted), method=estimator.method_, condition_number=float(estimator.condition_number_),
        regularization=float(estimator.lambda_), n_benchmark=int(estimator.n_benchmark_), n_production=int(n_p),
        confidence=float(estimator.confidence), status=status, test=test)


def insufficient_result(estimator, n_p: int, mu: np.ndarray) -> LabelShiftResult:
    """The result when production has fewer than ``estimator.min_samples`` rows: NaN estimates."""
    nan = float("nan")
    test = ShiftTest(name="label_prior", method="chi2_predicted_class", statistic=nan, p_value=nan,
                     p_value_adjusted=nan, effect_size=nan, effect_name="prior_shift_relative",
                     effect_floor=1.0, n_reference=estimator.n_benchmark_, n_current=n_p,
                     drifted=False, kind="label", status="insufficient_data",
                     details={"min_samples": estimator.min_samples})
    q = np.full(len(estimator.classes_), nan)
    return prior_result(estimator, q, None, mu, nan, nan, False, n_p, test, "insufficient_data")
