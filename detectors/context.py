"""Context-mix shift: per context column, per slice share, and untested contexts.

A *context* is a semantically meaningful condition of data generation (skin type,
compression, generator...). This detector answers three questions:

* did the mix of each **context column** change? Categorical and boolean columns (and
  undeclared numeric ones with at most ``discrete_max_unique`` values) get the two-sample
  chi-square test on the 2 x k contingency table (missing values are a category of their own;
  values with fewer than ``min_slice_size`` rows in both datasets together merged into one
  cell, so a column of thousands of values is a small table), effect Cramér's V; numeric
  columns (every column a domain pack declares numeric, whatever its number of values) the
  two-sample KS test, effect the Wasserstein-1 distance over the benchmark standard deviation;
* did the **share of each slice** change? Shares with Wilson intervals, the difference with
  a Newcombe interval, the pooled two-proportion z test (Fisher's exact test when an
  expected count is below 5), effect the absolute difference in shares;
* which contexts are **untested**: category values, slices and numeric ranges present in
  production but absent from the benchmark or with fewer than ``min_slice_size`` benchmark rows.
  Each is a claim decided by a test (below); the candidates that are not claimed are kept in
  ``not_claimed_contexts`` with their reason.

Every hypothesis is a :class:`~detectors.base.ShiftTest` (``kind="context"`` or
``"slice_share"``) so an audit can correct them together with everything else. Within one
call they are corrected together (BH by default); ``is_shift`` is "any test drifted".

================  ======  ==============================================================
effect            floor   why
================  ======  ==============================================================
cramers_v         0.1     Cohen's "small" association (same floor as covariate columns)
wasserstein_normed 0.1    a 0.1-sigma change of the column's distribution
share_difference  0.02    two percentage points of the data moved in or out of the slice
beyond_range_share 0.01   one percent of production beyond the benchmark's observed range
untested_share    0.01    one percent of production in a context the benchmark lacks
================  ======  ==============================================================

**Untested numeric ranges.** Even with no shift at all about ``n_p / (n_b + 1)`` production
rows lie beyond the benchmark maximum (and as many below its minimum) by chance. So a range
is claimed untested only when its exceedance count is improbable under exchangeability:
with ``N = n_b + n_p`` pooled continuous values, ``P(K >= k) = C(n_p, k) / C(N, k)`` exactly
(the k largest pooled values all from production; :func:`exceedance_pvalue`; ties only make
it conservative). That p-value joins the correction (``kind="untested_range"``), and the
share beyond the range must pass ``beyond_range_share`` and the count ``min_slice_size``.

**Untested values and slices: size and chance first.** Under no shift, with a benchmark of 500
rows, dozens of rare category values have fewer than ``min_slice_size`` benchmark rows by chance
alone. So a category value or slice is claimed untested only when (a) it has at least
``min_slice_size`` production rows, (b) its benchmark count is improbably low given its pooled
count — the exact hypergeometric ``P(K_bench <= k_bench | k_bench + k_prod, n_bench, n_prod)``
(:func:`rarity_pvalue`, ``kind="untested_context"``), which joins the correction — and (c) its
production share passes ``untested_share``. The values of one column too small to be candidates
of their own are pooled into one candidate, "rare or new values of <column>", tested once.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np
import pandas as pd

from detectors.base import (
    DetectorInputError,
    ShiftTest,
    check_alpha,
    check_correction,
    check_effect_floors,
    check_fitted,
    check_in,
    check_int,
    check_random_state,
    renamed_parameters,
)

# result types and pure helpers live in detectors.context_results and detectors.context_tests; they
# stay importable from here (exceedance_pvalue, literal_text and _share_stats are used elsewhere)
from detectors.context_results import ContextShiftResult, SliceShare, UntestedContext
from detectors.context_tests import (
    MISSING,
    _numbers,
    _share_stats,
    declared_kind,
    exceedance_pvalue,
    literal_text,
    pool_rare_categories,
    rarity_pvalue,
    rarity_test,
    untested_ranges,
    untested_values,
)
from detectors.correction import readjust
from detectors.feature_tests import categorical_shift_test
from detectors.univariate import ecdf_gap_statistics, ks_pvalue, ks_tied_test, missing_rate_test
from detectors.validation import as_mask

__all__ = ["ContextShiftDetector", "ContextShiftResult", "ContextCounts", "SliceShare", "UntestedContext",
           "CONTEXT_EFFECT_FLOORS", "literal_text", "exceedance_pvalue", "rarity_pvalue"]

CONTEXT_EFFECT_FLOORS = {"cramers_v": 0.1, "wasserstein_normed": 0.1, "share_difference": 0.02,
                         "beyond_range_share": 0.01, "untested_share": 0.01}


class ContextShiftDetector:
    """Context-mix shift per column and per slice, plus untested contexts.

    Parameters
    ----------
    alpha : float, default 0.05
    correction : {"bh", "holm", "bonferroni"}, default "bh"
    min_slice_size : int, default 30
        Benchmark rows a context value or slice needs to count as tested, and production rows an
        untested one needs to be claimed.
    min_production_count : int, default 1
        Production rows a category value needs to be a candidate untested context at all.
    min_samples : int, default 30
        Fewest non-missing rows per dataset for a column or slice share to be tested.
    discrete_max_unique : int, default 12
        Numeric columns with at most this many distinct benchmark values are tested as categorical,
        unless declared ``numeric`` (a declared numeric context is always tested as numbers).
    max_listed_values : int, default 50
        Values a pooled untested candidate lists in its definition; the rest are in ``other_values``.
    effect_floors : dict, optional
        Overrides of :data:`CONTEXT_EFFECT_FLOORS`.
    random_state : int, default 0
        Seed of the permutation p-value for tied numeric context columns.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> bench = pd.DataFrame({"site": rng.choice(["a", "b"], 1000)})
    >>> prod = pd.DataFrame({"site": rng.choice(["a", "b", "c"], 1000, p=[.45, .45, .1])})
    >>> res = ContextShiftDetector().fit(bench).test(prod)
    >>> res.is_shift, [(u.name, u.kind, u.claimed) for u in res.untested_contexts]
    (True, [('site == "c"', 'unseen_value', True)])
    """

    def __init__(self, *, alpha=0.05, correction="bh", min_slice_size=30, min_production_count=1,
                 min_samples=30, discrete_max_unique=12, max_listed_values=50, effect_floors=None, random_state=0):
        self.alpha = alpha
        self.correction = correction
        self.min_slice_size = min_slice_size
        self.min_production_count = min_production_count
        self.min_samples = min_samples
        self.discrete_max_unique = discrete_max_unique
        self.max_listed_values = max_listed_values
        self.effect_floors = effect_floors
        self.random_state = random_state

    def _check_params(self) -> None:
        check_alpha(self.alpha)
        check_correction(self.correction)
        check_int("min_slice_size", self.min_slice_size, minimum=1)
        check_int("min_production_count", self.min_production_count, minimum=1)
        check_int("min_samples", self.min_samples, minimum=1)
        check_int("discrete_max_unique", self.discrete_max_unique, minimum=0)
        check_int("max_listed_values", self.max_listed_values, minimum=1)
        check_effect_floors("effect_floors", self.effect_floors, CONTEXT_EFFECT_FLOORS)
        check_random_state(self.random_state)

    def _floor(self, name: str) -> float:
        return float({**CONTEXT_EFFECT_FLOORS, **(self.effect_floors or {})}[name])

    @renamed_parameters(benchmark="reference")
    def fit(self, reference: pd.DataFrame, *, column_types: Mapping[str, str] | None = None):
        """Learn the benchmark context mix.

        Parameters
        ----------
        reference : DataFrame of shape (n_benchmark, n_context_columns)
            The benchmark's context columns only (``benchmark=`` is the deprecated name).
        column_types : mapping name -> "numeric" | "categorical" | "boolean", optional
            Declared types (e.g. from a domain pack); inferred from dtypes otherwise.
        """
        self._check_params()
        if not isinstance(reference, pd.DataFrame) or reference.shape[0] == 0:
            raise DetectorInputError("reference must be a non-empty DataFrame of context columns.")
        types = {}
        for name in reference.columns:
            declared = (column_types or {}).get(name)
            if declared is not None:
                check_in(f"column_types[{name!r}]", declared, ("numeric", "categorical", "boolean"))
            types[name] = declared_kind(reference[name], declared, self.discrete_max_unique)
        self.column_types_ = types
        self.benchmark_counts_ = {c: self._counts(reference[c]) for c, t in types.items() if t == "categorical"}
        self.benchmark_sorted_ = {c: np.sort(_numbers(reference[c])) for c, t in types.items() if t == "numeric"}
        self.n_benchmark_ = int(reference.shape[0])
        return self

    @staticmethod
    def _counts(series: pd.Series) -> pd.Series:
        """Category counts with missing values as the category ``"<missing>"``."""
        counts = series.value_counts(dropna=False)
        if counts.index.hasnans:
            counts.index = [MISSING if pd.isna(v) else v for v in counts.index]
            counts = counts.groupby(level=0, sort=False).sum()
        return counts

    @renamed_parameters(production="current")
    def test(self, current: pd.DataFrame, *, slices: Mapping[str, tuple] | None = None,
             counts: "ContextCounts | None" = None) -> ContextShiftResult:
        """Compare the production context mix with the benchmark.

        Parameters
        ----------
        current : DataFrame of shape (n_production, n_context_columns)
            Production's context columns; must hold every column seen in :meth:`fit` (``production=``
            is the deprecated name).
        slices : mapping name -> (benchmark_mask, production_mask), optional
            Boolean masks of shapes ``(n_benchmark,)`` and ``(n_production,)``.
        counts : ContextCounts, optional
            Exact counts of every row when ``fit`` and ``current`` saw uniform samples of data
            too large for memory: they replace the samples' in the categorical-column, unseen-value
            and slice-share tests (numeric columns stay on the samples).
        """
        check_fitted(self, "column_types_")
        self._check_params()
        missing = [c for c in self.column_types_ if c not in getattr(current, "columns", [])]
        if missing:
            raise DetectorInputError(f"current lacks the context columns {missing}.")
        n_rows = int(current.shape[0])
        if n_rows == 0:
            raise DetectorInputError("current has no rows.")
        # rows the counts describe (every row with ``counts``; numeric columns stay on the sample)
        n1 = self.n_benchmark_ if counts is None else counts.n_benchmark
        n2 = n_rows if counts is None else counts.n_production
        columns, untested, ranges = [], [], []
        for name, kind in self.column_types_.items():
            if kind == "numeric":
                values = _numbers(current[name])
                columns.append(self._numeric_test(name, values))
                ranges += self._untested_range(name, pd.Series(values), n_rows)
            else:
                found = self._counts(current[name]) if counts is None else counts.production[name]
                reference = self.benchmark_counts_[name] if counts is None else counts.benchmark[name]
                columns.append(self._categorical_test(name, found, reference))
                untested += untested_values(name, reference, found, n2, min_slice_size=self.min_slice_size,
                                            min_production_count=self.min_production_count,
                                            max_listed=self.max_listed_values)
        shares = self._slice_shares(slices or {}, n2) if counts is None else self._shares_from_counts(
            counts.slices, n1, n2)
        untested += [u for u in (self._untested_slice(s) for s in shares) if u is not None]
        claimable = [u for u in untested if u.n_production >= self.min_slice_size]
        too_small = tuple(replace(u, claimed=False, reason=(
            f"not claimed: {u.n_production:,} production rows, fewer than the {self.min_slice_size:,} a claim needs"))
            for u in untested if u.n_production < self.min_slice_size)
        floor = self._floor("untested_share")
        result = ContextShiftResult(
            is_shift=False, contexts=tuple(columns), slice_shares=tuple(shares), untested_contexts=(),
            alpha=float(self.alpha), correction=self.correction, n_benchmark=n1, n_production=n2,
            candidates=tuple(claimable) + tuple(u for u, _ in ranges),
            candidate_tests=tuple(rarity_test(u, n1, n2, floor=floor) for u in claimable) + tuple(t for _, t in ranges),
            too_small=too_small)
        return result.with_tests(readjust(list(result.tests), alpha=self.alpha, correction=self.correction))

    # ------------------------------------------------------------------ columns
    def _insufficient(self, name, method, effect, n1, n2, kind="context", details=None) -> ShiftTest:
        nan = float("nan")
        return ShiftTest(name, method, nan, nan, nan, nan, effect, self._floor(effect), int(n1), int(n2), False,
                         kind=kind, status="insufficient_data", details=details or {})

    def _categorical_test(self, name: str, counts: pd.Series, reference: pd.Series) -> ShiftTest:
        n1, n2 = int(reference.sum()), int(counts.sum())
        if min(n1, n2) < self.min_samples:
            return self._insufficient(name, "chi2", "cramers_v", n1, n2)
        reference, counts, merged = pool_rare_categories(reference, counts, self.min_slice_size)
        test = categorical_shift_test(name, reference, counts, floor=self._floor("cramers_v"), kind="context")
        labels = reference.index.union(counts.index, sort=False)
        ref, cur = reference.reindex(labels, fill_value=0), counts.reindex(labels, fill_value=0)
        shares = {str(k): (float(a / n1), float(b / n2)) for k, a, b in zip(labels, ref.to_numpy(), cur.to_numpy())}
        return replace(test, details={**test.details, "shares": shares, "n_values_pooled": merged})

    def _numeric_test(self, name: str, values: np.ndarray) -> ShiftTest:
        ref = self.benchmark_sorted_[name]
        cur = np.sort(values[~np.isnan(values)])
        if min(ref.size, cur.size) < self.min_samples:
            return self._insufficient(name, "ks", "wasserstein_normed", ref.size, cur.size)
        ks, _, wasserstein = ecdf_gap_statistics(ref, cur)
        p, ks_method = ks_pvalue(ks, ref.size, cur.size)
        tied = ks_tied_test(ref, cur, random_state=self.random_state)  # ties: the tie-correct p-value
        if tied is not None:
            _, p, ks_method = tied
        scale = float(ref.std()) or float(np.concatenate([ref, cur]).std())
        effect = wasserstein / scale if scale > 0 else 0.0
        details = {"ks_method": ks_method, "wasserstein": wasserstein, "median_benchmark": float(np.median(ref)),
                   "median_production": float(np.median(cur)), "std_benchmark": float(ref.std())}
        return ShiftTest(name, "ks" if tied is None else ks_method, ks, p, p, effect, "wasserstein_normed",
                         self._floor("wasserstein_normed"), ref.size, cur.size, False, kind="context", details=details)

    def _untested_range(self, name: str, values: pd.Series, n2: int) -> list[tuple[UntestedContext, ShiftTest]]:
        """Candidate untested ranges of a numeric column with their tests (:func:`untested_ranges`)."""
        return untested_ranges(name, self.benchmark_sorted_[name], values, n2, min_samples=self.min_samples,
                               min_count=max(self.min_slice_size, self.min_production_count),
                               min_slice_size=self.min_slice_size, floor=self._floor("beyond_range_share"))

    # ------------------------------------------------------------------ slices
    def _slice_shares(self, slices: Mapping[str, tuple], n2: int) -> list[SliceShare]:
        n1 = self.n_benchmark_
        counts = []
        for name, masks in slices.items():
            try:
                bench_mask, prod_mask = masks
            except (TypeError, ValueError):
                raise DetectorInputError(f"slice {name!r}: expected (benchmark_mask, production_mask).") from None
            b = as_mask(f"slice {name!r} benchmark mask", bench_mask, n1)
            p = as_mask(f"slice {name!r} production mask", prod_mask, n2)
            counts.append((int(b.sum()), int(p.sum())))
        return self._shares_from_counts(dict(zip(slices, counts)), n1, n2)

    def _shares_from_counts(self, slices: Mapping[str, tuple[int, int]], n1: int, n2: int) -> list[SliceShare]:
        """Slice shares and their tests from (benchmark rows, production rows) per slice."""
        counts = list(slices.values())
        if not counts:
            return []
        k1, k2 = (np.array(c, dtype=float) for c in zip(*counts))
        floor = self._floor("share_difference")
        out = []
        for name, (a, b), stats in zip(slices, counts, _share_stats(k1, n1, k2, n2)):
            if min(n1, n2) < self.min_samples:
                test = self._insufficient(name, "z_two_proportions", "share_difference", n1, n2, "slice_share", stats)
            else:
                z, pval, method = missing_rate_test(a, n1, b, n2)
                test = ShiftTest(name, method, z, pval, pval, abs(stats["difference"]), "share_difference", floor,
                                 n1, n2, False, kind="slice_share",
                                 details={**stats, "k_benchmark": a, "k_production": b})
            out.append(SliceShare(name, a, b, test=test, **stats))
        return out

    def _untested_slice(self, share: SliceShare) -> UntestedContext | None:
        if share.n_benchmark >= self.min_slice_size or share.n_production < max(self.min_production_count, 1) \
                or share.n_production == 0:
            return None
        kind = "unseen_slice" if share.n_benchmark == 0 else "rare_slice"
        return UntestedContext(share.name, kind, None, None, share.n_benchmark, share.n_production,
                               share.production_share, share.production_share_ci, int(self.min_slice_size))


@dataclass(frozen=True)
class ContextCounts:
    """Exact counts for :meth:`ContextShiftDetector.test` when the frames are samples: value counts
    per categorical context column (index = value, missing as ``"<missing>"``), rows of each
    dataset, and (benchmark rows, production rows) per slice."""

    benchmark: Mapping[str, pd.Series]
    production: Mapping[str, pd.Series]
    n_benchmark: int
    n_production: int
    slices: Mapping[str, tuple]
