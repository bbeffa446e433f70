"""Confidence-based performance estimation (like NannyML's CBPE) from calibrated scores.

Benchmark scores are calibrated with isotonic regression (one-vs-rest; the positive score
only for binary tasks); the calibrated ``P(y | x)`` of each production row gives its expected
true class, hence an expected confusion matrix and every metric. Valid when ``P(y | x)`` is
unchanged (covariate shift); under label shift use
:class:`detectors.performance.PriorReweightedEstimator`. Intervals cover the metric realised on
these production rows (see :mod:`detectors.performance`).

``fit(...)`` then ``estimate(...)``, not ``test``: the estimator estimates production metrics
with confidence intervals and tests no hypothesis.
"""
from __future__ import annotations

from typing import cast

import numpy as np
from sklearn.isotonic import isotonic_regression

from detectors.base import (
    DetectorInputError,
    check_bool,
    check_fitted,
    check_fraction,
    check_probabilities,
    renamed_parameters,
)
from detectors.confusion import as_label_array, encode, parse_predictions, sorted_classes
from detectors.performance import PerformanceEstimate, _ConfusionEstimator, _insufficient_estimate

__all__ = ["ConfidenceBasedEstimator"]

try:  # scipy >= 1.12: the pool-adjacent-violators solver that sklearn's isotonic_regression calls, here
    # without sklearn's argument validation, most of the cost of a refit on a few thousand cells
    from scipy.optimize import isotonic_regression as _pava
except ImportError:  # pragma: no cover - older scipy: sklearn's own implementation
    _pava = None

# Bootstrap replicates draw labels for at most this many production rows (a fixed subsample);
# beyond it label noise is negligible next to calibration error, so the CI is slightly wider.
_MAX_BOOTSTRAP_ROWS = 50_000


def _isotonic(y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Increasing isotonic fit of ``y`` with ``weights``, clipped to [0, 1]: bit for bit
    ``sklearn.isotonic.isotonic_regression(y, sample_weight=weights, y_min=0, y_max=1)``."""
    if _pava is None:
        return isotonic_regression(y, sample_weight=weights, y_min=0.0, y_max=1.0)
    fitted = np.asarray(_pava(y, weights=weights, increasing=True).x, dtype=np.float64)
    return np.clip(fitted, 0.0, 1.0, out=fitted)


def _block_ends(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last point of each constant block of an isotonic fit ``y`` on the grid ``x``.

    ``np.interp`` through these points gives bit for bit the values it gives through all of
    them (within a block the slope is exactly 0; between blocks the neighbours are the same),
    and a fit on 200,000 scores has about a hundred blocks, so B bootstrap maps stay small.
    """
    change = np.flatnonzero(y[1:] != y[:-1])
    keep = np.unique(np.concatenate([[0], change, change + 1, [len(y) - 1]]))
    return x[keep], y[keep]


def _benchmark_stream(random_state) -> np.random.Generator:
    """The benchmark half of the bootstrap has a random stream of its own (a child of the seed,
    independent of the production draws), so it is drawn once in ``fit`` and a fitted estimator
    serves any production sample (monitors reuse it across runs)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(np.random.SeedSequence(random_state, spawn_key=(1,)))


def _draw_labels(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of ``prob`` (rows sum to 1)."""
    u = rng.random(len(prob))
    return np.minimum((u[:, None] > np.cumsum(prob, 1)).sum(1), prob.shape[1] - 1)


class ConfidenceBasedEstimator(_ConfusionEstimator):
    """Expected production metrics from calibrated scores (no production labels needed).

    Parameters
    ----------
    calibrate : bool
        Fit one-vs-rest isotonic calibration on the benchmark (``False``: scores are trusted).
    positive : label, optional
        Positive class of a binary task (inferred for 0/1 labels).
    threshold : float
        Decision threshold for 1-D binary scores when no ``y_pred`` is given.
    metrics : sequence of str, optional
    n_bootstrap, confidence, min_samples, random_state

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> def simulate(n, shift):                      # synthetic; p(y | x) fixed, x shifts
    ...     x = rng.normal(shift, 1, n); p = 1 / (1 + np.exp(-2 * x))
    ...     return (rng.random(n) < p).astype(int), p
    >>> y_b, s_b = simulate(4000, 0.0); y_p, s_p = simulate(4000, 1.0)
    >>> est = ConfidenceBasedEstimator(n_bootstrap=100).fit(y_b, s_b).estimate(s_p)
    >>> acc = est.get("accuracy"); observed = float(np.mean((s_p >= .5) == y_p))
    >>> bool(acc.ci_low <= observed <= acc.ci_high)
    True
    """

    def __init__(self, *, calibrate=True, positive=None, threshold=0.5, metrics=None, n_bootstrap=200,
                 confidence=0.95, min_samples=50, random_state=0):
        self.calibrate = calibrate
        self.positive = positive
        self.threshold = threshold
        self.metrics = metrics
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.min_samples = min_samples
        self.random_state = random_state

    def _check_params(self) -> None:
        check_bool("calibrate", self.calibrate)
        check_fraction("threshold", self.threshold, closed=True)
        self._check_common_params()

    def fit(self, y_true, scores, *, classes=None) -> "ConfidenceBasedEstimator":
        """Fit calibration on benchmark ``scores``: shape (n,) positive-class score or (n, k) probabilities."""
        self._check_params()
        y_true = as_label_array(y_true, "y_true")
        self.classes_ = sorted_classes(y_true) if classes is None else np.asarray(list(classes), dtype=object)
        if len(self.classes_) < 2:
            raise DetectorInputError("Benchmark labels hold a single class; need at least two.")
        self.pos_ = self._positive_index()
        proba = self._as_proba(scores, "scores")
        if len(proba) != len(y_true):
            raise DetectorInputError(f"y_true has {len(y_true)} rows but scores has {len(proba)}.")
        if len(y_true) < self.min_samples:
            raise DetectorInputError(f"Benchmark has {len(y_true)} rows; at least {self.min_samples} are needed.")
        self.y_codes_ = encode(y_true, self.classes_, "y_true")
        self.proba_ = proba
        self.n_benchmark_ = len(y_true)
        targets = [self.pos_] if len(self.classes_) == 2 and self.pos_ is not None else range(len(self.classes_))
        self._sorted_scores = [(c, *np.unique(proba[:, c], return_inverse=True), (self.y_codes_ == c).astype(float))
                               for c in targets]
        self.calibrators_ = self._fit_calibrators()
        self.bootstrap_calibrators_ = self._bootstrap_calibrators()
        del self._sorted_scores  # only fitting reads it (and it would triple a fitted estimator's size)
        return self

    def _as_proba(self, scores, name: str) -> np.ndarray:
        arr = np.asarray(scores, dtype=float) if not hasattr(scores, "columns") else None
        if arr is not None and arr.ndim == 1:
            if len(self.classes_) != 2 or self.pos_ is None:
                raise DetectorInputError(f"1-D {name} are binary positive-class scores: "
                                         "need two classes and positive=.")
            check_probabilities(name, arr, allow_nan=False)
            proba = np.empty((len(arr), 2))
            proba[:, self.pos_], proba[:, 1 - self.pos_] = arr, 1 - arr
            return proba
        _, proba, column_classes = parse_predictions(scores, None, name)
        if proba.ndim != 2 or proba.shape[1] != len(self.classes_):
            raise DetectorInputError(f"{name} must have {len(self.classes_)} probability columns.")
        if column_classes is not None:
            order = encode(np.array([str(c) for c in column_classes], dtype=object),
                           [str(c) for c in self.classes_], f"{name} columns")
            proba = proba[:, np.argsort(order)]
        return proba

    def _fit_calibrators(self, weights: np.ndarray | None = None) -> list | None:
        """Isotonic maps ``(class, x, y)`` fitted with row ``weights`` (bootstrap counts; None = all once),
        as the ends of their constant blocks (:func:`_block_ends`).

        Binary tasks calibrate the positive score only. Scores are sorted and de-duplicated once
        in ``fit``, so a bootstrap refit is two bincounts and one pool-adjacent-violators pass.
        """
        if not self.calibrate:
            return None
        weights = np.ones(self.n_benchmark_) if weights is None else weights
        maps = []
        for c, x, inverse, hit in self._sorted_scores:
            w = np.bincount(inverse, weights=weights, minlength=len(x))
            wy = np.bincount(inverse, weights=weights * hit, minlength=len(x))
            keep = w > 0
            fitted = _isotonic(wy[keep] / w[keep], w[keep])
            maps.append((c, *_block_ends(x[keep], fitted)))
        return maps

    def _bootstrap_calibrators(self) -> list | None:
        """The benchmark half of the bootstrap: isotonic maps refitted on ``n_bootstrap`` benchmark
        resamples (the calibration's own sampling error)."""
        if not self.calibrate:
            return None
        rng, n = _benchmark_stream(self.random_state), self.n_benchmark_
        if len(self._sorted_scores) == 1:  # binary: a resample is multinomial counts of (score, outcome) cells
            return [self._fit_binary_calibrator(counts) for counts in self._resampled_cells(rng)]
        maps = []
        for _ in range(int(self.n_bootstrap)):
            resample = np.bincount(rng.integers(0, n, n), minlength=n)
            maps.append(self._fit_calibrators(resample.astype(float)))
        return maps

    def _resampled_cells(self, rng: np.random.Generator):
        """Bootstrap resamples of the benchmark as counts of its (distinct score, outcome) cells.

        A row resample only enters the calibration through how many rows of each cell it
        draws, and those counts are multinomial(n, cell shares): the same distribution as
        resampling rows, at the cost of the cells (thousands), not of the rows (hundreds of
        thousands)."""
        _, x, inverse, hit = self._sorted_scores[0]
        cells = np.bincount(inverse * 2 + hit.astype(np.int64), minlength=2 * len(x))
        shares = cells / cells.sum()
        for _ in range(int(self.n_bootstrap)):
            yield rng.multinomial(self.n_benchmark_, shares)

    def _fit_binary_calibrator(self, counts: np.ndarray) -> list:
        """The isotonic map of :meth:`_fit_calibrators` from (score, outcome) cell counts."""
        c, x, _, _ = self._sorted_scores[0]
        w = (counts[0::2] + counts[1::2]).astype(float)
        wy = counts[1::2].astype(float)
        keep = w > 0
        fitted = _isotonic(wy[keep] / w[keep], w[keep])
        return [(c, *_block_ends(x[keep], fitted))]

    def _calibrated(self, proba: np.ndarray, maps) -> np.ndarray:
        """Apply isotonic ``maps`` (None: the scores as they are)."""
        if maps is None:
            return proba
        cols = [np.interp(proba[:, c], x, y) for c, x, y in maps]
        if len(maps) == 1:  # binary
            c = maps[0][0]
            out = np.empty_like(proba)
            out[:, c], out[:, 1 - c] = cols[0], 1 - cols[0]
            return out
        out = np.column_stack(cols)
        total = out.sum(1, keepdims=True)
        # Rows calibrated to all zeros keep their raw probabilities rather than dividing by 0.
        return np.where(total > 0, out / np.where(total > 0, total, 1), proba)

    @renamed_parameters(scores_production="scores")
    def estimate(self, scores, y_pred=None) -> PerformanceEstimate:
        """Estimate metrics of production predictions ``y_pred`` (default: argmax / threshold) from
        production's ``scores`` (``scores_production=`` is the deprecated name)."""
        check_fitted(self, "proba_")
        self._check_params()
        proba = self._as_proba(scores, "scores")
        n_p = len(proba)
        if n_p == 0:
            raise DetectorInputError("scores is empty.")
        pred = self._predicted_codes(proba, scores, y_pred)
        if n_p < self.min_samples:
            return _insufficient_estimate("confidence_based", self, n_p)
        k = len(self.classes_)
        calibrated = self._calibrated(proba, self.calibrators_)
        expected = np.stack([np.bincount(pred, weights=calibrated[:, t], minlength=k) for t in range(k)])
        rng = np.random.default_rng(self.random_state)
        sub = rng.choice(n_p, _MAX_BOOTSTRAP_ROWS, replace=False) if n_p > _MAX_BOOTSTRAP_ROWS else np.arange(n_p)
        boot = np.empty((self.n_bootstrap, k, k))
        proba_sub = proba[sub]
        if k == 2 and self.bootstrap_calibrators_ and len(self.bootstrap_calibrators_[0]) == 1:
            return self._summarise("confidence_based", expected,
                                   self._binary_label_draws(proba_sub, pred[sub], boot, rng), n_p)
        # production half of the bootstrap: each benchmark replicate's calibration, then label draws
        for b in range(self.n_bootstrap):
            maps = None if self.bootstrap_calibrators_ is None else self.bootstrap_calibrators_[b]
            labels = _draw_labels(self._calibrated(proba_sub, maps), rng)
            boot[b] = np.bincount(labels * k + pred[sub], minlength=k * k).reshape(k, k)
        return self._summarise("confidence_based", expected, boot, n_p)

    def _binary_label_draws(self, proba_sub: np.ndarray, pred_sub: np.ndarray, boot: np.ndarray,
                            rng: np.random.Generator) -> np.ndarray:
        """The production half of the bootstrap for two classes, on (score, prediction) cells.

        Rows with the same scores and prediction have the same calibrated class probability
        under every replicate's map, so their drawn labels are one binomial count per cell: the
        same distribution as one draw per row, at the cost of the distinct scores."""
        replicates = cast(list, self.bootstrap_calibrators_)  # calibrating, so fitted
        c = replicates[0][0][0]  # the calibrated (positive) column
        scores, inverse = np.unique(proba_sub[:, c], return_inverse=True)
        cell = inverse.ravel() * 2 + pred_sub
        counts = np.bincount(cell, minlength=2 * len(scores))
        used = np.flatnonzero(counts)
        rows, score_of, pred_of = counts[used], used // 2, used % 2
        for b, maps in enumerate(replicates):
            _, x, y = maps[0]
            calibrated = np.clip(np.interp(scores, x, y), 0.0, 1.0)
            p_one = calibrated[score_of] if c == 1 else 1.0 - calibrated[score_of]  # P(drawn label = class 1)
            ones = rng.binomial(rows, p_one)
            boot[b] = np.bincount(np.r_[pred_of, 2 + pred_of], weights=np.r_[rows - ones, ones],
                                  minlength=4).reshape(2, 2)
        return boot

    def _predicted_codes(self, proba, raw_scores, y_pred) -> np.ndarray:
        if y_pred is not None:
            pred = as_label_array(y_pred, "y_pred")
            if len(pred) != len(proba):
                raise DetectorInputError(f"y_pred has {len(pred)} rows but scores has {len(proba)}.")
            return encode(pred, self.classes_, "y_pred")
        if np.ndim(raw_scores) == 1 and not hasattr(raw_scores, "columns"):
            pos = cast(int, self.pos_)  # 1-D scores are checked to be binary with a positive class
            return np.where(proba[:, pos] >= self.threshold, pos, 1 - pos)
        return proba.argmax(1)
