"""Pure helpers of :class:`detectors.context.ContextShiftDetector`: the exact exceedance p-value,
slice-expression literals, slice-share statistics, mask checks and untested numeric ranges."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from detectors.base import DetectorInputError, ShiftTest
from detectors.context_results import UntestedContext
from detectors.intervals import newcombe_interval, wilson_interval

__all__ = ["exceedance_pvalue", "literal_text", "untested_ranges"]


def exceedance_pvalue(n_reference: int, n_current: int, k: int) -> float:
    """``P(K >= k)``: at least ``k`` of ``n_current`` values beyond the extreme of ``n_reference``.

    Under exchangeability of the pooled continuous values, ``K >= k`` exactly when the ``k``
    most extreme pooled values all come from the current sample: ``C(n_c, k) / C(N, k)``.
    """
    n, m, k = int(n_reference), int(n_current), int(k)
    if k <= 0:
        return 1.0
    if k > m or n <= 0:
        return 0.0 if n > 0 else 1.0
    big = n + m
    log_p = (math.lgamma(m + 1) - math.lgamma(m - k + 1)) - (math.lgamma(big + 1) - math.lgamma(big - k + 1))
    return float(min(1.0, math.exp(log_p)))


def literal_text(value: Any) -> str:
    """``value`` as a literal of the slice-expression language (strings double-quoted)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(int(value)) if float(value).is_integer() else repr(float(value))
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'

def _share_stats(k1: np.ndarray, n1: int, k2: np.ndarray, n2: int) -> list[dict]:
    """Shares with Wilson CIs and their difference with a Newcombe CI, for all slices at once."""
    lo1, hi1 = (np.atleast_1d(v) for v in wilson_interval(k1, np.full(k1.shape, n1)))
    lo2, hi2 = (np.atleast_1d(v) for v in wilson_interval(k2, np.full(k2.shape, n2)))
    dlo, dhi = (np.atleast_1d(v) for v in newcombe_interval(k1, np.full(k1.shape, n1), k2, np.full(k2.shape, n2)))
    return [{"benchmark_share": k1[i] / n1, "benchmark_share_ci": (lo1[i], hi1[i]), "production_share": k2[i] / n2,
             "production_share_ci": (lo2[i], hi2[i]), "difference": k2[i] / n2 - k1[i] / n1,
             "difference_ci": (dlo[i], dhi[i])} for i in range(k1.size)]


def _as_mask(mask, n: int, what: str) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.shape != (n,):
        raise DetectorInputError(f"{what} must be a boolean mask of shape ({n},), got {arr.shape}.")
    if arr.dtype != bool:
        if not np.isin(arr, [0, 1]).all():
            raise DetectorInputError(f"{what} must be boolean.")
        arr = arr.astype(bool)
    return arr



def untested_ranges(name: str, reference: np.ndarray, values, n_production: int, *, min_samples: int,
                    min_count: int, min_slice_size: int, floor: float) -> list[tuple[UntestedContext, ShiftTest]]:
    """Candidate untested ranges (rows beyond the benchmark's observed range) with their tests.

    ``reference`` is the sorted non-missing benchmark column and ``values`` the production column
    (``n_production`` rows). A candidate needs at least ``min_count`` rows beyond an end; it is
    reported only if its exceedance test (:func:`exceedance_pvalue`, ``kind="untested_range"``)
    is drifted after correction.
    """
    ref, n2 = reference, n_production
    if ref.size < min_samples:
        return []
    x = values.to_numpy(float)
    n_valid = int(np.count_nonzero(~np.isnan(x)))
    out = []
    for kind, bound, beyond, sign in (("below_range", ref[0], x < ref[0], "<"),
                                      ("above_range", ref[-1], x > ref[-1], ">")):
        k2 = int(np.count_nonzero(beyond))
        if k2 < min_count:
            continue
        label = f"{name} {sign} {float(bound):g}"
        p = exceedance_pvalue(ref.size, n_valid, k2)
        test = ShiftTest(label, "exceedance_exact", float(k2), p, p, k2 / n2, "beyond_range_share", floor,
                         int(ref.size), n_valid, False, kind="untested_range",
                         details={"column": name, "bound": float(bound), "k_beyond": k2,
                                  "expected_by_chance": n_valid / (ref.size + 1)})
        out.append((UntestedContext(label, kind, name, float(bound), 0, k2, k2 / n2, wilson_interval(k2, n2),
                                    int(min_slice_size)), test))
    return out
