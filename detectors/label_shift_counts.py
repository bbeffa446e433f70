"""Label-shift estimation from counts alone (:class:`CountsFitting`, a base of
:class:`detectors.label_shift.LabelShiftEstimator`): the benchmark's (true class x predicted
class) counts and production's predicted-class counts, e.g. summaries of data that never fits
in memory, with optional paired bootstrap replicates of those counts."""
from __future__ import annotations

from typing import Any, Callable, Self

import numpy as np

from detectors.base import DetectorInputError, check_fitted, renamed_parameters
from detectors.bbse_solver import solve_priors
from detectors.label_shift_result import LabelShiftResult

__all__ = ["CountsFitting"]


class CountsFitting:
    """``fit_counts`` / ``estimate_counts``: :meth:`fit` and :meth:`estimate` of the estimator
    from counts (hard labels only); the estimator supplies ``_fit_joint``, ``_estimate`` and
    ``bootstrap_priors``."""

    # parameters, learned state and steps of the estimator this is mixed into
    min_samples: int
    random_state: int
    classes_: np.ndarray
    pred_classes_: np.ndarray
    _benchmark_rows: np.ndarray | tuple | None  # probability rows kept for the bootstrap (None: hard labels)
    _check_params: Callable[[], None]
    _fit_joint: Callable[[], Any]
    _estimate: Callable[..., LabelShiftResult]
    bootstrap_priors: Callable[..., Any]

    def fit_counts(self, joint_counts, *, classes, pred_classes) -> Self:
        """:meth:`fit` from benchmark counts of hard labels, e.g. summaries of data beyond memory.

        Parameters
        ----------
        joint_counts : array of shape (k, k_pred)
            Rows with true class ``classes[t]`` predicted ``pred_classes[p]``; every row non-empty.
        classes : sequence of length k (sorted benchmark labels)
        pred_classes : sequence of length k_pred (sorted labels and predictions)
        """
        self._check_params()
        joint = np.asarray(joint_counts, dtype=np.int64)
        self.classes_ = np.array(list(classes), dtype=object)
        self.pred_classes_ = np.array(list(pred_classes), dtype=object)
        if joint.shape != (len(self.classes_), len(self.pred_classes_)) or (joint.sum(1) == 0).any():
            raise DetectorInputError(f"joint_counts must have shape ({len(self.classes_)}, {len(self.pred_classes_)}) "
                                     f"with rows for every class, got shape {joint.shape}.")
        if joint.sum() < self.min_samples:
            raise DetectorInputError(f"Benchmark has {joint.sum()} rows; at least {self.min_samples} are needed.")
        if len(self.classes_) < 2:
            raise DetectorInputError(f"Benchmark labels hold a single class {self.classes_.tolist()}; "
                                     "label shift needs at least two.")
        self.kind_, self.joint_counts_, self._benchmark_rows = "labels", joint, None
        self.benchmark_pred_counts_ = joint.sum(0)
        self.n_benchmark_ = int(joint.sum())
        return self._fit_joint()

    @renamed_parameters(production_counts="current_counts", production_replicates="current_replicates")
    def estimate_counts(self, current_counts, *, joint_replicates=None,
                        current_replicates=None) -> LabelShiftResult:
        """:meth:`estimate` from production predicted-class counts after :meth:`fit_counts` or a
        hard-label :meth:`fit`.

        Parameters
        ----------
        current_counts : array of shape (k_pred,)
            Production's predicted-class counts, ``pred_classes_`` order (``production_counts=`` is the
            deprecated name).
        joint_replicates : array of shape (B, k, k_pred), optional
            Replicates of the benchmark's joint counts, e.g. Poisson-bootstrap counts.
        current_replicates : array of shape (B, k_pred), optional
            Replicates of ``current_counts`` paired by index with ``joint_replicates``
            (``production_replicates=`` is the deprecated name). With both, the intervals come from
            them; otherwise from :meth:`bootstrap_priors`, as :meth:`estimate` does.
        """
        check_fitted(self, "joint_")
        self._check_params()
        counts = np.asarray(current_counts, dtype=np.int64)
        if self.kind_ != "labels" or counts.shape != (len(self.pred_classes_),) or counts.sum() == 0:
            raise DetectorInputError(f"current_counts must be non-empty hard-label counts of shape "
                                     f"({len(self.pred_classes_)},), got {counts.shape} after a {self.kind_} fit.")
        mu = counts / counts.sum()
        if joint_replicates is None:
            rng = np.random.default_rng(self.random_state)
            return self._estimate(mu, counts, lambda lam: self.bootstrap_priors(mu, int(counts.sum()), None, rng,
                                                                                lam=lam)[2])
        with np.errstate(invalid="ignore", divide="ignore"):
            joint = np.asarray(joint_replicates, float) / np.sum(joint_replicates, axis=(-2, -1), keepdims=True)
            mu_b = np.asarray(current_replicates, float) / np.sum(current_replicates, axis=-1, keepdims=True)
        return self._estimate(mu, counts, lambda lam: solve_priors(joint, mu_b, lam))
