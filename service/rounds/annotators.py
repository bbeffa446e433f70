"""Per-round annotator statistics: Krippendorff's alpha, shares against the cap, near-chance
annotators (computed by :mod:`detectors.label_quality`), and "agreement fell" between rounds.

The statistics of a round are kept in a small cache keyed by the content of its annotations table:
a series page recomputes every round on each request, and a round's table never changes, while
its bootstrap and permutation tests cost about a second for a few thousand labels.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

import pandas as pd

from detectors.base import Result
from detectors.label_quality import AnnotatorShare, assess_label_quality

SHARE_CAP = 0.2
CACHE_SIZE = 256
_CACHE: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True)
class AnnotatorSummary(Result):
    """``alpha`` is None when no item carries two labels; ``shares`` is sorted, largest first."""

    n_annotators: int
    alpha: float | None
    alpha_ci_low: float | None
    alpha_ci_high: float | None
    max_share: float | None
    cap: float
    over_cap: tuple[str, ...]
    near_chance: tuple[str, ...]
    shares: tuple[AnnotatorShare, ...]  # the detector's records, annotator ids as text


EMPTY = AnnotatorSummary(0, None, None, None, None, SHARE_CAP, (), (), ())


def summarise(annotations: pd.DataFrame | None, *, cap: float = SHARE_CAP, seed: int = 0) -> AnnotatorSummary:
    """Statistics of one round's ``(item_id, annotator_id, label)`` table (``EMPTY`` when None)."""
    if annotations is None or annotations.empty:
        return EMPTY
    digest = pd.util.hash_pandas_object(annotations.astype(str), index=False).to_numpy()
    key = (digest.tobytes(), tuple(annotations.columns), float(cap), int(seed))
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    found = _compute(annotations, cap=cap, seed=seed)
    with _CACHE_LOCK:
        _CACHE[key] = found
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return found


def _compute(annotations: pd.DataFrame, *, cap: float, seed: int) -> AnnotatorSummary:
    quality = assess_label_quality(annotations, cap=cap, random_state=seed)
    shares = tuple(sorted((replace(s, annotator=str(s.annotator))
                           for s in quality.shares), key=lambda s: -s.share))
    agreement = quality.agreement
    return AnnotatorSummary(
        n_annotators=len(shares),
        alpha=None if agreement is None else agreement.alpha,
        alpha_ci_low=None if agreement is None else agreement.ci_low,
        alpha_ci_high=None if agreement is None else agreement.ci_high,
        max_share=shares[0].share if shares else None, cap=cap,
        over_cap=tuple(str(a) for a in quality.over_cap), near_chance=tuple(str(a) for a in quality.near_chance),
        shares=shares)


def agreement_fell(before: AnnotatorSummary, after: AnnotatorSummary) -> bool:
    """Round ``after``'s alpha is credibly lower: its upper CI bound lies below the earlier alpha."""
    if before.alpha is None or after.alpha is None:
        return False
    upper = after.alpha_ci_high if after.alpha_ci_high is not None else after.alpha
    return upper < before.alpha
