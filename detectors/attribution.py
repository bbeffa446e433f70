"""What the context mix explains: performance attribution (here) and context-conditional shift
(:mod:`detectors.conditional`, re-exported here).

Both work on **context cells**: a partition of the rows by one or more context columns
(:func:`context_cells`; numeric columns binned at benchmark quantiles).

**Performance attribution** (:func:`attribute_performance`) for a per-row metric (accuracy,
error rate: the mean of a 0/1 value per row). With benchmark cell shares ``wb``, production
shares ``wp`` and per-cell metrics ``mb``, ``mp``::

    benchmark            B = sum wb * mb     (the same cell estimator as E, see below)
    expected production  E = sum wp * mb     (benchmark performance under the production mix)
    observed production  O = sum wp * mp     (when production is labelled)
    mix effect = E - B,  within-context effect = O - E,  total = O - B

Cells with fewer than ``min_cell_size`` benchmark rows cannot be evaluated on their own: their
metric is shrunk towards the pooled benchmark metric (``(k + m * pooled) / (n + m)`` with
``m = min_cell_size``; an empty cell gets the pooled value — an explicit assumption), and their
production share is reported as ``uncovered_share``. ``B`` uses these same cell values, so
that ``E - B`` is centred on 0 when nothing changed. Keep cells coarse: every combination
of the chosen columns is a cell. CIs are percentile bootstraps of both datasets, drawn as multinomial
counts over (cell x outcome), so their cost does not grow with the number of rows.

**Context-conditional shift** (:class:`ConditionalShiftDetector`, in :mod:`detectors.conditional`):
does a feature's distribution still differ after reweighting the benchmark to the production
context mix? A permutation test within cells.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from detectors.base import DetectorInputError, Result, check_probabilities, renamed_parameters
from detectors.conditional import (  # re-exported (__all__)
    CONDITIONAL_EFFECT_FLOORS,
    ConditionalShiftDetector,
    ConditionalShiftResult,
)
from slicelang import all_of, equals, in_range, is_missing

__all__ = ["context_cells", "CellAttribution", "PerformanceAttribution", "attribute_performance",
           "ConditionalShiftDetector", "ConditionalShiftResult", "CONDITIONAL_EFFECT_FLOORS"]

# ------------------------------------------------------------------ cells

def _column_codes(b: pd.Series, p: pd.Series, n_bins: int, discrete_max_unique: int) -> tuple:
    both = pd.concat([b, p], ignore_index=True)
    numeric = pd.api.types.is_numeric_dtype(both) and not pd.api.types.is_bool_dtype(both)
    if numeric and b.nunique(dropna=True) > discrete_max_unique:
        edges = np.unique(np.quantile(b.dropna().to_numpy(float), np.linspace(0, 1, n_bins + 1)[1:-1]))
        v = both.to_numpy(float)
        codes = np.where(np.isnan(v), len(edges) + 1, np.searchsorted(edges, np.nan_to_num(v), side="right"))
        bounds = [None, *edges.tolist(), None]
        labels = [in_range(b.name, bounds[i], bounds[i + 1]) for i in range(len(edges) + 1)]
        labels.append(is_missing(b.name))
    else:
        # one hashing pass: codes in order of first appearance, missing values last
        codes, uniques = pd.factorize(both if both.dtype == object else both.astype(object))
        codes = np.where(codes < 0, len(uniques), codes)
        labels = [equals(b.name, v) for v in uniques] + [is_missing(b.name)]
    return codes[: len(b)], codes[len(b):], labels


@renamed_parameters(benchmark="reference", production="current")
def context_cells(reference: pd.DataFrame, current: pd.DataFrame, columns: Sequence[str], *,
                  n_bins: int = 4, discrete_max_unique: int = 12) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Cell id of every row: the combination of the rows' values in ``columns``.

    Returns ``(reference_cells (n_b,), current_cells (n_p,), labels)`` where ``labels[i]``
    describes cell ``i`` in the slice-expression language.
    """
    columns = list(columns)
    if not columns:
        return np.zeros(len(reference), int), np.zeros(len(current), int), ("all rows",)
    per_col = [_column_codes(reference[c], current[c], n_bins, discrete_max_unique) for c in columns]
    combos, ids = _combinations([np.concatenate([cb, cp]) for cb, cp, _ in per_col])
    labels = tuple(all_of(per_col[j][2][k] for j, k in enumerate(row)) for row in combos)
    return ids[: len(reference)], ids[len(reference):], labels


def _combinations(codes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``column_stack(codes)`` in lexicographic order, and each row's index.

    The same as ``np.unique(stacked, axis=0, return_inverse=True)``, which sorts the rows as
    opaque records (seconds on a million rows): a mixed-radix integer of the codes, first
    column most significant, sorts in the same order, and a 1-D integer unique is fast.
    """
    radices = [int(c.max(initial=0)) + 1 for c in codes]
    if float(np.prod([float(r) for r in radices])) >= 2.0 ** 62:  # too many combinations for one int64
        combos, ids = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
        return combos, ids.ravel()
    combined = np.zeros(len(codes[0]), np.int64)
    for c, radix in zip(codes, radices):
        combined = combined * radix + c
    unique, ids = np.unique(combined, return_inverse=True)
    combos = np.empty((len(unique), len(codes)), np.int64)
    rest = unique
    for j in range(len(codes) - 1, -1, -1):
        rest, combos[:, j] = np.divmod(rest, radices[j])
    return combos, ids.ravel()


# ------------------------------------------------------------------ performance attribution

@dataclass(frozen=True)
class CellAttribution(Result):
    cell: str
    n_benchmark: int
    n_production: int
    benchmark_share: float
    production_share: float
    benchmark_value: float  # NaN when the cell has no benchmark rows
    production_value: float  # NaN without production labels or rows
    covered: bool
    mix_contribution: float  # (wp - wb) * (mb_used - B): sums to the mix effect
    within_contribution: float  # wp * (mp - mb_used)


@dataclass(frozen=True)
class PerformanceAttribution(Result):
    metric: str
    benchmark_value: float
    benchmark_ci: tuple
    expected_production_value: float
    expected_ci: tuple
    observed_production_value: float | None
    observed_ci: tuple | None
    mix_effect: float
    mix_ci: tuple
    within_effect: float | None
    within_ci: tuple | None
    total_change: float | None
    total_ci: tuple | None
    uncovered_share: float
    n_benchmark: int
    n_production: int
    cells: tuple  # CellAttribution, largest |mix| + |within| contribution first
    confidence: float


def _cell_stats(cells: np.ndarray, values: np.ndarray | None, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.bincount(cells, minlength=n_cells).astype(float)
    k = np.bincount(cells, weights=values, minlength=n_cells) if values is not None else np.zeros(n_cells)
    return n, k


def _decompose(nb, kb, npr, kp, covered, prior: float):
    """B, E, O per replicate (leading axes allowed).

    Uncovered cells (fewer than ``prior`` benchmark rows) are shrunk towards the pooled
    benchmark metric, ``(k + prior * pooled) / (n + prior)``: empty cells get the pooled value.
    """
    tb, tp = nb.sum(-1, keepdims=True), npr.sum(-1, keepdims=True)
    pooled = kb.sum(-1, keepdims=True) / tb
    with np.errstate(invalid="ignore", divide="ignore"):
        mb = np.where(covered, kb / np.where(nb > 0, nb, 1), (kb + prior * pooled) / (nb + prior))
    # B and E use the same (shrunk) cell estimator: with raw rates in B and shrunk ones in E the
    # "mix effect" E - B was biased away from 0 even when production equals the benchmark.
    bench = (nb / tb * mb).sum(-1)
    expected = (npr / tp * mb).sum(-1)
    observed = kp.sum(-1) / tp[..., 0]
    return bench, expected, observed, mb


@renamed_parameters(n_boot="n_bootstrap", benchmark_cells="reference_cells", benchmark_values="reference_values",
                    production_cells="current_cells", production_values="current_values")
def attribute_performance(reference_cells, reference_values, current_cells, current_values=None, *,
                          labels: Sequence[str] | None = None, metric: str = "accuracy", min_cell_size: int = 30,
                          n_bootstrap: int = 1000, confidence: float = 0.95, random_state: int | None = 0
                          ) -> PerformanceAttribution:
    """Split the production performance change into a context-mix and a within-context effect.

    Parameters
    ----------
    reference_cells, current_cells : int arrays of shape (n_b,), (n_p,) (see :func:`context_cells`)
        Benchmark and production cells.
    reference_values, current_values : arrays of shape (n_b,), (n_p,) with values in [0, 1]
        Per-row metric (1 = correct for accuracy); ``current_values=None`` when production is unlabelled.
    labels : description of each cell id, optional
    """
    cb, cp = np.asarray(reference_cells, dtype=np.int64), np.asarray(current_cells, dtype=np.int64)
    vb = np.asarray(reference_values, dtype=float)
    vp = None if current_values is None else np.asarray(current_values, dtype=float)
    if vb.shape != cb.shape or (vp is not None and vp.shape != cp.shape) or not len(cb) or not len(cp):
        raise DetectorInputError("cells and values must be non-empty 1-D arrays of matching lengths.")
    for values in (vb, vp):
        if values is not None:
            check_probabilities("per-row metric values", values)
    n_cells = int(max(cb.max(), cp.max())) + 1
    nb, kb = _cell_stats(cb, vb, n_cells)
    npr, kp = _cell_stats(cp, vp, n_cells)
    covered = nb >= min_cell_size
    bench, expected, observed, mb = _decompose(nb, kb, npr, kp, covered, float(min_cell_size))
    reps = _bootstrap(nb, kb, npr, kp, vp is not None, n_bootstrap, np.random.default_rng(random_state))
    b_rep, e_rep, o_rep, _ = _decompose(*reps, covered, float(min_cell_size))
    ci = _percentile(confidence)
    labelled = vp is not None
    wb, wp = nb / nb.sum(), npr / npr.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        mp = np.where(npr > 0, kp / np.where(npr > 0, npr, 1), np.nan) if labelled else np.full(n_cells, np.nan)
        mb_raw = np.where(nb > 0, kb / np.where(nb > 0, nb, 1), np.nan)
    names = labels if labels is not None else [f"cell {i}" for i in range(n_cells)]
    cells = [CellAttribution(str(names[i]), int(nb[i]), int(npr[i]), wb[i], wp[i], mb_raw[i], mp[i], bool(covered[i]),
                             (wp[i] - wb[i]) * (mb[i] - bench), wp[i] * (mp[i] - mb[i]) if labelled and npr[i] else 0.0)
             for i in range(n_cells) if nb[i] or npr[i]]
    cells.sort(key=lambda c: -(abs(c.mix_contribution) + abs(c.within_contribution)))
    return PerformanceAttribution(
        metric=metric, benchmark_value=float(bench), benchmark_ci=ci(b_rep), expected_production_value=float(expected),
        expected_ci=ci(e_rep), observed_production_value=float(observed) if labelled else None,
        observed_ci=ci(o_rep) if labelled else None, mix_effect=float(expected - bench), mix_ci=ci(e_rep - b_rep),
        within_effect=float(observed - expected) if labelled else None,
        within_ci=ci(o_rep - e_rep) if labelled else None,
        total_change=float(observed - bench) if labelled else None, total_ci=ci(o_rep - b_rep) if labelled else None,
        uncovered_share=float(wp[~covered].sum()), n_benchmark=len(cb), n_production=len(cp), cells=tuple(cells),
        confidence=float(confidence))


def _bootstrap(nb, kb, npr, kp, labelled: bool, n_bootstrap: int, rng) -> tuple[Any, Any, Any, Any]:
    """Multinomial resampling of (cell x outcome) counts; values in (0, 1) are split by their mean."""
    def draw(n, k):
        probs = np.concatenate([k, n - k]) / n.sum()
        counts = rng.multinomial(int(n.sum()), np.clip(probs, 0, None) / probs.sum(), size=n_bootstrap).astype(float)
        half = len(n)
        return counts[:, :half] + counts[:, half:], counts[:, :half]
    nb_r, kb_r = draw(nb, kb)
    if labelled:
        np_r, kp_r = draw(npr, kp)
    else:
        np_r = rng.multinomial(int(npr.sum()), npr / npr.sum(), size=n_bootstrap).astype(float)
        kp_r = np.zeros_like(np_r)
    return nb_r, kb_r, np_r, kp_r


def _percentile(confidence: float):
    a = (1 - confidence) / 2

    def ci(values: np.ndarray) -> tuple:
        values = values[np.isfinite(values)]
        if not values.size:
            return (float("nan"), float("nan"))
        lo, hi = np.quantile(values, [a, 1 - a])
        return (float(lo), float(hi))
    return ci
