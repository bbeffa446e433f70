"""Practical size of a change of class priors: the effect measure behind "label shift".

Holds :func:`prior_shift_effect` and its default ratio floor :data:`PRIOR_RATIO_FLOOR`. It is
a pure function of two prior vectors, kept apart from the BBSE estimator
(:mod:`detectors.label_shift`) because observed label shift (:mod:`detectors.concept`) and the
summary-based tests (:mod:`detectors.sketch_tests`) measure prior changes the same way.
A change counts when its total variation distance reaches ``tv_floor`` OR some class's prior
ratio reaches ``ratio_floor`` (either way), so that a rare class growing from 3.9 % to 5.7 %
counts even though it moves little mass.
"""
from __future__ import annotations

import math

import numpy as np

from detectors.base import renamed_parameters
from detectors.confusion import total_variation

__all__ = ["prior_shift_effect", "PRIOR_RATIO_FLOOR"]

PRIOR_RATIO_FLOOR = 1.25  # a class 25 % more (or less) frequent counts, however rare it is


@renamed_parameters(benchmark_prior="reference_prior", production_prior="current_prior")
def prior_shift_effect(reference_prior, current_prior, *, tv_floor: float = 0.05,
                       ratio_floor: float = PRIOR_RATIO_FLOOR) -> tuple[float, dict]:
    """Size of a prior change relative to its floors: ``max(TV / tv_floor, max |log ratio| / log ratio_floor)``.

    ``>= 1`` means the change is practically large by either floor. Classes absent from the
    benchmark prior are compared through TV only. Returns ``(effect, details)``.

    Parameters
    ----------
    reference_prior, current_prior : arrays of shape (k,)
        The benchmark's and production's class priors.

    Examples
    --------
    >>> effect, details = prior_shift_effect([0.5, 0.5], [0.6, 0.4])
    >>> round(effect, 2), round(details["tvd"], 2)
    (2.0, 0.1)
    """
    p, q = np.asarray(reference_prior, float), np.asarray(current_prior, float)
    tv = total_variation(p, q)
    ok = (p > 0) & np.isfinite(q)
    with np.errstate(divide="ignore"):
        log_ratio = np.abs(np.log(np.where(ok, np.maximum(q, 1e-12), 1.0) / np.where(ok, p, 1.0)))
    worst = int(np.argmax(log_ratio)) if log_ratio.size else 0
    ratio = float(np.exp(log_ratio[worst])) if log_ratio.size else 1.0
    effect = max(tv / tv_floor if tv_floor > 0 else math.inf, log_ratio.max(initial=0.0) / math.log(ratio_floor))
    if not np.isfinite(tv):
        effect = float("nan")
    return float(effect), {"tvd": float(tv), "max_prior_ratio": ratio, "max_ratio_class_index": worst,
                           "tv_floor": float(tv_floor), "ratio_floor": float(ratio_floor)}
