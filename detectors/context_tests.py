"""Pure helpers of :class:`detectors.context.ContextShiftDetector`: the exact exceedance and rarity
p-values, slice-share statistics, mask checks, untested numeric ranges and
untested category values (rare values of one column pooled into one candidate)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from detectors.base import ShiftTest, renamed_parameters
from detectors.context_results import UntestedContext
from detectors.intervals import newcombe_interval, wilson_interval
from slicelang import compare, equals, literal_text

__all__ = ["exceedance_pvalue", "rarity_pvalue", "literal_text", "untested_ranges", "untested_values", "rarity_test",
           "pool_rare_categories", "declared_kind"]

MISSING = "<missing>"
OTHER = "<other values>"


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


@renamed_parameters(k_benchmark="k_reference", k_production="k_current", n_benchmark="n_reference",
                    n_production="n_current")
def rarity_pvalue(k_reference, k_current, n_reference: int, n_current: int) -> np.ndarray:
    """``P(K_ref <= k_reference)`` given ``k_reference + k_current`` pooled rows of a context (vectorised).

    Under exchangeability of the ``n_reference + n_current`` rows, the benchmark's share of the context's
    rows is hypergeometric; a small p-value says the benchmark lacks the context beyond chance.
    With ``k_reference = 0`` it is ``C(n_current, k) / C(N, k)``, the same shape as
    :func:`exceedance_pvalue` (all ``k`` rows from production).

    Parameters
    ----------
    k_reference, k_current : int or array of int
        The context's rows in the benchmark and in production.
    n_reference, n_current : int
        The benchmark's and production's rows. ``k_benchmark``, ``k_production``, ``n_benchmark`` and
        ``n_production`` are the deprecated names.
    """
    k1, k2 = np.asarray(k_reference, dtype=np.int64), np.asarray(k_current, dtype=np.int64)
    n1, n2 = int(n_reference), int(n_current)
    return np.clip(stats.hypergeom.cdf(k1, n1 + n2, k1 + k2, n1), 0.0, 1.0)


def _share_stats(k1: np.ndarray, n1: int, k2: np.ndarray, n2: int) -> list[dict]:
    """Shares with Wilson CIs and their difference with a Newcombe CI, for all slices at once."""
    lo1, hi1 = (np.atleast_1d(v) for v in wilson_interval(k1, np.full(k1.shape, n1)))
    lo2, hi2 = (np.atleast_1d(v) for v in wilson_interval(k2, np.full(k2.shape, n2)))
    dlo, dhi = (np.atleast_1d(v) for v in newcombe_interval(k1, np.full(k1.shape, n1), k2, np.full(k2.shape, n2)))
    return [{"benchmark_share": k1[i] / n1, "benchmark_share_ci": (lo1[i], hi1[i]), "production_share": k2[i] / n2,
             "production_share_ci": (lo2[i], hi2[i]), "difference": k2[i] / n2 - k1[i] / n1,
             "difference_ci": (dlo[i], dhi[i])} for i in range(k1.size)]



@renamed_parameters(n_production="n_current")
def untested_ranges(name: str, reference: np.ndarray, values, n_current: int, *, min_samples: int,
                    min_count: int, min_slice_size: int, floor: float) -> list[tuple[UntestedContext, ShiftTest]]:
    """Candidate untested ranges (rows beyond the benchmark's observed range) with their tests.

    ``reference`` is the sorted non-missing benchmark column and ``values`` the production column
    (``n_current`` rows; ``n_production=`` is the deprecated name). A candidate needs at least
    ``min_count`` rows beyond an end; it is reported only if its exceedance test
    (:func:`exceedance_pvalue`, ``kind="untested_range"``) is drifted after correction.
    """
    ref, n2 = reference, n_current
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
        label = compare(name, sign, float(f"{float(bound):.6g}"))  # the bound to six digits: a readable name
        p = exceedance_pvalue(ref.size, n_valid, k2)
        test = ShiftTest(label, "exceedance_exact", float(k2), p, p, k2 / n2, "beyond_range_share", floor,
                         int(ref.size), n_valid, False, kind="untested_range",
                         details={"column": name, "bound": float(bound), "k_beyond": k2,
                                  "expected_by_chance": n_valid / (ref.size + 1)})
        out.append((UntestedContext(label, kind, name, float(bound), 0, k2, k2 / n2, wilson_interval(k2, n2),
                                    int(min_slice_size)), test))
    return out


@renamed_parameters(n_benchmark="n_reference", n_production="n_current")
def rarity_test(u: UntestedContext, n_reference: int, n_current: int, *, floor: float) -> ShiftTest:
    """The exact test that decides whether untested context ``u`` is claimed (``kind="untested_context"``):
    :func:`rarity_pvalue`, effect its production share against ``floor``. ``n_reference`` and
    ``n_current`` are the benchmark's and production's rows (``n_benchmark=`` and ``n_production=`` are
    the deprecated names)."""
    p = float(rarity_pvalue(u.n_benchmark, u.n_production, n_reference, n_current))
    expected = (u.n_benchmark + u.n_production) * n_reference / max(n_reference + n_current, 1)
    return ShiftTest(u.name, "hypergeometric_exact", float(u.n_benchmark), p, p, u.production_share,
                     "untested_share", floor, int(n_reference), int(n_current), False, kind="untested_context",
                     details={"column": u.column, "k_benchmark": int(u.n_benchmark),
                              "k_production": int(u.n_production),
                              "expected_benchmark_by_chance": float(expected), "n_values": int(u.n_values)})


@renamed_parameters(n_production="n_current")
def untested_values(name: str, reference: pd.Series, counts: pd.Series, n_current: int, *, min_slice_size: int,
                    min_production_count: int, max_listed: int) -> list[UntestedContext]:
    """Untested category values of one column: each value with fewer than ``min_slice_size``
    benchmark rows is a candidate of its own when it has at least ``min_slice_size`` production
    rows; the smaller ones are pooled into one candidate, "rare or new values of <column>"
    (``kind="pooled_values"``, the ``max_listed`` most frequent values listed, the rest in
    ``other_values``), so that a column with thousands of small values is one candidate, not thousands.

    ``reference`` and ``counts`` are the benchmark and production value counts (missing values as
    ``"<missing>"``, which is never a context value); shares are of ``n_current`` rows
    (``n_production=`` is the deprecated name).
    """
    # every value of either dataset: a pool that left out the values only the benchmark has would
    # lack benchmark rows by construction and claim a shortage under no change at all
    labels = counts.index.union(reference.index, sort=False)
    labels = labels[labels != MISSING]
    if labels.empty:
        return []
    k1 = reference.reindex(labels, fill_value=0).to_numpy(np.int64)
    k2 = counts.reindex(labels, fill_value=0).to_numpy(np.int64)
    rare = k1 < min_slice_size
    single = rare & (k2 >= min_slice_size)
    # the pool is chosen symmetrically (few rows in both datasets), so it is not selected for rarity
    pooled = rare & ~single
    present = pooled & (k2 >= min_production_count)
    out = [(equals(name, v), "unseen_value" if a == 0 else "rare_value", _native(v), int(a), int(b), 1, ())
           for v, a, b in zip(labels[single], k1[single], k2[single])]
    if present.sum() == 1 and pooled.sum() == 1:
        (i,) = np.flatnonzero(present)
        out.append((equals(name, labels[i]), "unseen_value" if k1[i] == 0 else "rare_value",
                    _native(labels[i]), int(k1[i]), int(k2[i]), 1, ()))
    elif present.any():
        idx = np.flatnonzero(pooled)
        # the most frequent in production first (ties by text), values absent from production last
        order = idx[np.lexsort((np.array([str(v) for v in labels[idx]]), -k2[idx]))]
        values = [_native(v) for v in labels[order]]
        listed = min(max_listed, int(present.sum()))
        # the listed values in text order: the definition (and so the key) does not change with
        # the order of their counts from one run to the next
        shown = sorted(values[:listed], key=str)
        out.append((f"rare or new values of {name}", "pooled_values", tuple(shown),
                    int(k1[pooled].sum()), int(k2[pooled].sum()), len(values), tuple(values[listed:])))
    return [UntestedContext(label, kind, name, value, a, b, b / n_current, wilson_interval(b, n_current),
                            int(min_slice_size), n_values=n_values, other_values=rest)
            for label, kind, value, a, b, n_values, rest in out]


def pool_rare_categories(reference: pd.Series, counts: pd.Series, min_count: int) -> tuple[pd.Series, pd.Series, int]:
    """Both count Series with every value seen fewer than ``min_count`` times in the two datasets
    together merged into one ``"<other values>"`` cell (when there are at least two such values).

    The pooling looks only at the pooled counts, which a relabelling of rows leaves unchanged, so
    the chi-square test on the merged table keeps its level; a 3,000-value column becomes a small table.
    Returns the merged reference counts, current counts and the number of values merged.
    """
    labels = reference.index.union(counts.index, sort=False) if len(counts) else reference.index
    ref = reference.reindex(labels, fill_value=0)
    cur = counts.reindex(labels, fill_value=0)
    small = (ref.to_numpy() + cur.to_numpy()) < min_count
    if small.sum() < 2:
        return reference, counts, 0
    keep = ~small
    ref_out = pd.concat([ref[keep], pd.Series({OTHER: ref[small].sum()})])
    cur_out = pd.concat([cur[keep], pd.Series({OTHER: cur[small].sum()})])
    # categories absent from one side stay absent there (unseen / vanished stay visible)
    return ref_out[ref_out > 0], cur_out[cur_out > 0], int(small.sum())


def declared_kind(column: pd.Series, declared: str | None, discrete_max_unique: int) -> str:
    """``"numeric"`` or ``"categorical"``: how a context column is tested. A column declared
    numeric is tested as numbers whatever its number of values (ranges, KS); an undeclared numeric
    column with at most ``discrete_max_unique`` distinct values is tested as categories."""
    if declared == "numeric":
        return "numeric"
    if declared in ("categorical", "boolean"):
        return "categorical"
    numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    return "numeric" if numeric and column.nunique(dropna=True) > discrete_max_unique else "categorical"


def _numbers(column: pd.Series) -> np.ndarray:
    """A numeric context as floats (missing and non-numbers as NaN)."""
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        return column.to_numpy(float, na_value=np.nan)
    return pd.to_numeric(column, errors="coerce").to_numpy(float, na_value=np.nan)


def _native(value):
    return value.item() if isinstance(value, np.generic) else value
