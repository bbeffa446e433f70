"""Which discovered weak slices say something new (the policy once inside the audit pipeline).

A slice found by :func:`detectors.discovery.discover_weak_slices` is dropped when another
finding already says it:

* a condition on a value the benchmark (almost) lacks (fewer than ``min_slice_size`` rows):
  the untested-context report covers it;
* it lies mostly (``COVERED_SHARE``) inside an already reported slice and is not credibly
  worse than it (the Wilson lower bound of its error rate does not exceed that slice's rate);
* it is weak only because it contains a kept, more specific discovery: without those rows
  its error rate is not credibly above the overall one.

Kept slices come most excess errors first, at most ``limit`` of them.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from detectors.base import renamed_parameters
from detectors.intervals import wilson_interval

__all__ = ["prune_discoveries", "COVERED_SHARE", "MAX_DISCOVERED"]

MAX_DISCOVERED = 10  # discovered slices reported beside the expert ones
COVERED_SHARE = 0.8  # "mostly inside": the share of a slice's rows within another one


@renamed_parameters(benchmark="reference")
def prune_discoveries(discovered, *, reference: pd.DataFrame, frame: pd.DataFrame, errors: np.ndarray,
                      reported: Sequence[np.ndarray], min_slice_size: int, limit: int = MAX_DISCOVERED) -> list:
    """The discovered slices (``discovered.slices``) that say something new.

    Parameters
    ----------
    discovered : DiscoveryResult
    reference : DataFrame of the benchmark contexts (for the "benchmark lacks it" rule)
    frame : DataFrame of shape (n, ...) the slices were discovered on
    errors : bool array of shape (n,), the model's errors on ``frame``
    reported : boolean masks of shape (n,) of slices already reported on ``frame``
    """
    errors = np.asarray(errors, bool)
    reported = list(reported)
    overall = float(errors.mean()) if errors.size else 0.0
    kept, kept_masks = [], []
    for found in discovered.slices:
        if any(c.mask(reference).sum() < min_slice_size for c in found.conditions):
            continue
        mask = found.mask(frame)
        if not mask.any() or any(_covered_without_news(mask, other, errors) for other in reported):
            continue
        kept.append(found)
        kept_masks.append(mask)
        reported.append(mask)
    # broad slices come first (more excess errors), so their explaining children are known only now
    explained = {i for i, mask in enumerate(kept_masks)
                 if any(j != i and _explained_by(mask, child, errors, overall) for j, child in enumerate(kept_masks))}
    return [found for i, found in enumerate(kept) if i not in explained][:limit]


def _lower_error_bound(errors: np.ndarray, mask: np.ndarray) -> float:
    n = int(mask.sum())
    return wilson_interval(int(errors[mask].sum()), n)[0] if n else 0.0


def _covered_without_news(mask: np.ndarray, other: np.ndarray, errors: np.ndarray) -> bool:
    if (mask & other).sum() < COVERED_SHARE * mask.sum():
        return False
    return _lower_error_bound(errors, mask) <= float(errors[other].mean()) if other.any() else False


def _explained_by(mask: np.ndarray, child: np.ndarray, errors: np.ndarray, overall: float) -> bool:
    if (child & mask).sum() < COVERED_SHARE * child.sum():
        return False  # the kept slice is not inside this one
    rest = mask & ~child
    return not rest.any() or _lower_error_bound(errors, rest) <= overall
