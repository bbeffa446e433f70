"""Label (prior) shift: BBSE / regularised BBSE estimation of production class priors.

Black-box shift estimation (Lipton, Wang & Smola 2018): under label shift ``p(x | y)`` is
fixed, so the production distribution of the model's outputs is ``mu = A q`` with
``A[i, j] = P(yhat = i | y = j)`` learned on the labelled benchmark and ``q`` the unknown
production prior. We solve for ``q`` (clipped at zero and renormalised). When ``A`` is
ill-conditioned the estimate is regularised towards "no shift" (``q = p``), in the spirit
of RLLS (Azizzadenesheli et al. 2019; they penalise an unsquared norm, we use the squared
ridge so that thousands of bootstrap replicates are solved in one batched call).

Deciding is separate from estimating: "no label shift" is tested by the two-sample chi-square
on predicted classes (benchmark vs production; the pooled / Fisher-fallback one of
:func:`detectors.univariate.chi2_two_sample`), and a shift is reported only when that
p-value is below ``alpha`` AND the change of the priors is practically large
(:func:`detectors.prior_effect.prior_shift_effect`): a total variation distance of at least ``effect_floor`` OR a
prior ratio of at least ``ratio_floor`` (either way) for some class, so that a rare class
growing from 3.9 % to 5.7 % counts even though it moves little mass. The effect is reported
normalised by its floors (``>= 1`` passes), with both raw numbers in the test's details.

Intervals. The ridge of RLLS biases the estimate towards "no shift", and the bootstrap
replicates share that bias, so percentile intervals around a regularised estimate under-cover
(0.72-0.76 on ill-conditioned confusion matrices). When regularisation is needed the result
therefore reports the **unregularised** BBSE estimate with its (wider, covering) bootstrap
interval in ``priors``/``priors_ci`` and keeps the regularised point estimate in
``regularized_priors``, with ``interval_note`` saying why.

Verbs. ``LabelShiftEstimator`` is ``fit(...)`` then ``estimate(...)``, not ``test``: its product is
a quantity with a confidence interval (the production priors and weights); the "no shift"
test it also reports is a by-product.

Assumption. BBSE assumes ``P(x | y)`` fixed. :meth:`LabelShiftResult.with_assumption_check`
marks the estimate unreliable (``reliable=False`` with a reason) when the audit found
covariate shift that the estimated label shift does not explain; ``observed_prior`` holds the
production class shares when production is labelled, to be shown beside the estimate.

Layout. This module holds the estimator; its result is in :mod:`detectors.label_shift_result`
(re-exported here), fitting and estimating from counts alone in :mod:`detectors.label_shift_counts`,
the batched solver, the conditioning /
ridge choice and the bootstrap of the benchmark joint are in :mod:`detectors.bbse_solver`, the
effect measure in :mod:`detectors.prior_effect`. ``solve_priors``, ``ridge_for_condition``,
``check_regularization``, ``prior_shift_effect`` and ``PRIOR_RATIO_FLOOR`` are re-exported here.
"""
from __future__ import annotations

from dataclasses import replace
from typing import cast

import numpy as np

from detectors.base import (
    DetectorInputError,
    ShiftTest,
    check_alpha,
    check_fitted,
    check_fraction,
    check_int,
    check_number,
    check_random_state,
    renamed_parameters,
)
from detectors.bbse_solver import (
    bootstrap_soft_joint,
    check_regularization,
    choose_regularization,
    ridge_for_condition,
    soft_joint,
    solve_priors,
)
from detectors.confusion import (
    as_label_array,
    bootstrap_row_means,
    chi2_two_sample,
    confusion_counts,
    encode,
    match_columns,
    parse_predictions,
    sorted_classes,
)
from detectors.decision import decide
from detectors.label_shift_counts import CountsFitting
from detectors.label_shift_result import INTERVAL_NOTE, LabelShiftResult, insufficient_result, prior_result
from detectors.prior_effect import PRIOR_RATIO_FLOOR, prior_shift_effect

__all__ = ["LabelShiftEstimator", "LabelShiftResult", "solve_priors", "ridge_for_condition", "check_regularization",
           "prior_shift_effect", "PRIOR_RATIO_FLOOR"]

class LabelShiftEstimator(CountsFitting):
    """Estimate production class priors from benchmark labels and production predictions.

    Parameters
    ----------
    alpha : float
        Level of the chi-square test on predicted classes.
    n_bootstrap : int
        Bootstrap replicates for the prior CIs; benchmark AND production are resampled.
    regularization : "auto", "none" or float
        ``"auto"``: plain BBSE unless ``cond(P(yhat | y)) > max_condition``, then the smallest
        ridge towards "no shift" that brings it back (method ``"rlls"``); a float is a fixed ridge.
    confidence : float
        Level of the percentile bootstrap intervals.
    min_samples : int
        Fewer benchmark rows raise :class:`DetectorInputError`; fewer production rows give
        ``status="insufficient_data"``.
    effect_floor : float
        Practical floor on the total variation distance between the priors (default 0.05).
    ratio_floor : float
        Practical floor on a single class's prior ratio, either way (default 1.25).
    max_condition : float
        Condition-number threshold of the ``"auto"`` regularisation (> 1).
    random_state : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> conf = np.array([[.8, .1, .1], [.1, .8, .1], [.1, .1, .8]])   # P(yhat | y), synthetic
    >>> def simulate(prior, n):
    ...     y = rng.choice(3, size=n, p=prior)
    ...     return y, np.array([rng.choice(3, p=conf[c]) for c in y])
    >>> y_b, yhat_b = simulate([1/3, 1/3, 1/3], 3000)
    >>> _, yhat_p = simulate([0.6, 0.3, 0.1], 3000)
    >>> r = LabelShiftEstimator(random_state=0).fit(y_b, yhat_b).estimate(yhat_p)
    >>> r.method, r.is_shift, [round(r.priors[c], 1) for c in (0, 1, 2)]
    ('bbse', True, [0.6, 0.3, 0.1])
    >>> lo, hi = r.priors_ci[0]; bool(lo < 0.6 < hi)
    True
    """

    def __init__(self, *, alpha=0.05, n_bootstrap=200, regularization="auto", confidence=0.95,
                 min_samples=50, effect_floor=0.05, ratio_floor=PRIOR_RATIO_FLOOR, max_condition=20.0,
                 random_state=0):
        self.alpha = alpha
        self.n_bootstrap = n_bootstrap
        self.regularization = regularization
        self.confidence = confidence
        self.min_samples = min_samples
        self.effect_floor = effect_floor
        self.ratio_floor = ratio_floor
        self.max_condition = max_condition
        self.random_state = random_state

    def _check_params(self) -> None:
        check_alpha(self.alpha)
        check_int("n_bootstrap", self.n_bootstrap, minimum=1)
        check_regularization(self.regularization)
        check_fraction("confidence", self.confidence)
        check_int("min_samples", self.min_samples, minimum=1)
        check_number("effect_floor", self.effect_floor, minimum=0, maximum=1)
        check_number("ratio_floor", self.ratio_floor, minimum=1, open_low=True)
        check_number("max_condition", self.max_condition, minimum=1, open_low=True)
        check_random_state(self.random_state)

    # ------------------------------------------------------------------ fit
    def fit(self, y_true, y_pred, *, classes=None) -> "LabelShiftEstimator":
        """Learn ``P(y, yhat)`` on the benchmark.

        Parameters
        ----------
        y_true : array-like of shape (n,)
        y_pred : array-like of shape (n,) (hard labels) or (n, k) / DataFrame (probabilities)
        classes : sequence of length k, optional
            Class of each probability column (default: DataFrame column names without the
            ``proba_`` prefix, else the sorted benchmark labels).
        """
        self._check_params()
        y_true = as_label_array(y_true, "y_true")
        kind, pred, column_classes = parse_predictions(y_pred, classes, "y_pred")
        if len(pred) != len(y_true):
            raise DetectorInputError(f"y_true has {len(y_true)} rows but y_pred has {len(pred)}.")
        if len(y_true) < self.min_samples:
            raise DetectorInputError(f"Benchmark has {len(y_true)} rows; at least {self.min_samples} are needed.")
        self.classes_ = sorted_classes(y_true)
        if len(self.classes_) < 2:
            raise DetectorInputError(f"Benchmark labels hold a single class {self.classes_.tolist()}; "
                                     "label shift needs at least two.")
        if kind == "labels":
            self.pred_classes_ = sorted_classes(y_true, pred)
            self.kind_ = "labels"
            t = encode(y_true, self.classes_, "y_true")
            p = encode(pred, self.pred_classes_, "y_pred")
            self.joint_counts_ = confusion_counts(t, p, len(self.classes_), len(self.pred_classes_))
            self.benchmark_pred_counts_ = self.joint_counts_.sum(0)
            self._benchmark_rows = None
        else:
            self._fit_proba(y_true, pred, column_classes)
        self.n_benchmark_ = len(y_true)
        return self._fit_joint()

    def _fit_joint(self) -> "LabelShiftEstimator":
        self.joint_ = self.joint_counts_ / self.n_benchmark_
        self.benchmark_prior_ = self.joint_.sum(1)
        A = (self.joint_ / self.benchmark_prior_[:, None]).T
        cond, ridge = ridge_for_condition(A, self.max_condition)
        self.condition_number_ = cond
        self.lambda_, self.method_ = choose_regularization(self.regularization, ridge)
        return self

    def _fit_proba(self, y_true, proba, column_classes) -> None:
        if column_classes is None:
            if proba.shape[1] != len(self.classes_):
                raise DetectorInputError(f"y_pred has {proba.shape[1]} probability columns but the benchmark has "
                                         f"{len(self.classes_)} classes; pass classes=[...] in column order.")
            column_classes = self.classes_
        self.pred_classes_ = match_columns(column_classes, self.classes_)
        missing = set(self.classes_.tolist()) - set(self.pred_classes_.tolist())
        if missing:
            raise DetectorInputError(f"Benchmark labels {sorted(missing, key=str)} have no probability column.")
        self.kind_ = "proba"
        t = encode(y_true, self.classes_, "y_true")
        self.joint_counts_, self._benchmark_rows = soft_joint(t, proba, len(self.classes_))
        self.benchmark_pred_counts_ = np.bincount(proba.argmax(1), minlength=len(self.pred_classes_))

    # ------------------------------------------------------------- estimate
    def production_outputs(self, y_pred) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Validate production outputs of the kind seen in ``fit``.

        Returns ``(mu, counts, rows)``: the mean output (predicted-class distribution), the
        predicted-class counts (argmax for probabilities) and, for probabilities only, the
        ``(m, k)`` rows (hard labels need nothing beyond their counts).
        """
        check_fitted(self, "joint_")
        kind, pred, column_classes = parse_predictions(y_pred, None, "y_pred")
        if kind != self.kind_:
            raise DetectorInputError(f"Benchmark predictions were {self.kind_} but production ones are {kind}.")
        if len(pred) == 0:
            raise DetectorInputError("y_pred (production) is empty.")
        k_p = len(self.pred_classes_)
        if kind == "labels":
            counts = np.bincount(encode(pred, self.pred_classes_, "y_pred"), minlength=k_p)
            return counts / counts.sum(), counts, None
        rows = self._align_proba(pred, column_classes)
        return rows.mean(0), np.bincount(rows.argmax(1), minlength=k_p), rows

    def _align_proba(self, proba: np.ndarray, column_classes) -> np.ndarray:
        if proba.shape[1] != len(self.pred_classes_):
            raise DetectorInputError(f"Production has {proba.shape[1]} probability columns, "
                                     f"benchmark {len(self.pred_classes_)}.")
        if column_classes is None:
            return proba
        names = match_columns(column_classes, self.classes_)
        order = encode(names, self.pred_classes_, "production probability columns")
        return proba[:, np.argsort(order)]

    @renamed_parameters(y_pred_production="y_pred")
    def estimate(self, y_pred) -> LabelShiftResult:
        """Estimate production priors from production outputs of the same kind as in ``fit``.

        Parameters
        ----------
        y_pred : array-like of shape (m,) or (m, k)
            Production's predicted labels or probabilities (``y_pred_production=`` is the deprecated name).
        """
        mu, prod_counts, rows = self.production_outputs(y_pred)
        self._check_params()
        rng = np.random.default_rng(self.random_state)
        n_p = int(prod_counts.sum())
        return self._estimate(mu, prod_counts, lambda lam: self.bootstrap_priors(mu, n_p, rows, rng, lam=lam)[2])

    def _estimate(self, mu: np.ndarray, prod_counts: np.ndarray, bootstrap) -> LabelShiftResult:
        """Estimate, interval (``bootstrap(lam)`` -> (B, k) priors) and test from production ``mu``."""
        n_p = int(prod_counts.sum())
        if n_p < self.min_samples:
            return self._insufficient(n_p, mu)
        q_reg = solve_priors(self.joint_, mu, self.lambda_)
        # RLLS intervals under-cover (shrinkage bias): report the unregularised estimate and interval.
        lam = 0.0 if self.lambda_ > 0 else self.lambda_
        q = solve_priors(self.joint_, mu, lam) if self.lambda_ > 0 else q_reg
        q_boot = bootstrap(lam)
        stat, p_value, dof = chi2_two_sample(self.benchmark_pred_counts_, prod_counts)
        effect, effect_details = prior_shift_effect(self.benchmark_prior_, q, tv_floor=self.effect_floor,
                                                    ratio_floor=self.ratio_floor)
        drifted = decide(p_value, effect, alpha=self.alpha, effect_floor=1.0)
        effect_details["max_ratio_class"] = self.classes_.tolist()[effect_details.pop("max_ratio_class_index")]
        test = ShiftTest(name="label_prior", method="chi2_predicted_class", statistic=stat, p_value=p_value,
                         p_value_adjusted=p_value, effect_size=effect, effect_name="prior_shift_relative",
                         effect_floor=1.0, n_reference=self.n_benchmark_, n_current=n_p,
                         drifted=drifted, kind="label", details={"dof": dof, "estimator": self.method_,
                                                                 **effect_details})
        result = self._result(q, q_boot, mu, p_value, effect_details["tvd"], drifted, n_p, test, "ok")
        if self.lambda_ > 0:
            cls = self.classes_.tolist()
            result = replace(result, regularized_priors={c: float(v) for c, v in zip(cls, q_reg)},
                             interval_note=INTERVAL_NOTE)
        return result

    @renamed_parameters(n_production="n_current")
    def bootstrap_priors(self, mu: np.ndarray, n_current: int, rows: np.ndarray | None,
                         rng: np.random.Generator, *, lam: float | None = None):
        """Replicates ``(joint, mu, q)`` with benchmark and production resampled (shapes ``(B, ...)``).

        ``mu``, ``n_current`` (production's rows, the sum of its predicted-class counts) and ``rows`` as
        returned by :meth:`production_outputs`; ``lam`` the ridge (default: the fitted ``lambda_``).
        ``n_production=`` is the deprecated name of ``n_current``.
        """
        lam = self.lambda_ if lam is None else lam
        B, n_b = self.n_bootstrap, self.n_benchmark_
        k_t, k_p = self.joint_.shape
        if self.kind_ == "labels":
            joint = rng.multinomial(n_b, self.joint_.ravel(), size=B).reshape(B, k_t, k_p) / n_b
            mu = rng.multinomial(n_current, mu, size=B) / n_current
        else:
            joint = bootstrap_soft_joint(self.joint_, self._benchmark_rows, B, rng)
            mu = bootstrap_row_means(cast(np.ndarray, rows), B, rng)  # probabilities: rows were kept
        return joint, mu, solve_priors(joint, mu, lam)

    def _result(self, q, q_boot, mu, p_value, effect, drifted, n_p, test, status) -> LabelShiftResult:
        return prior_result(self, q, q_boot, mu, p_value, effect, drifted, n_p, test, status)

    def _insufficient(self, n_p: int, mu: np.ndarray) -> LabelShiftResult:
        return insufficient_result(self, n_p, mu)
