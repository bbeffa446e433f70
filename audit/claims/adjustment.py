"""Production adjusted to the benchmark on accepted causes.

Every change claim that the audit accepts says how to undo it, so that the next claim can be re-tested
without it (:class:`Cause`):

* a **new population** is taken out: its rows are removed from production (and the few the benchmark
  has from the benchmark);
* a change located in some rows (a **concept shift inside a slice**) is taken out the same way;
* a **moved mix** — the class prior, a context column's mix, a slice's share — is matched: the
  benchmark is reweighted so that its share of each value is production's;
* a **covariate shift** is matched by the density ratio of the shifted inputs
  (:func:`detectors.density_ratio.density_ratio_weights`);
* a **change of what the model gets right** over all rows (concept shift) marks the labels as changed
  given the inputs: a class-mix change is then re-tested on the model's outputs, which a label shift
  would move and a concept shift does not.

:func:`adjust` combines accepted causes into one :class:`Adjusted` benchmark: rows removed on both
sides, density ratios multiplied, and the matched margins raked together
(:func:`detectors.reweighted.rake`), so two correlated causes are matched jointly, not one after the
other.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from detectors.reweighted import rake

__all__ = ["Cause", "Adjusted", "adjust", "production_shares"]


@dataclass(frozen=True)
class Cause:
    """How to adjust production to the benchmark on one accepted claim.

    ``remove_b`` / ``remove_p``: rows taken out (bool arrays); ``codes`` and ``shares``: a margin to
    match — benchmark codes of shape (n_b,) and a function from the kept production rows to the shares
    production has of each code; ``ratio``: benchmark weights (a density ratio); ``labels_changed``:
    the labels changed given the inputs; ``matched``: the variables the adjustment matches directly — a
    claim measured on one of them is not explained by it, only restated (the density ratio of the model's
    outputs reproduces any test on those outputs).
    """

    what: str
    remove_b: np.ndarray | None = None
    remove_p: np.ndarray | None = None
    codes: np.ndarray | None = None
    shares: Callable[[np.ndarray], np.ndarray] | None = None
    ratio: np.ndarray | None = None
    labels_changed: bool = False
    matched: frozenset[str] = frozenset()  # the variables it matches directly (it cannot "explain" their tests)


@dataclass(frozen=True)
class Adjusted:
    """The benchmark weights (0 on rows taken out) and the production rows kept after the causes."""

    w: np.ndarray
    keep_p: np.ndarray
    labels_changed: bool = False
    causes: tuple[str, ...] = ()


def production_shares(codes_p: np.ndarray, k: int) -> Callable[[np.ndarray], np.ndarray]:
    """The function giving production's share of each of ``k`` codes among its kept rows."""
    def shares(keep_p: np.ndarray) -> np.ndarray:
        counts = np.bincount(codes_p[keep_p], minlength=k).astype(float)
        return counts / counts.sum() if counts.sum() else counts
    return shares


def adjust(n_benchmark: int, n_production: int, causes: Sequence[Cause]) -> Adjusted:
    """One adjusted benchmark for all ``causes`` together."""
    keep_b = np.ones(n_benchmark, bool)
    keep_p = np.ones(n_production, bool)
    w = np.ones(n_benchmark)
    for cause in causes:
        if cause.remove_b is not None:
            keep_b &= ~cause.remove_b
        if cause.remove_p is not None:
            keep_p &= ~cause.remove_p
        if cause.ratio is not None:
            w = w * cause.ratio
    w = np.where(keep_b, w, 0.0)
    margins = [(cause.codes, cause.shares(keep_p)) for cause in causes
               if cause.codes is not None and cause.shares is not None]
    if margins and keep_p.any() and w.sum() > 0:
        w = rake(w, margins)
    return Adjusted(w=w, keep_p=keep_p, labels_changed=any(c.labels_changed for c in causes),
                    causes=tuple(c.what for c in causes))
