"""The one decision rule, and the protocol every detector result follows.

A finding is a *shift* only when its p-value, adjusted across everything one audit tested,
is below ``alpha`` **and** its effect size reaches the practical floor of its kind. Every
detector (covariate, output, context, label, concept, slices, embeddings) decides with
:func:`decide`; reports read the resulting ``drifted`` flags and never re-decide.

Every detector result exposes its hypothesis tests explicitly:

* ``result.tests`` - the :class:`~detectors.base.ShiftTest` records that enter the
  audit-wide correction, in a fixed order;
* ``result.with_tests(tests)`` - a new result holding ``tests`` (same order, already
  corrected and decided by :func:`detectors.correction.readjust`) with every flag that
  depends on them (``is_shift``, ``changed``...) re-derived.

>>> bool(decide(0.01, 0.3, alpha=0.05, effect_floor=0.1))
True
>>> bool(decide(0.01, -0.05, alpha=0.05, effect_floor=0.1))   # significant but negligible
False
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, Sequence, cast, runtime_checkable

import numpy as np

__all__ = ["decide", "TestedResult", "SingleTestMixin", "check_tests"]


def decide(p_value_adjusted, effect_size, *, alpha: float, effect_floor):
    """``adjusted p < alpha`` and ``|effect| >= floor``, elementwise; NaN is never a shift.

    Parameters
    ----------
    p_value_adjusted : float or array of shape (m,)
    effect_size : float or array of shape (m,)
        Signed or unsigned; the rule uses its magnitude.
    alpha : float
    effect_floor : float or array of shape (m,)

    Returns
    -------
    bool or ndarray of bool, shape (m,)
    """
    p = np.asarray(p_value_adjusted, dtype=float)
    e = np.asarray(effect_size, dtype=float)
    with np.errstate(invalid="ignore"):
        out = (p < alpha) & (np.abs(e) >= np.asarray(effect_floor, dtype=float))
    return bool(out) if out.ndim == 0 else out


@runtime_checkable
class TestedResult(Protocol):
    """What the audit-wide correction needs from a detector result."""

    @property
    def tests(self) -> tuple: ...

    def with_tests(self, tests: Sequence) -> "TestedResult": ...


def check_tests(result, tests: Sequence) -> tuple:
    """``tests`` as a tuple, after checking it matches ``result.tests`` one for one."""
    tests = tuple(tests)
    expected = result.tests
    if len(tests) != len(expected) or any((a.kind, a.name) != (b.kind, b.name) for a, b in zip(tests, expected)):
        raise ValueError(f"{type(result).__name__}.with_tests needs the tests of .tests in the same order.")
    return tests


class SingleTestMixin:
    """``tests``/``with_tests`` for a frozen result with one ``test`` field and ``is_shift``."""

    test: Any  # a field of the dataclass this is mixed into (a ShiftTest)

    @property
    def tests(self) -> tuple:
        return (self.test,)

    def with_tests(self, tests: Sequence):
        (test,) = check_tests(self, tests)
        return replace(cast(Any, self), test=test, is_shift=bool(test.drifted))
