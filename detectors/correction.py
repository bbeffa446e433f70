"""Multiple-testing corrections as small pure functions.

Every function takes raw p-values (any shape, NaN allowed for "not tested") and returns
adjusted p-values of the same shape; NaN stays NaN and is not counted as a hypothesis.

>>> import numpy as np
>>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.5])).round(3).tolist()
[0.04, 0.053, 0.053, 0.5]
>>> holm(np.array([0.01, 0.04, 0.03])).round(3).tolist()
[0.03, 0.06, 0.06]
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence, TypeVar

import numpy as np

from detectors.base import ShiftTest, check_in, check_probabilities, renamed_parameters
from detectors.decision import decide

__all__ = ["benjamini_hochberg", "holm", "bonferroni", "adjust_pvalues", "CORRECTIONS", "is_shift", "readjust"]


def _prepare(p_values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = np.asarray(p_values, dtype=float)
    flat = p.ravel()
    mask = ~np.isnan(flat)
    check_probabilities("p-values", flat[mask])
    return p, flat, mask


def _finish(p: np.ndarray, flat: np.ndarray, mask: np.ndarray, adjusted: np.ndarray) -> np.ndarray:
    out = np.full(flat.shape, np.nan)
    out[mask] = np.clip(adjusted, 0.0, 1.0)
    return out.reshape(p.shape)


def bonferroni(p_values) -> np.ndarray:
    """Bonferroni: ``min(1, m * p)``; controls the family-wise error rate."""
    p, flat, mask = _prepare(p_values)
    return _finish(p, flat, mask, flat[mask] * mask.sum())


def holm(p_values) -> np.ndarray:
    """Holm step-down; controls the family-wise error rate, uniformly beats Bonferroni."""
    p, flat, mask = _prepare(p_values)
    q = flat[mask]
    m = q.size
    order = np.argsort(q, kind="mergesort")
    stepped = np.maximum.accumulate((m - np.arange(m)) * q[order])
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return _finish(p, flat, mask, adjusted)


def benjamini_hochberg(p_values) -> np.ndarray:
    """Benjamini–Hochberg step-up; controls the false discovery rate (default)."""
    p, flat, mask = _prepare(p_values)
    q = flat[mask]
    m = q.size
    order = np.argsort(q, kind="mergesort")
    ranked = q[order] * m / np.arange(1, m + 1)
    stepped = np.minimum.accumulate(ranked[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return _finish(p, flat, mask, adjusted)


CORRECTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "bh": benjamini_hochberg,
    "holm": holm,
    "bonferroni": bonferroni,
}


@renamed_parameters(method="correction")
def adjust_pvalues(p_values, correction: str = "bh") -> np.ndarray:
    """Adjust ``p_values`` with the correction named ``correction`` (``bh``, ``holm``, ``bonferroni``)."""
    check_in("correction", correction, sorted(CORRECTIONS))
    return CORRECTIONS[correction](p_values)


def is_shift(p_value_adjusted, effect_size, *, alpha: float, effect_floor):
    """The one decision rule (:func:`detectors.decision.decide`), elementwise on arrays."""
    return np.asarray(decide(p_value_adjusted, effect_size, alpha=alpha, effect_floor=effect_floor))


T = TypeVar("T", bound=ShiftTest)  # or a subclass


@renamed_parameters(method="correction")
def readjust(tests: Sequence[T], *, alpha: float = 0.05, correction: str = "bh") -> list[T]:
    """Correct a family of :class:`detectors.base.ShiftTest` records together.

    Returns new records with ``p_value_adjusted`` and ``drifted`` recomputed across the
    whole family (an audit corrects everything it tested in one go).
    """
    if not tests:
        return []
    adjusted = adjust_pvalues([t.p_value for t in tests], correction)
    decisions = is_shift(adjusted, [t.effect_size for t in tests], alpha=alpha,
                         effect_floor=np.array([t.effect_floor for t in tests]))
    return [dataclasses.replace(t, p_value_adjusted=float(a), drifted=bool(d))
            for t, a, d in zip(tests, adjusted, decisions)]
