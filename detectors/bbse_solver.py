"""Numerics of black-box shift estimation (BBSE / RLLS), free of estimator state.

Holds the batched prior solver :func:`solve_priors`, the conditioning check and ridge choice
(:func:`ridge_for_condition`, :func:`check_regularization`, :func:`choose_regularization`), the
benchmark joint ``P(y, yhat)`` of probability outputs and its bootstrap replicates
(:func:`soft_joint`, :func:`bootstrap_soft_joint`), and percentile intervals from replicates
(:func:`percentile_intervals`). They are pure array functions so that
:class:`detectors.label_shift.LabelShiftEstimator` and
:class:`detectors.performance.PriorReweightedEstimator` share one solver; the estimator keeps the
validation, the test and the result.
"""
from __future__ import annotations

import numpy as np

from detectors.base import check_in, check_number
from detectors.confusion import EXACT_BOOTSTRAP_ROWS, bootstrap_row_means

__all__ = ["solve_priors", "ridge_for_condition", "check_regularization", "choose_regularization", "soft_joint",
           "bootstrap_soft_joint", "percentile_intervals"]


def solve_priors(joint: np.ndarray, mu: np.ndarray, lam: float) -> np.ndarray:
    """Batched BBSE: priors ``q`` from joint ``P(y, yhat)`` (``(..., k_true, k_pred)``) and ``mu``.

    Solves ``min ||A (q - p) - (mu - A p)||^2 + lam ||q - p||^2`` with ``A = P(yhat | y)``
    (``lam = 0``: least squares via the pseudo-inverse), then clips at 0 and renormalises.

    Examples
    --------
    >>> joint = np.array([[0.4, 0.1], [0.1, 0.4]])        # P(y, yhat), benchmark prior (0.5, 0.5)
    >>> solve_priors(joint, np.array([0.65, 0.35]), 0.0).round(2).tolist()
    [0.75, 0.25]
    """
    p = joint.sum(-1)
    # A bootstrap replicate can lose every row of a rare class: its priors are undefined (NaN).
    valid = (p > 0).all(-1)
    safe_p = np.where(valid[..., None], p, 1.0)
    A = np.swapaxes(np.where(valid[..., None, None], joint / safe_p[..., None], np.eye(*joint.shape[-2:])), -1, -2)
    b = mu - joint.sum(-2)  # production minus benchmark predicted-class distribution
    if lam > 0:
        At = np.swapaxes(A, -1, -2)
        theta = np.linalg.solve(At @ A + lam * np.eye(A.shape[-1]), At @ b[..., None])[..., 0]
    else:
        theta = (np.linalg.pinv(A) @ b[..., None])[..., 0]
    q = np.clip(p + theta, 0.0, None)
    q = q / q.sum(-1, keepdims=True)
    return np.where(valid[..., None], q, np.nan)


def ridge_for_condition(A: np.ndarray, max_condition: float) -> tuple[float, float]:
    """Condition number of ``A`` and the smallest ridge capping ``cond(A'A + lam I)`` at ``max_condition**2``."""
    s = np.linalg.svd(A, compute_uv=False)
    cond = float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
    if cond <= max_condition:
        return cond, 0.0
    t2 = max_condition**2
    return cond, float((s[0] ** 2 - t2 * s[-1] ** 2) / (t2 - 1))


def check_regularization(value) -> None:
    """Raise :class:`DetectorInputError` unless ``value`` is ``"auto"``, ``"none"`` or a number >= 0."""
    if isinstance(value, str):
        check_in("regularization", value, ("auto", "none"))
    else:
        check_number("regularization", value, minimum=0)


def choose_regularization(regularization, ridge: float) -> tuple[float, str]:
    """The ridge ``lam`` and method (``"bbse"`` or ``"rlls"``) for a ``regularization`` setting.

    Parameters
    ----------
    regularization : "auto", "none" or float
        As in :class:`detectors.label_shift.LabelShiftEstimator`.
    ridge : float
        The ``"auto"`` ridge, from :func:`ridge_for_condition`.
    """
    check_regularization(regularization)
    if regularization == "none":
        return 0.0, "bbse"
    if regularization == "auto":
        return ridge, ("rlls" if ridge > 0 else "bbse")
    return float(regularization), ("rlls" if float(regularization) > 0 else "bbse")


def soft_joint(t: np.ndarray, proba: np.ndarray, k_true: int) -> tuple[np.ndarray, np.ndarray | tuple]:
    """Benchmark ``P(y, yhat)`` counts of probability outputs and what its bootstrap resamples.

    Parameters
    ----------
    t : int array of shape (n,)
        Encoded true classes.
    proba : array of shape (n, k_pred)
    k_true : int

    Returns
    -------
    joint : array of shape (k_true, k_pred)
        Probability rows summed per true class.
    rows : array of shape (n, k_true * k_pred) or tuple
        The rows ``e_y (x) f(x)`` when ``n <= EXACT_BOOTSTRAP_ROWS``, else ``(t, proba)`` for the
        normal approximation of :func:`bootstrap_soft_joint`.
    """
    k_p = proba.shape[1]
    rows = np.zeros((len(t), k_true * k_p)) if len(t) <= EXACT_BOOTSTRAP_ROWS else None
    joint = np.zeros((k_true, k_p))
    for c in range(k_true):
        joint[c] = proba[t == c].sum(0)
        if rows is not None:
            rows[t == c, c * k_p:(c + 1) * k_p] = proba[t == c]
    return joint, ((t, proba) if rows is None else rows)


def bootstrap_soft_joint(joint: np.ndarray, rows, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """``n_bootstrap`` replicates ``(B, k_true, k_pred)`` of the benchmark joint ``P(y, yhat)`` of probabilities.

    ``joint`` is the fitted joint (shares), ``rows`` the second output of :func:`soft_joint`.
    """
    B = n_bootstrap
    k_t, k_p = joint.shape
    if isinstance(rows, np.ndarray):
        return bootstrap_row_means(rows, B, rng).reshape(B, k_t, k_p)
    # Large benchmark: the mean of e_y (x) f(x) is normal with a block-diagonal second moment.
    t, proba = rows
    second = np.zeros((k_t * k_p, k_t * k_p))
    for c in range(k_t):
        block = proba[t == c]
        second[c * k_p:(c + 1) * k_p, c * k_p:(c + 1) * k_p] = block.T @ block / len(t)
    mean = joint.ravel()
    cov = (second - np.outer(mean, mean)) / len(t)
    return rng.multivariate_normal(mean, cov, size=B, method="eigh").reshape(B, k_t, k_p)


def percentile_intervals(boot, lo: float, hi: float, k: int) -> list[tuple[float, float]]:
    """Per-column ``(lo, hi)`` quantiles of replicates ``(B, k)``, ignoring non-finite rows.

    ``boot=None`` or no finite replicate gives ``k`` NaN intervals.
    """
    if boot is None:
        return [(float("nan"), float("nan"))] * k
    boot = boot[np.isfinite(boot).all(1)]
    if len(boot) == 0:
        return [(float("nan"), float("nan"))] * k
    qs = np.quantile(boot, [lo, hi], axis=0)
    return [(float(a), float(b)) for a, b in zip(qs[0], qs[1])]
